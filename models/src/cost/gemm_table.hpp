// Measured GEMM efficiencies by shape (gpu_kernels.hpp uses them where a GPU type has them).
#pragma once

#include "strata/models/cost/gemm_grid.hpp"

namespace strata {
inline namespace models {

// The fraction of the dense bf16 tensor-core peak that one cuBLAS-class GEMM of an m x n output
// and inner dimension k achieved on an H100 SXM, interpolated from OpenXLA's measured matmul
// table (gemm_table.cpp cites it): trilinear in log2(m), log2(n), log2(k) over its grid 256 ..
// 4096 in each, each dimension clamped to that range. The kernel's own time only (the table's
// figures are median kernel durations; launch is the caller's). REQUIRES: m, n, k >= 1.
double h100_sxm_gemm_efficiency(double m, double n, double k);

// That table as FLOP/s.
const GemmGrid& h100_sxm_gemm_grid();

// The edges of that grid, for callers that scale beyond it.
inline constexpr double kGemmTableMin = 256;
inline constexpr double kGemmTableMax = 4096;

}  // namespace models
}  // namespace strata
