// --schedule-policy and --placement (placement_flags.hpp).
#include "placement_flags.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/schedule/plan_placement.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/platform.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

// The platform's serverless resources, refused in one line naming --function-memory when it has
// no function pool or the pool does not offer `memory_mb`.
ServerlessResources functions_offered(const std::string& platform, double memory_mb) {
  ServerlessResources res = serverless_resources(platform);
  if (!res.pool)
    throw InputError("--function-memory: " + platform +
                     " has no function pool (a host with function_memory_mb)");
  check_memory_offered(*res.pool, memory_mb, "--function-memory");
  return res;
}

}  // namespace

void add_placement_flags(CLI::App& app, PlacementFlags& flags, bool with_file) {
  app.add_option("--schedule-policy", flags.policy,
                 "where the workers run: strategy (worker w on slot w), or a list scheduler that maps "
                 "workers to hosts keeping the Plan's task order: heft | cpop | peft | minmin | cp | rr")
      ->check(CLI::IsMember({"strategy", "heft", "cpop", "peft", "minmin", "cp", "rr"}))
      ->capture_default_str();
  app.add_option("--function-memory", flags.function_memory_mb,
                 "run each worker in a serverless function of this many MB on the platform's function "
                 "pool (its vCPU share and memory; docs/serverless.md)")
      ->transform(whole_number(1));
  if (with_file)
    add_input_option(app, "--placement", flags.placement,
                     "host per worker: JSON {\"workers\": [...]} or one per line");
}

std::optional<PlacementReport> place_workers_by_policy(Plan& plan, const PlacementFlags& flags,
                                                       const std::string& platform, ReplayOptions& options) {
  const std::optional<SchedulePolicy> policy = parse_schedule_policy(flags.policy);
  if (!policy) throw InputError("--schedule-policy: unknown policy '" + flags.policy + "'");
  if (flags.function_memory_mb > 0) {
    if (*policy != SchedulePolicy::strategy)
      throw InputError("--schedule-policy: " + flags.policy +
                       " places workers on worker slots, not in functions (--function-memory)");
    // Worker w in the pool's w-th instance, written into the Plan with the memory.
    const ServerlessResources res = functions_offered(platform, flags.function_memory_mb);
    if (res.instances < plan.num_workers())
      throw InputError("--function-memory: the Plan's " + std::to_string(plan.num_workers()) +
                       " workers need " + std::to_string(plan.num_workers()) + " function instances, " +
                       platform + " has " + std::to_string(res.instances));
    if (flags.placement.empty())
      plan.placement.assign(res.function_hosts.begin(), res.function_hosts.begin() + plan.num_workers());
    plan.function_memory_mb = flags.function_memory_mb;
    plan.placement_policy = "functions";
  }
  if (!flags.placement.empty()) {
    if (*policy != SchedulePolicy::strategy)
      throw InputError("--schedule-policy: " + flags.policy +
                       " conflicts with --placement (the policy chooses the placement; give one of them)");
    options.placement = read_placement(flags.placement);
    return std::nullopt;
  }
  if (*policy == SchedulePolicy::strategy) {
    if (plan.has_unplaced())
      throw InputError(
          "--schedule-policy: the Plan leaves tasks unplaced: give heft, cpop, peft, minmin, cp or rr");
    return std::nullopt;
  }
  const SlotPlatform slots = load_slot_platform(platform, options.network);
  const PlanPlacement placed = place_plan(plan, slots, CostModel(options.calibration), *policy);
  if (plan.has_unplaced()) {  // each unplaced task on the worker the policy chose (a new one or not)
    plan.set_num_workers(placed.num_workers);
    for (const auto& [task, worker] : placed.task_workers) plan.mutable_task(task).worker = worker;
    plan.allow_unplaced(false);
    plan.validate();
  }
  plan.placement = placed.hosts_by_worker;
  plan.placement_policy = flags.policy;
  return PlacementReport{flags.policy,
                         placed.estimate_s,
                         placed.policy_estimate_s,
                         placed.strategy_estimate_s,
                         placed.kept_strategy,
                         placed.schedule_length_ratio,
                         placed.speedup,
                         placed.run_time_s};
}

void place_workers_and_say(Plan& plan, const PlacementFlags& flags, const std::string& platform,
                           ReplayOptions& options) {
  if (flags.policy == "strategy" && flags.function_memory_mb <= 0) return;
  if (platform.empty() && flags.function_memory_mb > 0)
    throw InputError("--function-memory: needs --platform FILE, whose function pool the workers run in");
  if (flags.policy == "strategy") {
    place_workers_by_policy(plan, flags, platform, options);
    return;
  }
  if (platform.empty())
    throw InputError("--schedule-policy: " + flags.policy +
                     " needs --platform FILE, the hosts it places the workers on");
  const std::optional<PlacementReport> placed =
      place_workers_by_policy(plan, flags, resolve_platform(platform), options);
  std::printf("placement %s: estimate %s, strategy's placement %s%s\n", placed->policy.c_str(),
              format_seconds(placed->policy_estimate_s).c_str(),
              format_seconds(placed->strategy_estimate_s).c_str(),
              placed->kept_strategy ? " (not better: the strategy's placement is kept)" : "");
}

double function_cpu_share(const Plan& plan, const PlacementFlags& flags, const std::string& platform,
                          bool pin) {
  if (flags.function_memory_mb <= 0) return 1;
  const ServerlessResources res = functions_offered(platform, flags.function_memory_mb);
  const double share = vcpus(*res.pool, flags.function_memory_mb);
  if (share > 1)
    throw InputError("--function-memory: " + format_number(flags.function_memory_mb) + " MB is " +
                     format_number(share) + " vCPUs; strata's workers run one thread each, so a real run " +
                     "emulates functions of at most one vCPU (" + format_number(res.pool->mb_per_vcpu) +
                     " MB)");
  if (!pin)
    throw InputError(
        "--function-memory: conflicts with --no-pin (each function is pinned to a core of its own)");
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (plan.num_workers() > cores)
    throw InputError("--function-memory: " + std::to_string(plan.num_workers()) +
                     " functions need a core each, this machine has " + std::to_string(cores));
  return share;
}

}  // namespace strata::cli
