// --schedule-policy and --placement: where a Plan's workers run (models/schedule/
// plan_placement.hpp), the same for plan, simulate, run and validate.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "strata/sim/replay.hpp"
#include "strata/sim/report.hpp"
#include "strata/traces/plan.hpp"

namespace strata::cli {

struct PlacementFlags {
  std::string policy = "strategy";  // strategy | heft | cpop | peft | minmin | cp | rr
  std::string placement;            // --placement FILE (simulate), or empty
  double function_memory_mb = 0;    // --function-memory MB: workers in serverless functions
};
// Adds --schedule-policy and --function-memory (and --placement FILE when `with_file`).
void add_placement_flags(CLI::App& app, PlacementFlags& flags, bool with_file);

// A policy other than `strategy` places the Plan's workers on the platform's slots and records
// the placement (and the policy) in the Plan, which the replay then follows; returns what the
// report says of it. `strategy` leaves the Plan as it is and returns nothing, as does an
// explicit --placement, which is read into `options`. A policy beside --placement is refused
// ("--schedule-policy: heft conflicts with --placement ..."). --function-memory puts the
// workers on the platform's function pool, one function of that memory each (the Plan's
// function_memory_mb); the list schedulers place on worker slots and are refused beside it.
// Throws InputError.
std::optional<PlacementReport> place_workers_by_policy(Plan& plan, const PlacementFlags& flags,
                                                       const std::string& platform, ReplayOptions& options);

// For the commands whose platform is optional (plan, run, validate): a policy other than
// `strategy` needs `platform` (refused in one line when empty: "--schedule-policy: heft needs
// --platform FILE, ..."); the workers are placed as above and one line on stdout says how
// ("placement heft: estimate 20.555 ms, strategy's placement 39.087 ms").
void place_workers_and_say(Plan& plan, const PlacementFlags& flags, const std::string& platform,
                           ReplayOptions& options);

// The real run's CPU share of each worker when the workers run in functions (--function-memory):
// the function's vCPUs on the platform's pool, which the run enforces by pinning each worker
// alone on a core (`pin`: not --no-pin) and holding it idle for the rest of its quota
// (Interpreter::set_cpu_share). 1 without --function-memory. Throws InputError (one line) for a
// share above one vCPU (strata's workers run one thread each), for more workers than this
// machine has cores, and beside --no-pin.
double function_cpu_share(const Plan& plan, const PlacementFlags& flags, const std::string& platform,
                          bool pin);

}  // namespace strata::cli
