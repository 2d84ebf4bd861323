// measure_cuda_gemm_grids (cuda_calibrate.hpp): the GEMM grid `strata calibrate --device cuda`
// writes. Skips without a GPU. The checks are what holds on any tensor-core GPU: every shape
// measured, bf16 and fp16 far above fp32 on large shapes, large shapes far above small ones.
#include <gtest/gtest.h>

#include "strata/models/cost/gemm_grid.hpp"
#include "strata/real/cuda_backend.hpp"
#include "strata/real/cuda_calibrate.hpp"

namespace strata::real {
namespace {

TEST(CudaCalibrate, GemmGridHasEveryShapeOfEachDtype) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::map<std::string, GemmGrid> grids = measure_cuda_gemm_grids(0);
  ASSERT_EQ(grids.size(), 3u);
  for (const char* dtype : {"bf16", "fp16", "fp32"}) {
    SCOPED_TRACE(dtype);
    ASSERT_EQ(grids.count(dtype), 1u);
    const GemmGrid& g = grids.at(dtype);
    EXPECT_EQ(gemm_grid_problem(g), "");
    EXPECT_EQ(g.sizes, (std::vector<double>{256, 512, 1024, 2048, 4096, 8192, 16384}));
    // Large shapes fill the GPU; 256^3 is a few microseconds of launch-bound work.
    EXPECT_GT(gemm_grid_rate(g, 8192, 8192, 8192), 5 * gemm_grid_rate(g, 256, 256, 256));
  }
  // Tensor cores: bf16 and fp16 at least 4x plain fp32 (A100 312 vs 19.5 TFLOP/s peak, H100 989
  // vs 67).
  for (const char* half : {"bf16", "fp16"})
    EXPECT_GT(gemm_grid_rate(grids.at(half), 8192, 8192, 8192),
              4 * gemm_grid_rate(grids.at("fp32"), 8192, 8192, 8192))
        << half;
}

}  // namespace
}  // namespace strata::real
