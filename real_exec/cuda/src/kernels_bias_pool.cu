// Bias broadcast and gradient over [outer, channels, inner] arrays, and 2x2 max pooling.
#include <string>

#include "launch.cuh"
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

template <typename T>
__global__ void bias_broadcast_kernel(std::int64_t total, std::int64_t channels, std::int64_t inner,
                                      const T* b, T* y, bool accumulate) {
  for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
    const T bias = b[(i / inner) % channels];
    y[i] = accumulate ? y[i] + bias : bias;
  }
}

// One block per channel: its threads stride over the outer * inner elements of the channel, then
// reduce their partial sums in shared memory in a fixed tree (the same sum on every run).
template <typename T>
__global__ void bias_gradient_kernel(std::int64_t outer, std::int64_t channels, std::int64_t inner,
                                     const T* dy, T* db, bool accumulate) {
  __shared__ T partial[kBlockSize];
  const std::int64_t channel = blockIdx.x;
  const std::int64_t count = outer * inner;
  T sum{0};
  for (std::int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const std::int64_t o = e / inner, i = e % inner;
    sum += dy[(o * channels + channel) * inner + i];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[channel] = accumulate ? db[channel] + partial[0] : partial[0];
}

// One thread per output; the candidates in the CPU's order with a strict >, so ties and NaNs
// resolve as there (kernels.cpp).
template <typename T>
__global__ void maxpool_forward_kernel(std::int64_t outputs, std::int64_t h, std::int64_t w, std::int64_t oh,
                                       std::int64_t ow, const T* x, T* y, std::int64_t* argmax) {
  for (std::int64_t out = first_index(); out < outputs; out += grid_stride()) {
    const std::int64_t plane = out / (oh * ow), r = (out / ow) % oh, c = out % ow;
    std::int64_t best = plane * h * w + 2 * r * w + 2 * c;
    const std::int64_t candidates[3] = {best + 1, best + w, best + w + 1};
    for (std::int64_t candidate : candidates) {
      if (x[candidate] > x[best]) best = candidate;
    }
    y[out] = x[best];
    argmax[out] = best;
  }
}

// Windows do not overlap (stride 2 = window 2), so no two outputs write the same input.
template <typename T>
__global__ void maxpool_backward_kernel(std::int64_t outputs, const T* dy, const std::int64_t* argmax,
                                        T* dx) {
  for (std::int64_t i = first_index(); i < outputs; i += grid_stride()) dx[argmax[i]] += dy[i];
}

void check_bias(std::int64_t outer, std::int64_t channels, std::int64_t inner) {
  STRATA_ASSERT(outer >= 0 && channels > 0 && inner > 0, "bias over [" + std::to_string(outer) + ", " +
                                                             std::to_string(channels) + ", " +
                                                             std::to_string(inner) + "]");
  STRATA_ASSERT(channels <= 0x7fffffff,
                "bias over " + std::to_string(channels) + " channels (one block each)");
}

}  // namespace

template <typename T>
void bias_broadcast(CudaBackend& backend, std::int64_t outer, std::int64_t channels, std::int64_t inner,
                    const T* b, T* y, bool accumulate) {
  check_bias(outer, channels, inner);
  const std::int64_t total = outer * channels * inner;
  if (total == 0) return;
  bias_broadcast_kernel<<<blocks_for(total), kBlockSize, 0, backend.activate()>>>(total, channels, inner, b,
                                                                                  y, accumulate);
  check_launch("bias_broadcast_kernel");
}

template <typename T>
void bias_gradient(CudaBackend& backend, std::int64_t outer, std::int64_t channels, std::int64_t inner,
                   const T* dy, T* db, bool accumulate) {
  check_bias(outer, channels, inner);
  // An empty batch still writes zeros (or leaves db as is), as the CPU layers do.
  bias_gradient_kernel<<<static_cast<unsigned int>(channels), kBlockSize, 0, backend.activate()>>>(
      outer, channels, inner, dy, db, accumulate);
  check_launch("bias_gradient_kernel");
}

template <typename T>
void maxpool2x2_forward(CudaBackend& backend, const Pool2dShape& shape, const T* x, T* y,
                        std::int64_t* argmax) {
  check_pool2x2_shape(shape);
  const std::int64_t outputs = shape.output_size();
  if (outputs == 0) return;
  maxpool_forward_kernel<<<blocks_for(outputs), kBlockSize, 0, backend.activate()>>>(
      outputs, shape.height, shape.width, shape.out_height(), shape.out_width(), x, y, argmax);
  check_launch("maxpool_forward_kernel");
}

template <typename T>
void maxpool2x2_backward(CudaBackend& backend, const Pool2dShape& shape, const T* dy,
                         const std::int64_t* argmax, T* dx) {
  check_pool2x2_shape(shape);
  const std::int64_t inputs = shape.input_size(), outputs = shape.output_size();
  if (inputs == 0) return;
  const cudaStream_t stream = backend.activate();
  const std::size_t bytes = static_cast<std::size_t>(inputs) * sizeof(T);
  check_cuda(cudaMemsetAsync(dx, 0, bytes, stream), "cudaMemsetAsync(" + std::to_string(bytes) + " bytes)");
  maxpool_backward_kernel<<<blocks_for(outputs), kBlockSize, 0, stream>>>(outputs, dy, argmax, dx);
  check_launch("maxpool_backward_kernel");
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                           \
  template void bias_broadcast<T>(CudaBackend&, std::int64_t, std::int64_t, std::int64_t, const T*, T*, \
                                  bool);                                                                \
  template void bias_gradient<T>(CudaBackend&, std::int64_t, std::int64_t, std::int64_t, const T*, T*,  \
                                 bool);                                                                 \
  template void maxpool2x2_forward<T>(CudaBackend&, const Pool2dShape&, const T*, T*, std::int64_t*);   \
  template void maxpool2x2_backward<T>(CudaBackend&, const Pool2dShape&, const T*, const std::int64_t*, T*);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real::gpu
