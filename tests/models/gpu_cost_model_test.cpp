// CostModel on GPU hosts (gpu_kernels.hpp): GPU type inference, wave quantisation, GEMM and
// attention kernel sums, launch overheads, precedence of a measured calibration, against
// hand-derived numbers. Figures: A100 108 SMs, 256x128 tiles, GEMMs at 267.9 / 312 of peak,
// flash forward 0.73, backward 0.63, 2.555 us per kernel and memory-bound kernels streaming at
// 1742 GB/s (sources in gpu_kernels.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/gpu_kernels.hpp"
#include "strata/models/cost/hardware.hpp"

namespace strata {
namespace {

constexpr double kLaunch = 2.555e-6;  // s per kernel (A100)
constexpr double kHopperLaunch = 2.433e-6;
constexpr double kA100Gemm = 267.9e12;  // FLOP/s: 312e12 x 267.9 / 312
constexpr double kBw = 1.742e12;        // B/s: a streaming kernel's plateau on the A100 80 GB

HostSpec a100() {
  return host_spec_from_properties("node-0",
                                   {{"gpus", "8"},
                                    {"flops_fp32", "19.5e12"},
                                    {"flops_bf16", "312e12"},
                                    {"mem_bw", "2.039e12"},
                                    {"gpu_memory", "80e9"}},
                                   19.5e12, 8);
}

Task linear(TaskKind kind, double m, double n, double k, double flops, double bytes) {
  Task task;
  task.id = "t";
  task.kind = kind;
  task.dtype = DType::bf16;
  task.flops = flops;
  task.bytes_read = bytes;
  task.attrs = {{"m", static_cast<std::int64_t>(m)},
                {"n", static_cast<std::int64_t>(n)},
                {"k", static_cast<std::int64_t>(k)}};
  return task;
}

Task attention(TaskKind kind, std::int64_t heads, std::int64_t seq, std::int64_t head_dim, bool flash) {
  Task task;
  task.id = "a";
  task.kind = kind;
  task.dtype = DType::bf16;
  const double per_gemm = 2.0 * seq * seq * head_dim * heads;
  task.flops = per_gemm * (kind == TaskKind::attention_fwd ? 2 : flash ? 5 : 4);
  task.attrs = {{"batch", std::int64_t{1}}, {"heads", heads}, {"seq", seq}, {"head_dim", head_dim}};
  if (flash) task.attrs["flash"] = std::int64_t{1};
  return task;
}

// A memory-bound task of `kind` reading and writing that many bytes, in bf16.
Task memory_task(const std::string& id, TaskKind kind, double read, double written) {
  Task task;
  task.id = id;
  task.kind = kind;
  task.dtype = DType::bf16;
  task.bytes_read = read;
  task.bytes_written = written;
  return task;
}

TEST(GpuType, InferredFromBf16PeakAndMemory) {
  EXPECT_EQ(a100().gpu, GpuType::a100_80gb);
  auto type = [](const std::string& bf16, const std::string& memory) {
    return host_spec_from_properties("h", {{"gpus", "1"}, {"flops_bf16", bf16}, {"gpu_memory", memory}}, 1e12,
                                     1)
        .gpu;
  };
  EXPECT_EQ(type("312e12", "40GiB"), GpuType::a100_40gb);
  EXPECT_EQ(type("989Tf", "80e9"), GpuType::h100_sxm);
  EXPECT_EQ(type("1e12", "80e9"), GpuType::a100_80gb);  // unknown GPU: the shipped A100 figures
  // No gpus property: a CPU host, priced by the roofline.
  EXPECT_EQ(host_spec_from_properties("cpu", {{"flops_bf16", "312e12"}}, 1e9, 4).gpu, GpuType::none);
  EXPECT_EQ(to_string(GpuType::h100_sxm), "h100-sxm");
}

TEST(GpuKernels, WaveQuantisationCountsTheLastWavesEmptySlots) {
  const GpuProfile& gpu = gpu_profile(GpuType::a100_80gb);
  // 4096 x 4096: 16 x 32 = 512 tiles of 256 x 128 (either way round) in ceil(512 / 108) = 5
  // waves of 108 SMs: 512 / 540.
  EXPECT_DOUBLE_EQ(wave_utilization(gpu, 4096, 4096), 512.0 / 540);
  // 3072 x 1152: 12 x 9 = 108 tiles of 256 x 128, one full wave.
  EXPECT_DOUBLE_EQ(wave_utilization(gpu, 3072, 1152), 1.0);
  // 257 x 128: 2 x 1 tiles of 256 x 128, or 3 x 1 of 128 x 256: the better is 3 / 108.
  EXPECT_DOUBLE_EQ(wave_utilization(gpu, 257, 128), 3.0 / 108);
  // A batched GEMM counts the tiles of every batch: 54 batches of one 256 x 256 output are
  // 54 x 2 = 108 tiles.
  EXPECT_DOUBLE_EQ(wave_utilization(gpu, 256, 256, 54), 1.0);
  EXPECT_DOUBLE_EQ(gemm_shape_efficiency(gpu, 4096, 4096), 267.9 / 312 * 512 / 540);
}

TEST(GpuCostModel, GemmRunsAtTheShapesEfficiencyPlusOneLaunch) {
  const CostModel cost;
  // One full wave (3072 x 1152), k = 4096: 2·3072·1152·4096 FLOP at 267.9 TFLOP/s; its 1 MB
  // take 0.6 us over HBM, far less.
  const double flops = 2.0 * 3072 * 1152 * 4096;
  EXPECT_NEAR(cost.compute_time(linear(TaskKind::linear_fwd, 3072, 1152, 4096, flops, 1e6), a100()),
              kLaunch + flops / kA100Gemm, 1e-15);
  // 4096 x 4096 output: 512 / 540 of that rate.
  const double f2 = 2.0 * 4096 * 4096 * 4096;
  EXPECT_NEAR(cost.compute_time(linear(TaskKind::linear_fwd, 4096, 4096, 4096, f2, 0), a100()),
              kLaunch + f2 / (kA100Gemm * 512 / 540), 1e-15);
  // Backward data of the same layer computes dX (m x k = 3072 x 4096: 12 x 32 = 384 tiles, 4
  // waves: 384 / 432); backward weight dW (k x n = 4096 x 1152: 16 x 9 = 144 tiles of 256 x 128
  // or 32 x 5 = 160 of 128 x 256, the better: 2 waves, 160 / 216).
  EXPECT_NEAR(cost.compute_time(linear(TaskKind::linear_bwd_data, 3072, 1152, 4096, flops, 0), a100()),
              kLaunch + flops / (kA100Gemm * 384 / 432), 1e-15);
  EXPECT_NEAR(cost.compute_time(linear(TaskKind::linear_bwd_weight, 3072, 1152, 4096, flops, 0), a100()),
              kLaunch + flops / (kA100Gemm * 160 / 216), 1e-15);
}

TEST(GpuCostModel, ThinGemmIsBoundByItsBytes) {
  // k = 1: 7.1 MFLOP but 1 GB to move: 1e9 B / 1.742e12 B/s.
  const CostModel cost;
  const Task task = linear(TaskKind::linear_fwd, 3072, 1152, 1, 2.0 * 3072 * 1152, 1e9);
  EXPECT_NEAR(cost.compute_time(task, a100()), kLaunch + 1e9 / kBw, 1e-15);
}

TEST(GpuCostModel, UnfusedAttentionIsTheSumOfItsKernels) {
  // 108 heads of s = 256, d = 128, bf16. Per head: scores s² x 2 B, rows s·d x 2 B.
  const double b = 108, s = 256, d = 128;
  const double scores = 2 * b * s * s, rows = 2 * b * s * d, mask = b * s * s;
  const double gemm_flops = 2 * b * s * s * d;
  // QK^T: 108 outputs of 256 x 256 = 216 tiles, 2 full waves; AV: 108 x (256 x 128) = 108
  // tiles, one wave: both at the full 267.9 TFLOP/s.
  auto gemm = [&](double bytes) { return kLaunch + std::max(gemm_flops / kA100Gemm, bytes / kBw); };
  const double forward = gemm(2 * rows + scores)                // S = QK^T
                         + kLaunch + 2 * scores / kBw           // softmax reads and writes S
                         + kLaunch + (2 * scores + mask) / kBw  // dropout and its 1-byte mask
                         + gemm(scores + 2 * rows);             // O = PV
  const CostModel cost;
  EXPECT_NEAR(cost.compute_time(attention(TaskKind::attention_fwd, 108, 256, 128, false), a100()), forward,
              1e-15);
  // Backward: four GEMMs, dropout backward (dP, mask -> dP'), softmax backward (y, dy -> dx).
  const double backward = gemm(scores + 2 * rows) + gemm(2 * rows + scores) + kLaunch +
                          (2 * scores + mask) / kBw + kLaunch + 3 * scores / kBw + gemm(scores + 2 * rows) +
                          gemm(scores + 2 * rows);
  EXPECT_NEAR(cost.compute_time(attention(TaskKind::attention_bwd, 108, 256, 128, false), a100()), backward,
              1e-15);
}

TEST(GpuCostModel, FlashAttentionIsOneKernelAtItsOwnEfficiency) {
  // 32 heads, s = 2048, d = 128: forward 2 x 2·32·2048²·128 FLOP at 0.73 x 312 TFLOP/s (its
  // Q, K, V, O bytes take 1/25 of that); backward 2.5 x as many at 0.63.
  const CostModel cost;
  const Task fwd = attention(TaskKind::attention_fwd, 32, 2048, 128, true);
  const Task bwd = attention(TaskKind::attention_bwd, 32, 2048, 128, true);
  EXPECT_NEAR(cost.compute_time(fwd, a100()), kLaunch + fwd.flops / (0.73 * 312e12), 1e-15);
  EXPECT_NEAR(cost.compute_time(bwd, a100()), kLaunch + bwd.flops / (0.63 * 312e12), 1e-15);
}

TEST(GpuCostModel, MemoryBoundKernelTakesItsBytesAndOneLaunch) {
  Task norm = memory_task("ln", TaskKind::norm_fwd, 2e6, 2e6);
  norm.flops = 5e6;  // 5e6 / (19.5e12 x 0.5) = 0.5 us: less than its bytes
  const CostModel cost;
  EXPECT_NEAR(cost.compute_time(norm, a100()), kLaunch + 4e6 / kBw, 1e-15);
  // The same host without a GPU type: the roofline at the calibration's 0.8, no launch.
  HostSpec cpu = a100();
  cpu.gpu = GpuType::none;
  EXPECT_NEAR(cost.compute_time(norm, cpu), 4e6 / (2.039e12 * 0.8), 1e-15);
}

TEST(GpuCostModel, SmallMemoryBoundKernelsDoNotReachStreamingBandwidth) {
  // a + V / b with a = 2.555 us and b = 1742 GB/s, over 2039 GB/s: 1 MB takes 3.129 us
  // (0.157), 100 MB 59.96 us (0.818), 1 GB 576.6 us (0.851).
  const GpuProfile& gpu = gpu_profile(GpuType::a100_80gb);
  EXPECT_NEAR(memory_kernel_efficiency(gpu, 1e6, 2.039e12), 1e6 / (2.039e12 * (kLaunch + 1e6 / kBw)), 1e-12);
  EXPECT_NEAR(memory_kernel_efficiency(gpu, 1e6, 2.039e12), 0.157, 5e-4);
  EXPECT_NEAR(memory_kernel_efficiency(gpu, 1e8, 2.039e12), 0.818, 5e-4);
  EXPECT_NEAR(memory_kernel_efficiency(gpu, 1e9, 2.039e12), 0.851, 5e-4);
  // The measured points it is checked against (gpu-benches a100_80.txt): 1585 GB/s at 45.4 MB,
  // 1655 GB/s at 98.0 MB, within 1 %.
  EXPECT_NEAR(memory_kernel_efficiency(gpu, 45382928, 2.039e12) * 2039, 1585, 16);
  EXPECT_NEAR(memory_kernel_efficiency(gpu, 97978192, 2.039e12) * 2039, 1655, 17);
}

TEST(GpuCostModel, AFrameworksKernelsAndPassesAreLaunchedAndStreamed) {
  Task res = memory_task("res", TaskKind::elementwise, 5e6, 2e6);
  res.attrs["kernels"] = std::int64_t{2};
  EXPECT_NEAR(CostModel().compute_time(res, a100()), 2 * kLaunch + 7e6 / kBw, 1e-15);
  // A norm backward with `kernels` counts its saved input already: no extra read.
  res.kind = TaskKind::norm_bwd;
  EXPECT_NEAR(CostModel().compute_time(res, a100()), 2 * kLaunch + 7e6 / kBw, 1e-15);
  // A GEMM with the fp32 accumulation in its epilogue (no launch) and a bias reduction beside it.
  const double flops = 2.0 * 3072 * 1152 * 4096;
  Task wgrad = linear(TaskKind::linear_bwd_weight, 3072, 1152, 4096, flops, 0);
  const double alone = CostModel().compute_time(wgrad, a100());
  wgrad.attrs["pass_bytes"] = 3e7;
  wgrad.attrs["passes"] = std::int64_t{1};
  EXPECT_NEAR(CostModel().compute_time(wgrad, a100()), alone + kLaunch + 3e7 / kBw, 1e-15);
  // On a host without a GPU type the passes stream at the calibration's efficiency.
  HostSpec cpu = a100();
  cpu.gpu = GpuType::none;
  Task plain = linear(TaskKind::linear_bwd_weight, 3072, 1152, 4096, flops, 0);
  EXPECT_NEAR(CostModel().compute_time(wgrad, cpu) - CostModel().compute_time(plain, cpu),
              3e7 / (2.039e12 * 0.8), 1e-15);
}

TEST(GpuCostModel, ACausalSoftmaxReadsHalfItsScores) {
  // Megatron-LM's upper-triangular softmax: forward reads half of S, backward half of y and dy.
  const double scores = 2 * 108 * 256.0 * 256;
  Task fwd = attention(TaskKind::attention_fwd, 108, 256, 128, false);
  Task bwd = attention(TaskKind::attention_bwd, 108, 256, 128, false);
  const double full_fwd = CostModel().compute_time(fwd, a100());
  const double full_bwd = CostModel().compute_time(bwd, a100());
  fwd.attrs["causal"] = std::int64_t{1};
  bwd.attrs["causal"] = std::int64_t{1};
  EXPECT_NEAR(full_fwd - CostModel().compute_time(fwd, a100()), 0.5 * scores / kBw, 1e-15);
  EXPECT_NEAR(full_bwd - CostModel().compute_time(bwd, a100()), scores / kBw, 1e-15);
}

TEST(GpuCostModel, NormBackwardAlsoReadsItsSavedInput) {
  // dY (2 MB) read, dX (2 MB) written, and x (2 MB) read again for the mean and variance.
  Task norm = memory_task("ln", TaskKind::norm_bwd, 2e6, 2e6);
  EXPECT_NEAR(CostModel().compute_time(norm, a100()), kLaunch + 6e6 / kBw, 1e-15);
  // A residual add's backward moves what its task says.
  norm.kind = TaskKind::elementwise;
  EXPECT_NEAR(CostModel().compute_time(norm, a100()), kLaunch + 4e6 / kBw, 1e-15);
}

TEST(GpuCostModel, TaskWithoutWorkLaunchesNothing) {
  Task step;
  step.id = "step";
  step.kind = TaskKind::optimizer_step;  // a synthetic model's update: no FLOPs, no bytes
  EXPECT_DOUBLE_EQ(CostModel().compute_time(step, a100()), 0.0);
}

TEST(GpuCostModel, MeasuredCalibrationOfAKindTakesPrecedence) {
  Calibration measured = Calibration::defaults();
  measured.source = "measured.json";
  measured.flops_efficiency["linear_fwd/bf16"] = 0.5;
  const CostModel cost(measured);
  const double flops = 2.0 * 3072 * 1152 * 4096;
  // linear_fwd: the calibration's roofline, 0.5 of 312 TFLOP/s, no launch.
  EXPECT_NEAR(cost.compute_time(linear(TaskKind::linear_fwd, 3072, 1152, 4096, flops, 0), a100()),
              flops / (0.5 * 312e12), 1e-15);
  // linear_bwd_data is not named by the file: the GPU kernels (384 / 432 of 267.9 TFLOP/s).
  EXPECT_NEAR(cost.compute_time(linear(TaskKind::linear_bwd_data, 3072, 1152, 4096, flops, 0), a100()),
              kLaunch + flops / (kA100Gemm * 384 / 432), 1e-15);
  // The built-in defaults name linear kinds too (and load_calibration starts from them), but
  // they are no measurement: GPU kernels.
  EXPECT_NEAR(CostModel().compute_time(linear(TaskKind::linear_fwd, 3072, 1152, 4096, flops, 0), a100()),
              kLaunch + flops / kA100Gemm, 1e-15);
}

HostSpec h100() {
  return host_spec_from_properties(
      "h", {{"gpus", "8"}, {"flops_bf16", "989e12"}, {"mem_bw", "3.35e12"}, {"gpu_memory", "80e9"}}, 67e12,
      8);
}

// H100 GEMMs follow OpenXLA's measured table (gemm_table.cpp): at its grid points the figure
// itself, between them trilinear in log2 of m, n and k. 3072 x 1408, k = 8192 (clamped to 4096):
// m at 0.585 of the way from 2048 to 4096 (log2 3072/2048), n at 0.459 from 1024 to 2048
// (log2 1408/1024), k on 4096; TFLOP/s at the corners (m, n): (2048, 1024) 663.6,
// (2048, 2048) 752.2, (4096, 1024) 751.7, (4096, 2048) 759.4.
TEST(GpuCostModel, H100GemmsFollowTheMeasuredTable) {
  const GpuProfile& gpu = gpu_profile(GpuType::h100_sxm);
  EXPECT_DOUBLE_EQ(linear_gemm_efficiency(gpu, 4096, 4096, 4096), 780.2 / 989);
  EXPECT_DOUBLE_EQ(linear_gemm_efficiency(gpu, 2048, 1024, 2048), 535.3 / 989);
  const double fm = std::log2(3072.0 / 2048), fn = std::log2(1408.0 / 1024);
  const double tflops = (1 - fm) * ((1 - fn) * 663.6 + fn * 752.2) + fm * ((1 - fn) * 751.7 + fn * 759.4);
  const double flops = 2.0 * 3072 * 1408 * 8192;
  EXPECT_NEAR(CostModel().compute_time(linear(TaskKind::linear_fwd, 3072, 1408, 8192, flops, 0), h100()),
              kHopperLaunch + flops / (tflops * 1e12), 1e-15);
  // Beyond the grid the output's wave utilisation scales the clamped figure: 32768 x 6912 is
  // 6,912 tiles in 53 waves of 132 SMs (98.80 %), 4096 x 4096 512 tiles in 4 waves (96.97 %).
  const double k_frac = std::log2(2304.0 / 2048);  // k = 2304 between 2048 and 4096
  const double at_grid = ((1 - k_frac) * 735.6 + k_frac * 780.2) / 989;
  EXPECT_NEAR(linear_gemm_efficiency(gpu, 32768, 6912, 2304), at_grid * (6912.0 / (53 * 132)) / (512.0 / 528),
              1e-12);
  // Thin and small GEMMs are far from the peak: 1024 x 1024 x 1024 at 252.8 TFLOP/s.
  EXPECT_DOUBLE_EQ(linear_gemm_efficiency(gpu, 1024, 1024, 1024), 252.8 / 989);
  // A100 has no table: the MAMF figure times the wave utilisation, whatever k.
  const GpuProfile& a = gpu_profile(GpuType::a100_80gb);
  EXPECT_DOUBLE_EQ(linear_gemm_efficiency(a, 3072, 1152, 64), gemm_shape_efficiency(a, 3072, 1152));
}

}  // namespace
}  // namespace strata
