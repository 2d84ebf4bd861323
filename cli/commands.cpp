#include "commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "flags.hpp"
#include "strata/models/cost/cost_model.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/perfetto.hpp"
#include "strata/traces/plan_json.hpp"
#include "strata/traces/timeline_svg.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata::cli {
bool progress_wanted() { return ::isatty(STDERR_FILENO) != 0; }

void add_models_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("models", "list the model zoo with parameters, FLOPs and activations");
  cmd->callback([&action] {
    action = [] {
      std::printf("%-12s %-9s %12s %16s %16s %8s %18s\n", "model", "family", "params(M)", "fwd GFLOP/sample",
                  "model FLOP/token", "tokens", "activations(MB/sample)");
      for (const std::string& name : zoo_names()) {
        Model m = make_model(name);
        const int bytes = m.family == "gpt" ? 2 : 4;
        std::printf("%-12s %-9s %12.3f %16.4f %16.4g %8lld %18.3f\n", m.name.c_str(), m.family.c_str(),
                    m.params() / 1e6, m.fwd_flops_per_sample() / 1e9, m.model_flops_per_token(),
                    static_cast<long long>(m.seq), m.activation_elems_per_sample() * bytes / 1e6);
      }
      std::printf("activations: elements kept for backward, at bf16 for GPT and fp32 otherwise\n");
      return 0;
    };
  });
}

void add_plan_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("plan", "lower a model and a strategy to a Plan (task graph)");
  auto flags = std::make_shared<CommonFlags>();
  auto out = std::make_shared<std::string>();
  add_common_flags(*cmd, *flags, true);
  cmd->add_option("-o,--output", *out, "Plan JSON file to write")->required();
  cmd->callback([&action, flags, out] {
    action = [flags, out] {
      Plan plan = build_plan(*flags);
      write_plan(plan, *out);
      std::printf("plan: %zu tasks, %d workers, %d iteration(s), %.4g model FLOP per iteration -> %s\n",
                  plan.size(), plan.num_workers(), plan.num_iterations(), plan.info.model_flops_per_iteration,
                  out->c_str());
      return 0;
    };
  });
}

void add_simulate_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("simulate", "replay a Plan on a SimGrid platform");
  struct Options {
    CommonFlags flags;
    ReplayFlags replay;
    std::string plan, trace, report, perfetto, placement;
  };
  auto o = std::make_shared<Options>();
  add_common_flags(*cmd, o->flags, true);
  cmd->add_option("--platform", o->flags.platform, "SimGrid platform XML")->required();
  cmd->add_option("--plan", o->plan, "Plan JSON (instead of --model/--strategy)");
  cmd->add_option("--trace", o->trace, "write the predicted Trace (strata JSON)");
  cmd->add_option("--report", o->report, "write the report (JSON)");
  cmd->add_option("--perfetto", o->perfetto, "write a Chrome trace event file for Perfetto");
  add_replay_flags(*cmd, o->replay);
  cmd->add_option("--placement", o->placement, "host per worker: JSON {\"workers\": [...]} or one per line");
  cmd->callback([&action, o] {
    action = [o] {
      Plan plan;
      if (!o->plan.empty()) {
        plan = read_plan(o->plan);
      } else {
        plan = build_plan(o->flags);
      }
      ReplayOptions options = replay_options(o->replay);
      if (!o->placement.empty()) options.placement = read_placement(o->placement);
      options.keep_trace = !o->trace.empty() || !o->perfetto.empty();
      if (progress_wanted())
        options.progress = [](std::size_t done, std::size_t all, double now) {
          std::fprintf(stderr, "\rreplay: %3.0f %% (%zu of %zu tasks, simulated %.6f s)%s",
                       100.0 * static_cast<double>(done) / static_cast<double>(all), done, all, now,
                       done == all ? "\n" : "");
        };
      ReplayResult result = replay(plan, resolve_platform(o->flags.platform), options);
      if (!o->trace.empty()) write_trace(result.trace, o->trace);
      if (!o->perfetto.empty()) write_chrome_trace(result.trace, o->perfetto);
      if (!o->report.empty()) write_file_atomically(o->report, report_to_json(result.report).dump(1) + "\n");
      std::cout << format_report(result.report);
      return 0;
    };
  });
}

void add_trace_export_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("trace-export", "convert a strata Trace to Chrome trace JSON (Perfetto) and SVG");
  struct Options {
    std::string in, out, svg;
    int svg_workers = 16;
    int iteration = -1;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("trace", o->in, "strata Trace JSON")->required();
  cmd->add_option("-o,--output", o->out, "Chrome trace event JSON to write (opens in Perfetto)");
  cmd->add_option("--svg", o->svg, "SVG timeline to write");
  cmd->add_option("--svg-workers", o->svg_workers, "workers drawn in the SVG")->check(CLI::PositiveNumber);
  cmd->add_option("--iteration", o->iteration, "draw only this iteration in the SVG");
  cmd->callback([&action, o] {
    action = [o] {
      if (o->out.empty() && o->svg.empty()) throw InputError("trace-export: give -o FILE and/or --svg FILE");
      Trace trace = read_trace(o->in);
      if (!o->out.empty()) {
        write_chrome_trace(trace, o->out);
        std::printf("%zu records -> %s (opens in Perfetto)\n", trace.records.size(), o->out.c_str());
      }
      if (!o->svg.empty()) {
        TimelineOptions options;
        options.max_workers = o->svg_workers;
        options.iteration = o->iteration;
        write_timeline_svg(trace, o->svg, options);
        std::printf("timeline -> %s\n", o->svg.c_str());
      }
      return 0;
    };
  });
}

}  // namespace strata::cli
