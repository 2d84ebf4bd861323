#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "db_flags.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/sim/explore.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {
namespace {

// Every configuration's estimate in one transaction before the replays; each replay in its own
// as it finishes; a replay already in the store (same experiment, platform, settings, seed and
// a fidelity the requested one allows) is taken from it instead of replayed.
void store_explore_rows(ResultsStore& store, ExploreOptions& options, const ReplayFlags& flags) {
  const std::string hash = platform_hash(options.platform, replay_settings(flags, options.replay));
  const Experiment base = *options.experiment;
  const std::string platform = options.platform;
  ResultsStore* db = &store;
  options.estimated = [db, base, hash, platform](const std::vector<ExploreRow>& rows) {
    std::vector<ResultRow> out;
    out.reserve(rows.size());
    for (const ExploreRow& r : rows)
      out.push_back(estimate_row(r.estimate, "explore", experiment_for(base, r.config), hash, platform,
                                 r.config.workers(), describe_config(r.config)));
    db->commit(out);
  };
  options.stored_replay = [db, base, hash](const StrategyConfig& c,
                                           CollectiveMode mode) -> std::optional<Report> {
    std::vector<std::string> fidelities;
    if (mode != CollectiveMode::aggregated) fidelities.emplace_back("step");
    if (mode != CollectiveMode::step) fidelities.emplace_back("aggregated");
    const Experiment e = experiment_for(base, c);
    for (const std::string& f : fidelities)
      if (std::optional<ResultRow> row = db->find(ResultKey{experiment_hash(e), hash, f, e.seed}))
        return report_of_row(*row);
    return std::nullopt;
  };
  options.replayed = [db, base, hash](const StrategyConfig& c, const Report& report) {
    db->commit({report_row(report, "explore", experiment_for(base, c), hash, describe_config(c))});
  };
}

// explore's flags, and the sweep they ask for (on this rank of an MPI job, or alone).
struct ExploreCommandOptions {
  CommonFlags flags;
  int top = 5;
  bool cross_host_tp = false;
  // The best configuration's files: none unless asked for (hundreds of MB for the largest
  // models, so writing them by default would fill the folder explore runs in).
  std::string trace;
  std::string perfetto;
  std::string svg;
  std::string csv;
  std::string json;
  ReplayFlags replay;
  DbFlags db;
  std::size_t rows = 20;
  std::string fidelity;
  int eta = 3;
  std::string objective = "time";
  std::vector<std::string> platforms{"platforms/a100-cluster-64.xml"};
  const CLI::Option* top_option = nullptr;
  int sweep(const ExploreShards& shards) const;
};

}  // namespace

void add_explore_command(CLI::App& app, Action& action, OverMpi over_mpi) {
  auto* cmd = app.add_subcommand("explore", "rank every parallel configuration of a model on a platform");
  auto o = std::make_shared<ExploreCommandOptions>();
  o->flags.model = "gpt3-13b";
  add_common_flags(*cmd, o->flags, false);
  // --platform, repeatable: one sweep over several platforms, ranked together.
  const CLI::Option* platform =
      cmd->add_option("--platform", o->platforms,
                      "SimGrid platform XML (shipped ones: platforms/); repeat it to "
                      "rank several platforms in one sweep")
          ->capture_default_str();
  track_input(*cmd, platform, o->flags.platform);  // the first: no output may replace it
  cmd->add_option("--objective", o->objective,
                  "rank by time, money or energy per iteration, or tokens-per-dollar (fitting first)")
      ->check(CLI::IsMember({"time", "money", "energy", "tokens-per-dollar"}));
  o->top_option =
      cmd->add_option("--top", o->top, "configurations replayed on SimGrid")->transform(whole_number(0));
  cmd->add_option("--fidelity", o->fidelity,
                  "multi-fidelity search up to analytical, aggregated or step (successive halving)")
      ->check(CLI::IsMember({"analytical", "aggregated", "step"}));
  cmd->add_option("--eta", o->eta, "successive halving: each fidelity keeps 1/eta of the previous one's")
      ->transform(whole_number(2, 1000));
  cmd->add_flag("--allow-cross-host-tp", o->cross_host_tp, "let tensor parallelism span hosts");
  add_output_option(*cmd, "--trace", o->trace, "write the best configuration's Trace (default: none)");
  add_output_option(*cmd, "--perfetto", o->perfetto,
                    "write the best configuration's Chrome trace (default: none)");
  add_output_option(*cmd, "--svg", o->svg, "write the best configuration's SVG timeline (default: none)");
  add_output_option(*cmd, "--csv", o->csv, "write the table's rows as CSV (default: none)");
  add_output_option(*cmd, "--json", o->json,
                    "write the table's rows and the best line as JSON (default: none)");
  add_replay_flags(*cmd, o->replay);
  add_db_flags(*cmd, o->db, true);
  cmd->add_option("--rows", o->rows, "rows of the table to print")->transform(whole_number(0));
  cmd->callback([&action, o, over_mpi] {
    o->flags.platform = o->platforms.front();
    action = [o, over_mpi] {
      if (launched_by_mpirun()) {
        if (!over_mpi)
          throw InputError(
              "explore: started by mpirun, but this executable has no MPI (run strata, "
              "built with libopenmpi-dev, under mpirun)");
        return over_mpi([o](const ExploreShards& shards) { return o->sweep(shards); });
      }
      return o->sweep(ExploreShards{});
    };
  });
}

int ExploreCommandOptions::sweep(const ExploreShards& shards) const {
  // Under mpirun every rank sweeps (its share of the replays); rank 0 alone keeps the store,
  // prints and writes files.
  const bool speaks = shards.rank == 0;
  ExploreOptions options;
  CommonFlags chosen = flags;
  chosen.workers = 0;  // the explorer chooses dp/tp/pp
  const Experiment e = experiment_of(chosen);
  if (e.solver.solver != Solver::backprop)
    throw InputError("--solver " + flags.solver + ": this command runs backprop only");
  options.model = e.model;
  options.experiment = e;
  options.base = strategy_of(e, model_of(e));  // dtype, optimizer, batch, ...
  for (const std::string& key : model_keys(e.model))
    if (const std::string value = set_value_text(e, key); !value.empty())
      options.model_overrides[key] = value;
  if (flags.workers < 0) throw InputError("--workers: negative value");
  options.workers = flags.workers > 0 || flags.spec.empty() ? flags.workers : e.workers();
  options.top_k = top;
  if (!fidelity.empty()) {
    if (top_option->count() > 0)
      throw InputError("--top: conflicts with --fidelity (it chooses what to replay)");
    options.fidelity = fidelity;
    options.eta = eta;
  }
  options.objective = parse_objective(objective);
  options.allow_cross_host_tp = cross_host_tp;
  options.replay = replay_options(replay);
  options.progress = progress_wanted() && speaks;
  options.shards = shards;
  const bool several = platforms.size() > 1;
  if (several)
    for (const std::string* f : {&trace, &perfetto, &svg, &csv, &json})
      if (!f->empty())
        throw InputError(
            "--platform: several platforms write no best-configuration files or table files "
            "(strata query reads their rows from the store)");
  if (speaks) {
    options.best_trace_path = trace;
    options.best_perfetto_path = perfetto;
    options.best_svg_path = svg;
  }
  std::unique_ptr<ResultsStore> store = speaks ? open_results_store(db) : nullptr;
  std::vector<ExploreResult> results;
  for (const std::string& given : platforms) {
    ExploreOptions one = options;
    one.platform = resolve_platform(given);
    if (store) store_explore_rows(*store, one, replay);
    ExploreResult result = explore(one);
    if (!speaks) continue;
    if (const ExploreRow* best = best_row(result); store && best != nullptr && best->simulated) {
      // The best configuration's replay row again, with the files written from it.
      std::map<std::string, std::string> files = row_files(
          {{"perfetto", one.best_perfetto_path}, {"trace", one.best_trace_path}, {"svg", one.best_svg_path}});
      if (!files.empty()) {
        StrategyConfig config = best->config;
        if (best->reduced) config.lowered_replicas = 1;
        ResultRow row = report_row(*best->simulated, "explore", experiment_for(e, config),
                                   platform_hash(one.platform, replay_settings(replay, one.replay)),
                                   describe_config(config));
        row.files = std::move(files);
        store->commit({row});
      }
    }
    std::printf(
        "explore %s on %s with %d workers: %zu configurations, analytical %.3f s, %d replays %.1f s%s\n",
        result.model.c_str(), result.platform.c_str(), result.workers, result.candidates,
        result.analytical_wall_s,
        options.fidelity
            ? static_cast<int>(std::count_if(result.rows.begin(), result.rows.end(),
                                             [](const ExploreRow& r) { return r.simulated.has_value(); }))
            : std::min<int>(top, static_cast<int>(result.candidates)),
        result.replay_wall_s,
        shards.size > 1 ? (" over " + std::to_string(shards.size) + " MPI ranks").c_str() : "");
    std::cout << format_explore_table(result, rows);
    std::cout << format_fidelity_line(result);
    if (several) std::cout << best_line(result) << "\n";
    results.push_back(std::move(result));
  }
  if (!speaks) return 0;
  if (several) {
    std::cout << format_platforms_table(results, options.objective, rows);
    if (!results_have_rows(results))
      throw InputError("explore: no valid configuration of " + options.model + " on " +
                       std::to_string(options.workers) + " workers on any of the " +
                       std::to_string(results.size()) + " platforms");
    return 0;
  }
  const ExploreResult& result = results.front();
  if (result.rows.empty())  // one line saying why, and no table file of no rows
    throw InputError(
        "explore: no valid configuration of " + options.model + " on " + std::to_string(options.workers) +
        " workers" +
        (options.base.global_batch > 0
             ? " with a global batch of " + std::to_string(options.base.global_batch) + " samples"
             : "") +
        " (dp·tp·pp = workers, dp dividing the global batch, tp the attention heads, pp at most "
        "the blocks)");
  if (!csv.empty()) write_file_atomically(csv, explore_csv(result, rows));
  if (!json.empty()) write_file_atomically(json, explore_json(result, rows));
  std::string files;
  for (const std::string* f : {&trace, &perfetto, &svg})
    if (!f->empty()) files += (files.empty() ? "" : ", ") + *f;
  const ExploreRow* best = best_row(result);
  const bool written = best != nullptr && best->simulated.has_value();
  std::printf("%s%s%s\n", best_line(result).c_str(), written && !files.empty() ? " -> " : "",
              written ? files.c_str() : "");
  if (!written && !files.empty())
    std::fprintf(stderr, "explore: %s not written: %s\n", files.c_str(),
                 best == nullptr ? "no configuration fits"
                 : best->not_replayed.empty()
                     ? "the best configuration was not replayed (--top 0)"
                     : ("the best configuration was not replayed: " + best->not_replayed).c_str());
  return 0;
}

}  // namespace strata::cli
