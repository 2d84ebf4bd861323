// Flags that mean the same thing in every strata subcommand, and how they become a Model and a
// StrategyConfig.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/sim/replay.hpp"

namespace strata::cli {

struct CommonFlags {
  std::string model;
  int workers = 0;
  std::string strategy;
  std::string schedule = "1f1b";
  std::int64_t microbatches = 0;
  std::int64_t global_batch = 0;
  std::string dtype = "auto";
  std::string optimizer = "adam";
  std::int64_t seed = 0;
  std::string platform;
  std::vector<std::string> sets;
  int iterations = 1;
  std::string solver = "backprop";
};

// Flags of every subcommand that replays on SimGrid (simulate, explore).
struct ReplayFlags {
  std::string collectives = "auto";
  std::string calibration;
  std::string network_model = "LV08";
  bool simgrid_factors = false;
};
void add_replay_flags(CLI::App& app, ReplayFlags& flags);
// Replay options from the flags (reads the calibration file). Throws InputError.
ReplayOptions replay_options(const ReplayFlags& flags);

// Adds the shared flags to a subcommand; `with_strategy` adds --strategy/--schedule/--microbatches.
void add_common_flags(CLI::App& app, CommonFlags& flags, bool with_strategy);

// Splits --set key=value pairs: strategy keys (bucket_mb, dp_algo, tp_algo, replicas = DP
// replicas lowered, see StrategyConfig::lowered_replicas) go into `config`,
// the rest are model hyperparameters. Throws InputError on a pair without '='.
std::map<std::string, std::string> apply_sets(const std::vector<std::string>& sets, StrategyConfig& config);

// Builds the model and the configuration from the flags (checks dp·tp·pp against --workers); the
// solver's --set keys go into `solver` (or are refused as model hyperparameters when null).
Model build_model(const CommonFlags& flags, StrategyConfig& config, SolverConfig* solver = nullptr);

// The Plan the flags describe: the model under --solver (backprop: the --strategy lowering).
// `global_batch_per_worker`, when > 0 and no --global-batch was given, sets the batch: per
// data-parallel rank for backprop, per instance or step for the other solvers.
Plan build_plan(const CommonFlags& flags, std::int64_t global_batch_per_worker = 0);

// A platform given as a path that does not exist here but names a shipped platform
// ("a100-cluster-64.xml" or "platforms/a100-cluster-64.xml") resolves to the shipped file, so
// the defaults work from any directory.
std::string resolve_platform(const std::string& path);
StrategyConfig build_config(const CommonFlags& flags, const Model* model);

}  // namespace strata::cli
