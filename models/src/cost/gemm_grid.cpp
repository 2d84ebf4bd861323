// GemmGrid checks and interpolation (gemm_grid.hpp).
#include "strata/models/cost/gemm_grid.hpp"

#include <algorithm>
#include <cmath>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

// The cell [lo, lo + 1] of `sizes` holding v (clamped to the grid) and v's position in it,
// measured in log v.
struct Cell {
  std::size_t lo;
  double frac;
};

Cell cell_of(const std::vector<double>& sizes, double v) {
  const double x = std::clamp(v, sizes.front(), sizes.back());
  const auto above = std::upper_bound(sizes.begin(), sizes.end(), x);
  const std::size_t lo = std::min(static_cast<std::size_t>(above - sizes.begin()), sizes.size() - 1) - 1;
  return {lo, std::clamp(std::log(x / sizes[lo]) / std::log(sizes[lo + 1] / sizes[lo]), 0.0, 1.0)};
}

}  // namespace

std::string gemm_grid_problem(const GemmGrid& grid) {
  const std::size_t n = grid.sizes.size();
  if (n < 2) return "expected at least 2 sizes, got " + std::to_string(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double s = grid.sizes[i];
    if (!(s >= 1 && s <= kGemmGridMaxSize))
      return "size " + format_number(s) + " at " + std::to_string(i) + " outside [1, " +
             format_number(kGemmGridMaxSize) + "]";
    if (i > 0 && !(s > grid.sizes[i - 1])) return "sizes are not strictly increasing at " + std::to_string(i);
  }
  if (grid.flop_per_s.size() != n * n * n)
    return "expected " + std::to_string(n * n * n) + " rates (sizes^3), got " +
           std::to_string(grid.flop_per_s.size());
  for (std::size_t i = 0; i < grid.flop_per_s.size(); ++i) {
    const double r = grid.flop_per_s[i];
    if (!(std::isfinite(r) && r > 0))
      return "rate " + format_number(r) + " at " + std::to_string(i) + " is not a positive finite FLOP/s";
  }
  return "";
}

double gemm_grid_rate(const GemmGrid& grid, double m, double n, double k) {
  STRATA_ASSERT(m >= 1 && n >= 1 && k >= 1, "gemm_grid_rate: m, n, k >= 1");
  const std::size_t size = grid.sizes.size();
  const Cell c[3] = {cell_of(grid.sizes, m), cell_of(grid.sizes, n), cell_of(grid.sizes, k)};
  double rate = 0;
  for (int corner = 0; corner < 8; ++corner) {
    double weight = 1;
    std::size_t at[3];
    for (int d = 0; d < 3; ++d) {
      const bool up = ((corner >> d) & 1) != 0;
      at[d] = c[d].lo + (up ? 1 : 0);
      weight *= up ? c[d].frac : 1 - c[d].frac;
    }
    if (weight > 0) rate += weight * grid.flop_per_s[(at[0] * size + at[1]) * size + at[2]];
  }
  return rate;
}

}  // namespace models
}  // namespace strata
