// The accuracy curves of strata search's real trials (accuracy source `real`): each trial's
// Experiment trained on this machine as strata run trains it, its curve kept in the results
// store under the run's key so that a repeated search reuses it (real_run.hpp).
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "db_flags.hpp"
#include "real_run.hpp"
#include "strata/real/exec/interpreter.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/trace.hpp"

namespace strata::cli {

std::vector<std::string> real_run_settings(const std::string& transport, const std::string& device,
                                           const std::string& precision, const std::string& init, bool pinned,
                                           double cpu_share) {
  return {"this machine: " + real::host_name(),
          "transport: " + transport,
          "device: " + device,
          "precision: " + precision,
          "init: " + init,
          std::string("pinned: ") + (pinned ? "yes" : "no"),
          "cpu_share: " + std::to_string(cpu_share),
          "numerics: " + std::to_string(kNumericsVersion)};
}

namespace {

// A search trial's Plan: backprop image models only (what the Trainer trains on Fashion-MNIST).
Plan trial_plan(const Experiment& experiment) {
  if (experiment.solver.solver != Solver::backprop)
    throw InputError("search: real trials train backprop Plans only (solver " +
                     std::string(to_string(experiment.solver.solver)) + ")");
  Plan plan = plan_to_run(experiment);
  if (plan.info.trains_graph())
    throw InputError("search: real trials train the image models on Fashion-MNIST (model " +
                     experiment.model + ")");
  return plan;
}

// As strata run trains: threads, unpinned, --init auto (He for the MLP, its recipe; PyTorch's
// default otherwise).
real::TrainConfig trial_config(const Experiment& experiment, const Plan& plan) {
  real::TrainConfig config;
  config.seed = static_cast<std::uint64_t>(experiment.seed);
  config.optimizer = optimizer_of(experiment);
  config.pin_workers = false;
  config.init = plan.info.model == "mlp" ? real::WeightInit::he_normal : real::WeightInit::fan_in_uniform;
  return config;
}

const real::LabelledImages& fashion_mnist(real::DatasetSplit split) {
  static const real::LabelledImages train = real::load_fashion_mnist(real::DatasetSplit::train);
  static const real::LabelledImages test = real::load_fashion_mnist(real::DatasetSplit::test);
  return split == real::DatasetSplit::train ? train : test;
}

}  // namespace

std::vector<double> train_curve(const Experiment& experiment, int epochs, ResultsStore* store,
                                const std::function<void(int)>& progress) {
  const Plan plan = trial_plan(experiment);
  ResultKey key{plan.info.experiment_hash,
                platform_hash("", real_run_settings("threads", "cpu", "fp32", "auto", false, 1.0)), "real",
                experiment.seed};
  if (store != nullptr)
    if (const std::optional<ResultRow> row = store->find(key)) {
      std::vector<double> curve = accuracy_curve(*row);
      if (static_cast<int>(curve.size()) >= epochs) {
        curve.resize(static_cast<std::size_t>(epochs));
        return curve;
      }
    }
  const real::LabelledImages& train_set = fashion_mnist(real::DatasetSplit::train);
  const real::LabelledImages& test_set = fashion_mnist(real::DatasetSplit::test);
  real::CpuBackend backend;
  real::Trainer<float> trainer(plan, backend, trial_config(experiment, plan));
  ResultRow row;
  row.key = key;
  row.command = "search";
  row.model = plan.info.model;
  row.strategy = plan.info.strategy;
  row.platform = "this machine";
  row.workers = plan.num_workers();
  row.spec = canonical_json(experiment).dump();
  row.strata_version = std::string(strata_version());
  nlohmann::json points = nlohmann::json::array();
  std::vector<double> curve;
  double train_seconds = 0;
  for (int e = 1; e <= epochs; ++e) {
    const real::EpochResult r = trainer.train_epoch(e, train_set, test_set, {});
    train_seconds += r.train_seconds;
    curve.push_back(r.test_accuracy);
    points.push_back({{"epoch", e}, {"test_accuracy", r.test_accuracy}, {"train_seconds", train_seconds}});
    row.samples_per_s = r.samples_per_second;
    if (r.samples_per_second > 0)
      row.iteration_time_s = static_cast<double>(trainer.global_batch()) / r.samples_per_second;
    if (progress) progress(e);
  }
  row.accuracy = points.dump();
  if (store != nullptr) store->commit({row});
  return curve;
}

namespace {

struct ModelState {
  std::vector<std::vector<float>> arrays;  // the persistent buffers, in buffer order
  std::vector<std::int64_t> steps;         // their optimizer step counts
  double accuracy = 0;
};

std::string lineage_key(const std::vector<std::pair<Experiment, int>>& lineage) {
  std::string key;
  for (const auto& [e, epochs] : lineage)
    key += canonical_json(e).dump() + "*" + std::to_string(epochs) + ";";
  return key;
}

std::map<std::string, ModelState>& model_states() {
  static std::map<std::string, ModelState> states;
  return states;
}

}  // namespace

double train_lineage(const std::vector<std::pair<Experiment, int>>& given) {
  std::vector<std::pair<Experiment, int>> lineage;  // without segments of no epoch (a clone not trained on)
  for (const auto& segment : given)
    if (segment.second > 0) lineage.push_back(segment);
  STRATA_ASSERT(!lineage.empty(), "train_lineage: a lineage of no epoch");
  const std::string key = lineage_key(lineage);
  if (const auto it = model_states().find(key); it != model_states().end()) return it->second.accuracy;
  auto before = lineage;
  if (--before.back().second == 0) before.pop_back();
  std::int64_t epoch = 0;
  for (const auto& [e, epochs] : lineage) epoch += epochs;
  const Experiment& experiment = lineage.back().first;
  const Plan plan = trial_plan(experiment);
  const real::LabelledImages& train_set = fashion_mnist(real::DatasetSplit::train);
  const real::LabelledImages& test_set = fashion_mnist(real::DatasetSplit::test);
  real::CpuBackend backend;
  real::Trainer<float> trainer(plan, backend, trial_config(experiment, plan));
  real::Workspace<float>& w = trainer.workspace();
  std::vector<BufferIndex> persistent;
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b)
    if (plan.buffer(b).persistent) persistent.push_back(b);
  if (!before.empty()) {
    train_lineage(before);
    const ModelState& from = model_states().at(lineage_key(before));
    bool same = from.arrays.size() == persistent.size();
    for (std::size_t k = 0; same && k < persistent.size(); ++k)
      same = static_cast<std::int64_t>(from.arrays[k].size()) == w.size(persistent[k]);
    if (!same)
      throw InputError(
          "search: pbt: the assignment " + canonical_json(experiment).dump() +
          " changes the model's buffers; pbt may perturb only keys that keep the model's shape (lr, "
          "momentum, ...)");
    for (std::size_t k = 0; k < persistent.size(); ++k) {
      w.array(persistent[k]) = from.arrays[k];
      w.optimizer_steps(persistent[k]) = from.steps[k];
    }
  }
  const real::EpochResult r = trainer.train_epoch(epoch, train_set, test_set, {});
  real::Workspace<float>& after = trainer.workspace();
  ModelState state;
  for (BufferIndex b : persistent) {
    state.arrays.push_back(after.array(b));
    state.steps.push_back(after.optimizer_steps(b));
  }
  state.accuracy = r.test_accuracy;
  model_states().emplace(key, std::move(state));
  return r.test_accuracy;
}

}  // namespace strata::cli
