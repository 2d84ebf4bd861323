// The training runs the equivalence tests compare, shared by the in-process tests
// (interpreter_test.cpp) and the MPI tests (mpi/): the MLP Plans, the batches and the settings.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::real::training_runs {

constexpr std::int64_t kBatch = 64;  // global batch of every run
constexpr std::uint64_t kSeed = 7;
constexpr double kLearningRate = 0.1;  // plain SGD

// The runs' configuration: dp × pp workers, m microbatches, plain SGD, fp32.
inline StrategyConfig mlp_config(int dp, int pp, int microbatches,
                                 PipelineSchedule schedule = PipelineSchedule::one_f_one_b,
                                 Optimizer optimizer = Optimizer::sgd) {
  StrategyConfig c;
  c.dp = dp;
  c.pp = pp;
  c.microbatches = microbatches;
  c.schedule = schedule;
  c.global_batch = kBatch;
  c.optimizer = optimizer;
  c.dtype = DType::fp32;
  return c;
}

// The MLP lowered for dp × pp workers, fp32 Plan (the float64 tests run it as double).
inline Plan mlp_plan(int dp, int pp, int microbatches,
                     PipelineSchedule schedule = PipelineSchedule::one_f_one_b,
                     Optimizer optimizer = Optimizer::sgd) {
  const StrategyConfig c = mlp_config(dp, pp, microbatches, schedule, optimizer);
  Plan plan = lower(make_model("mlp", {}), c);
  plan.validate();
  return plan;
}

// Step s trains on training images [s·B, (s+1)·B).
inline std::vector<std::int64_t> batch_indices(int step) {
  std::vector<std::int64_t> indices(kBatch);
  for (std::int64_t i = 0; i < kBatch; ++i) indices[static_cast<std::size_t>(i)] = step * kBatch + i;
  return indices;
}

inline TrainConfig train_config() {
  TrainConfig config;
  config.seed = kSeed;
  config.optimizer.learning_rate = kLearningRate;
  return config;
}

// Fashion-MNIST's training images, read once.
inline const LabelledImages& train_images() {
  static const LabelledImages images = load_fashion_mnist(DatasetSplit::train);
  return images;
}

// The values of the trainer's buffer `id` (a failure, and an empty array, when the Plan has none).
inline const std::vector<double>& buffer_array(Trainer<double>& trainer, const Plan& plan,
                                               const std::string& id) {
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b)
    if (plan.buffer(b).id == id) return trainer.workspace().array(b);
  ADD_FAILURE() << "no buffer " << id;
  static const std::vector<double> none;
  return none;
}

// `steps` steps of each trainer on the batches batch_indices(0 .. steps - 1), alternating.
inline void train_side_by_side(Trainer<double>& a, Trainer<double>& b, int steps) {
  for (int step = 0; step < steps; ++step) {
    a.train_batch(train_images(), batch_indices(step));
    b.train_batch(train_images(), batch_indices(step));
  }
}

}  // namespace strata::real::training_runs
