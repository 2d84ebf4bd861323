// A workflow (traces/workflow.hpp) as a DagProblem on a platform's hosts, the way SimGrid's
// dag-scheduling example sees it: each task's runtime is runtime × flops_per_runtime_s flops
// (SimGrid's DAX loader uses 4.2 GFLOP per second of runtime), its cost on a host that many flops
// over the host's speed; the transfers are simgrid_transfers() (from a root task, to an end
// task, both of cost 0), and each <child>/<parent> relation an ordering (DagEdge::control); a
// task with no predecessor hangs off root, one with no successor feeds end, as the loader does.
// Moving d bytes between two hosts takes the route's latency plus d over its slowest link's
// bandwidth, the estimate SimGrid's example makes.
#pragma once

#include <string>
#include <vector>

#include "strata/models/schedule/dag_schedule.hpp"
#include "strata/traces/workflow.hpp"

namespace strata {
inline namespace models {

// A platform's hosts (processors, in the order a schedule numbers them) with their speeds and,
// per ordered pair, the route's latency (s) and bottleneck bandwidth (B/s).
struct PlatformRoutes {
  std::vector<std::string> hosts;
  std::vector<double> speed;  // flop/s
  std::vector<std::vector<double>> latency;
  std::vector<std::vector<double>> bandwidth;
};

// SimGrid's DAX loader: 4.2 GFLOP per second of a job's runtime (src/dag/loaders.cpp).
constexpr double kSimGridFlopsPerRuntimeSecond = 4.2e9;

struct WorkflowProblem {
  DagProblem problem;  // the workflow's tasks, then root, then end
  std::size_t root = 0;
  std::size_t end = 0;
};
// REQUIRES: the routes are square over the hosts, speeds > 0.
WorkflowProblem workflow_problem(const Workflow& workflow, const PlatformRoutes& routes,
                                 double flops_per_runtime_s = kSimGridFlopsPerRuntimeSecond);

}  // namespace models
}  // namespace strata
