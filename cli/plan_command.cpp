// strata plan: lowers an experiment (flags or --spec) to a Plan file.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "placement_flags.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata::cli {

void add_plan_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("plan", "lower a model and a strategy to a Plan (task graph)");
  auto flags = std::make_shared<CommonFlags>();
  auto out = std::make_shared<std::string>();
  auto placement = std::make_shared<PlacementFlags>();
  add_common_flags(*cmd, *flags, true);
  add_output_option(*cmd, "-o,--output", *out, "Plan JSON file to write")->required();
  add_placement_flags(*cmd, *placement, false);
  add_input_option(*cmd, "--platform", flags->platform,
                   "SimGrid platform XML a --schedule-policy places the workers on");
  cmd->callback([&action, flags, out, placement] {
    action = [flags, out, placement] {
      Plan plan = build_plan(*flags);
      ReplayOptions options;
      place_workers_and_say(plan, *placement, flags->platform, options);
      write_plan(plan, *out);
      std::printf("plan: %zu tasks, %d workers, %d iteration(s), %.4g model FLOP per iteration -> %s\n",
                  plan.size(), plan.num_workers(), plan.num_iterations(), plan.info.model_flops_per_iteration,
                  out->c_str());
      return 0;
    };
  });
}

}  // namespace strata::cli
