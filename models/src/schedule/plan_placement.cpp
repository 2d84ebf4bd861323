// Placement policies over a training Plan (plan_placement.hpp).
#include "strata/models/schedule/plan_placement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "strata/models/cost/analytical.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Bytes one link of a ring carries in a collective of n ranks over a buffer of S bytes.
double ring_link_bytes(TaskKind kind, double n, double bytes) {
  switch (kind) {
    case TaskKind::allreduce:
      return 2 * (n - 1) / n * bytes;
    case TaskKind::reduce_scatter:
    case TaskKind::allgather:
      return (n - 1) / n * bytes;
    default:
      return bytes;  // broadcast: the whole buffer passes each link
  }
}

std::string platform_name(const SlotPlatform& p) { return p.path.empty() ? "platform" : p.path; }

}  // namespace

void check_worker_slots(const std::string& source, int workers, int slots) {
  if (workers > slots)
    throw InputError(input_error_message(source, "",
                                         std::to_string(workers) + " workers need " +
                                             std::to_string(workers) + " worker slots, the platform has " +
                                             std::to_string(slots)));
}

std::vector<std::size_t> host_classes(const std::vector<HostSpec>& hosts, std::size_t& classes) {
  using Key = std::tuple<double, double, double, double, double, double, double, int>;
  std::map<Key, std::size_t> seen;
  std::vector<std::size_t> out;
  for (const HostSpec& h : hosts) {
    const Key key{h.flops_fp32, h.flops_bf16, h.flops_fp16, h.flops_fp64,
                  h.mem_bw,     h.gpu_memory, h.pcie_bw,    static_cast<int>(h.gpu)};
    out.push_back(seen.emplace(key, seen.size()).first->second);
  }
  classes = seen.size();
  return out;
}

int SlotPlatform::total_slots() const {
  int n = 0;
  for (const HostSpec& h : hosts) n += h.slots;
  return n;
}

PlanProblem plan_problem(const Plan& plan, const SlotPlatform& platform, const CostModel& cost) {
  const int slots = platform.total_slots();
  check_worker_slots(platform_name(platform), plan.num_workers(), slots);
  PlanProblem out;
  DagProblem& p = out.problem;
  std::size_t classes = 0;
  const std::vector<std::size_t> class_of_host = host_classes(platform.hosts, classes);
  std::vector<std::size_t> host_of_class(classes, 0);
  for (std::size_t h = platform.hosts.size(); h-- > 0;) host_of_class[class_of_host[h]] = h;
  p.processors = static_cast<std::size_t>(slots);
  for (std::size_t h = 0; h < platform.hosts.size(); ++h)
    for (int s = 0; s < platform.hosts[h].slots; ++s) {
      p.processor_host.push_back(h);
      p.processor_class.push_back(class_of_host[h]);
    }
  p.latency = platform.latency;
  p.bandwidth = platform.bandwidth;
  p.local_latency = platform.local_latency;
  p.local_bandwidth = platform.local_bandwidth;

  // Per Plan task: its node for each participant (a collective: entry and exit per rank).
  std::vector<std::size_t> first_node(plan.size() + 1, 0);
  auto add_node = [&](TaskIndex t, std::size_t worker, std::vector<double> costs, bool compute) {
    p.tasks.push_back({std::string(), std::move(costs), 0});
    p.group.push_back(worker);
    out.plan_task.push_back(t);
    out.compute.push_back(compute ? 1 : 0);
    out.worker.push_back(worker);
  };
  const std::vector<double> free_costs(classes, 0.0);
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    const Task& task = plan.task(t);
    first_node[t] = p.tasks.size();
    if (is_collective(task.kind)) {
      for (WorkerId w : task.group) add_node(t, static_cast<std::size_t>(w), free_costs, false);  // entries
      for (WorkerId w : task.group) add_node(t, static_cast<std::size_t>(w), free_costs, false);  // exits
    } else if (is_communication(task.kind)) {
      add_node(t, static_cast<std::size_t>(task.worker), free_costs, false);
    } else {
      std::vector<double> costs(classes);
      for (std::size_t c = 0; c < classes; ++c)
        costs[c] = cost.compute_time(task, platform.hosts[host_of_class[c]]);
      // An unplaced task is free: the policy chooses its slot (DagProblem::kNoGroup).
      add_node(t, task.worker < 0 ? DagProblem::kNoGroup : static_cast<std::size_t>(task.worker),
               std::move(costs), true);
    }
  }
  first_node[plan.size()] = p.tasks.size();
  // Each collective's rank positions, (task, worker) -> k: O(1) lookups for the edges below.
  std::unordered_map<std::uint64_t, std::size_t> position;
  auto key = [](TaskIndex t, WorkerId w) { return (std::uint64_t{t} << 32) | static_cast<std::uint32_t>(w); };
  for (TaskIndex t = 0; t < plan.size(); ++t)
    if (is_collective(plan.task(t).kind))
      for (std::size_t k = 0; k < plan.task(t).group.size(); ++k)
        position.emplace(key(t, plan.task(t).group[k]), k);
  // The node of Plan task t on worker w: its own node, or the collective's entry (or exit) of w,
  // or of its first rank when w takes no part.
  auto node_of = [&](TaskIndex t, WorkerId w, bool exit) {
    const Task& task = plan.task(t);
    if (!is_collective(task.kind)) return first_node[t];
    const auto it = position.find(key(t, w));
    const std::size_t k = it == position.end() ? 0 : it->second;
    return first_node[t] + (exit ? task.group.size() : 0) + k;
  };
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    const Task& task = plan.task(t);
    if (is_collective(task.kind)) {
      const std::size_t n = task.group.size();
      const double link = ring_link_bytes(task.kind, static_cast<double>(n), task.comm_bytes);
      for (std::size_t k = 0; k < n; ++k) {
        p.edges.push_back({first_node[t] + k, first_node[t] + n + k, 0, true});
        if (n > 1) p.edges.push_back({first_node[t] + k, first_node[t] + n + (k + 1) % n, link, false});
      }
    }
    // A dependency joins the nodes of the worker it concerns: a task's own worker, or, between
    // two collectives, each rank of the later one (O(ranks), never ranks x dependencies).
    for (const auto* deps : {&task.data_deps, &task.control_deps})
      for (TaskIndex d : *deps) {
        const Task& before = plan.task(d);
        const bool message = before.kind == TaskKind::send && task.kind == TaskKind::recv;
        const double data = message ? before.comm_bytes : 0;
        if (!is_collective(task.kind)) {
          p.edges.push_back({node_of(d, task.worker, true), first_node[t], data, !message});
        } else if (!is_collective(before.kind)) {
          p.edges.push_back({first_node[d], node_of(t, before.worker, false), 0, true});
        } else {
          for (WorkerId w : task.group)
            p.edges.push_back({node_of(d, w, true), node_of(t, w, false), 0, true});
        }
      }
  }
  // An edge repeated for each rank of a collective joined twice (two dependencies on one
  // collective) is harmless: the policies take the latest arrival.
  return out;
}

double estimate_plan(const PlanProblem& pp, const Plan& plan,
                     const std::vector<std::size_t>& slot_of_worker) {
  const DagProblem& p = pp.problem;
  // Per Plan task, the duration on this placement.
  std::vector<double> duration(plan.size(), 0);
  std::vector<std::size_t> compute_node(plan.size(), 0);
  for (std::size_t n = 0; n < pp.plan_task.size(); ++n)
    if (pp.compute[n] != 0) compute_node[pp.plan_task[n]] = n;
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    const Task& task = plan.task(t);
    if (task.kind == TaskKind::send) {
      const std::size_t a = slot_of_worker[static_cast<std::size_t>(task.worker)];
      const std::size_t b = slot_of_worker[static_cast<std::size_t>(task.peer)];
      duration[t] = p.comm_time(task.comm_bytes, a, b);
    } else if (is_collective(task.kind)) {
      const std::size_t n = task.group.size();
      if (n < 2) continue;
      // The ring's slowest link and longest latency, as the placement makes them.
      double bw = kInf, lat = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t a = slot_of_worker[static_cast<std::size_t>(task.group[k])];
        const std::size_t b = slot_of_worker[static_cast<std::size_t>(task.group[(k + 1) % n])];
        const double one = p.comm_time(1.0, a, b), zero = p.comm_time(0.0, a, b);
        lat = std::max(lat, zero);
        if (one > zero) bw = std::min(bw, 1.0 / (one - zero));
      }
      if (!std::isfinite(bw)) continue;
      const int ranks = static_cast<int>(n);
      switch (task.kind) {
        case TaskKind::allreduce:
          duration[t] = allreduce_time(task.algo, ranks, task.comm_bytes, bw, lat);
          break;
        case TaskKind::reduce_scatter:
          duration[t] = reduce_scatter_time(task.algo, ranks, task.comm_bytes, bw, lat);
          break;
        case TaskKind::allgather:
          duration[t] = allgather_time(task.algo, ranks, task.comm_bytes, bw, lat);
          break;
        default:  // broadcast: a binomial tree of whole-buffer rounds
          duration[t] = std::ceil(std::log2(static_cast<double>(n))) * (lat + task.comm_bytes / bw);
      }
    } else if (!is_communication(task.kind)) {
      duration[t] = p.cost(compute_node[t], slot_of_worker[static_cast<std::size_t>(task.worker)]);
    }
  }
  // The Dispatcher's rule, with the durations above and no contention.
  Dispatcher dispatcher(plan, CommStreams::per_group);
  using Event = std::pair<double, TaskIndex>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> running;
  double now = 0;
  for (;;) {
    for (TaskIndex t : dispatcher.take_startable()) running.emplace(now + duration[t], t);
    if (running.empty()) break;
    const auto [end, t] = running.top();
    running.pop();
    now = end;
    dispatcher.complete(t);
  }
  return now;
}

namespace {

// What every placement reports from its estimate: SLR, speedup, hosts by worker, run time.
void finish_placement(PlanPlacement& out, const DagProblem& problem, const SlotPlatform& platform,
                      std::chrono::steady_clock::time_point started) {
  DagSchedule as_estimated;
  as_estimated.makespan = out.estimate_s;
  out.schedule_length_ratio = schedule_length_ratio(problem, as_estimated);
  out.speedup = speedup_over_serial(problem, as_estimated);
  for (std::size_t q : out.slot_of_worker)
    out.hosts_by_worker.push_back(platform.hosts[problem.processor_host[q]].name);
  out.run_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// A Plan with unplaced tasks: the policy places the workers' tasks as groups and each unplaced
// task on its own; an unplaced task joins the worker on its slot, or a new worker there when the
// slot has none. There is no strategy placement to keep.
PlanPlacement place_unplaced(const Plan& plan, const SlotPlatform& platform, const CostModel& cost,
                             SchedulePolicy policy, std::chrono::steady_clock::time_point started) {
  if (policy == SchedulePolicy::strategy)
    throw InputError(
        input_error_message("--schedule-policy", "strategy",
                            "the Plan leaves tasks unplaced: give heft, cpop, peft, minmin, cp or rr"));
  const PlanProblem pp = plan_problem(plan, platform, cost);
  check_dag(pp.problem, platform_name(platform));
  const DagSchedule s = schedule_dag(pp.problem, policy);
  PlanPlacement out;
  out.policy = policy;
  const std::size_t slots = pp.problem.processors;
  std::vector<std::size_t> slot_of_worker(static_cast<std::size_t>(plan.num_workers()), slots);
  for (std::size_t n = 0; n < s.slots.size(); ++n)
    if (pp.worker[n] != DagProblem::kNoGroup) slot_of_worker[pp.worker[n]] = s.slots[n].processor;
  std::vector<char> taken(slots, 0);
  std::vector<WorkerId> worker_on(slots, -1);
  for (std::size_t w = 0; w < slot_of_worker.size(); ++w)
    if (slot_of_worker[w] < slots)
      taken[slot_of_worker[w]] = 1, worker_on[slot_of_worker[w]] = static_cast<WorkerId>(w);
  std::size_t next = 0;
  for (std::size_t w = 0; w < slot_of_worker.size(); ++w)  // a worker with no task: a free slot
    if (slot_of_worker[w] == slots) {
      while (taken[next] != 0) ++next;
      slot_of_worker[w] = next, taken[next] = 1, worker_on[next] = static_cast<WorkerId>(w);
    }
  Plan placed = plan;
  for (std::size_t n = 0; n < s.slots.size(); ++n) {
    if (pp.worker[n] != DagProblem::kNoGroup) continue;
    const std::size_t q = s.slots[n].processor;
    if (worker_on[q] < 0) {
      worker_on[q] = placed.num_workers();
      placed.set_num_workers(placed.num_workers() + 1);
      slot_of_worker.push_back(q);
    }
    placed.mutable_task(pp.plan_task[n]).worker = worker_on[q];
    out.task_workers.emplace_back(pp.plan_task[n], worker_on[q]);
  }
  placed.allow_unplaced(false);
  const PlanProblem placed_problem = plan_problem(placed, platform, cost);
  out.slot_of_worker = slot_of_worker;
  out.num_workers = placed.num_workers();
  out.policy_estimate_s = out.estimate_s = estimate_plan(placed_problem, placed, slot_of_worker);
  out.strategy_estimate_s = 0;
  finish_placement(out, placed_problem.problem, platform, started);
  return out;
}

}  // namespace

PlanPlacement place_plan(const Plan& plan, const SlotPlatform& platform, const CostModel& cost,
                         SchedulePolicy policy) {
  const auto started = std::chrono::steady_clock::now();
  if (plan.has_unplaced()) return place_unplaced(plan, platform, cost, policy, started);
  const PlanProblem pp = plan_problem(plan, platform, cost);
  check_dag(pp.problem, platform_name(platform));
  const std::size_t workers = static_cast<std::size_t>(plan.num_workers());
  PlanPlacement out;
  out.policy = policy;
  out.num_workers = plan.num_workers();
  std::vector<std::size_t> natural(workers);
  for (std::size_t w = 0; w < workers; ++w) natural[w] = w;
  out.strategy_estimate_s = estimate_plan(pp, plan, natural);
  out.slot_of_worker = natural;
  out.policy_estimate_s = out.strategy_estimate_s;
  if (policy != SchedulePolicy::strategy) {
    constexpr double kPeftEntries = 2e7;
    if (policy == SchedulePolicy::peft &&
        static_cast<double>(pp.problem.tasks.size()) * static_cast<double>(pp.problem.processors) >
            kPeftEntries)
      throw InputError(input_error_message(
          "--schedule-policy", "peft",
          "its cost table would hold " + std::to_string(pp.problem.tasks.size()) + " tasks x " +
              std::to_string(pp.problem.processors) + " slots, above 2e7 entries; heft scales to this size"));
    const DagSchedule s = schedule_dag(pp.problem, policy);
    std::vector<std::size_t> mapped(workers, pp.problem.processors);
    for (std::size_t n = 0; n < s.slots.size(); ++n) mapped[pp.worker[n]] = s.slots[n].processor;
    // A worker with no task (none in a valid Plan) keeps the first slot no worker took.
    std::vector<char> taken(pp.problem.processors, 0);
    for (std::size_t q : mapped)
      if (q < taken.size()) taken[q] = 1;
    std::size_t next = 0;
    for (std::size_t& q : mapped)
      if (q == pp.problem.processors) {
        while (taken[next] != 0) ++next;
        q = next, taken[next] = 1;
      }
    out.policy_estimate_s = estimate_plan(pp, plan, mapped);
    if (out.policy_estimate_s < out.strategy_estimate_s) {
      out.slot_of_worker = mapped;
    } else {
      out.kept_strategy = true;
    }
  }
  out.estimate_s = out.kept_strategy || policy == SchedulePolicy::strategy ? out.strategy_estimate_s
                                                                           : out.policy_estimate_s;
  finish_placement(out, pp.problem, platform, started);
  return out;
}

}  // namespace models
}  // namespace strata
