// H100 SXM GEMM efficiencies by shape, from a published measurement (gemm_table.hpp).
//
// Source: OpenXLA, xla/service/gpu/model/default_matmul_perf_table.txtpb (Apache License 2.0),
// as of commit ad6eaee1b2f13931e3ceb26dc50bf3ac6b425496 (10 July 2026), device key "sm_90",
// entries with b = 1 and flops key "bf16xbf16->bf16". XLA's matmul_perf_table_gen
// (xla/tools/matmul_perf_table_gen.cc) runs each dot 5 times under a kernel tracer and records
// the median kernel time; the table stores FLOP/s = 2·m·n·k / that time. The figures below are
// those FLOP/s in TFLOP/s to four significant digits. The device is an H100 of the SXM class:
// the table's best bf16 figure, 804 TFLOP/s (b = 2), exceeds the PCIe card's 756 TFLOP/s peak;
// efficiencies are taken against the SXM's 989 TFLOP/s (NVIDIA H100 Tensor Core GPU
// Architecture whitepaper, 2022). Its 4096^3 figure, 780 TFLOP/s (78.9 %), agrees with the
// maximum achievable matmul FLOP/s measured independently (S. Bekman's MAMF, 792.1 TFLOP/s,
// gpu_kernels.cpp).
#include "gemm_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "strata/models/cost/gemm_grid.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

struct Point {
  int m, n, k;
  double tflops;
};

constexpr double kH100SxmPeakTflops = 989;
constexpr int kGrid = 5;  // 256, 512, 1024, 2048, 4096 in each of m, n, k

// Sorted by m, then n, then k: entry (i, j, l) of the grid is kH100[(i * 5 + j) * 5 + l].
constexpr std::array<Point, kGrid* kGrid* kGrid> kH100 = {{
    {256, 256, 256, 6.722},    {256, 256, 512, 11.46},    {256, 256, 1024, 18.89},
    {256, 256, 2048, 31.9},    {256, 256, 4096, 90.93},   {256, 512, 256, 12.37},
    {256, 512, 512, 23.05},    {256, 512, 1024, 41.12},   {256, 512, 2048, 63.91},
    {256, 512, 4096, 93.08},   {256, 1024, 256, 23.69},   {256, 1024, 512, 43.8},
    {256, 1024, 1024, 75.07},  {256, 1024, 2048, 119.6},  {256, 1024, 4096, 177.1},
    {256, 2048, 256, 43.8},    {256, 2048, 512, 83.06},   {256, 2048, 1024, 141.6},
    {256, 2048, 2048, 222.6},  {256, 2048, 4096, 296.3},  {256, 4096, 256, 82.65},
    {256, 4096, 512, 146.2},   {256, 4096, 1024, 237.6},  {256, 4096, 2048, 345.9},
    {256, 4096, 4096, 418.4},  {512, 256, 256, 12.34},    {512, 256, 512, 23.05},
    {512, 256, 1024, 41.53},   {512, 256, 2048, 61.68},   {512, 256, 4096, 92.82},
    {512, 512, 256, 23.63},    {512, 512, 512, 43.58},    {512, 512, 1024, 73.42},
    {512, 512, 2048, 116.3},   {512, 512, 4096, 187.5},   {512, 1024, 256, 45.71},
    {512, 1024, 512, 85.38},   {512, 1024, 1024, 146.5},  {512, 1024, 2048, 231},
    {512, 1024, 4096, 300.9},  {512, 2048, 256, 84.52},   {512, 2048, 512, 147.5},
    {512, 2048, 1024, 241.8},  {512, 2048, 2048, 342.8},  {512, 2048, 4096, 460.4},
    {512, 4096, 256, 141.3},   {512, 4096, 512, 243.6},   {512, 4096, 1024, 381.3},
    {512, 4096, 2048, 530},    {512, 4096, 4096, 661.6},  {1024, 256, 256, 23.56},
    {1024, 256, 512, 43.69},   {1024, 256, 1024, 69.76},  {1024, 256, 2048, 116.1},
    {1024, 256, 4096, 187.2},  {1024, 512, 256, 45.47},   {1024, 512, 512, 84.31},
    {1024, 512, 1024, 144},    {1024, 512, 2048, 235.5},  {1024, 512, 4096, 312.1},
    {1024, 1024, 256, 80.85},  {1024, 1024, 512, 149.1},  {1024, 1024, 1024, 252.8},
    {1024, 1024, 2048, 359.8}, {1024, 1024, 4096, 472.6}, {1024, 2048, 256, 144.3},
    {1024, 2048, 512, 244},    {1024, 2048, 1024, 384},   {1024, 2048, 2048, 529.5},
    {1024, 2048, 4096, 665.7}, {1024, 4096, 256, 219.7},  {1024, 4096, 512, 347.7},
    {1024, 4096, 1024, 494.4}, {1024, 4096, 2048, 639.1}, {1024, 4096, 4096, 751.9},
    {2048, 256, 256, 45.34},   {2048, 256, 512, 78.95},   {2048, 256, 1024, 142.8},
    {2048, 256, 2048, 231.4},  {2048, 256, 4096, 333.9},  {2048, 512, 256, 84.31},
    {2048, 512, 512, 150.1},   {2048, 512, 1024, 257.6},  {2048, 512, 2048, 354.1},
    {2048, 512, 4096, 458.1},  {2048, 1024, 256, 145.6},  {2048, 1024, 512, 244.9},
    {2048, 1024, 1024, 386.8}, {2048, 1024, 2048, 535.3}, {2048, 1024, 4096, 663.6},
    {2048, 2048, 256, 219.7},  {2048, 2048, 512, 348.6},  {2048, 2048, 1024, 498},
    {2048, 2048, 2048, 641},   {2048, 2048, 4096, 752.2}, {2048, 4096, 256, 303.3},
    {2048, 4096, 512, 449.3},  {2048, 4096, 1024, 596.5}, {2048, 4096, 2048, 725.5},
    {2048, 4096, 4096, 752.3}, {4096, 256, 256, 84.52},   {4096, 256, 512, 144.9},
    {4096, 256, 1024, 229},    {4096, 256, 2048, 314.3},  {4096, 256, 4096, 398.9},
    {4096, 512, 256, 141.9},   {4096, 512, 512, 240.1},   {4096, 512, 1024, 377.5},
    {4096, 512, 2048, 531},    {4096, 512, 4096, 662},    {4096, 1024, 256, 223},
    {4096, 1024, 512, 354.6},  {4096, 1024, 1024, 497.6}, {4096, 1024, 2048, 643.7},
    {4096, 1024, 4096, 751.7}, {4096, 2048, 256, 308.2},  {4096, 2048, 512, 449.6},
    {4096, 2048, 1024, 604.6}, {4096, 2048, 2048, 727.5}, {4096, 2048, 4096, 759.4},
    {4096, 4096, 256, 398.6},  {4096, 4096, 512, 551.8},  {4096, 4096, 1024, 685.2},
    {4096, 4096, 2048, 735.6}, {4096, 4096, 4096, 780.2},
}};

}  // namespace

// The table as a GemmGrid of FLOP/s, built once.
const GemmGrid& h100_sxm_gemm_grid() {
  static const GemmGrid grid = [] {
    GemmGrid g;
    for (int i = 0; i < kGrid; ++i) g.sizes.push_back(kGemmTableMin * (1 << i));
    for (std::size_t e = 0; e < kH100.size(); ++e) {
      const Point& p = kH100[e];
      const std::size_t n = g.sizes.size();
      STRATA_ASSERT(p.m == g.sizes[e / (n * n)] && p.n == g.sizes[e / n % n] && p.k == g.sizes[e % n],
                    "the H100 table is sorted by m, n, k");
      g.flop_per_s.push_back(p.tflops * 1e12);
    }
    return g;
  }();
  return grid;
}

double h100_sxm_gemm_efficiency(double m, double n, double k) {
  STRATA_ASSERT(m >= 1 && n >= 1 && k >= 1, "h100_sxm_gemm_efficiency: m, n, k >= 1");
  return gemm_grid_rate(h100_sxm_gemm_grid(), m, n, k) / (kH100SxmPeakTflops * 1e12);
}

}  // namespace models
}  // namespace strata
