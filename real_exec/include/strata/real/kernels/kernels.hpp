// Kernels: the real computations behind the Plan's compute task kinds (forward and backward of
// a layer, loss, optimizer step, gradient accumulation, initialisation), for float and double.
//
// Conventions shared by every kernel:
// - Raw pointers plus a shape struct, so a worker can run a kernel on a slice of a Tensor (one
//   microbatch) without copying. Layouts are row-major: a linear layer's X is [batch, in], W is
//   [in, out] (so Y = X W needs no transpose), images are NCHW, conv weights are
//   [out_channels, in_channels, kernel_h, kernel_w] as in PyTorch.
// - `accumulate == false` overwrites the output; `accumulate == true` adds to it (BLAS beta = 1),
//   which is how gradients sum over the microbatches of one iteration.
// - A bias pointer may be null: the layer has no bias and the bias gradient is skipped.
// - Inputs and outputs must not overlap unless a kernel says so (the element-wise activations
//   and the optimizer steps may run in place).
// - Shapes are checked with STRATA_ASSERT (shapes.hpp, the checks the CUDA kernels share); a
//   violation is a bug in the caller, not bad input.
// Ownership: kernels borrow everything and keep nothing; scratch space (im2col columns) is
// allocated per call. Thread safety: kernels are reentrant; the Backend decides the rest.
#pragma once

#include <cstdint>
#include <random>

#include "strata/models/optimizer.hpp"
#include "strata/real/core/backend.hpp"

namespace strata::real {

// ---- linear: Y[m,n] = X[m,k] W[k,n] + b[n] ----

struct LinearShape {
  std::int64_t batch = 0;         // m
  std::int64_t in_features = 0;   // k
  std::int64_t out_features = 0;  // n
};

template <typename T>
void linear_forward(Backend& backend, const LinearShape& shape, const T* x, const T* w, const T* b, T* y);
// dX = dY W^T
template <typename T>
void linear_backward_data(Backend& backend, const LinearShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate);
// dW = X^T dY and db = column sums of dY (skipped when db is null)
template <typename T>
void linear_backward_weight(Backend& backend, const LinearShape& shape, const T* x, const T* dy, T* dw, T* db,
                            bool accumulate);

// ---- conv2d through im2col + GEMM (NCHW, square stride and padding, zero padding) ----

struct Conv2dShape {
  std::int64_t batch = 0;
  std::int64_t in_channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t out_channels = 0;
  std::int64_t kernel_h = 0;
  std::int64_t kernel_w = 0;
  std::int64_t stride = 1;
  std::int64_t padding = 0;

  std::int64_t out_height() const { return (height + 2 * padding - kernel_h) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel_w) / stride + 1; }
  std::int64_t input_size() const { return batch * in_channels * height * width; }
  std::int64_t output_size() const { return batch * out_channels * out_height() * out_width(); }
  std::int64_t weight_size() const { return out_channels * in_channels * kernel_h * kernel_w; }
};

template <typename T>
void conv2d_forward(Backend& backend, const Conv2dShape& shape, const T* x, const T* w, const T* b, T* y);
template <typename T>
void conv2d_backward_data(Backend& backend, const Conv2dShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate);
template <typename T>
void conv2d_backward_weight(Backend& backend, const Conv2dShape& shape, const T* x, const T* dy, T* dw, T* db,
                            bool accumulate);

// ---- element-wise activations (in place allowed: y == x, dx == dy) ----

template <typename T>
void relu_forward(std::int64_t n, const T* x, T* y);
// dX = dY where X > 0, else 0 (the subgradient at 0 is taken as 0, as PyTorch does).
template <typename T>
void relu_backward(std::int64_t n, const T* x, const T* dy, T* dx);
template <typename T>
void tanh_forward(std::int64_t n, const T* x, T* y);
// From the forward output: dX = dY (1 - Y^2).
template <typename T>
void tanh_backward(std::int64_t n, const T* y, const T* dy, T* dx);

// ---- 2x2 max pooling, stride 2 (odd trailing rows and columns are dropped, as PyTorch) ----

struct Pool2dShape {
  std::int64_t batch = 0;
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;

  std::int64_t out_height() const { return height / 2; }
  std::int64_t out_width() const { return width / 2; }
  std::int64_t input_size() const { return batch * channels * height * width; }
  std::int64_t output_size() const { return batch * channels * out_height() * out_width(); }
};

// argmax[i] is the flat index into x of the element that output i took (first maximum wins).
template <typename T>
void maxpool2x2_forward(const Pool2dShape& shape, const T* x, T* y, std::int64_t* argmax);
// Overwrites dx: zero everywhere but at the recorded argmax positions.
template <typename T>
void maxpool2x2_backward(const Pool2dShape& shape, const T* dy, const std::int64_t* argmax, T* dx);

// ---- softmax cross-entropy over logits [batch, classes] ----

// Writes the softmax probabilities (kept for the backward pass) and returns the mean loss
// over the batch, computed as logsumexp - logit[label] after subtracting the row maximum so
// that large logits do not overflow. REQUIRES: 0 <= labels[i] < classes.
template <typename T>
T softmax_cross_entropy_forward(std::int64_t batch, std::int64_t classes, const T* logits,
                                const std::int32_t* labels, T* probs);
// dlogits = (probs - onehot(labels)) / batch
template <typename T>
void softmax_cross_entropy_backward(std::int64_t batch, std::int64_t classes, const T* probs,
                                    const std::int32_t* labels, T* dlogits);

// ---- optimizers (weights, gradients and state of n elements; state starts at zero) ----

// PyTorch's SGD: v = momentum * v + g; w -= lr * v. With a zeroed v the first step gives
// v = g, which is PyTorch's first-step rule, so no separate initialisation is needed.
struct SgdConfig {
  double learning_rate = 0.01;
  double momentum = 0.0;
};
template <typename T>
void sgd_momentum_step(const SgdConfig& config, std::int64_t n, const T* grad, T* velocity, T* weight);

// Adam (Kingma & Ba 2015, Algorithm 1, with bias correction), PyTorch's defaults. `step` is the
// 1-based number of this update: m_hat = m / (1 - beta1^step), v_hat = v / (1 - beta2^step),
// w -= lr * m_hat / (sqrt(v_hat) + eps). The settings are the models' (optimizer.hpp).
using AdamConfig = strata::AdamConfig;
template <typename T>
void adam_step(const AdamConfig& config, std::int64_t step, std::int64_t n, const T* grad, T* m, T* v,
               T* weight);

// dst += src (through the backend, so a GPU backend keeps it on the device)
template <typename T>
void accumulate(Backend& backend, std::int64_t n, const T* src, T* dst);
template <typename T>
void zero(std::int64_t n, T* dst);

// ---- initialisation ----

// Kaiming He et al. 2015 ("Delving deep into rectifiers", eq. 10), fan-in mode: values drawn
// from N(0, 2 / fan_in). The normal variates come from Box-Muller over the raw 64-bit outputs
// of mt19937_64 (whose sequence the standard fixes) rather than std::normal_distribution
// (whose algorithm each standard library chooses), so a seed gives the same weights with any
// compiler.
template <typename T>
void he_normal_init(std::mt19937_64& rng, std::int64_t fan_in, std::int64_t n, T* weight);

}  // namespace strata::real
