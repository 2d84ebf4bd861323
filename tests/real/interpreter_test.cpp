// The real executor runs the Plan: equivalence of strategies in float64 (same parameters after
// 20 SGD steps as one worker), Plan edits that change the run, refused kinds, trace ids.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "strata/models/strategy.hpp"
#include "strata/models/zoo.hpp"
#include "strata/real/trainer.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

constexpr std::int64_t kBatch = 64;
constexpr int kSteps = 20;

Plan mlp_plan(int dp, int pp, int microbatches, PipelineSchedule schedule = PipelineSchedule::one_f_one_b) {
  StrategyConfig c;
  c.dp = dp;
  c.pp = pp;
  c.microbatches = microbatches;
  c.schedule = schedule;
  c.global_batch = kBatch;
  c.optimizer = Optimizer::sgd;
  c.dtype = DType::fp32;
  Plan plan = lower(make_model("mlp", {}), c);
  plan.validate();
  return plan;
}

const LabelledImages& train_set() {
  static const LabelledImages data = load_fashion_mnist(DatasetSplit::kTrain);
  return data;
}

std::vector<std::int64_t> batch_indices(int step) {
  std::vector<std::int64_t> indices(kBatch);
  for (std::int64_t i = 0; i < kBatch; ++i) indices[static_cast<std::size_t>(i)] = step * kBatch + i;
  return indices;
}

// Weights (with bias) of each layer after training, by layer name, from data-parallel rank `dp`.
std::map<std::string, std::vector<double>> weights_after(const Plan& plan, int steps, int dp = 0) {
  CpuBackend backend;
  TrainConfig config;
  config.seed = 7;
  config.optimizer.learning_rate = 0.1;
  Trainer<double> trainer(plan, backend, config);
  for (int s = 0; s < steps; ++s) trainer.train_batch(train_set(), batch_indices(s));
  std::map<std::string, std::vector<double>> out;
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const std::string& id = plan.buffer(b).id;
    const auto at = id.find("/w/");
    if (at == std::string::npos || coordinate(id, "dp") != dp) continue;
    const double* w = trainer.workspace().data(b);
    out[id.substr(at)] = std::vector<double>(w, w + trainer.workspace().size(b));
  }
  return out;
}

double max_abs_difference(const std::map<std::string, std::vector<double>>& a,
                          const std::map<std::string, std::vector<double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (const auto& [name, values] : a) {
    const auto& other = b.at(name);
    EXPECT_EQ(values.size(), other.size()) << name;
    for (std::size_t i = 0; i < values.size() && i < other.size(); ++i)
      worst = std::max(worst, std::abs(values[i] - other[i]));
  }
  return worst;
}

TEST(Interpreter, DataParallelTwoAndFourMatchOneWorkerInFloat64) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), kSteps);
  ASSERT_EQ(serial.size(), 3u);
  for (int dp : {2, 4}) {
    const auto parallel = weights_after(mlp_plan(dp, 1, 1), kSteps);
    EXPECT_LT(max_abs_difference(serial, parallel), 1e-9) << "dp=" << dp;
  }
}

TEST(Interpreter, GPipeAndOneFOneBWithTwoStagesMatchSerialBackprop) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), kSteps);
  for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    const auto piped = weights_after(mlp_plan(1, 2, 4, schedule), kSteps);
    EXPECT_LT(max_abs_difference(serial, piped), 1e-9);
  }
}

TEST(Interpreter, TrainingMovesTheWeights) {
  const auto before = weights_after(mlp_plan(1, 1, 1), 0);
  const auto after = weights_after(mlp_plan(1, 1, 1), kSteps);
  EXPECT_GT(max_abs_difference(before, after), 1e-3);
}

// Editing the Plan edits the run: with every allreduce's group cut to rank 0 alone, the two
// replicas no longer exchange gradients and their weights part.
TEST(Interpreter, CuttingTheAllreduceGroupSplitsTheReplicas) {
  Plan plan = mlp_plan(2, 1, 1);
  const auto together = max_abs_difference(weights_after(plan, 3, 0), weights_after(plan, 3, 1));
  EXPECT_LT(together, 1e-12);
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    Task& t = plan.mutable_task(i);
    if (t.kind != TaskKind::allreduce) continue;
    t.group = {0};
    std::erase_if(t.reads, [&](BufferIndex b) { return plan.buffer(b).worker != 0; });
    std::erase_if(t.writes, [&](BufferIndex b) { return plan.buffer(b).worker != 0; });
  }
  plan.validate();
  const auto apart = max_abs_difference(weights_after(plan, 3, 0), weights_after(plan, 3, 1));
  EXPECT_GT(apart, 1e-4);
}

TEST(Interpreter, KindWithoutKernelIsRefusedBeforeAnythingRuns) {
  Plan plan(1);
  Task t;
  t.id = "it0/fixed";
  t.kind = TaskKind::fixed;
  t.worker = 0;
  plan.add_task(t);
  plan.validate();
  try {
    check_kernels(plan, "edited.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("edited.json"), std::string::npos) << what;
    EXPECT_NE(what.find("/tasks/0"), std::string::npos) << what;
    EXPECT_NE(what.find("it0/fixed"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Interpreter, MeasuredTraceHasExactlyThePlansTaskIds) {
  const Plan plan = mlp_plan(2, 2, 2);
  CpuBackend backend;
  Trainer<float> trainer(plan, backend, TrainConfig{});
  std::vector<TaskTiming> timings;
  trainer.train_batch(train_set(), batch_indices(0), &timings);
  const Trace trace = measured_trace(plan, timings, "localhost", "test");
  std::set<std::string> plan_ids;
  for (const Task& t : plan.tasks()) plan_ids.insert(t.id);
  std::set<std::string> trace_ids;
  for (const TraceRecord& r : trace.records) {
    trace_ids.insert(r.id);
    EXPECT_LE(r.start, r.end) << r.id;
  }
  EXPECT_EQ(plan_ids, trace_ids);
  EXPECT_GT(trainer.bytes_sent(), 0u);
}

}  // namespace
}  // namespace strata::real
