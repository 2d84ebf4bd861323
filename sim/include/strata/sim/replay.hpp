// replay: executes a Plan on a SimGrid platform and predicts its Trace and Report.
//
// strata owns readiness (DESIGN.md, SimGrid 3.32 facts): the shared Dispatcher (traces/
// dispatch.hpp) decides which tasks start; each task becomes SimGrid work only when it starts.
// A compute task (duration from the CostModel) is an event in SimGrid's timer queue when its
// host has a core per worker placed on it and no speed or state profile, since the kernel then
// runs at full speed; otherwise it is an Exec on the host, which shares it. A send is a Comm
// between hosts, a collective the flows of its expansion (collectives.hpp). Activities are
// started from maestro and completion callbacks drive the rest, so the cost is linear in the
// number of activities.
//
// Communication streams: a worker has one comm stream per communicator (Dispatcher's
// CommStreams::per_group, traces/dispatch.hpp), as Megatron-LM runs DP, TP and PP on separate
// NCCL communicators: a collective's stream is its group (the set of its ranks, or the task's
// `comm_group` attribute), a send's (peer, outgoing), a recv's (peer, incoming). One stream runs
// one task at a time in (priority, index) order; the streams of a worker run concurrently and
// their flows share the links as SimGrid's max-min model says (two flows on one link get half of
// it each). So a long data-parallel allreduce no longer delays a tensor-parallel allreduce or a
// pipeline send issued after it. `ReplayOptions::comm_streams = one_per_worker` restores the
// single comm stream (kept to measure the difference and to benchmark the cost of the rule).
//
// One replay per process: SimGrid 3.32 keeps one engine per process (process.hpp runs several).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/experiment.hpp"
#include "strata/sim/collectives.hpp"
#include "strata/sim/report.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/plan.hpp"
#include "strata/traces/trace.hpp"

namespace strata {
inline namespace sim {

enum class CollectiveMode : std::uint8_t { automatic, step, aggregated };
CollectiveMode parse_collective_mode(const std::string& text);  // auto | step | aggregated

// Symmetry reduction of replay_experiment (docs/simulator.md): automatic replays representative
// data-parallel replicas where that is exact and the whole Plan elsewhere; off always the whole.
enum class SymmetryMode : std::uint8_t { automatic, off };
SymmetryMode parse_symmetry_mode(const std::string& text);  // auto | off

// SimGrid's network model. strata's default is LV08's max-min sharing with its TCP-calibrated
// factors set to 1 and cross traffic off: datacenter fabrics (NVLink, InfiniBand RDMA) reach
// line rate, and α–β figures then hold exactly. `simgrid_factors` restores SimGrid's defaults
// (latency x13.01, bandwidth x0.97, cross traffic) for Ethernet/TCP clusters.
struct NetworkOptions {
  std::string model = "LV08";
  bool simgrid_factors = false;
  std::string describe() const;
};

struct ReplayOptions {
  CollectiveMode collectives = CollectiveMode::automatic;
  std::size_t auto_step_flow_limit = 200000;  // automatic: step below this many flows
  NetworkOptions network;
  CommStreams comm_streams = CommStreams::per_group;  // one comm stream per communicator
  Calibration calibration = Calibration::defaults();
  std::vector<std::string> placement;  // host name per worker; empty = the Plan's own, else natural order
  bool keep_trace = true;              // false: the Trace is used for the report, then dropped
  // A Plan in functions (Plan::function_memory_mb): each function starts cold, its first task
  // after a cold start drawn from the pool's log-normal with the Plan's seed (draw w for worker
  // w, models/cost/serverless.hpp). Off: warm functions, the steady iteration.
  bool cold_starts = false;
  SymmetryMode symmetry = SymmetryMode::automatic;  // replay_experiment only
  // Called about every 1 % of the tasks with (tasks completed, tasks in all, simulated seconds);
  // the CLI draws a progress line on a terminal.
  std::function<void(std::size_t, std::size_t, double)> progress;
};

struct ReplayResult {
  Trace trace;
  Report report;
};

// REQUIRES: plan validated; called at most once per process.
// Throws InputError for platform, placement or slot problems, and for a send or collective of
// more than 2^53 bytes ("plan: task 'x': 1e+20 B to transfer is above 2^53 B ...").
ReplayResult replay(const Plan& plan, const std::string& platform_path, const ReplayOptions& options);

// Lowers the experiment and replays it (as replay() does; same REQUIRES and throws). With
// options.symmetry automatic and options.placement empty, it first checks the experiment, the
// platform and the natural placement for a symmetry reduction (sim/src/symmetry.hpp) and, where
// one is exact, lowers only the representative data-parallel replicas: the report's figures are
// the whole run's, its `symmetry` line says what was replayed, or why the replay is full.
ReplayResult replay_experiment(const Experiment& experiment, const std::string& platform_path,
                               const ReplayOptions& options);
// The same for a backprop strategy on a model (lower(model, config); explore's replays). Throws
// LoweringRefused, with the lowering's one line, when lower() refuses the configuration.
class LoweringRefused : public InputError {
 public:
  using InputError::InputError;
};
ReplayResult replay_strategy(const Model& model, const StrategyConfig& config,
                             const std::string& platform_path, const ReplayOptions& options);

// Checks a platform file and network model without creating a SimGrid engine in this process:
// the network model against SimGrid's list, every attribute and property of the file, then
// the file loaded once in a child process, so that SimGrid aborting on it (with its multi-line
// message) becomes one InputError line naming the file. Remembered for this process and the
// children it forks afterwards; replay() and load_platform_summary() call it themselves.
void check_platform(const std::string& platform_path, const NetworkOptions& network = {});

// Loads the platform in this process and returns its summary (also one engine per process).
// `function_memory_mb` > 0: the hosts are the function pool's instances as functions of that
// memory (Plan::function_memory_mb).
PlatformSummary load_platform_summary(const std::string& platform_path, const NetworkOptions& network = {},
                                      double function_memory_mb = 0);

}  // namespace sim
}  // namespace strata
