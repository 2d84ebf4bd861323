// Flags that mean the same thing in every strata subcommand, and how they become an Experiment
// (models/experiment.hpp): `--spec FILE.json` first, then every flag given on the command line
// on top of it (each override said on stderr), then lower() for the Plan.
#pragma once

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/models/experiment.hpp"
#include "strata/sim/replay.hpp"

namespace strata::cli {

// Numbers in flags, one rule for all: the whole text is a decimal number ("5abc", "0x10", "010",
// " 5", "1e3" for a count, "nan" and "inf" are refused) within [min, max]; CLI11 reports the
// problem as "--workers: '-2' is out of range (>= 1)".
CLI::Validator whole_number(std::int64_t min, std::int64_t max = INT32_MAX);
CLI::Validator real_number(double min, double max);

struct CommonFlags {
  std::string spec;  // --spec FILE.json
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
  int epochs = 5;  // strata run, compare-solvers
  std::string solver = "backprop";
  std::string partition = "uniform";  // uniform | balanced (--partition)
  // The --calibration file of a command that also replays (its ReplayFlags::calibration), which
  // prices --partition balanced's per-layer costs; null: the default cost model.
  const std::string* calibration = nullptr;
  // The options registered for these fields, by flag name ("--model"), to tell which were given.
  std::map<std::string, const CLI::Option*> options;
  // Flags a command sets itself (compare-solvers' rows): they override a spec as if given.
  std::vector<std::string> forced;

  bool given(const std::string& flag) const;
  // Registers `option` as the flag of one of the fields above (for commands that add their own).
  void track(const CLI::Option* option);
};

// A Plan file fixes the model and the strategy: beside --plan, the flags that would build them
// are refused ("--plan: conflicts with --workers ..."). `trains`: the command trains the Plan for
// real, so --optimizer, --seed and the optimizer's --set keys still apply.
void refuse_beside_plan(const CommonFlags& flags, bool trains);

// Flags of every subcommand that replays on SimGrid (simulate, explore).
struct ReplayFlags {
  std::string collectives = "auto";
  std::string calibration;
  std::string network_model = "LV08";
  bool simgrid_factors = false;
  std::string comm_streams = "per-group";  // per-group | one-per-worker (replay.hpp)
  bool cold_starts = false;                // ReplayOptions::cold_starts
  std::string symmetry = "auto";           // auto | off (ReplayOptions::symmetry)
};
void add_replay_flags(CLI::App& app, ReplayFlags& flags);
// Replay options from the flags (reads the calibration file). Throws InputError.
ReplayOptions replay_options(const ReplayFlags& flags);

// Adds --spec and the shared flags to a subcommand; `with_strategy` adds --strategy, --schedule,
// --microbatches and --iterations.
void add_common_flags(CLI::App& app, CommonFlags& flags, bool with_strategy);

// --platform, registered the same way by every command that replays: `required` (simulate,
// compare-solvers), defaulting to a shipped platform (explore: a100-cluster-64.xml), or optional
// with "" meaning this machine, described by --calibration (validate). The path resolves with
// resolve_platform() when the command reads it.
enum class PlatformFlag : std::uint8_t { required, shipped_default, this_machine };
void add_platform_flag(CLI::App& app, CommonFlags& flags, PlatformFlag rule);

// The Experiment the flags describe: the --spec file's, with every flag given on top (each
// override printed to stderr: "spec s.json: --microbatches overrides microbatches (4 -> 8)");
// without --spec, the flags alone. `global_batch_per_worker`, when > 0 and no batch was given,
// sets it: per data-parallel rank for backprop, per instance or step for the other solvers
// (the ADMM solvers, GIST and every GCN train full batch and keep their default).
Experiment experiment_of(const CommonFlags& flags, std::int64_t global_batch_per_worker = 0);

// The flags given on top of `base` (read from `source`, named in the override lines).
Experiment experiment_on(Experiment base, const std::string& source, const CommonFlags& flags,
                         std::int64_t global_batch_per_worker = 0);

// The model and strategy of the flags' Experiment; the solver settings go into `solver` (or a
// solver other than backprop is refused when null).
Model build_model(const CommonFlags& flags, StrategyConfig& config, SolverConfig* solver = nullptr);

// lower(experiment_of(flags, global_batch_per_worker)).
Plan build_plan(const CommonFlags& flags, std::int64_t global_batch_per_worker = 0);

// A platform given as a path that does not exist here but names a shipped platform
// ("a100-cluster-64.xml" or "platforms/a100-cluster-64.xml") resolves to the shipped file, so
// the defaults work from any directory.
std::string resolve_platform(const std::string& path);

}  // namespace strata::cli
