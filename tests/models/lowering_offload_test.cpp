// Optimizer offload (--set offload=1, ZeRO-Offload) lowered to Plans: the three tasks that
// replace a worker's GPU optimizer step, their bytes and dependencies, the host-memory state
// buffer, and how the cost model prices the two new kinds of work.
#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/host_offload.hpp"
#include "strata/models/cost/memory_model.hpp"

namespace strata {
namespace {

using lowering_test::cat;
using lowering_test::config_of;
using lowering_test::count_ids;
using lowering_test::has;
using lowering_test::index_of;
using lowering_test::input_error;
using lowering_test::linear_model;
using lowering_test::run_unit_durations;

// Persistent bytes of a worker in its device memory, and in its host memory.
double device_bytes(const Plan& plan, WorkerId worker, bool on_host = false) {
  double sum = 0;
  for (const Buffer& b : plan.buffers())
    if (b.persistent && b.worker == worker && b.on_host == on_host) sum += b.bytes;
  return sum;
}

// 3 linear layers of 64 x 64 + 64 = 4,160 parameters, one bucket per layer, dp = 4, fp32 Adam
// (K = 8 B of state per parameter), two iterations.
StrategyConfig offload_config(int zero) {
  StrategyConfig config = config_of(4, 1, 1, 2);
  config.bucket_bytes = 0;
  config.iterations = 2;
  config.zero = zero;
  config.offload = true;
  return config;
}

constexpr double kParams = 3 * 4160.0;  // Ψ of the worker's stage
constexpr double kShard = kParams / 4;  // 3,120 parameters per dp rank

TEST(LoweringOffload, EachWorkerCopiesItsGradientShardOutStepsOnTheHostAndCopiesItsParametersBack) {
  const StrategyConfig config = offload_config(1);
  StrategyConfig plain_config = config;
  plain_config.offload = false;
  const Plan plain = lower(linear_model(3), plain_config);
  const Plan plan = lower(linear_model(3), config);
  // Two more tasks per worker and iteration: 4 workers x 2 iterations.
  EXPECT_EQ(plan.size(), plain.size() + 2 * 4 * 2);
  EXPECT_EQ(count_ids(plan, R"(it\d/dp\d/pp0/tp0/opt/d2h)"), 8u);
  EXPECT_EQ(count_ids(plan, R"(it\d/dp\d/pp0/tp0/opt/h2d)"), 8u);
  const Task& d2h = plan.task(index_of(plan, "it0/dp2/pp0/tp0/opt/d2h"));
  const Task& step = plan.task(index_of(plan, "it0/dp2/pp0/tp0/opt"));
  const Task& h2d = plan.task(index_of(plan, "it0/dp2/pp0/tp0/opt/h2d"));
  EXPECT_EQ(d2h.kind, TaskKind::host_copy);
  EXPECT_EQ(h2d.kind, TaskKind::host_copy);
  EXPECT_EQ(step.kind, TaskKind::optimizer_step);
  EXPECT_EQ(d2h.attr_int("to_host"), 1);
  EXPECT_EQ(h2d.attr_int("to_host"), 0);
  EXPECT_EQ(step.attr_int("on_host"), 1);
  EXPECT_EQ(d2h.worker, 2);
  // The gradient shard out and the parameter shard back: 3,120 x 4 B (fp32) = 12,480 B each.
  EXPECT_DOUBLE_EQ(d2h.bytes_read, 12480);
  EXPECT_DOUBLE_EQ(d2h.bytes_written, 0);
  EXPECT_DOUBLE_EQ(h2d.bytes_written, 12480);
  EXPECT_DOUBLE_EQ(h2d.bytes_read, 0);
  // CPU Adam streams 28 B per parameter in host memory: 3,120 x 28 = 87,360 B; no GPU FLOPs.
  EXPECT_DOUBLE_EQ(step.bytes_read + step.bytes_written, 87360);
  EXPECT_DOUBLE_EQ(step.flops, 0);
  // Wired where the GPU step was: after every bucket's reduce-scatter, before the gathers.
  for (int b = 0; b < 3; ++b) EXPECT_TRUE(has(d2h.data_deps, index_of(plan, cat("it0/pp0/tp0/rs/b", b))));
  EXPECT_TRUE(has(step.data_deps, index_of(plan, "it0/dp2/pp0/tp0/opt/d2h")));
  EXPECT_TRUE(has(h2d.data_deps, index_of(plan, "it0/dp2/pp0/tp0/opt")));
  const Task& ag = plan.task(index_of(plan, "it0/pp0/tp0/ag/b0"));
  for (int d = 0; d < 4; ++d) {
    EXPECT_TRUE(has(ag.data_deps, index_of(plan, cat("it0/dp", d) + "/pp0/tp0/opt/h2d")));
    EXPECT_FALSE(has(ag.data_deps, index_of(plan, cat("it0/dp", d) + "/pp0/tp0/opt")));
  }
  // The next iteration starts after the parameters are back on the device.
  EXPECT_TRUE(has(plan.task(index_of(plan, "it1/dp2/pp0/tp0/mb0/fwd/fc0")).control_deps,
                  index_of(plan, "it0/dp2/pp0/tp0/opt/h2d")));
  EXPECT_TRUE(run_unit_durations(plan).finished);
}

TEST(LoweringOffload, OptimizerStateLivesInHostMemoryAsTheMemoryModelCounts) {
  const Plan plan = lower(linear_model(3), offload_config(1));
  StrategyConfig plain_config = offload_config(1);
  plain_config.offload = false;
  const Plan plain = lower(linear_model(3), plain_config);
  // Device: fp32 weights and gradients whole (stage 1), 4Ψ + 4Ψ; host: the 8Ψ/4 state shard
  // (24,960 B), which without offload is on the device.
  EXPECT_DOUBLE_EQ(device_bytes(plan, 1), 8 * kParams);
  EXPECT_DOUBLE_EQ(device_bytes(plan, 1, true), 8 * kShard);
  EXPECT_DOUBLE_EQ(device_bytes(plain, 1) - device_bytes(plan, 1), 8 * kShard);
  const MemoryBreakdown model = model_state_memory(kParams, offload_config(1));
  EXPECT_DOUBLE_EQ(device_bytes(plan, 1), model.total);
  EXPECT_DOUBLE_EQ(device_bytes(plan, 1, true), model.host_optimizer);
  for (int zero : {2, 3}) {
    const Plan sharded = lower(linear_model(3), offload_config(zero));
    const MemoryBreakdown m = model_state_memory(kParams, offload_config(zero));
    EXPECT_DOUBLE_EQ(device_bytes(sharded, 0), m.total) << "zero=" << zero;
    EXPECT_DOUBLE_EQ(device_bytes(sharded, 0, true), m.host_optimizer) << "zero=" << zero;
  }
}

TEST(LoweringOffload, EveryZeroStageRunsToTheEnd) {
  for (int zero : {1, 2, 3}) {
    const Plan plan = lower(linear_model(3), offload_config(zero));
    EXPECT_TRUE(run_unit_durations(plan).finished) << "zero=" << zero;
    EXPECT_EQ(count_ids(plan, R"(it\d/dp\d/pp0/tp0/opt/d2h)"), 8u) << "zero=" << zero;
  }
  // ZeRO-3: the next iteration's first gather of parameters waits for the copy back.
  const Plan three = lower(linear_model(3), offload_config(3));
  bool waits = false;
  const TaskIndex h2d = index_of(three, "it0/dp0/pp0/tp0/opt/h2d");
  for (const Task& t : three.tasks())
    if (t.kind == TaskKind::allgather && t.iteration == 1 && has(t.data_deps, h2d)) waits = true;
  EXPECT_TRUE(waits);
  // With pipeline and tensor parallelism each worker steps its own stage's shard.
  StrategyConfig config = config_of(2, 1, 3, 3);
  config.zero = 1;
  config.offload = true;
  const Plan pipeline = lower(linear_model(3), config);
  EXPECT_EQ(count_ids(pipeline, R"(it0/dp\d/pp\d/tp0/opt/h2d)"), 6u);
  EXPECT_DOUBLE_EQ(pipeline.task(index_of(pipeline, "it0/dp1/pp2/tp0/opt/d2h")).bytes_read, 4160.0 / 2 * 4);
  EXPECT_TRUE(run_unit_durations(pipeline).finished);
}

TEST(LoweringOffload, OffloadWithoutShardingIsStillRefusedInOneLine) {
  StrategyConfig config = config_of(4, 1, 1, 2);
  config.offload = true;
  const std::string error = input_error([&] { lower(linear_model(3), config); });
  EXPECT_NE(error.find("offload=1"), std::string::npos) << error;
  EXPECT_NE(error.find("zero"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(HostOffloadCost, CopiesCrossTheHostLinkAndTheHostStepStreamsHostMemory) {
  const Plan plan = lower(linear_model(3), offload_config(1));
  const Task& d2h = plan.task(index_of(plan, "it0/dp0/pp0/tp0/opt/d2h"));
  const Task& step = plan.task(index_of(plan, "it0/dp0/pp0/tp0/opt"));
  HostSpec host;
  host.name = "gpu-0";
  host.flops_fp32 = 1e12;
  host.mem_bw = 1e12;
  host.pcie_bw = 31.5e9;
  const CostModel cost;
  // No GPU type: no launch; 12,480 B over 31.5 GB/s.
  EXPECT_DOUBLE_EQ(cost.compute_time(d2h, host), 12480 / 31.5e9);
  // An A100 host launches the copy (2.555 us, gpu_kernels.cpp).
  host.gpu = GpuType::a100_80gb;
  EXPECT_DOUBLE_EQ(cost.compute_time(d2h, host), 2.555e-6 + 12480 / 31.5e9);
  // 87,360 B at 51.2 GB/s, whatever the GPU.
  EXPECT_DOUBLE_EQ(cost.compute_time(step, host), 87360 / 51.2e9);
  EXPECT_DOUBLE_EQ(kHostMemBwPerGpu, 51.2e9);
  host.pcie_bw = 0;
  const std::string error = input_error([&] { cost.compute_time(d2h, host); });
  EXPECT_NE(error.find("host gpu-0 has no pcie_bw"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(HostOffloadCost, TheNewKindReadsAndWritesByName) {
  EXPECT_EQ(to_string(TaskKind::host_copy), "host_copy");
  EXPECT_EQ(parse_task_kind("host_copy"), TaskKind::host_copy);
  EXPECT_FALSE(is_communication(TaskKind::host_copy));
}

}  // namespace
}  // namespace strata
