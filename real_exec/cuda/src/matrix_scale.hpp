// A kernel that CudaBackend (a host-compiled file) launches (private to real_exec/cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::real::cuda_detail {

// C[rows, cols] (row-major, leading dimension ld) = beta * C, or 0 without reading C when beta
// is 0: what BLAS defines a GEMM with k == 0 or alpha == 0 to do. CudaBackend does these itself
// rather than rely on cuBLAS's undocumented handling of them. REQUIRES: rows, cols > 0, ld >= cols.
template <typename T>
void scale_matrix(cudaStream_t stream, std::int64_t rows, std::int64_t cols, T beta, T* c, std::int64_t ld);

}  // namespace strata::real::cuda_detail
