// Workflow runs on SimGrid: a workflow DAG (traces/workflow.hpp, as workflow_problem() sees it)
// executed on a platform's hosts, either following a static schedule (models/schedule) or
// scheduled online by Min-Min as SimGrid's dag-scheduling example does.
//
// Both run the DAG as SimGrid activities with dependencies: an Exec per task (runtime ×
// 4.2 GFLOP at the host's speed), a Comm per transfer (its source and destination the hosts of
// the two tasks), and an ordering per <child>/<parent> relation. Hosts run one task at a time:
// a static schedule's tasks on one host are chained in the schedule's order; the online run
// chains each host's tasks in the order it decides them (SimGrid 3.32's example does the same).
//
// Online Min-Min (SimGrid 3.32, examples/cpp/dag-scheduling): root goes to the first host; then,
// whenever SimGrid stops on activities it cannot start (an unplaced task whose inputs are ready),
// each ready task's earliest finish time is estimated on every host as max(the host's estimated
// free time, the latest arrival of its inputs) + flops / speed, an input arriving at its sender's
// finish plus the route's latency plus its remaining bytes over the route's slowest link (nothing
// once sent), and the task of smallest estimate goes to its host (ties: first task in the DAG's
// order, first host in SimGrid's). One decision per stop, as the example makes.
//
// Each run loads the platform in a child process (one SimGrid engine per process).
#pragma once

#include <string>
#include <vector>

#include "strata/models/schedule/workflow_problem.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
inline namespace sim {

struct WorkflowStep {
  std::string task;  // the DagTask's id (root and end included)
  std::string host;
  double decided_s = 0;   // simulated time the host was chosen (0 for a static schedule)
  double estimate_s = 0;  // the scheduler's estimate of its finish
  double start_s = 0;     // simulated
  double finish_s = 0;
};
struct WorkflowRun {
  double makespan_s = 0;            // simulated: the clock when the last activity ends
  std::vector<WorkflowStep> steps;  // in the order the tasks were placed
};

// Runs `problem` (workflow_problem() over platform_routes(platform_path)) following `schedule`,
// whose processors are the platform's hosts in natural order. REQUIRES: check_dag accepted the
// problem; the schedule places every task.
// Hosts marked in `parallel_host` (indexed like the processors) run their tasks at once, not
// one after another (an object store serving many requests).
WorkflowRun run_workflow_schedule(const WorkflowProblem& problem, const DagSchedule& schedule,
                                  const std::string& platform_path, const NetworkOptions& network,
                                  const std::vector<char>& parallel_host = {});

// Schedules `problem` online by Min-Min while SimGrid runs it (above). REQUIRES: as above.
WorkflowRun run_workflow_online_minmin(const WorkflowProblem& problem, const std::string& platform_path,
                                       const NetworkOptions& network);

}  // namespace sim
}  // namespace strata
