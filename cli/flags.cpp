#include "flags.hpp"

#include <algorithm>
#include <filesystem>

#include "strata/traces/error.hpp"

namespace strata::cli {
namespace {

CollectiveAlgo parse_algo_flag(const std::string& key, const std::string& value) {
  auto algo = parse_collective_algo(value);
  if (!algo || *algo == CollectiveAlgo::none)
    throw InputError("--set " + key + ": unknown algorithm '" + value +
                     "' (known: ring, tree, halving_doubling, hierarchical)");
  return *algo;
}

// GIST runs one sub-GCN per worker: `--set m=M` alone gives M workers, `--workers N` alone N
// sub-GCNs, neither the default m; both must agree (check_gist says so when they do not).
void match_sites_and_workers(const CommonFlags& flags, StrategyConfig& config, SolverConfig& solver) {
  const bool m_given = std::any_of(flags.sets.begin(), flags.sets.end(),
                                   [](const std::string& pair) { return pair.rfind("m=", 0) == 0; });
  if (flags.workers == 0 && flags.strategy.empty())
    config.dp = solver.subnets;
  else if (!m_given)
    solver.subnets = solver_stages(config);
}

}  // namespace

void add_common_flags(CLI::App& app, CommonFlags& flags, bool with_strategy) {
  app.add_option("--model", flags.model, "model from the zoo (see `strata models`)")->capture_default_str();
  app.add_option("--workers,--gpus", flags.workers, "number of workers (GPUs)");
  if (with_strategy) {
    app.add_option("--strategy", flags.strategy, "parallel configuration, e.g. dp=2,tp=2,pp=2");
    app.add_option("--schedule", flags.schedule, "pipeline schedule: gpipe | 1f1b")
        ->check(CLI::IsMember({"gpipe", "1f1b"}));
    app.add_option("--microbatches", flags.microbatches,
                   "microbatches per replica and iteration (default: pp)");
    app.add_option("--iterations", flags.iterations, "training iterations in the Plan")
        ->check(CLI::PositiveNumber);
  }
  app.add_option("--global-batch", flags.global_batch, "samples (sequences) per iteration");
  app.add_option("--dtype", flags.dtype, "fp32 | bf16 | fp16 (default: bf16 for GPT, fp32 otherwise)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16", "fp64"}));
  app.add_option("--optimizer", flags.optimizer, "sgd | adam")->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--seed", flags.seed, "seed of every random choice");
  app.add_option("--set", flags.sets, "key=value model or solver hyperparameter (repeatable)");
  app.add_option("--solver", flags.solver,
                 "training algorithm: backprop | ampnet | local | dladmm | pdadmm | pdadmm-g-q | gist "
                 "(docs/solvers.md)");
}

void add_replay_flags(CLI::App& app, ReplayFlags& flags) {
  app.add_option("--collectives", flags.collectives, "collective fidelity: auto | step | aggregated")
      ->check(CLI::IsMember({"auto", "step", "aggregated"}));
  app.add_option("--calibration", flags.calibration, "calibration JSON (efficiencies, overheads)");
  app.add_option("--network-model", flags.network_model, "SimGrid network/model (default LV08)");
  app.add_flag("--simgrid-factors", flags.simgrid_factors,
               "keep SimGrid's TCP latency/bandwidth factors and cross traffic (default: off, exact α-β)");
}

ReplayOptions replay_options(const ReplayFlags& flags) {
  ReplayOptions options;
  options.collectives = parse_collective_mode(flags.collectives);
  options.network.model = flags.network_model;
  options.network.simgrid_factors = flags.simgrid_factors;
  if (!flags.calibration.empty()) options.calibration = load_calibration(flags.calibration);
  return options;
}

std::map<std::string, std::string> apply_sets(const std::vector<std::string>& sets, StrategyConfig& config) {
  std::map<std::string, std::string> model_overrides;
  for (const std::string& pair : sets) {
    auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--set '" + pair + "': expected key=value");
    std::string key = pair.substr(0, eq);
    std::string value = pair.substr(eq + 1);
    if (key == "bucket_mb") {
      double mb = 0;
      try {
        mb = std::stod(value);
      } catch (const std::exception&) {
        throw InputError("--set bucket_mb: '" + value + "' is not a number");
      }
      if (mb < 0) throw InputError("--set bucket_mb: negative size " + value);
      config.bucket_bytes = mb * 1e6;
    } else if (key == "replicas") {
      try {
        config.lowered_replicas = std::stoi(value);
      } catch (const std::exception&) {
        throw InputError("--set replicas: '" + value + "' is not an integer");
      }
    } else if (key == "dp_algo") {
      config.dp_algo = parse_algo_flag(key, value);
    } else if (key == "tp_algo") {
      config.tp_algo = parse_algo_flag(key, value);
    } else {
      model_overrides[key] = value;
    }
  }
  return model_overrides;
}

StrategyConfig build_config(const CommonFlags& flags, const Model* model) {
  StrategyConfig c;
  if (!flags.strategy.empty())
    parse_strategy(flags.strategy, c);
  else if (flags.workers > 0)
    c.dp = flags.workers;
  if (flags.workers > 0 && c.workers() != flags.workers)
    throw InputError("--strategy " + c.to_string() + ": dp·tp·pp = " + std::to_string(c.workers()) +
                     " does not equal --workers " + std::to_string(flags.workers));
  c.schedule = flags.schedule == "gpipe" ? PipelineSchedule::gpipe : PipelineSchedule::one_f_one_b;
  c.microbatches = flags.microbatches;
  c.global_batch = flags.global_batch;
  if (flags.microbatches < 0) throw InputError("--microbatches: negative value");
  if (flags.global_batch < 0) throw InputError("--global-batch: negative value");
  std::string dtype = flags.dtype;
  if (dtype == "auto") dtype = model != nullptr && model->family == "gpt" ? "bf16" : "fp32";
  c.dtype = *parse_dtype(dtype);
  c.optimizer = flags.optimizer == "sgd" ? Optimizer::sgd : Optimizer::adam;
  c.seed = flags.seed;
  c.iterations = flags.iterations;
  return c;
}

std::string resolve_platform(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::exists(path)) return path;
  const fs::path shipped = fs::path(STRATA_PLATFORMS_DIR) / fs::path(path).filename();
  return fs::exists(shipped) ? shipped.string() : path;
}

Model build_model(const CommonFlags& flags, StrategyConfig& config, SolverConfig* solver) {
  if (flags.model.empty()) throw InputError("--model: required (see `strata models`)");
  const std::optional<Solver> which = parse_solver(flags.solver);
  if (!which) {
    std::string known;
    for (const std::string& name : solver_names()) known += (known.empty() ? "" : ", ") + name;
    throw InputError("--solver: unknown solver '" + flags.solver + "' (known: " + known + ")");
  }
  StrategyConfig scratch;
  auto overrides = apply_sets(flags.sets, scratch);
  SolverConfig parsed = parse_solver_config(*which, overrides);
  Model model = make_model(flags.model, overrides);
  config = build_config(flags, &model);
  apply_sets(flags.sets, config);
  if (parsed.solver == Solver::gist) match_sites_and_workers(flags, config, parsed);
  if (solver != nullptr)
    *solver = parsed;
  else if (*which != Solver::backprop)
    throw InputError("--solver " + flags.solver + ": this command runs backprop only");
  return model;
}

Plan build_plan(const CommonFlags& flags, std::int64_t global_batch_per_worker) {
  StrategyConfig config;
  SolverConfig solver;
  Model model = build_model(flags, config, &solver);
  // The ADMM solvers train full batch (their default: a 10,000-sample subset), GIST and every GCN
  // full-graph (all the graph's nodes), not per worker.
  const bool full_batch = solver.solver == Solver::dladmm || solver.solver == Solver::pdadmm ||
                          solver.solver == Solver::pdadmm_g_q || solver.solver == Solver::gist ||
                          model.family == "gcn";
  if (config.global_batch == 0 && global_batch_per_worker > 0 && !full_batch)
    config.global_batch = global_batch_per_worker * (solver.solver == Solver::backprop ? config.dp : 1);
  return lower_solver(model, config, solver);
}

}  // namespace strata::cli
