// GemmGrid (gemm_grid.hpp): its checks, its interpolation against hand-derived values, the
// calibration's "gemm" table read and written, and the cost model pricing a GPU host's linear
// GEMMs from a measured grid (`strata calibrate --device cuda` writes one per dtype).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/gemm_grid.hpp"
#include "strata/models/cost/gpu_kernels.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

// Sizes 256, 1024, 4096; the rate at (i, j, l) is (100 (i + 1) + 10 (j + 1) + (l + 1)) TFLOP/s,
// so that every corner is told apart.
GemmGrid three_by_three() {
  GemmGrid g;
  g.sizes = {256, 1024, 4096};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 3; ++l) g.flop_per_s.push_back((100.0 * (i + 1) + 10.0 * (j + 1) + (l + 1)) * 1e12);
  return g;
}

TEST(GemmGrid, RateIsTheMeasurementAtItsPointsAndLogLinearBetween) {
  const GemmGrid g = three_by_three();
  ASSERT_EQ(gemm_grid_problem(g), "");
  EXPECT_DOUBLE_EQ(gemm_grid_rate(g, 256, 256, 256), 111e12);
  EXPECT_DOUBLE_EQ(gemm_grid_rate(g, 1024, 256, 4096), 213e12);
  EXPECT_DOUBLE_EQ(gemm_grid_rate(g, 4096, 4096, 4096), 333e12);
  // 512 is halfway from 256 to 1024 in log m: the mean of 111 and 211.
  EXPECT_NEAR(gemm_grid_rate(g, 512, 256, 256), 161e12, 1e3);
  // 2048 halfway in log n and log k, m on 1024: 200 + mean(20, 30) + mean(2, 3).
  EXPECT_NEAR(gemm_grid_rate(g, 1024, 2048, 2048), 227.5e12, 1e3);
  // 3072 is log(3)/log(4) = 0.792 of the way from 1024 to 4096.
  const double f = std::log(3.0) / std::log(4.0);
  EXPECT_NEAR(gemm_grid_rate(g, 3072, 256, 256), (211 + f * 100) * 1e12, 1e3);
  // Each dimension is clamped to the grid.
  EXPECT_DOUBLE_EQ(gemm_grid_rate(g, 1, 1, 1), 111e12);
  EXPECT_DOUBLE_EQ(gemm_grid_rate(g, 1e6, 1e6, 100), 331e12);
}

TEST(GemmGrid, ProblemsAreNamed) {
  GemmGrid g = three_by_three();
  g.sizes = {256};
  EXPECT_EQ(gemm_grid_problem(g), "expected at least 2 sizes, got 1");
  g = three_by_three();
  g.sizes = {256, 256, 4096};
  EXPECT_EQ(gemm_grid_problem(g), "sizes are not strictly increasing at 1");
  g.sizes = {0, 256, 4096};
  EXPECT_EQ(gemm_grid_problem(g), "size 0 at 0 outside [1, 1048576]");
  g = three_by_three();
  g.flop_per_s.pop_back();
  EXPECT_EQ(gemm_grid_problem(g), "expected 27 rates (sizes^3), got 26");
  g = three_by_three();
  g.flop_per_s[5] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(gemm_grid_problem(g), "rate nan at 5 is not a positive finite FLOP/s");
  g.flop_per_s[5] = -1;
  EXPECT_EQ(gemm_grid_problem(g), "rate -1 at 5 is not a positive finite FLOP/s");
}

// The shipped H100 SXM table is a grid too, 256 .. 4096 in each of m, n, k.
TEST(GemmGrid, ShippedH100TableIsAValidGrid) {
  const GemmGrid* h100 = shipped_gemm_grid(GpuType::h100_sxm);
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(gemm_grid_problem(*h100), "");
  EXPECT_EQ(h100->sizes, (std::vector<double>{256, 512, 1024, 2048, 4096}));
  EXPECT_DOUBLE_EQ(gemm_grid_rate(*h100, 4096, 4096, 4096), 780.2e12);
  EXPECT_EQ(shipped_gemm_grid(GpuType::a100_80gb), nullptr);
}

HostSpec h100() {
  return host_spec_from_properties(
      "h", {{"gpus", "8"}, {"flops_bf16", "989e12"}, {"mem_bw", "3.35e12"}, {"gpu_memory", "80e9"}}, 67e12,
      8);
}

Task linear_fwd(double m, double n, double k, DType dtype = DType::bf16) {
  Task task;
  task.id = "t";
  task.kind = TaskKind::linear_fwd;
  task.dtype = dtype;
  task.flops = 2 * m * n * k;
  task.attrs = {{"m", static_cast<std::int64_t>(m)},
                {"n", static_cast<std::int64_t>(n)},
                {"k", static_cast<std::int64_t>(k)}};
  return task;
}

constexpr double kLaunch = 2.433e-6;  // s per kernel on the H100 (gpu_kernels.cpp)

TEST(GemmGrid, CalibrationGridPricesTheLinearGemmsOfItsDtype) {
  Calibration measured = Calibration::defaults();
  measured.source = "measured.json";
  measured.gemm["bf16"] = three_by_three();
  // A measured roofline entry for linear_fwd does not take the GEMM from the grid.
  measured.flops_efficiency["linear_fwd/bf16"] = 0.25;
  const CostModel cost(measured);
  // 1024 x 1024 x 1024: 222 TFLOP/s from the grid, plus one launch; 1024 x 1024 tiles fill 32 of
  // 132 SMs either way, so the clamp-and-scale beyond the grid changes nothing within it.
  const Task t = linear_fwd(1024, 1024, 1024);
  EXPECT_NEAR(cost.compute_time(t, h100()), kLaunch + t.flops / 222e12, 1e-15);
  // Without the grid the calibration's roofline prices it: 0.25 of 989 TFLOP/s, no launch.
  measured.gemm.clear();
  EXPECT_NEAR(CostModel(measured).compute_time(t, h100()), t.flops / (0.25 * 989e12), 1e-15);
  // fp16 has no grid in the calibration: the shipped table prices it (the H100 table is
  // measured in bf16 and the two run at the same tensor-core rate). The host has no fp16 peak
  // of its own: host_spec_from_properties gives it the bf16 one.
  Calibration bf16_only = Calibration::defaults();
  bf16_only.gemm["bf16"] = three_by_three();
  const Task half = linear_fwd(4096, 4096, 4096, DType::fp16);
  EXPECT_NEAR(CostModel(bf16_only).compute_time(half, h100()), kLaunch + half.flops / 780.2e12, 1e-15);
}

TEST(GemmGrid, RatesAboveTheHostsPeakAreCappedAtIt) {
  Calibration fast = Calibration::defaults();
  fast.gemm["bf16"] = three_by_three();
  for (double& r : fast.gemm["bf16"].flop_per_s) r *= 10;  // 1,110 .. 3,330 TFLOP/s: above 989
  const Task t = linear_fwd(4096, 4096, 4096);
  EXPECT_NEAR(CostModel(fast).compute_time(t, h100()), kLaunch + t.flops / 989e12, 1e-15);
}

// A grid measured faster than a host's peak comes from another GPU: refused, naming both.
TEST(GemmGrid, GridFasterThanTheHostsPeakIsRefused) {
  Calibration c = Calibration::defaults();
  c.source = "h200.json";
  c.gemm["bf16"] = three_by_three();  // up to 333 TFLOP/s
  const HostSpec a100 = host_spec_from_properties(
      "node-0", {{"gpus", "8"}, {"flops_bf16", "312e12"}, {"mem_bw", "2.039e12"}, {"gpu_memory", "80e9"}},
      19.5e12, 8);
  try {
    check_calibration_for_hosts(c, {a100});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "h200.json: /gemm/bf16: measured up to 333 TFLOP/s, above the 312 TFLOP/s bf16 peak of host "
                 "'node-0' (a100-80gb): the grid comes from a faster GPU than the platform's");
  }
  EXPECT_NO_THROW(check_calibration_for_hosts(c, {h100()}));
  // A CPU host never prices a GEMM from a grid: not checked.
  EXPECT_NO_THROW(
      check_calibration_for_hosts(c, {host_spec_from_properties("cpu", {{"flops_bf16", "1e9"}}, 1e9, 4)}));
}

class GemmCalibrationFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
    std::ofstream(path) << text;
    return path.string();
  }

  std::string error_of(const std::string& gemm) {
    const std::string path =
        write("gemm.json", R"({"schema_version": 2, "format": "strata-calibration", "gemm": )" + gemm + "}");
    try {
      load_calibration(path);
    } catch (const InputError& e) {
      return std::string(e.what()).substr(path.size() + 2);
    }
    return "no error";
  }
};

TEST_F(GemmCalibrationFile, GridReadsBackTheSame) {
  Calibration c = Calibration::defaults();
  c.gemm["bf16"] = three_by_three();
  c.gemm["fp32"] = GemmGrid{{1, 3}, {1e9, 2e9, 3e9, 4e9, 5e9, 6e9, 7e9, 8.125e9}};
  const std::string text = calibration_to_json(c, "gpu", "2026-11-26T00:00:00Z");
  const Calibration back = load_calibration(write("round.json", text));
  ASSERT_EQ(back.gemm.size(), 2u);
  EXPECT_EQ(back.gemm.at("bf16").sizes, c.gemm.at("bf16").sizes);
  EXPECT_EQ(back.gemm.at("bf16").flop_per_s, c.gemm.at("bf16").flop_per_s);
  EXPECT_EQ(back.gemm.at("fp32").flop_per_s, c.gemm.at("fp32").flop_per_s);
  EXPECT_EQ(calibration_to_json(back, "gpu", "2026-11-26T00:00:00Z"), text);
}

TEST_F(GemmCalibrationFile, BadGridsAreRejectedWithTheirPlace) {
  EXPECT_EQ(error_of("[]"), "/gemm: expected an object");
  EXPECT_EQ(error_of(R"({"bf17": {}})"), "/gemm/bf17: unknown dtype 'bf17' (bf16, fp16, fp32, fp64)");
  EXPECT_EQ(error_of(R"({"bf16": {"sizes": [1, 2]}})"), "/gemm/bf16/flop_per_s: missing");
  EXPECT_EQ(error_of(R"({"bf16": {"sizes": [1, "2"], "flop_per_s": []}})"),
            R"(/gemm/bf16/sizes/1: expected a number, got "2")");
  EXPECT_EQ(error_of(R"({"bf16": {"sizes": [2, 1], "flop_per_s": [1, 1, 1, 1, 1, 1, 1, 1]}})"),
            "/gemm/bf16: sizes are not strictly increasing at 1");
  EXPECT_EQ(error_of(R"({"bf16": {"sizes": [1, 2], "flop_per_s": [1, 1, 1]}})"),
            "/gemm/bf16: expected 8 rates (sizes^3), got 3");
  EXPECT_EQ(error_of(R"({"bf16": {"sizes": [1, 2], "flop_per_s": [1, 1, 1, 1, 1, 1, 1, 0]}})"),
            "/gemm/bf16: rate 0 at 7 is not a positive finite FLOP/s");
  EXPECT_EQ(error_of(R"({"bf16": {"sizes": [1, 2], "flop_per_s": [], "k": 1}})"),
            "/gemm/bf16/k: unknown key");
}

}  // namespace
}  // namespace strata
