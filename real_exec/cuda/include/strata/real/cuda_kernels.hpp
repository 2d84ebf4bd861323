// CUDA kernels: the GPU counterparts of kernels.hpp, for float and double, on device pointers.
//
// Each function has the name, the shape structs, the layouts and the conventions of its CPU
// counterpart in strata::real (kernels.hpp: row-major, NCHW, [out, in, kh, kw] weights, the
// `accumulate` flag, null bias pointers, in-place element-wise work, shapes checked with
// STRATA_ASSERT), so that an interpreter for the GPU swaps `real::f(...)` for
// `real::gpu::f(backend, ...)`. What differs:
// - The first argument is the CudaBackend whose stream the work is queued on (and whose cuBLAS
//   runs the GEMMs of the layers). Every pointer is a device pointer of backend.device() —
//   labels and max-pool argmax included — and every call is asynchronous, as the backend's are:
//   results are there for later work on the same stream, for a DeviceArray download, or after
//   backend.synchronize().
// - softmax_cross_entropy_forward writes the mean loss to a device scalar instead of returning
//   it, and its backward takes the divisor (the global batch) that the task runner applies.
// - bias_broadcast and bias_gradient are separate functions, since the GPU interpreter composes
//   the layers; the layer functions below compose them with the backend's GEMM exactly as the
//   CPU layers do.
// - A label outside [0, classes) cannot throw from the device: its row's loss is NaN (so is the
//   mean) and its row of dlogits lacks the -1/divisor term.
// Results match the CPU kernels to rounding. Bit for bit where no arithmetic can be rearranged:
// ReLU, max pooling (argmax included), bias_broadcast, accumulate, im2col and col2im_add.
// Elsewhere by rounding only: nvcc fuses a * b + c into one rounding (tanh_backward, the
// optimizers), CUDA's tanh and exp are not glibc's (a couple of units in the last place), and
// the sums (loss, bias gradients, GEMMs) add in another order.
// Errors: a launch that CUDA refuses throws InputError naming the kernel; an error while a kernel
// runs surfaces at the next synchronising call.
// Ownership: kernels borrow everything and keep nothing; the convolutions allocate their column
// scratch per call from the stream's memory pool (cudaMallocAsync), as the CPU ones do per call.
// Thread safety: as CudaBackend's (reentrant; one backend's work runs in call order).
#pragma once

#include <cstdint>

#include "strata/real/cuda_backend.hpp"
#include "strata/real/kernels/kernels.hpp"

namespace strata::real::gpu {

// ---- element-wise activations (in place allowed: y == x, dx == dy) ----

template <typename T>
void relu_forward(CudaBackend& backend, std::int64_t n, const T* x, T* y);
// dX = dY where X > 0, else 0.
template <typename T>
void relu_backward(CudaBackend& backend, std::int64_t n, const T* x, const T* dy, T* dx);
template <typename T>
void tanh_forward(CudaBackend& backend, std::int64_t n, const T* x, T* y);
// From the forward output: dX = dY (1 - Y^2).
template <typename T>
void tanh_backward(CudaBackend& backend, std::int64_t n, const T* y, const T* dy, T* dx);

// ---- bias over a [outer, channels, inner] array: a linear layer's Y [batch, out] is
// (batch, out, 1), a convolution's NCHW output is (batch, out_channels, out_h * out_w) ----

// y[o, c, i] = b[c] (accumulate == false, the CPU layers' fill before a beta = 1 GEMM) or
// y[o, c, i] += b[c] (accumulate == true).
template <typename T>
void bias_broadcast(CudaBackend& backend, std::int64_t outer, std::int64_t channels, std::int64_t inner,
                    const T* b, T* y, bool accumulate);
// db[c] = sum over o and i of dy[o, c, i], overwriting db or added to it.
template <typename T>
void bias_gradient(CudaBackend& backend, std::int64_t outer, std::int64_t channels, std::int64_t inner,
                   const T* dy, T* db, bool accumulate);

// ---- 2x2 max pooling, stride 2 (odd trailing rows and columns dropped) ----

// argmax[i] is the flat index into x of the element that output i took (first maximum wins).
template <typename T>
void maxpool2x2_forward(CudaBackend& backend, const Pool2dShape& shape, const T* x, T* y,
                        std::int64_t* argmax);
// Overwrites dx: zero everywhere but at the recorded argmax positions.
template <typename T>
void maxpool2x2_backward(CudaBackend& backend, const Pool2dShape& shape, const T* dy,
                         const std::int64_t* argmax, T* dx);

// ---- softmax cross-entropy over logits [batch, classes] ----

// Writes the softmax probabilities and loss[0] = the mean over the batch of logsumexp -
// logit[label] (row maximum subtracted first), summed in double in a fixed order, so the same
// input gives the same loss on every run. One thread block does the whole batch: the loss is a
// sliver of an iteration and a single block needs no second pass. REQUIRES: batch > 0,
// classes > 0; `loss` points to one element on the device.
template <typename T>
void softmax_cross_entropy_forward(CudaBackend& backend, std::int64_t batch, std::int64_t classes,
                                   const T* logits, const std::int32_t* labels, T* probs, T* loss);
// dlogits = (probs - onehot(labels)) / divisor. divisor == batch is the CPU kernel; the task
// runner's loss_bwd passes the global batch, so that summing over microbatches and data-parallel
// ranks gives the mean gradient. REQUIRES: divisor >= 1.
template <typename T>
void softmax_cross_entropy_backward(CudaBackend& backend, std::int64_t batch, std::int64_t classes,
                                    const T* probs, const std::int32_t* labels, std::int64_t divisor,
                                    T* dlogits);

// ---- optimizers, as kernels.hpp (same formulas, same rounding of the hyper-parameters) ----

template <typename T>
void sgd_momentum_step(CudaBackend& backend, const SgdConfig& config, std::int64_t n, const T* grad,
                       T* velocity, T* weight);
// REQUIRES: step >= 1.
template <typename T>
void adam_step(CudaBackend& backend, const AdamConfig& config, std::int64_t step, std::int64_t n,
               const T* grad, T* m, T* v, T* weight);

// dst += src
template <typename T>
void accumulate(CudaBackend& backend, std::int64_t n, const T* src, T* dst);
template <typename T>
void zero(CudaBackend& backend, std::int64_t n, T* dst);

// ---- im2col for one image, as kernels_conv.cpp ----

// cols[(c, i, j), (r, q)] = image[c, r * stride - padding + i, q * stride - padding + j], zero
// outside the image; cols is [in_channels * kernel_h * kernel_w, out_height * out_width].
template <typename T>
void im2col(CudaBackend& backend, const Conv2dShape& shape, const T* image, T* cols);
// The adjoint: image[c, row, col] += every cols entry im2col would have read from it, added in
// the CPU's order (kernel row, then kernel column), one thread per pixel and no atomics.
template <typename T>
void col2im_add(CudaBackend& backend, const Conv2dShape& shape, const T* cols, T* image);

// ---- layers, the CPU layers' sequence of bias fills, GEMMs and reductions ----

template <typename T>
void linear_forward(CudaBackend& backend, const LinearShape& shape, const T* x, const T* w, const T* b, T* y);
template <typename T>
void linear_backward_data(CudaBackend& backend, const LinearShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate);
template <typename T>
void linear_backward_weight(CudaBackend& backend, const LinearShape& shape, const T* x, const T* dy, T* dw,
                            T* db, bool accumulate);

// One image at a time (im2col, then one GEMM), as the CPU does.
template <typename T>
void conv2d_forward(CudaBackend& backend, const Conv2dShape& shape, const T* x, const T* w, const T* b, T* y);
template <typename T>
void conv2d_backward_data(CudaBackend& backend, const Conv2dShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate);
template <typename T>
void conv2d_backward_weight(CudaBackend& backend, const Conv2dShape& shape, const T* x, const T* dy, T* dw,
                            T* db, bool accumulate);

}  // namespace strata::real::gpu
