// strata simulate: replays an experiment's Plan (or a Plan file) on a SimGrid platform; the
// report and the trace record the experiment and its hash.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "db_flags.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "placement_flags.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/perfetto.hpp"
#include "strata/traces/plan_json.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata::cli {
namespace {

struct SimulateOptions {
  CommonFlags flags;
  ReplayFlags replay;
  PlacementFlags placement;
  DbFlags db;
  std::string plan, trace, report, perfetto;
};

void show_progress(std::size_t done, std::size_t all, double now) {
  std::fprintf(stderr, "\rreplay: %3.0f %% (%zu of %zu tasks, simulated %.6f s)%s",
               100.0 * static_cast<double>(done) / static_cast<double>(all), done, all, now,
               done == all ? "\n" : "");
}

int simulate(const SimulateOptions& o) {
  std::optional<Experiment> experiment;
  ReplayOptions options = replay_options(o.replay);
  const std::string platform = resolve_platform(o.flags.platform);
  options.keep_trace = !o.trace.empty() || !o.perfetto.empty();
  if (progress_wanted()) options.progress = show_progress;
  std::string experiment_hash;
  ReplayResult result;
  if (o.plan.empty()) experiment = experiment_of(o.flags);
  const bool natural = o.placement.policy == "strategy" && o.placement.placement.empty() &&
                       o.placement.function_memory_mb <= 0;
  if (experiment && natural) {
    // The Plan is lowered once the platform is known: whole, or a symmetry reduction of it.
    result = replay_experiment(*experiment, platform, options);
    experiment_hash = result.report.experiment_hash;
  } else {
    Plan plan;
    if (experiment) {
      plan = lower(*experiment);
    } else {
      refuse_beside_plan(o.flags, false);
      plan = read_plan(o.plan, true);  // unplaced tasks: --schedule-policy places them
    }
    const std::optional<PlacementReport> placed =
        place_workers_by_policy(plan, o.placement, platform, options);
    result = replay(plan, platform, options);
    result.report.placement = placed;
    experiment_hash = plan.info.experiment_hash;
  }
  const nlohmann::json spec = experiment ? canonical_json(*experiment) : nlohmann::json();
  result.report.experiment = spec;
  result.trace.experiment = spec;
  result.trace.experiment_hash = experiment_hash;
  if (!o.trace.empty()) write_trace(result.trace, o.trace);
  if (!o.perfetto.empty()) write_chrome_trace(result.trace, o.perfetto);
  if (!o.report.empty()) write_file_atomically(o.report, report_to_json(result.report).dump(1) + "\n");
  if (std::unique_ptr<ResultsStore> store = open_results_store(o.db)) {
    ResultRow row = report_row(result.report, "simulate", experiment,
                               platform_hash(platform, replay_settings(o.replay, options)), "");
    row.files = row_files({{"perfetto", o.perfetto}, {"trace", o.trace}, {"report", o.report}});
    store->commit({row});
  }
  std::cout << format_report(result.report);
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("simulate", "replay a Plan on a SimGrid platform");
  auto o = std::make_shared<SimulateOptions>();
  add_common_flags(*cmd, o->flags, true);
  add_platform_flag(*cmd, o->flags, PlatformFlag::required);
  add_input_option(*cmd, "--plan", o->plan, "Plan JSON (instead of --model/--strategy)");
  add_output_option(*cmd, "--trace", o->trace, "write the predicted Trace (strata JSON)");
  add_output_option(*cmd, "--report", o->report, "write the report (JSON)");
  add_output_option(*cmd, "--perfetto", o->perfetto, "write a Chrome trace event file for Perfetto");
  add_replay_flags(*cmd, o->replay);
  o->flags.calibration = &o->replay.calibration;  // prices --partition balanced
  add_placement_flags(*cmd, o->placement, true);
  add_db_flags(*cmd, o->db, false);
  cmd->callback([&action, o] { action = [o] { return simulate(*o); }; });
}

}  // namespace strata::cli
