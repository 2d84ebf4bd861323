// Softmax cross-entropy on the GPU (kernels.cpp's formulas).
#include <cmath>
#include <string>

#include "launch.cuh"
#include "strata/real/cuda_kernels.hpp"
#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"

namespace strata::real::gpu {
namespace {

using cuda_detail::blocks_for;
using cuda_detail::check_launch;
using cuda_detail::first_index;
using cuda_detail::grid_stride;
using cuda_detail::kBlockSize;
using cuda_detail::kWarpSize;

constexpr unsigned int kFullMask = 0xffffffffU;
constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;

template <typename T>
__device__ T warp_max(T value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const T other = __shfl_xor_sync(kFullMask, value, offset);
    value = other > value ? other : value;
  }
  return value;
}

template <typename T>
__device__ T warp_sum(T value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

// A single block: warp w takes rows w, w + kWarpsPerBlock, ...; its lanes split the classes.
// Per row, as the CPU: max, p = exp(logit - max), sum, p /= sum, loss = log(sum) + max -
// logit[label] in T. The row losses add up in double, per warp in row order and then over the
// warps in warp order, so the result does not depend on scheduling.
template <typename T>
__global__ void softmax_xent_forward_kernel(std::int64_t batch, std::int64_t classes, const T* logits,
                                            const std::int32_t* labels, T* probs, T* loss) {
  __shared__ double warp_totals[kWarpsPerBlock];
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize,
            lane = static_cast<int>(threadIdx.x) % kWarpSize;
  double total = 0.0;
  for (std::int64_t row_index = warp; row_index < batch; row_index += kWarpsPerBlock) {
    const T* row = logits + row_index * classes;
    T* p = probs + row_index * classes;
    T max = row[0];
    for (std::int64_t j = lane; j < classes; j += kWarpSize) max = row[j] > max ? row[j] : max;
    max = warp_max(max);
    T sum{0};
    for (std::int64_t j = lane; j < classes; j += kWarpSize) {
      p[j] = cuda_detail::device_exp(row[j] - max);
      sum += p[j];
    }
    sum = warp_sum(sum);
    for (std::int64_t j = lane; j < classes; j += kWarpSize) p[j] /= sum;
    if (lane == 0) {
      const std::int32_t label = labels[row_index];
      const bool valid = label >= 0 && label < classes;
      total += valid ? static_cast<double>(cuda_detail::device_log(sum) + max - row[label]) : nan("");
    }
  }
  if (lane == 0) warp_totals[warp] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum_all = 0.0;
    for (int w = 0; w < kWarpsPerBlock; ++w) sum_all += warp_totals[w];
    loss[0] = static_cast<T>(sum_all / static_cast<double>(batch));
  }
}

// One thread per element: probs * inv, minus inv at the label (the CPU's two steps).
template <typename T>
__global__ void softmax_xent_backward_kernel(std::int64_t total, std::int64_t classes, const T* probs,
                                             const std::int32_t* labels, T inv_divisor, T* dlogits) {
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    T value = probs[e] * inv_divisor;
    if (labels[e / classes] == e % classes) value -= inv_divisor;
    dlogits[e] = value;
  }
}

}  // namespace

template <typename T>
void softmax_cross_entropy_forward(CudaBackend& backend, std::int64_t batch, std::int64_t classes,
                                   const T* logits, const std::int32_t* labels, T* probs, T* loss) {
  check_softmax_shape(batch, classes);
  softmax_xent_forward_kernel<<<1, kBlockSize, 0, backend.activate()>>>(batch, classes, logits, labels, probs,
                                                                        loss);
  check_launch("softmax_xent_forward_kernel");
}

template <typename T>
void softmax_cross_entropy_backward(CudaBackend& backend, std::int64_t batch, std::int64_t classes,
                                    const T* probs, const std::int32_t* labels, std::int64_t divisor,
                                    T* dlogits) {
  check_softmax_shape(batch, classes);
  STRATA_ASSERT(divisor >= 1, "softmax gradient divided by " + std::to_string(divisor));
  const std::int64_t total = batch * classes;
  const T inv_divisor = T{1} / static_cast<T>(divisor);
  softmax_xent_backward_kernel<<<blocks_for(total), kBlockSize, 0, backend.activate()>>>(
      total, classes, probs, labels, inv_divisor, dlogits);
  check_launch("softmax_xent_backward_kernel");
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                         \
  template void softmax_cross_entropy_forward<T>(CudaBackend&, std::int64_t, std::int64_t, const T*,  \
                                                 const std::int32_t*, T*, T*);                        \
  template void softmax_cross_entropy_backward<T>(CudaBackend&, std::int64_t, std::int64_t, const T*, \
                                                  const std::int32_t*, std::int64_t, T*);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real::gpu
