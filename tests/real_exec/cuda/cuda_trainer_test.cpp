// The GPU executor runs the Plan (CudaTaskRunner through the Interpreter and the Trainer): in
// float64 with plain SGD it ends with the CPU's parameters after 20 steps, for one worker and for
// every strategy on the one GPU (dp=2 and dp=4 as streams, GPipe and 1F1B with 2 stages), and for
// LeNet-5's convolutions and pooling; in float32 with Adam its loss curve follows the CPU's; its
// measured trace has the Plan's ids, and its transfers count the bytes the CPU's transport counts;
// ZeRO-1 and its offload end with plain data parallelism's parameters.
// Every test skips when no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "../training_runs.hpp"
#include "../weights.hpp"
#include "strata/real/cuda_task_runner.hpp"

namespace strata::real {
namespace {

using training_runs::batch_indices;
using training_runs::max_abs_difference;
using training_runs::mlp_plan;

constexpr int kSteps = 20;

const LabelledImages& train_set() {
  static const LabelledImages data = load_fashion_mnist(DatasetSplit::train);
  return data;
}

// Weights of each layer of data-parallel rank 0 after `steps` SGD steps, on the GPU or the CPU.
training_runs::Weights weights_after(const Plan& plan, int steps, bool gpu) {
  CpuBackend cpu;
  return training_runs::trained_weights(plan, train_set(), steps,
                                        gpu ? cuda_executor<double>(0) : host_executor<double>(cpu));
}

Plan lenet_plan() {
  StrategyConfig c;
  c.global_batch = training_runs::kBatch;
  c.optimizer = Optimizer::sgd;
  c.dtype = DType::fp32;
  Plan plan = lower(make_model("lenet5", {}), c);
  plan.validate();
  return plan;
}

#define SKIP_WITHOUT_GPU() \
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

TEST(CudaTrainer, OneWorkerEndsWithTheCpusParametersInFloat64) {
  SKIP_WITHOUT_GPU();
  const Plan plan = mlp_plan(1, 1, 1);
  const auto cpu = weights_after(plan, kSteps, false);
  const auto gpu = weights_after(plan, kSteps, true);
  ASSERT_EQ(gpu.size(), 3u);
  EXPECT_LT(max_abs_difference(cpu, gpu), 1e-9);
  EXPECT_GT(max_abs_difference(weights_after(plan, 0, true), gpu), 1e-3);  // it trained
}

TEST(CudaTrainer, EveryStrategyOnOneGpuMatchesOneWorker) {
  SKIP_WITHOUT_GPU();
  const auto serial = weights_after(mlp_plan(1, 1, 1), kSteps, false);
  const std::vector<std::pair<std::string, Plan>> strategies = {
      {"dp=2", mlp_plan(2, 1, 1)},
      {"dp=4", mlp_plan(4, 1, 1)},
      {"gpipe pp=2", mlp_plan(1, 2, 4, PipelineSchedule::gpipe)},
      {"1f1b pp=2", mlp_plan(1, 2, 4, PipelineSchedule::one_f_one_b)},
  };
  for (const auto& [name, plan] : strategies)
    EXPECT_LT(max_abs_difference(serial, weights_after(plan, kSteps, true)), 1e-9) << name;
}

// ZeRO-1 (reduce-scatter, each rank's step on its shard, all-gather) and its offload (the shard's
// gradients downloaded, the step on the CPU, the weights uploaded) on the GPU: the CPU's plain
// data-parallel weights after 20 SGD steps, to float64 rounding.
TEST(CudaTrainer, ZeroOneAndOffloadMatchPlainDataParallelism) {
  SKIP_WITHOUT_GPU();
  const auto plain = weights_after(mlp_plan(2, 1, 1), kSteps, false);
  for (bool offload : {false, true}) {
    StrategyConfig c = training_runs::mlp_config(2, 1, 1);
    c.zero = 1;
    c.offload = offload;
    Plan plan = lower(make_model("mlp", {}), c);
    plan.validate();
    check_kernels(plan, "zero");
    EXPECT_LT(max_abs_difference(plain, weights_after(plan, kSteps, true)), 1e-9) << "offload " << offload;
  }
}

TEST(CudaTrainer, LeNetConvolutionsAndPoolingMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const Plan plan = lenet_plan();
  EXPECT_LT(max_abs_difference(weights_after(plan, 5, false), weights_after(plan, 5, true)), 1e-9);
}

TEST(CudaTrainer, Float32AdamLossCurveFollowsTheCpu) {
  SKIP_WITHOUT_GPU();
  const Plan plan = mlp_plan(2, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam);
  CpuBackend cpu;
  TrainConfig config;
  config.seed = training_runs::kSeed;
  Trainer<float> on_cpu(plan, cpu, config);
  Trainer<float> on_gpu(plan, cuda_executor<float>(0), config);
  double worst = 0, first = 0, last = 0;
  for (int s = 0; s < kSteps; ++s) {
    const double expected = on_cpu.train_batch(train_set(), batch_indices(s));
    const double got = on_gpu.train_batch(train_set(), batch_indices(s));
    worst = std::max(worst, std::abs(got / expected - 1));
    (s == 0 ? first : last) = got;
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_LT(last, 0.8 * first);
  EXPECT_EQ(on_gpu.backend_name(), "cuda-cublas");
}

TEST(CudaTrainer, TraceHasThePlansIdsAndTransfersCountTheCpusBytes) {
  SKIP_WITHOUT_GPU();
  const Plan plan = mlp_plan(2, 2, 2);
  CpuBackend cpu;
  Trainer<float> on_cpu(plan, cpu, TrainConfig{});
  Trainer<float> on_gpu(plan, cuda_executor<float>(0), TrainConfig{});
  std::vector<TaskTiming> timings;
  on_cpu.train_batch(train_set(), batch_indices(0));
  on_gpu.train_batch(train_set(), batch_indices(0), &timings);
  const Trace trace = measured_trace(plan, timings, "gpu", "test");
  std::set<std::string> plan_ids, trace_ids;
  for (const Task& t : plan.tasks()) plan_ids.insert(t.id);
  for (const TraceRecord& r : trace.records) {
    trace_ids.insert(r.id);
    EXPECT_LE(r.start, r.end) << r.id;
  }
  EXPECT_EQ(plan_ids, trace_ids);
  EXPECT_GT(on_gpu.bytes_sent(), 0u);
  EXPECT_EQ(on_gpu.bytes_sent(), on_cpu.bytes_sent());
}

}  // namespace
}  // namespace strata::real
