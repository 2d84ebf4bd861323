// plan_runs(): one Plan's real runs, one iteration per call, whatever trains it: the
// PlanTrainer that make_plan_trainer picks from the Plan's solver (plan_trainer.hpp) — a backprop
// Plan on consecutive Fashion-MNIST batches, an ADMM Plan's sweeps on its seeded full batch, a GCN
// Plan's rounds on the kNN graph of its nodes. What `strata validate` measures and what
// `strata calibrate` times tasks in.
//
// Each call returns every task's (start, end) of that iteration, merged over the processes when
// the transport spreads the workers (a collective then: every process calls it in step).
// Ownership: the returned function owns its trainer, data and (when none is given) transport;
// the Plan, `train` and a transport passed in must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::real {

struct PlanRunSettings {
  std::uint64_t seed = 0;
  bool pin_workers = true;
  double cpu_share = 1;  // backprop Plans: each worker's share of its core (RealSettings)
  // The experiment's optimizer (models::optimizer_of); empty: each solver's own (RealSettings).
  std::optional<OptimizerSettings> optimizer;
  std::string device = "cpu";             // what `executor` builds on (ADMM and GCN Plans: cpu only)
  ExecutorFactory<float> executor;        // backprop Plans' executor; empty: TaskRunner on the CPU
  Transport<float>* transport = nullptr;  // null: the workers are threads of this process
  // Set after each run: PlanTrainer::peak_memory_per_worker (empty where not measured).
  std::shared_ptr<std::vector<std::int64_t>> peak_memory;
};

using PlanRuns = std::function<std::vector<TaskTiming>()>;

// REQUIRES: plan validated; `train` is the Fashion-MNIST training set.
PlanRuns plan_runs(const Plan& plan, const LabelledImages& train, const PlanRunSettings& settings);

// Whether the Plan trains with ADMM or a GCN (PlanInfo): the Plans only the CPU runs.
bool cpu_only_plan(const Plan& plan);

}  // namespace strata::real
