// The layer-group solvers run for real through the Plan interpreter (float64, plain SGD).
// AMPNet: with one instance in flight and a step after every gradient it is serial backprop;
// with more in flight it reads stale parameters, as the Plan's versions say, and still trains.
// Local parallelism: one chunk is backprop; where the chunks run does not change the run; the
// overlapping variant's gradient message reaches the chunk before it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/train/trainer.hpp"
#include "training_runs.hpp"
#include "weights.hpp"

namespace strata::real {
namespace {

using training_runs::batch_indices;
using training_runs::kBatch;
using training_runs::max_abs_difference;
using training_runs::mlp_plan;
using training_runs::train_config;

const LabelledImages& train_set() {
  static const LabelledImages data = load_fashion_mnist(DatasetSplit::train);
  return data;
}

Plan solver_plan(int workers, const SolverConfig& solver, const std::string& sizes = "784,256,128,10") {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = kBatch;  // per instance
  c.optimizer = Optimizer::sgd;
  return lower_solver(make_model("mlp", {{"sizes", sizes}}), c, solver);
}

Plan ampnet_plan(int workers, int max_active_keys, int min_update_frequency, int instances) {
  SolverConfig s;
  s.solver = Solver::ampnet;
  s.max_active_keys = max_active_keys;
  s.min_update_frequency = min_update_frequency;
  s.instances = instances;
  return solver_plan(workers, s);
}

Plan local_plan(int workers, int chunks, LocalVariant variant, int instances) {
  SolverConfig s;
  s.solver = Solver::local;
  s.chunks = chunks;
  s.local_variant = variant;
  s.instances = instances;
  return solver_plan(workers, s);
}

std::vector<double> layer(const std::map<std::string, std::vector<double>>& weights,
                          const std::string& name) {
  return weights.at("/w/" + name);
}

std::map<std::string, std::vector<double>> weights_after(const Plan& plan, int runs) {
  return training_runs::weights_after_runs(plan, runs);
}

TEST(Ampnet, OneKeyInFlightAndAStepPerGradientIsSerialBackprop) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), 20);
  for (int workers : {1, 2, 3}) {
    const auto async = weights_after(ampnet_plan(workers, 1, 1, 4), 5);
    EXPECT_LT(max_abs_difference(serial, async), 1e-9) << workers << " workers";
  }
}

TEST(Ampnet, StaleParametersChangeTheRunButItStillLearns) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), 20);
  const auto before = weights_after(mlp_plan(1, 1, 1), 0);
  const auto stale = weights_after(ampnet_plan(2, 4, 1, 10), 2);
  EXPECT_GT(max_abs_difference(serial, stale), 1e-6);  // the staleness is real
  EXPECT_GT(max_abs_difference(before, stale), 1e-3);  // and the weights moved
  for (const auto& [name, values] : stale)
    for (double v : values) ASSERT_TRUE(std::isfinite(v)) << name;
}

// Accumulating f gradients before a step is backprop on f times the batch when nothing is stale.
TEST(Ampnet, MinUpdateFrequencyAccumulatesLikeALargerBatch) {
  StrategyConfig c;
  c.global_batch = 2 * kBatch;
  c.optimizer = Optimizer::sgd;
  const Plan big = lower(make_model("mlp", {}), c);
  CpuBackend backend;
  Trainer<double> trainer(big, backend, train_config());
  for (int s = 0; s < 6; ++s) {
    auto indices = batch_indices(2 * s);
    const auto next = batch_indices(2 * s + 1);
    indices.insert(indices.end(), next.begin(), next.end());
    trainer.train_batch(train_set(), indices);
  }
  const auto serial = training_runs::layer_weights(big, trainer);
  // One key in flight: instance k reads version floor(k / 2), exactly what the big batch reads.
  const auto accumulated = weights_after(ampnet_plan(2, 1, 2, 4), 3);
  EXPECT_LT(max_abs_difference(serial, accumulated), 1e-9);
}

TEST(LocalParallelism, OneChunkIsBackprop) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), 8);
  const auto local = weights_after(local_plan(1, 1, LocalVariant::chunked, 4), 2);
  EXPECT_LT(max_abs_difference(serial, local), 1e-9);
}

TEST(LocalParallelism, WhereTheChunksRunDoesNotChangeTheRun) {
  for (LocalVariant v : {LocalVariant::chunked, LocalVariant::overlapping}) {
    const auto one = weights_after(local_plan(1, 3, v, 4), 2);
    const auto three = weights_after(local_plan(3, 3, v, 4), 2);
    EXPECT_EQ(one.size(), 5u);  // fc1..fc3 and two auxiliary heads
    EXPECT_LT(max_abs_difference(one, three), 1e-12) << to_string(v);
  }
}

// No gradient crosses a chunk boundary: the first chunk (fc1 and its head) trains the same
// whatever the second chunk is; with overlap, the second chunk's gradient changes it.
TEST(LocalParallelism, GradientsStopAtChunkBoundariesUnlessTheyOverlap) {
  SolverConfig s;
  s.solver = Solver::local;
  s.chunks = 2;
  s.instances = 4;
  const auto wide = weights_after(solver_plan(2, s, "784,256,128,10"), 2);
  const auto narrow = weights_after(solver_plan(2, s, "784,256,64,10"), 2);
  s.local_variant = LocalVariant::overlapping;
  const auto overlapping = weights_after(solver_plan(2, s, "784,256,128,10"), 2);
  auto worst = [](const std::vector<double>& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double w = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]));
    return w;
  };
  EXPECT_EQ(worst(layer(wide, "fc1"), layer(narrow, "fc1")), 0.0);
  EXPECT_EQ(worst(layer(wide, "aux0/fc"), layer(narrow, "aux0/fc")), 0.0);
  EXPECT_NE(layer(wide, "fc2").size(), layer(narrow, "fc2").size());  // the second chunks do differ
  EXPECT_GT(worst(layer(wide, "fc1"), layer(overlapping, "fc1")), 1e-9);
}

}  // namespace
}  // namespace strata::real
