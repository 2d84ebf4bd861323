// strata hybrid: what of a training job should run on VMs and what on serverless functions, for a
// deadline at the least cost or a budget in the least time (sim/hybrid.hpp, docs/serverless.md).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/experiment.hpp"
#include "strata/sim/hybrid.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/line_plot_svg.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

struct HybridOptions {
  CommonFlags flags;
  ReplayFlags replay;
  std::string deadline, budget;
  double samples = 60000;
  double memory = 0;
  bool all = false;
  std::string svg, csv, json;
};

// `value` with `digits` decimals.
std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// Money as people read it: 20 USD, 0.000404 USD.
std::string usd(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3g USD", value);
  return text;
}

// "600s", "600", "10min", "2h" -> seconds; "20usd", "20", "$20" -> USD. One line otherwise.
double parse_amount(const std::string& flag, const std::string& text, bool money) {
  std::string number = text, unit;
  if (money && !number.empty() && number.front() == '$') number.erase(0, 1);
  std::size_t end = 0;
  while (end < number.size() && (std::isdigit(static_cast<unsigned char>(number[end])) != 0 ||
                                 number[end] == '.' || number[end] == 'e' || number[end] == '+'))
    ++end;
  unit = number.substr(end);
  number.resize(end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double factor = 0;
  if (money) {
    factor = unit.empty() || unit == "usd" ? 1 : 0;
  } else {
    factor = unit.empty() || unit == "s" ? 1 : unit == "min" ? 60 : unit == "h" ? 3600 : 0;
  }
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(number, &used);
    if (used != number.size()) factor = 0;
  } catch (const std::exception&) {
    factor = 0;
  }
  if (factor == 0 || !std::isfinite(value) || value <= 0)
    throw InputError(flag + ": '" + text + "' is not a positive " +
                     (money ? "amount of money (e.g. 20usd)" : "duration (e.g. 600s, 10min, 2h)"));
  return value * factor;
}

// The flags that lower a function plan's iteration as one Plan (dp_algo=storage_*, cache_* or
// parameter_server, --function-memory; docs/serverless.md), one bucket for the whole gradient
// as LambdaML exchanges it; empty for VM plans and a single function.
std::string plan_flags(const HybridPlan& p, const HybridJob& job) {
  if (p.kind == "vm" || p.functions < 2) return "";
  const std::string algo = p.exchange == "allreduce"              ? "storage_allreduce"
                           : p.exchange == "scatter-reduce"       ? "storage_scatter_reduce"
                           : p.exchange == "cache-allreduce"      ? "cache_allreduce"
                           : p.exchange == "cache-scatter-reduce" ? "cache_scatter_reduce"
                           : p.exchange == "ps"                   ? "parameter_server"
                                                                  : "";
  if (algo.empty()) return "";
  const Plan whole = lower(job.experiment);
  const std::int64_t per_function = (whole.info.global_batch + p.functions - 1) / p.functions;
  return "--strategy dp=" + std::to_string(p.functions) + " --global-batch " +
         std::to_string(per_function * p.functions) + " --set dp_algo=" + algo +
         " --set bucket_mb=" + std::to_string(p.gradient_mb) + " --function-memory " +
         format_number(p.memory_mb);
}

nlohmann::json plan_json(const HybridPlan& p, const HybridJob& job) {
  return {{"plan", p.label()},
          {"kind", p.kind},
          {"vms", p.vms},
          {"functions", p.functions},
          {"memory_mb", p.memory_mb},
          {"exchange", p.exchange},
          {"iteration_s", p.iteration_s},
          {"total_s", p.total_s},
          {"cost_usd", p.cost_usd},
          {"vm_usd", p.vm_usd},
          {"gb_s", p.gb_s},
          {"function_usd", p.function_usd},
          {"request_usd", p.request_usd},
          {"storage_usd", p.storage_usd},
          {"invocations", p.invocations},
          {"checkpoints", p.checkpoints},
          {"cold_start_s", p.cold_start_s},
          {"pareto", p.pareto},
          {"plan_flags", plan_flags(p, job)}};
}

int hybrid(const HybridOptions& o) {
  if (!o.deadline.empty() && !o.budget.empty())
    throw InputError(
        "--deadline: conflicts with --budget (minimum cost under a deadline, or minimum time under a "
        "budget)");
  const double deadline = o.deadline.empty() ? 0 : parse_amount("--deadline", o.deadline, false);
  const double budget = o.budget.empty() ? 0 : parse_amount("--budget", o.budget, true);
  HybridJob job;
  job.experiment = experiment_of(o.flags);
  job.samples = o.samples;
  job.memory_mb = o.memory;
  const std::string platform = resolve_platform(o.flags.platform);
  const ReplayOptions replay = replay_options(o.replay);
  const std::vector<HybridPlan> plans = hybrid_plans(job, platform, replay.network, replay.calibration);
  const HybridPlan* chosen = nullptr;
  for (const HybridPlan& p : plans) {
    if (deadline > 0 && p.total_s <= deadline && (chosen == nullptr || p.cost_usd < chosen->cost_usd))
      chosen = &p;
    if (budget > 0 && p.cost_usd <= budget && (chosen == nullptr || p.total_s < chosen->total_s)) chosen = &p;
  }
  if (deadline > 0 && chosen == nullptr)
    throw InputError("--deadline: no plan ends within " + format_seconds(deadline) + ": the fastest, " +
                     plans.front().label() + ", takes " + format_seconds(plans.front().total_s));
  if (budget > 0 && chosen == nullptr) {
    const HybridPlan* cheapest = &plans.front();
    for (const HybridPlan& p : plans)
      if (p.cost_usd < cheapest->cost_usd) cheapest = &p;
    throw InputError("--budget: no plan costs at most " + usd(budget) + ": the cheapest, " +
                     cheapest->label() + ", costs " + usd(cheapest->cost_usd));
  }
  std::printf("%-34s %12s %12s %11s %9s %9s %9s %9s %5s %9s\n", "plan", "iteration", "job", "cost", "VMs",
              "functions", "requests", "storage", "inv.", "cold");
  for (const HybridPlan& p : plans) {
    if (!o.all && !p.pareto && &p != chosen) continue;
    std::printf("%-34s %12s %12s %11s %9s %9s %9s %9s %5d %9s%s%s\n", p.label().c_str(),
                format_seconds(p.iteration_s).c_str(), format_seconds(p.total_s).c_str(),
                (fixed(p.cost_usd, 4) + " USD").c_str(), fixed(p.vm_usd, 4).c_str(),
                fixed(p.function_usd, 4).c_str(), fixed(p.request_usd, 4).c_str(),
                fixed(p.storage_usd, 4).c_str(), p.invocations, format_seconds(p.cold_start_s).c_str(),
                p.pareto ? "  front" : "", &p == chosen ? "  <- chosen" : "");
  }
  std::printf(
      "%zu plans simulated on %s (%s of %s, %.0f samples per epoch, %d epochs); money in USD: VM-hours, "
      "function GB-seconds, requests, storage requests; %s\n",
      plans.size(), platform.c_str(), job.experiment.model.c_str(), "data-parallel training", o.samples,
      job.experiment.epochs, o.all ? "every plan" : "the time-money front (--all: every plan)");
  if (chosen != nullptr)
    std::printf("chosen: %s, %s, %s (%s)\n", chosen->label().c_str(), format_seconds(chosen->total_s).c_str(),
                (fixed(chosen->cost_usd, 4) + " USD").c_str(),
                deadline > 0 ? ("least cost within " + format_seconds(deadline)).c_str()
                             : ("least time within " + usd(budget)).c_str());
  if (chosen != nullptr && !plan_flags(*chosen, job).empty())
    std::printf(
        "its iteration as a Plan (simulate, run, validate; with the job's model flags and --platform): %s\n",
        plan_flags(*chosen, job).c_str());
  if (!o.svg.empty()) {
    LinePlot plot;
    plot.title = "time and money of every plan (" + job.experiment.model + ")";
    plot.x_label = "job time (s)";
    plot.y_label = "cost (USD)";
    PlotSeries front{"time-money front", {}}, vm{"VMs", {}}, functions{"functions", {}},
        mixed{"functions + a VM (server or cache)", {}};
    for (const HybridPlan& p : plans) {
      (p.kind == "vm"       ? vm
       : p.kind == "hybrid" ? mixed
                            : functions)
          .points.emplace_back(p.total_s, p.cost_usd);
      if (p.pareto) front.points.emplace_back(p.total_s, p.cost_usd);
    }
    plot.series = {front, vm, functions, mixed};
    write_line_plot_svg(plot, o.svg);
  }
  std::vector<nlohmann::json> rows;
  for (const HybridPlan& p : plans) rows.push_back(plan_json(p, job));
  write_table_files(rows,
                    {"plan", "kind", "vms", "functions", "memory_mb", "exchange", "iteration_s", "total_s",
                     "cost_usd", "vm_usd", "gb_s", "function_usd", "request_usd", "storage_usd",
                     "invocations", "checkpoints", "cold_start_s", "pareto", "plan_flags"},
                    o.csv, o.json,
                    {{"schema_version", 1},
                     {"format", "strata-hybrid"},
                     {"platform", platform},
                     {"chosen", chosen != nullptr ? nlohmann::json(chosen->label()) : nlohmann::json()}},
                    "plans");
  return 0;
}

}  // namespace

void add_hybrid_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "hybrid",
      "VMs, serverless functions or both for a training job: least cost by a deadline, least time within a "
      "budget, the time-money front");
  auto o = std::make_shared<HybridOptions>();
  add_common_flags(*cmd, o->flags, false);
  o->flags.platform = "platforms/hybrid-serverless.xml";
  add_platform_flag(*cmd, o->flags, PlatformFlag::shipped_default);
  add_replay_flags(*cmd, o->replay);
  cmd->add_option("--deadline", o->deadline,
                  "the job's deadline, e.g. 600s, 10min, 2h: the cheapest plan within it");
  cmd->add_option("--budget", o->budget, "the job's budget, e.g. 20usd: the fastest plan within it");
  o->flags.track(cmd->add_option("--epochs", o->flags.epochs, "passes over the training samples")
                     ->transform(whole_number(1)));
  cmd->add_option("--samples", o->samples, "training samples per epoch")->transform(real_number(1, 1e15));
  cmd->add_option("--memory", o->memory, "functions of this many MB only (default: 1,769 MB to 10,240 MB)")
      ->transform(real_number(1, 1e9));
  cmd->add_flag("--all", o->all, "list every plan simulated, not only the time-money front");
  add_output_option(*cmd, "--svg", o->svg, "time against cost of every plan, the front drawn");
  add_output_option(*cmd, "--csv", o->csv, "every plan as CSV");
  add_output_option(*cmd, "--json", o->json, "every plan as JSON");
  cmd->callback([&action, o] { action = [o] { return hybrid(*o); }; });
}

}  // namespace strata::cli
