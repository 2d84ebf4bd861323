// Element-wise kernels: activations, optimizer steps, accumulation. One thread per element in a
// grid-stride loop; each computes exactly the expression of the CPU kernel (kernels.cpp,
// kernels_optim.cpp), with the hyper-parameters rounded to T on the host as the CPU does.
#include <cmath>
#include <string>

#include "launch.cuh"
#include "matrix_scale.hpp"
#include "strata/real/cuda_kernels.hpp"
#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"

namespace strata::real::gpu {
namespace {

using cuda_detail::blocks_for;
using cuda_detail::check_cuda;
using cuda_detail::check_launch;
using cuda_detail::first_index;
using cuda_detail::grid_stride;
using cuda_detail::kBlockSize;

// Pointers are not __restrict__: the activations and optimizer steps may run in place.
template <typename T>
__global__ void relu_forward_kernel(std::int64_t n, const T* x, T* y) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = x[i] > T{0} ? x[i] : T{0};
}

template <typename T>
__global__ void relu_backward_kernel(std::int64_t n, const T* x, const T* dy, T* dx) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = x[i] > T{0} ? dy[i] : T{0};
}

template <typename T>
__global__ void tanh_forward_kernel(std::int64_t n, const T* x, T* y) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = cuda_detail::device_tanh(x[i]);
}

template <typename T>
__global__ void tanh_backward_kernel(std::int64_t n, const T* y, const T* dy, T* dx) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = dy[i] * (T{1} - y[i] * y[i]);
}

template <typename T>
__global__ void sgd_momentum_kernel(std::int64_t n, T lr, T mu, const T* grad, T* velocity, T* weight) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    velocity[i] = mu * velocity[i] + grad[i];
    weight[i] -= lr * velocity[i];
  }
}

template <typename T>
__global__ void adam_kernel(std::int64_t n, T step_size, T sqrt_correction2, T beta1, T beta2, T eps,
                            const T* grad, T* m, T* v, T* weight) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    m[i] = beta1 * m[i] + (T{1} - beta1) * grad[i];
    v[i] = beta2 * v[i] + (T{1} - beta2) * grad[i] * grad[i];
    weight[i] -= step_size * m[i] / (cuda_detail::device_sqrt(v[i]) / sqrt_correction2 + eps);
  }
}

template <typename T>
__global__ void accumulate_kernel(std::int64_t n, const T* src, T* dst) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) dst[i] += src[i];
}

template <typename T>
__global__ void scale_matrix_kernel(std::int64_t rows, std::int64_t cols, T beta, T* c, std::int64_t ld) {
  const std::int64_t total = rows * cols;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    T& entry = c[(e / cols) * ld + e % cols];
    entry = beta == T{0} ? T{0} : beta * entry;
  }
}

}  // namespace

template <typename T>
void relu_forward(CudaBackend& backend, std::int64_t n, const T* x, T* y) {
  check_length(n, "relu_forward");
  if (n == 0) return;
  relu_forward_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(n, x, y);
  check_launch("relu_forward_kernel");
}

template <typename T>
void relu_backward(CudaBackend& backend, std::int64_t n, const T* x, const T* dy, T* dx) {
  check_length(n, "relu_backward");
  if (n == 0) return;
  relu_backward_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(n, x, dy, dx);
  check_launch("relu_backward_kernel");
}

template <typename T>
void tanh_forward(CudaBackend& backend, std::int64_t n, const T* x, T* y) {
  check_length(n, "tanh_forward");
  if (n == 0) return;
  tanh_forward_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(n, x, y);
  check_launch("tanh_forward_kernel");
}

template <typename T>
void tanh_backward(CudaBackend& backend, std::int64_t n, const T* y, const T* dy, T* dx) {
  check_length(n, "tanh_backward");
  if (n == 0) return;
  tanh_backward_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(n, y, dy, dx);
  check_launch("tanh_backward_kernel");
}

template <typename T>
void sgd_momentum_step(CudaBackend& backend, const SgdConfig& config, std::int64_t n, const T* grad,
                       T* velocity, T* weight) {
  check_length(n, "sgd_momentum_step");
  if (n == 0) return;
  const auto lr = static_cast<T>(config.learning_rate);
  const auto mu = static_cast<T>(config.momentum);
  sgd_momentum_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(n, lr, mu, grad, velocity,
                                                                            weight);
  check_launch("sgd_momentum_kernel");
}

template <typename T>
void adam_step(CudaBackend& backend, const AdamConfig& config, std::int64_t step, std::int64_t n,
               const T* grad, T* m, T* v, T* weight) {
  check_adam_step(step);
  check_length(n, "adam_step");
  if (n == 0) return;
  // kernels_optim.cpp's arrangement (PyTorch's): the bias corrections fold into a step size and
  // a divisor of sqrt(v), computed in double and rounded to T once.
  const double correction1 = 1.0 - std::pow(config.beta1, static_cast<double>(step));
  const double correction2 = 1.0 - std::pow(config.beta2, static_cast<double>(step));
  const auto step_size = static_cast<T>(config.learning_rate / correction1);
  const auto sqrt_correction2 = static_cast<T>(std::sqrt(correction2));
  adam_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(
      n, step_size, sqrt_correction2, static_cast<T>(config.beta1), static_cast<T>(config.beta2),
      static_cast<T>(config.eps), grad, m, v, weight);
  check_launch("adam_kernel");
}

template <typename T>
void accumulate(CudaBackend& backend, std::int64_t n, const T* src, T* dst) {
  check_length(n, "accumulate");
  if (n == 0) return;
  accumulate_kernel<<<blocks_for(n), kBlockSize, 0, backend.activate()>>>(n, src, dst);
  check_launch("accumulate_kernel");
}

template <typename T>
void zero(CudaBackend& backend, std::int64_t n, T* dst) {
  check_length(n, "zero");
  if (n == 0) return;
  // All-zero bytes are +0.0 in IEEE 754, what std::fill(dst, dst + n, T{0}) writes.
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);
  check_cuda(cudaMemsetAsync(dst, 0, bytes, backend.activate()),
             "cudaMemsetAsync(" + std::to_string(bytes) + " bytes)");
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                               \
  template void relu_forward<T>(CudaBackend&, std::int64_t, const T*, T*);                                  \
  template void relu_backward<T>(CudaBackend&, std::int64_t, const T*, const T*, T*);                       \
  template void tanh_forward<T>(CudaBackend&, std::int64_t, const T*, T*);                                  \
  template void tanh_backward<T>(CudaBackend&, std::int64_t, const T*, const T*, T*);                       \
  template void sgd_momentum_step<T>(CudaBackend&, const SgdConfig&, std::int64_t, const T*, T*, T*);       \
  template void adam_step<T>(CudaBackend&, const AdamConfig&, std::int64_t, std::int64_t, const T*, T*, T*, \
                             T*);                                                                           \
  template void accumulate<T>(CudaBackend&, std::int64_t, const T*, T*);                                    \
  template void zero<T>(CudaBackend&, std::int64_t, T*);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real::gpu

namespace strata::real::cuda_detail {

template <typename T>
void scale_matrix(cudaStream_t stream, std::int64_t rows, std::int64_t cols, T beta, T* c, std::int64_t ld) {
  gpu::scale_matrix_kernel<<<blocks_for(rows * cols), kBlockSize, 0, stream>>>(rows, cols, beta, c, ld);
  check_launch("scale_matrix_kernel");
}

template void scale_matrix<float>(cudaStream_t, std::int64_t, std::int64_t, float, float*, std::int64_t);
template void scale_matrix<double>(cudaStream_t, std::int64_t, std::int64_t, double, double*, std::int64_t);

}  // namespace strata::real::cuda_detail
