// Task-level list scheduling of a DAG on heterogeneous processors (DESIGN.md, scheduling): the
// classic static policies as pure functions of a DagProblem, so that the simulator and the real
// executor place tasks the same way.
//
// A DagProblem is what every policy reads: each task's execution time on each processor
// (infinite where it cannot run), each edge's data (or that it only orders two tasks), and the
// time to move data between two processors, latency[p][q] + data / bandwidth[p][q] (nothing on
// one processor). Averages follow Topcuoglu et al. (TPDS 2002): a task's mean cost is the mean
// of its finite costs, an edge's mean communication L̄ + data / B̄ over the ordered pairs of
// distinct processors (an ordering-only edge: none).
//
// Policies (SchedulePolicy) and their documented choices:
// - heft: upward rank, highest first; each task to the processor of earliest finish time, with
//   insertion into idle gaps (Topcuoglu et al., section 4.1).
// - cpop: upward + downward rank; the tasks of the critical path on the one processor that runs
//   the path fastest, the others to their earliest finish time, highest priority ready first,
//   with insertion (section 4.2). With several entry tasks the path starts at the entry of
//   highest priority.
// - peft: optimistic cost table (OCT); ready tasks by mean OCT, highest first; each to the
//   processor minimising finish time + OCT, with insertion (Arabnejad and Barbosa, TPDS 2014).
// - minmin: among the ready tasks (every predecessor placed), the one whose earliest finish time
//   over the processors is smallest goes there; no insertion (a processor is free after its
//   last task), as SimGrid's dag-scheduling example decides.
// - cp: critical-path list scheduling (Wu and Gajski's MCP): tasks by as-late-as-possible start
//   (critical-path length − upward rank), smallest first; each to the processor where it starts
//   earliest, with insertion (ties: earlier finish).
// - rr: round-robin baseline: tasks in topological order (smallest index first among the ready
//   ones), the k-th to processor k mod P, started when its processor and data are ready.
// Ties everywhere break to the lower task index, then the lower processor index, so a schedule
// is a function of its problem. Costs: heft, cpop and cp are O(E·P + V·P·log V) plus the gaps an
// insertion scans (from the first slot that ends after the task's data is ready; none when tasks
// append), minmin O(V²·P), rr O(V + E); peft also keeps a V × P table. A problem given as work
// and speeds holds O(V + P) costs instead of V × P.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {
inline namespace models {

enum class SchedulePolicy { strategy, heft, cpop, peft, minmin, cp, rr };
std::string_view to_string(SchedulePolicy policy);
// strategy | heft | cpop | peft | minmin | cp | rr
std::optional<SchedulePolicy> parse_schedule_policy(std::string_view name);

struct DagTask {
  std::string id;
  std::vector<double> cost;  // s on each processor; infinity: cannot run there
  double work = 0;           // flop, when `cost` is empty: the time on q is work / speed[q]
};
struct DagEdge {
  std::size_t from = 0;
  std::size_t to = 0;
  double data = 0;       // B (or the paper's communication cost with bandwidth 1)
  bool control = false;  // an ordering only: no transfer, no latency (a DAX <child>/<parent>)
};
// Three optional refinements keep large problems (a training Plan on thousands of worker slots)
// small:
// - processor classes: with `processor_class` (per processor) a task's `cost` holds one time per
//   class (processors that are alike share one), O(V · classes) instead of V × P;
// - hosts: with `processor_host` (per processor) `latency` and `bandwidth` are host x host, and
//   two processors of one host talk at `local_latency` + data / `local_bandwidth`;
// - groups: tasks of one `group` (per task; kNoGroup: free) run on one processor, which the policy
//   chooses when it places the group's first task, and a processor holds at most one group (a
//   training Plan's worker owns a slot: moving one of its tasks would move its weights).
struct DagProblem {
  static constexpr std::size_t kNoGroup = static_cast<std::size_t>(-1);
  std::vector<DagTask> tasks;
  std::vector<DagEdge> edges;
  std::size_t processors = 0;
  std::vector<std::vector<double>> latency;    // s, processors (or hosts) squared (diagonal unused)
  std::vector<std::vector<double>> bandwidth;  // B/s, the same
  std::vector<double> speed;                 // flop/s per processor, for tasks given as work (DagTask::work)
  std::vector<std::size_t> processor_class;  // empty: a task's cost is per processor
  std::vector<std::size_t> processor_host;   // empty: latency and bandwidth are per processor
  double local_latency = 0;                  // s, between two processors of one host
  double local_bandwidth = 1;                // B/s
  std::vector<std::size_t> group;            // per task, or empty: no task is bound

  // Task t's execution time on processor q (s): its cost there, or its work at q's speed.
  double cost(std::size_t t, std::size_t q) const {
    const DagTask& task = tasks[t];
    if (task.cost.empty()) return task.work / speed[q];
    return task.cost[processor_class.empty() ? q : processor_class[q]];
  }
  std::size_t group_of(std::size_t t) const { return group.empty() ? kNoGroup : group[t]; }
  // Time to move `data` from processor p to processor q: 0 when p == q.
  double comm_time(double data, std::size_t p, std::size_t q) const;
};
// A problem whose links all have latency 0 and bandwidth 1, so that an edge's data is its
// communication time between two processors (the convention of Topcuoglu et al.'s examples).
DagProblem unit_link_problem(std::vector<DagTask> tasks, std::vector<DagEdge> edges, std::size_t processors);

// Checks what the policies assume: at least one processor, a cost per processor (or class) for
// every task (≥ 0 or infinity, never NaN) or its work (≥ 0) with a speed > 0 per processor, every
// task runnable somewhere, edges between existing tasks with data ≥ 0, latency and bandwidth
// matrices of the right size (bandwidth > 0), no more groups than processors, and no cycle.
// Throws InputError "<source>: <place>: <problem>" (a cycle names one of its tasks).
void check_dag(const DagProblem& problem, const std::string& source);

struct TaskSlot {
  std::size_t processor = 0;
  double start = 0;   // s
  double finish = 0;  // s
};
struct DagSchedule {
  SchedulePolicy policy = SchedulePolicy::heft;
  std::vector<TaskSlot> slots;     // per task
  std::vector<std::size_t> order;  // the order the policy placed the tasks (its priorities)
  double makespan = 0;             // s: the latest finish, the policy's own estimate
};
// Schedules a checked problem. REQUIRES: check_dag accepted it; policy is not `strategy`.
DagSchedule schedule_dag(const DagProblem& problem, SchedulePolicy policy);

// Figures every report of a schedule gives (Topcuoglu et al., section 5.1): the schedule length
// ratio, makespan / Σ over the critical path (by minimum costs) of each task's minimum cost,
// and the speedup, the best single processor's serial time / makespan.
double schedule_length_ratio(const DagProblem& problem, const DagSchedule& schedule);
double speedup_over_serial(const DagProblem& problem, const DagSchedule& schedule);

}  // namespace models
}  // namespace strata
