// GemmGrid: the measured rate of one GEMM by shape, on a grid of sizes in m, n and k.
//
// `strata calibrate --device cuda` measures one per dtype (cuBLAS on the GPU it runs on) and
// writes it to the calibration's "gemm" table; the cost model prices a linear layer's GEMM on a
// GPU host from it (gpu_kernels.hpp), and the shipped H100 SXM table (gemm_table.cpp) is one too.
#pragma once

#include <string>
#include <vector>

namespace strata {
inline namespace models {

struct GemmGrid {
  // The sizes measured in each of m, n and k: strictly increasing, at least 2, each in
  // [1, kGemmGridMaxSize].
  std::vector<double> sizes;
  // sizes.size()^3 rates (FLOP/s = 2·m·n·k / kernel seconds): the entry of m = sizes[i],
  // n = sizes[j], k = sizes[l] is flop_per_s[(i·N + j)·N + l], N = sizes.size().
  std::vector<double> flop_per_s;

  bool empty() const { return sizes.empty(); }
};

inline constexpr double kGemmGridMaxSize = 1 << 20;

// What is wrong with a grid ("" when nothing): the sizes and rates as above, every rate finite
// and > 0.
std::string gemm_grid_problem(const GemmGrid& grid);

// FLOP/s of an m x n output with inner dimension k: trilinear in log m, log n and log k between
// the grid's points, each dimension clamped to [sizes.front(), sizes.back()]. O(log N).
// REQUIRES: gemm_grid_problem(grid) is empty; m, n, k >= 1.
double gemm_grid_rate(const GemmGrid& grid, double m, double n, double k);

}  // namespace models
}  // namespace strata
