// Placement policies over a training Plan (DESIGN.md, scheduling): which host each of the Plan's
// logical workers runs on, chosen by the list schedulers of dag_schedule.hpp, as a pure function
// of the Plan, the platform's worker slots and a cost model, so that the replay and the real run
// follow the same placement.
//
// A training Plan is not a bag of tasks: a worker's tasks share its weights and the order its
// strategy gave them (1F1B, overlapped gradients), so a policy moves whole workers and keeps the
// order. plan_problem() makes the Plan a DagProblem whose processors are the platform's worker
// slots (host by host, in natural order) and whose groups are the Plan's workers:
// - a compute task is a node of its worker, its cost the CostModel's time on each kind of host;
// - a send is a node of its worker, its recv a node of the peer's, the edge between them
//   carrying the payload (latency + bytes / bandwidth between the two slots' hosts);
// - a collective over n ranks becomes, per rank i, an entry node and an exit node: the exit of
//   rank i + 1 (mod n) waits for the entry of rank i with the bytes one ring link carries
//   (allreduce 2(n−1)/n S, reduce-scatter and all-gather (n−1)/n S, broadcast S), so the
//   slowest link of the ring the placement makes sets the collective's end;
// - every dependency of the Plan joins the nodes of the worker concerned, as an ordering.
// Communication nodes cost nothing: only compute occupies a slot.
//
// A policy places the DagProblem's tasks with each worker bound to the slot its first placed
// task goes to (DagProblem::group). Its estimate is then the Plan itself on that placement: the
// nodes in the Plan's dispatch order (priority, then index, among the ready), each compute node
// on its worker's slot after the slot's previous compute node and its data, each communication
// node when its data is there. The strategy's own placement (worker w on slot w) is estimated
// the same way; where the policy's estimate is not below it, the strategy's placement is kept
// and PlanPlacement::kept_strategy says so.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/schedule/dag_schedule.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace models {

// A platform's worker slots as the policies see them.
struct SlotPlatform {
  std::string path;                            // named in errors
  std::vector<HostSpec> hosts;                 // natural order, each with its slots
  std::vector<std::vector<double>> latency;    // s, host x host routes (diagonal unused)
  std::vector<std::vector<double>> bandwidth;  // B/s, the routes' slowest links
  double local_latency = 0;                    // s, between two slots of one host
  double local_bandwidth = 1;                  // B/s
  int total_slots() const;
};

// Hosts alike for the cost model (every figure it reads equal) share a class, numbered in the
// order of their first host: the class of each host; `classes` gets their number.
std::vector<std::size_t> host_classes(const std::vector<HostSpec>& hosts, std::size_t& classes);

// Throws InputError "<source>: 16 workers need 16 worker slots, the platform has 8" when
// `workers` exceed `slots`: the one wording of that refusal, for every command and model.
void check_worker_slots(const std::string& source, int workers, int slots);

struct PlanProblem {
  DagProblem problem;                // processors: slots, host by host
  std::vector<TaskIndex> plan_task;  // per node: the Plan task it stands for
  std::vector<char> compute;         // per node: occupies its slot
  std::vector<std::size_t> worker;   // per node: its worker (= its group)
};
// Throws InputError naming the platform when the Plan has more workers than the platform slots.
PlanProblem plan_problem(const Plan& plan, const SlotPlatform& platform, const CostModel& cost);

// The Plan on a placement (slot per worker), in its own dispatch order: seconds (above).
double estimate_plan(const PlanProblem& problem, const Plan& plan,
                     const std::vector<std::size_t>& slot_of_worker);

struct PlanPlacement {
  SchedulePolicy policy = SchedulePolicy::strategy;
  std::vector<std::size_t> slot_of_worker;
  std::vector<std::string> hosts_by_worker;  // host name per worker (a placement file's content)
  double estimate_s = 0;                     // the placement's estimate (the strategy's when kept)
  double policy_estimate_s = 0;              // the policy's own placement's estimate
  double strategy_estimate_s = 0;            // the strategy's placement's estimate
  bool kept_strategy = false;                // the policy's estimate was not below the strategy's
  double schedule_length_ratio = 0;          // estimate / the critical path at minimum costs
  double speedup = 0;                        // the best single slot's serial time / estimate
  double run_time_s = 0;                     // wall time the policy took (problem, schedule, estimates)
  // A Plan with unplaced tasks (Plan::allow_unplaced): the worker each was given, and the workers
  // the Plan then has (a slot that held no worker gets a new one); no strategy estimate (0).
  std::vector<std::pair<TaskIndex, WorkerId>> task_workers;
  int num_workers = 0;
};
// REQUIRES: plan validated. `strategy` keeps worker w on slot w, and is refused (InputError) for
// a Plan with unplaced tasks, whose data dependencies order them without moving bytes (a Plan
// moves data between workers in send and recv tasks only). PEFT keeps a tasks x slots
// table: above 2·10^7 entries it is refused (InputError naming the policy) rather than exhaust
// memory; HEFT, CPOP, cp and rr scale to 10^5 tasks on 1,024 slots.
PlanPlacement place_plan(const Plan& plan, const SlotPlatform& platform, const CostModel& cost,
                         SchedulePolicy policy);

}  // namespace models
}  // namespace strata
