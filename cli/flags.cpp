#include "flags.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "file_flags.hpp"
#include "strata/models/schedule/pipeline_partition.hpp"
#include "strata/sim/explore.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

// Applies the flags given on top of a spec file and says on stderr what each one changed.
class Overrider {
 public:
  Overrider(const CommonFlags& flags, std::string source)
      : flags_(flags), source_(std::move(source)), from_spec_(!source_.empty()) {}

  bool from_spec() const { return from_spec_; }

  // Whether `flag` applies: every flag without a spec, only those given with one.
  bool applies(const std::string& flag) const { return !from_spec_ || flags_.given(flag); }

  void note(const std::string& flag, const std::string& field, const std::string& before,
            const std::string& after) const {
    if (from_spec_ && before != after)
      std::fprintf(stderr, "spec %s: %s overrides %s (%s -> %s)\n", source_.c_str(), flag.c_str(),
                   field.c_str(), before.empty() ? "preset" : before.c_str(), after.c_str());
  }

  template <typename T>
  void number(const std::string& flag, const std::string& field, T& target, T value) const {
    if (!applies(flag)) return;
    note(flag, field, std::to_string(target), std::to_string(value));
    target = value;
  }

  void text(const std::string& flag, const std::string& field, std::string& target,
            const std::string& value) const {
    if (!applies(flag)) return;
    note(flag, field, target, value);
    target = value;
  }

 private:
  const CommonFlags& flags_;
  std::string source_;
  bool from_spec_;
};

std::string strategy_text(const Experiment& e) {
  return "dp=" + std::to_string(e.dp) + ",tp=" + std::to_string(e.tp) + ",pp=" + std::to_string(e.pp);
}

void apply_model_and_solver(const CommonFlags& flags, const Overrider& over, Experiment& e) {
  if (over.applies("--model") && !flags.model.empty()) over.text("--model", "model", e.model, flags.model);
  if (!over.applies("--solver")) return;
  const std::optional<Solver> which = parse_solver(flags.solver);
  if (!which) {
    std::string known;
    for (const std::string& name : solver_names()) known += (known.empty() ? "" : ", ") + name;
    throw InputError("--solver: unknown solver '" + flags.solver + "' (known: " + known + ")");
  }
  over.note("--solver", "solver", std::string(to_string(e.solver.solver)), flags.solver);
  e.solver.solver = *which;
}

// --strategy and --workers (dp of N workers when no --strategy), checked against each other.
void apply_strategy(const CommonFlags& flags, const Overrider& over, Experiment& e) {
  if (flags.workers < 0) throw InputError("--workers: negative value");
  const bool strategy = over.applies("--strategy") && !flags.strategy.empty();
  const bool workers = over.applies("--workers") && flags.workers > 0;
  if (strategy || workers) {
    StrategyConfig c;
    if (strategy)
      parse_strategy(flags.strategy, c);
    else
      c.dp = flags.workers;
    if (flags.workers > 0 && c.workers() != flags.workers)
      throw InputError("--strategy " + c.to_string() + ": dp·tp·pp = " + std::to_string(c.workers()) +
                       " does not equal --workers " + std::to_string(flags.workers));
    const std::string before = strategy_text(e);
    e.dp = c.dp, e.tp = c.tp, e.pp = c.pp;
    over.note(strategy ? "--strategy" : "--workers", "strategy", before, strategy_text(e));
  }
  if (over.applies("--schedule")) {
    std::string schedule(to_string(e.schedule));
    over.text("--schedule", "schedule", schedule, flags.schedule);
    e.schedule = *parse_pipeline_schedule(schedule);
  }
}

void apply_scalars(const CommonFlags& flags, const Overrider& over, Experiment& e) {
  if (flags.microbatches < 0) throw InputError("--microbatches: negative value");
  if (flags.global_batch < 0) throw InputError("--global-batch: negative value");
  over.number("--microbatches", "microbatches", e.microbatches, flags.microbatches);
  over.number("--global-batch", "global_batch", e.global_batch, flags.global_batch);
  over.number("--iterations", "iterations", e.iterations, flags.iterations);
  over.number("--epochs", "epochs", e.epochs, flags.epochs);
  over.number("--seed", "seed", e.seed, flags.seed);
  if (over.applies("--dtype")) {
    std::string dtype = e.dtype ? std::string(to_string(*e.dtype)) : "auto";
    over.text("--dtype", "dtype", dtype, flags.dtype);
    e.dtype = dtype == "auto" ? std::nullopt : parse_dtype(dtype);
  }
  if (over.applies("--optimizer")) {
    std::string kind(to_string(e.optimizer));
    over.text("--optimizer", "optimizer", kind, flags.optimizer);
    e.optimizer = *parse_optimizer(kind);
  }
}

void apply_sets(const CommonFlags& flags, const Overrider& over, Experiment& e) {
  // A framework preset first, so that the items given beside it override it (models' apply_sets).
  std::vector<std::string> pairs = flags.sets;
  std::stable_partition(pairs.begin(), pairs.end(),
                        [](const std::string& pair) { return pair.rfind("framework=", 0) == 0; });
  for (const std::string& pair : pairs) {
    const std::string key = pair.substr(0, pair.find('='));
    const std::string before = set_value_text(e, key);
    apply_set(e, pair);
    over.note("--set " + key, key, before, set_value_text(e, key));
  }
}

// GIST runs one sub-GCN per worker, or per `--set parts=P` workers: `--set m=M` alone gives M x P
// workers, `--workers N` alone N / P sub-GCNs, neither the default m; both must agree (check_gist
// says so when they do not).
void match_sites_and_workers(const CommonFlags& flags, const Overrider& over, Experiment& e) {
  if (e.solver.solver != Solver::gist) return;
  const bool m_given = std::any_of(flags.sets.begin(), flags.sets.end(),
                                   [](const std::string& pair) { return pair.rfind("m=", 0) == 0; });
  const bool workers_given = (over.applies("--workers") && flags.workers > 0) ||
                             (over.applies("--strategy") && !flags.strategy.empty());
  // Without a spec the default m sets the workers; over a spec only a given m does.
  if (!workers_given && (!over.from_spec() || m_given)) {
    e.dp = e.solver.subnets * e.solver.graph_parts, e.tp = 1, e.pp = 1;
  } else if (workers_given && !m_given) {
    StrategyConfig c;
    c.dp = e.dp, c.tp = e.tp, c.pp = e.pp;
    e.solver.subnets = std::max(1, solver_stages(c) / e.solver.graph_parts);
  }
}

void default_batch(Experiment& e, std::int64_t per_worker) {
  if (e.global_batch != 0 || per_worker <= 0) return;
  // The ADMM solvers train full batch (their default: a 10,000-sample subset), GIST and every GCN
  // full-graph (all the graph's nodes), not per worker.
  const Solver s = e.solver.solver;
  if (s == Solver::dladmm || s == Solver::pdadmm || s == Solver::pdadmm_g_q || s == Solver::gist) return;
  if (model_of(e).family == "gcn") return;
  e.global_batch = per_worker * (s == Solver::backprop ? e.dp : 1);
}

}  // namespace

CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
  const std::string range = min == INT64_MIN && max == INT64_MAX
                                ? "any 64-bit whole number"
                                : std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, v);
        if (text.empty() || stop != end || error == std::errc::invalid_argument)
          return "'" + text + "' is not a whole number";
        if (error == std::errc::result_out_of_range || v < min || v > max)
          return "'" + text + "' is out of range (" + range + ")";
        text = std::to_string(v);  // CLI11 would read "010" as octal
        return "";
      },
      range, "whole number");
}

CLI::Validator real_number(double min, double max) {
  const std::string range = format_number(min) + " to " + format_number(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, v);
        if (text.empty() || stop != end || error == std::errc::invalid_argument)
          return "'" + text + "' is not a number";
        if (error == std::errc::result_out_of_range || !std::isfinite(v) || v < min || v > max)
          return "'" + text + "' is out of range (" + range + ")";
        return "";
      },
      range, "number");
}

void refuse_beside_plan(const CommonFlags& flags, bool trains) {
  std::vector<std::string> conflicting = {"--spec",         "--model",    "--workers",      "--strategy",
                                          "--solver",       "--schedule", "--microbatches", "--iterations",
                                          "--global-batch", "--dtype"};
  if (!trains) conflicting.insert(conflicting.end(), {"--optimizer", "--seed"});
  for (const std::string& flag : conflicting)
    if (flags.given(flag) || (flag == "--spec" && !flags.spec.empty()))
      throw InputError("--plan: conflicts with " + flag +
                       " (a Plan file already fixes the model and the strategy; give one or the other)");
  for (const std::string& pair : flags.sets) {
    const std::string key = pair.substr(0, pair.find('='));
    const auto& keys = set_keys();
    const auto entry = std::find_if(keys.begin(), keys.end(), [&](const SetKey& k) { return k.name == key; });
    if (!trains || entry == keys.end() || entry->section != SetSection::optimizer)
      throw InputError(
          "--plan: conflicts with --set " + key +
          " (a Plan file already fixes the model and the strategy; only the optimizer's keys apply)");
  }
}

bool CommonFlags::given(const std::string& flag) const {
  if (std::find(forced.begin(), forced.end(), flag) != forced.end()) return true;
  const auto it = options.find(flag);
  return it != options.end() && it->second->count() > 0;
}

void CommonFlags::track(const CLI::Option* option) {
  for (const std::string& name : option->get_lnames()) options["--" + name] = option;
}

void add_common_flags(CLI::App& app, CommonFlags& flags, bool with_strategy) {
  add_input_option(app, "--spec", flags.spec,
                   "experiment spec JSON (strata spec); flags given too override it");
  flags.track(app.add_option("--model", flags.model, "model from the zoo (see `strata models`)")
                  ->capture_default_str());
  flags.track(app.add_option("--workers,--gpus", flags.workers, "number of workers (GPUs)")
                  ->transform(whole_number(1)));
  if (with_strategy) {
    flags.track(app.add_option("--strategy", flags.strategy, "parallel configuration, e.g. dp=2,tp=2,pp=2"));
    flags.track(app.add_option("--schedule", flags.schedule, "pipeline schedule: gpipe | 1f1b | zb-h1")
                    ->check(CLI::IsMember({"gpipe", "1f1b", "zb-h1"})));
    flags.track(app.add_option("--microbatches", flags.microbatches,
                               "microbatches per replica and iteration (default: pp)")
                    ->transform(whole_number(1)));
    flags.track(app.add_option("--iterations", flags.iterations, "training iterations in the Plan")
                    ->transform(whole_number(1)));
    flags.track(
        app.add_option("--partition", flags.partition,
                       "pipeline cut: uniform (blocks balanced by FLOPs, as if every stage had the same "
                       "device) or balanced (by the cost model on each stage's host of --platform, "
                       "within its memory)")
            ->check(CLI::IsMember({"uniform", "balanced"}))
            ->capture_default_str());
  }
  // The bound of a spec's global_batch (experiment_json.cpp): 10^12 samples.
  flags.track(app.add_option("--global-batch", flags.global_batch, "samples (sequences) per iteration")
                  ->transform(whole_number(1, 1'000'000'000'000)));
  flags.track(
      app.add_option("--dtype", flags.dtype, "fp32 | bf16 | fp16 (default: bf16 for GPT, fp32 otherwise)")
          ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16", "fp64"})));
  flags.track(
      app.add_option("--optimizer", flags.optimizer, "sgd | adam")->check(CLI::IsMember({"sgd", "adam"})));
  flags.track(app.add_option("--seed", flags.seed, "seed of every random choice")
                  ->transform(whole_number(INT64_MIN, INT64_MAX)));
  flags.track(app.add_option(
      "--set", flags.sets,
      "key=value model, solver or optimizer setting (repeatable; strata spec --help lists them)"));
  flags.track(app.add_option(
      "--solver", flags.solver,
      "training algorithm: backprop | ampnet | local | dladmm | pdadmm | pdadmm-g-q | gist | block-admm | "
      "serial-parallel (docs/solvers.md)"));
}

void add_platform_flag(CLI::App& app, CommonFlags& flags, PlatformFlag rule) {
  const std::string shipped = "SimGrid platform XML (shipped ones: platforms/)";
  switch (rule) {
    case PlatformFlag::required:
      add_input_option(app, "--platform", flags.platform, shipped)->required();
      return;
    case PlatformFlag::shipped_default:
      if (flags.platform.empty()) flags.platform = "platforms/a100-cluster-64.xml";
      add_input_option(app, "--platform", flags.platform, shipped)->capture_default_str();
      return;
    case PlatformFlag::this_machine:
      add_input_option(app, "--platform", flags.platform,
                       "SimGrid platform XML to simulate on (default: this machine, from --calibration)");
      return;
  }
}

void add_replay_flags(CLI::App& app, ReplayFlags& flags) {
  app.add_option("--collectives", flags.collectives, "collective fidelity: auto | step | aggregated")
      ->check(CLI::IsMember({"auto", "step", "aggregated"}));
  add_input_option(app, "--calibration", flags.calibration, "calibration JSON (efficiencies, overheads)");
  app.add_option("--network-model", flags.network_model, "SimGrid network/model (default LV08)");
  app.add_flag("--cold-starts", flags.cold_starts,
               "workers in functions (--function-memory) start cold: each waits a seeded cold start of the "
               "pool's before its first task");
  app.add_flag("--simgrid-factors", flags.simgrid_factors,
               "keep SimGrid's TCP latency/bandwidth factors and cross traffic (default: off, exact α-β)");
  app.add_option("--comm-streams", flags.comm_streams,
                 "per-group: one comm stream per communicator (DP, TP, PP peer) per worker, as NCCL; "
                 "one-per-worker: a single comm stream per worker (the rule before issue 15)")
      ->check(CLI::IsMember({"per-group", "one-per-worker"}));
  app.add_option(
         "--symmetry", flags.symmetry,
         "auto: replay representative data-parallel replicas (flat network, identical hosts), else two "
         "tensor-parallel ranks of each stage (a stage's ranks on one host), where that is exact "
         "(docs/simulator.md), every worker elsewhere; off: every worker")
      ->check(CLI::IsMember({"auto", "off"}));
}

ReplayOptions replay_options(const ReplayFlags& flags) {
  ReplayOptions options;
  options.collectives = parse_collective_mode(flags.collectives);
  options.network.model = flags.network_model;
  options.network.simgrid_factors = flags.simgrid_factors;
  options.cold_starts = flags.cold_starts;
  options.symmetry = parse_symmetry_mode(flags.symmetry);
  options.comm_streams =
      flags.comm_streams == "one-per-worker" ? CommStreams::one_per_worker : CommStreams::per_group;
  if (!flags.calibration.empty()) options.calibration = load_calibration(flags.calibration);
  return options;
}

// --partition balanced: the pipeline cut the partitioner chooses on the platform's hosts
// (models/schedule/pipeline_partition.hpp), recorded as the experiment's stage_blocks and said
// on stderr beside the default cut's slowest stage.
void balance_pipeline(const CommonFlags& flags, Experiment& e) {
  if (e.pp < 2) return;  // one stage: nothing to cut
  if (e.stage_blocks)
    throw InputError("--partition: balanced conflicts with --set stage_blocks (give one of them)");
  if (e.stage_tp) throw InputError("--partition: balanced conflicts with --set stage_tp (give one of them)");
  if (flags.platform.empty())
    throw InputError("--partition: balanced needs --platform FILE, the hosts the stages run on");
  const std::string platform = resolve_platform(flags.platform);
  const Model model = model_of(e);
  const StrategyConfig config = strategy_of(e, model);
  check_strategy(model, config);
  const Calibration calibration = flags.calibration != nullptr && !flags.calibration->empty()
                                      ? load_calibration(*flags.calibration)
                                      : Calibration::defaults();
  const PipelineCut cut =
      balanced_pipeline_cut(model, config, load_slot_platform(platform), CostModel(calibration), platform);
  e.stage_blocks = cut.stage_blocks;
  std::string blocks, degrees;
  for (std::int64_t b : cut.stage_blocks) blocks += (blocks.empty() ? "" : ",") + std::to_string(b);
  if (!cut.stage_tp.empty()) {
    e.stage_tp.emplace();
    for (int d : cut.stage_tp) {
      e.stage_tp->push_back(d);
      degrees += (degrees.empty() ? "" : ",") + std::to_string(d);
    }
    degrees = ", tensor-parallel degrees " + degrees + " (tp=" + std::to_string(e.tp) + " each before)";
    e.tp = 1;
  }
  std::fprintf(stderr,
               "partition balanced: blocks per stage %s%s, slowest stage %s (the uniform cut's: %s)\n",
               blocks.c_str(), degrees.c_str(), format_seconds(cut.balanced.bottleneck_s).c_str(),
               format_seconds(cut.default_cut.bottleneck_s).c_str());
}

Experiment experiment_on(Experiment base, const std::string& source, const CommonFlags& flags,
                         std::int64_t global_batch_per_worker) {
  Experiment e = std::move(base);
  const Overrider over(flags, source);
  apply_model_and_solver(flags, over, e);
  if (e.model.empty()) throw InputError("--model: required (see `strata models`)");
  apply_strategy(flags, over, e);
  apply_scalars(flags, over, e);
  apply_sets(flags, over, e);
  match_sites_and_workers(flags, over, e);
  default_batch(e, global_batch_per_worker);
  if (flags.partition == "balanced") balance_pipeline(flags, e);
  return e;
}

Experiment experiment_of(const CommonFlags& flags, std::int64_t global_batch_per_worker) {
  if (flags.spec.empty()) return experiment_on(Experiment{}, "", flags, global_batch_per_worker);
  return experiment_on(read_experiment(flags.spec), flags.spec, flags, global_batch_per_worker);
}

Model build_model(const CommonFlags& flags, StrategyConfig& config, SolverConfig* solver) {
  const Experiment e = experiment_of(flags);
  Model model = model_of(e);
  config = strategy_of(e, model);
  if (solver != nullptr)
    *solver = e.solver;
  else if (e.solver.solver != Solver::backprop)
    throw InputError("--solver " + flags.solver + ": this command runs backprop only");
  return model;
}

Plan build_plan(const CommonFlags& flags, std::int64_t global_batch_per_worker) {
  return lower(experiment_of(flags, global_batch_per_worker));
}

std::string resolve_platform(const std::string& path) {
  namespace fs = std::filesystem;
  // Anything at `path` (a symlink loop too: its reader says what is wrong) is the user's file.
  std::error_code ec;
  if (path.empty() || fs::exists(fs::symlink_status(path, ec))) return path;
  const fs::path shipped = fs::path(STRATA_PLATFORMS_DIR) / fs::path(path).filename();
  return fs::exists(shipped, ec) ? shipped.string() : path;
}

}  // namespace strata::cli
