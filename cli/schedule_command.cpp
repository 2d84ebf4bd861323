// strata schedule: every placement policy on one workload, side by side (docs/scheduling.md).
// A workflow (--workflow: DAX or WfFormat JSON) is scheduled task by task on the platform's
// hosts and run on SimGrid following each schedule, plus Min-Min decided online as SimGrid's
// dag-scheduling example does; a training Plan (the experiment flags) has its workers placed by
// each policy and is replayed once per policy, in a process of its own.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/schedule/plan_placement.hpp"
#include "strata/models/schedule/workflow_problem.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/platform.hpp"
#include "strata/sim/workflow_run.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/units.hpp"
#include "strata/traces/workflow.hpp"

namespace strata::cli {
namespace {

struct ScheduleOptions {
  CommonFlags flags;
  ReplayFlags replay;
  std::string workflow;
  std::string policies = "strategy,heft,cpop,peft,minmin,cp,rr";
  std::string csv, json;
};

struct Row {
  std::string policy;
  double simulated_s = 0;
  double estimate_s = 0;
  double strategy_estimate_s = -1;  // training Plans only
  bool kept_strategy = false;
  double slr = 0, speedup = 0;
  double run_time_s = 0;
};

std::vector<SchedulePolicy> parse_policies(const std::string& text, bool workflow) {
  std::vector<SchedulePolicy> out;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    const std::optional<SchedulePolicy> p = parse_schedule_policy(name);
    if (!p)
      throw InputError("--policies: unknown policy '" + name +
                       "' (strategy, heft, cpop, peft, minmin, cp, rr)");
    if (workflow && *p == SchedulePolicy::strategy) continue;  // a workflow has no strategy's placement
    out.push_back(*p);
  }
  if (out.empty()) throw InputError("--policies: no policy to compare");
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<Row> workflow_rows(const ScheduleOptions& o, const std::string& platform,
                               const ReplayOptions& options) {
  const Workflow w = read_workflow(o.workflow);
  const WorkflowProblem wp = workflow_problem(w, platform_routes(platform));
  check_dag(wp.problem, o.workflow);
  std::vector<Row> rows;
  for (SchedulePolicy p : parse_policies(o.policies, true)) {
    const auto started = std::chrono::steady_clock::now();
    const DagSchedule s = schedule_dag(wp.problem, p);
    Row r;
    r.run_time_s = seconds_since(started);
    r.policy = std::string(to_string(p));
    r.estimate_s = s.makespan;
    r.slr = schedule_length_ratio(wp.problem, s);
    r.speedup = speedup_over_serial(wp.problem, s);
    r.simulated_s = run_workflow_schedule(wp, s, platform, options.network).makespan_s;
    rows.push_back(r);
  }
  // SimGrid's own example: Min-Min deciding as tasks complete, inside the simulation.
  const auto started = std::chrono::steady_clock::now();
  const WorkflowRun online = run_workflow_online_minmin(wp, platform, options.network);
  Row r;
  r.run_time_s = seconds_since(started);
  r.policy = "minmin-online";
  for (const WorkflowStep& step : online.steps) r.estimate_s = std::max(r.estimate_s, step.estimate_s);
  r.simulated_s = online.makespan_s;
  DagSchedule as_run;
  as_run.makespan = online.makespan_s;
  r.slr = schedule_length_ratio(wp.problem, as_run);
  r.speedup = speedup_over_serial(wp.problem, as_run);
  rows.push_back(r);
  return rows;
}

std::vector<Row> plan_rows(const ScheduleOptions& o, const std::string& platform,
                           const ReplayOptions& options) {
  const Plan plan = build_plan(o.flags);
  check_platform(platform, options.network);
  const SlotPlatform slots = load_slot_platform(platform, options.network);
  const CostModel cost(options.calibration);
  std::vector<Row> rows;
  for (SchedulePolicy p : parse_policies(o.policies, false)) {
    const PlanPlacement placed = place_plan(plan, slots, cost, p);
    Row r;
    r.policy = std::string(to_string(p));
    r.estimate_s = placed.policy_estimate_s;
    r.strategy_estimate_s = placed.strategy_estimate_s;
    r.kept_strategy = placed.kept_strategy;
    r.slr = placed.schedule_length_ratio;
    r.speedup = placed.speedup;
    r.run_time_s = placed.run_time_s;
    Plan placed_plan = plan;
    placed_plan.placement = placed.hosts_by_worker;
    placed_plan.placement_policy = r.policy;
    r.simulated_s = replay_report_apart(placed_plan, platform, options).iteration_time_s;
    rows.push_back(r);
  }
  return rows;
}

nlohmann::json row_json(const Row& r) {
  nlohmann::json j = {{"policy", r.policy},         {"simulated_s", r.simulated_s},
                      {"estimate_s", r.estimate_s}, {"schedule_length_ratio", r.slr},
                      {"speedup", r.speedup},       {"policy_run_time_s", r.run_time_s}};
  if (r.strategy_estimate_s >= 0) {
    j["strategy_estimate_s"] = r.strategy_estimate_s;
    j["kept_strategy"] = r.kept_strategy;
  }
  return j;
}

int schedule(const ScheduleOptions& o) {
  const std::string platform = resolve_platform(o.flags.platform);
  ReplayOptions options = replay_options(o.replay);
  const bool workflow = !o.workflow.empty();
  if (workflow && (o.flags.given("--model") || !o.flags.spec.empty()))
    throw InputError("--workflow: conflicts with --model/--spec (schedule a workflow or a training Plan)");
  const std::vector<Row> rows =
      workflow ? workflow_rows(o, platform, options) : plan_rows(o, platform, options);
  std::printf("%-14s %14s %14s %8s %9s %14s%s\n", "policy", workflow ? "makespan" : "iteration", "estimate",
              "SLR", "speedup", "policy time", workflow ? "" : "  placement");
  for (const Row& r : rows)
    std::printf("%-14s %14s %14s %8.3f %7.2f x %14s%s\n", r.policy.c_str(),
                format_seconds(r.simulated_s).c_str(), format_seconds(r.estimate_s).c_str(), r.slr, r.speedup,
                format_seconds(r.run_time_s).c_str(),
                workflow || r.policy == "strategy" ? ""
                : r.kept_strategy                  ? "  strategy's kept (estimate not better)"
                                                   : "  the policy's");
  std::printf(
      "%s on %s; simulated: %s (SimGrid), estimate: the policy's own; SLR: estimate over the critical path "
      "at minimum costs; speedup: the best single %s's serial time over the estimate\n",
      workflow ? o.workflow.c_str() : "the Plan", platform.c_str(),
      workflow ? "the makespan" : "the iteration time", workflow ? "host" : "worker slot");
  std::vector<nlohmann::json> all;
  for (const Row& r : rows) all.push_back(row_json(r));
  write_table_files(all,
                    {"policy", "simulated_s", "estimate_s", "strategy_estimate_s", "kept_strategy",
                     "schedule_length_ratio", "speedup", "policy_run_time_s"},
                    o.csv, o.json,
                    {{"schema_version", 1},
                     {"format", "strata-schedule"},
                     {"platform", platform},
                     {"workload", workflow ? o.workflow : std::string("plan")}},
                    "rows");
  return 0;
}

}  // namespace

void add_schedule_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "schedule",
      "compare placement policies on a workflow DAG or a training Plan (makespan, estimate, SLR)");
  auto o = std::make_shared<ScheduleOptions>();
  add_common_flags(*cmd, o->flags, true);
  add_platform_flag(*cmd, o->flags, PlatformFlag::required);
  add_replay_flags(*cmd, o->replay);
  o->flags.calibration = &o->replay.calibration;  // prices --partition balanced
  add_input_option(*cmd, "--workflow", o->workflow,
                   "workflow DAG: DAX XML (SimGrid's examples) or WfCommons WfFormat JSON");
  cmd->add_option("--policies", o->policies, "policies to compare, comma-separated")->capture_default_str();
  add_output_option(*cmd, "--csv", o->csv, "the table as CSV");
  add_output_option(*cmd, "--json", o->json, "the table as JSON");
  cmd->callback([&action, o] { action = [o] { return schedule(*o); }; });
}

}  // namespace strata::cli
