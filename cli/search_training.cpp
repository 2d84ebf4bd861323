// The accuracy curves of strata search's real trials (accuracy source `real`): each trial's
// Experiment trained on this machine as strata run trains it, its curve kept in the results
// store under the run's key so that a repeated search reuses it (real_run.hpp).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
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

std::vector<double> train_curve(const Experiment& experiment, int epochs, ResultsStore* store,
                                const std::function<void(int)>& progress) {
  if (experiment.solver.solver != Solver::backprop)
    throw InputError("search: real trials train backprop Plans only (solver " +
                     std::string(to_string(experiment.solver.solver)) + ")");
  const Plan plan = plan_to_run(experiment);
  if (plan.info.trains_graph())
    throw InputError("search: real trials train the image models on Fashion-MNIST (model " +
                     experiment.model + ")");
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
  static const real::LabelledImages train_set = real::load_fashion_mnist(real::DatasetSplit::train);
  static const real::LabelledImages test_set = real::load_fashion_mnist(real::DatasetSplit::test);
  real::CpuBackend backend;
  real::TrainConfig config;
  config.seed = static_cast<std::uint64_t>(experiment.seed);
  config.optimizer = optimizer_of(experiment);
  config.pin_workers = false;
  // As strata run's --init auto: He for the MLP (its recipe), PyTorch's default otherwise.
  config.init = plan.info.model == "mlp" ? real::WeightInit::he_normal : real::WeightInit::fan_in_uniform;
  real::Trainer<float> trainer(plan, backend, config);
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

}  // namespace strata::cli
