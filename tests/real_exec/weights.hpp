// The layer weights of a trained Plan, and their largest difference: what the in-process
// equivalence tests compare (interpreter_test.cpp, layer_solvers_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/real/train/trainer.hpp"
#include "training_runs.hpp"

namespace strata::real::training_runs {

using Weights = std::map<std::string, std::vector<double>>;

// The weights (with bias) of each layer in `trainer`'s workspace, by "/w/<layer>", from
// data-parallel rank `dp` (-1: every buffer, for Plans without a dp coordinate).
inline Weights layer_weights(const Plan& plan, Trainer<double>& trainer, int dp = -1) {
  Weights out;
  Workspace<double>& ws = trainer.workspace();  // brought up to date from a GPU once
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const std::string& id = plan.buffer(b).id;
    const auto at = id.find("/w/");
    if (at == std::string::npos || (dp >= 0 && plan.buffer_coords(b).dp != dp)) continue;
    const double* w = ws.data(b);
    out[id.substr(at)] = std::vector<double>(w, w + ws.size(b));
  }
  return out;
}

// The layer weights of data-parallel rank `dp` after `steps` plain-SGD steps (train_config) on
// the batches batch_indices(0 .. steps - 1) of `train`, the tasks run by `executor`.
inline Weights trained_weights(const Plan& plan, const LabelledImages& train, int steps,
                               const ExecutorFactory<double>& executor, int dp = 0) {
  Trainer<double> trainer(plan, executor, train_config());
  for (int s = 0; s < steps; ++s) trainer.train_batch(train, batch_indices(s));
  return layer_weights(plan, trainer, dp);
}

// Layer weights after `runs` runs of a layer-group solver's `plan` (AMPNet, local, Block-ADMM:
// per run, global_batch / kBatch instances); run r binds the samples of steps [r·K, (r+1)·K).
inline Weights weights_after_runs(const Plan& plan, int runs) {
  CpuBackend backend;
  Trainer<double> trainer(plan, backend, train_config());
  const auto per_run = static_cast<int>(plan.info.global_batch / kBatch);
  for (int r = 0; r < runs; ++r) {
    std::vector<std::int64_t> indices;
    for (int k = 0; k < per_run; ++k) {
      const auto step = batch_indices(r * per_run + k);
      indices.insert(indices.end(), step.begin(), step.end());
    }
    trainer.train_batch(train_images(), indices);
  }
  return layer_weights(plan, trainer);
}

// The largest |a - b| over every layer; the two must hold the same layers and sizes.
inline double max_abs_difference(const Weights& a, const Weights& b) {
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

}  // namespace strata::real::training_runs
