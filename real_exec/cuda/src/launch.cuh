// What the .cu files share: launch geometry, grid-stride indexing and device math overloads
// (private to real_exec/cuda).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda_error.hpp"

namespace strata::real::cuda_detail {

constexpr int kBlockSize = 256;
constexpr int kWarpSize = 32;
// Enough blocks to fill any current GPU several times over; grid-stride loops cover the rest.
constexpr std::int64_t kMaxBlocks = 65536;

// Blocks for one thread per element, at most kMaxBlocks. REQUIRES: n > 0.
inline unsigned int blocks_for(std::int64_t n) {
  return static_cast<unsigned int>(std::min((n + kBlockSize - 1) / kBlockSize, kMaxBlocks));
}

__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return static_cast<std::int64_t>(blockDim.x) * gridDim.x; }

// The CUDA math library's float and double functions under one name each, so that templated
// kernels call the precision they are instantiated for (as std:: overloads do on the host).
__device__ inline float device_tanh(float x) { return tanhf(x); }
__device__ inline double device_tanh(double x) { return tanh(x); }
__device__ inline float device_exp(float x) { return expf(x); }
__device__ inline double device_exp(double x) { return exp(x); }
__device__ inline float device_log(float x) { return logf(x); }
__device__ inline double device_log(double x) { return log(x); }
__device__ inline float device_sqrt(float x) { return sqrtf(x); }
__device__ inline double device_sqrt(double x) { return sqrt(x); }

}  // namespace strata::real::cuda_detail
