// The list-scheduling policies of dag_schedule.hpp.
#include "strata/models/schedule/dag_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <utility>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Link {
  std::size_t task = 0;
  double data = 0;
  bool control = false;
};

// The graph around the problem, with the averages every rank uses.
struct Graph {
  const DagProblem& p;
  std::vector<std::vector<Link>> succ, pred;
  std::vector<double> mean_cost;
  double mean_latency = 0, mean_bandwidth = 1;
  std::vector<std::size_t> topo;  // Kahn's order, smallest index first among the ready

  explicit Graph(const DagProblem& problem)
      : p(problem), succ(problem.tasks.size()), pred(problem.tasks.size()) {
    for (const DagEdge& e : p.edges) {
      succ[e.from].push_back({e.to, e.data, e.control});
      pred[e.to].push_back({e.from, e.data, e.control});
    }
    double inverse_speed = 0;  // mean of 1 / speed, for tasks given as work
    for (double v : p.speed) inverse_speed += 1 / v / static_cast<double>(p.speed.size());
    // How many processors each cost entry stands for (one each, or a class's members).
    std::vector<double> weight(p.processor_class.empty() ? p.processors : 0, 1.0);
    for (std::size_t c : p.processor_class) {
      if (c >= weight.size()) weight.resize(c + 1, 0.0);
      weight[c] += 1;
    }
    for (const DagTask& t : p.tasks) {
      if (t.cost.empty()) {
        mean_cost.push_back(t.work * inverse_speed);
        continue;
      }
      double sum = 0, n = 0;
      for (std::size_t c = 0; c < t.cost.size() && c < weight.size(); ++c)
        if (std::isfinite(t.cost[c])) sum += weight[c] * t.cost[c], n += weight[c];
      mean_cost.push_back(n > 0 ? sum / n : 0);
    }
    mean_links();
    topo = topological_order();
  }

  // Means over the ordered pairs of distinct processors; with hosts, each pair of hosts weighs
  // the product of their processor counts.
  void mean_links() {
    double lat = 0, bw = 0, pairs = 0;
    if (p.processor_host.empty()) {
      for (std::size_t a = 0; a < p.processors; ++a)
        for (std::size_t b = 0; b < p.processors; ++b)
          if (a != b) lat += p.latency[a][b], bw += p.bandwidth[a][b], pairs += 1;
    } else {
      std::vector<double> count(p.latency.size(), 0.0);
      for (std::size_t h : p.processor_host) count[h] += 1;
      for (std::size_t a = 0; a < count.size(); ++a) {
        const double local = count[a] * (count[a] - 1);
        lat += local * p.local_latency, bw += local * p.local_bandwidth, pairs += local;
        for (std::size_t b = 0; b < count.size(); ++b)
          if (a != b) {
            const double w = count[a] * count[b];
            lat += w * p.latency[a][b], bw += w * p.bandwidth[a][b], pairs += w;
          }
      }
    }
    if (pairs > 0) mean_latency = lat / pairs, mean_bandwidth = bw / pairs;
  }

  double mean_comm(const Link& l) const {
    return p.processors > 1 && !l.control ? mean_latency + l.data / mean_bandwidth : 0;
  }

  std::vector<std::size_t> topological_order() const {
    std::vector<std::size_t> indegree(p.tasks.size(), 0), order;
    for (const DagEdge& e : p.edges) ++indegree[e.to];
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < indegree.size(); ++i)
      if (indegree[i] == 0) ready.push(i);
    while (!ready.empty()) {
      const std::size_t t = ready.top();
      ready.pop();
      order.push_back(t);
      for (const Link& s : succ[t])
        if (--indegree[s.task] == 0) ready.push(s.task);
    }
    return order;
  }

  // rank_u(i) = w̄_i + max over successors (c̄_ij + rank_u(j)).
  std::vector<double> upward_rank() const {
    std::vector<double> rank(p.tasks.size(), 0);
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      double tail = 0;
      for (const Link& s : succ[*it]) tail = std::max(tail, mean_comm(s) + rank[s.task]);
      rank[*it] = mean_cost[*it] + tail;
    }
    return rank;
  }

  // rank_d(i) = max over predecessors (rank_d(j) + w̄_j + c̄_ji).
  std::vector<double> downward_rank() const {
    std::vector<double> rank(p.tasks.size(), 0);
    for (std::size_t t : topo)
      for (const Link& q : pred[t])
        rank[t] = std::max(rank[t], rank[q.task] + mean_cost[q.task] + mean_comm(q));
    return rank;
  }
};

// Processor timelines and the placements made so far.
class Timeline {
 public:
  Timeline(const Graph& g, bool insertion)
      : g_(g),
        insertion_(insertion),
        busy_(g.p.processors),
        slots_(g.p.tasks.size()),
        placed_(g.p.tasks.size(), 0),
        owner_(g.p.group.empty() ? 0 : g.p.processors, DagProblem::kNoGroup) {
    std::size_t groups = 0;
    for (std::size_t k : g.p.group)
      if (k != DagProblem::kNoGroup) groups = std::max(groups, k + 1);
    where_.assign(groups, g.p.processors);
  }

  // The processor t's group is bound to, if its group has one.
  std::optional<std::size_t> pinned(std::size_t t) const {
    const std::size_t k = g_.p.group_of(t);
    if (k == DagProblem::kNoGroup || where_[k] == g_.p.processors) return std::nullopt;
    return where_[k];
  }
  // Whether t may go to q: a free task anywhere, a bound group's task only on its processor, an
  // unbound group's first task only on a processor no group holds.
  bool allowed(std::size_t t, std::size_t q) const {
    const std::size_t k = g_.p.group_of(t);
    if (k == DagProblem::kNoGroup) return true;
    if (where_[k] != g_.p.processors) return where_[k] == q;
    return owner_[q] == DagProblem::kNoGroup;
  }

  // When task t's data is on processor q: the latest arrival from its predecessors.
  double data_ready(std::size_t t, std::size_t q) const {
    double ready = 0;
    for (const Link& l : g_.pred[t]) {
      const TaskSlot& s = slots_[l.task];
      ready = std::max(ready, s.finish + (l.control ? 0 : g_.p.comm_time(l.data, s.processor, q)));
    }
    return ready;
  }
  // Earliest start of t on q (infinity where it cannot run): the first gap long enough after its
  // data is ready (insertion), or after q's last task.
  double start_on(std::size_t t, std::size_t q) const {
    const double cost = g_.p.cost(t, q);
    if (!std::isfinite(cost)) return kInf;
    double start = data_ready(t, q);
    const auto& busy = busy_[q];
    if (!insertion_) return busy.empty() ? start : std::max(start, busy.back().second);
    // Slots are disjoint and sorted, so their ends are too: the gaps before the first slot that
    // ends after `start` are all too early.
    auto it = std::partition_point(busy.begin(), busy.end(),
                                   [&](const auto& slot) { return slot.second <= start; });
    for (; it != busy.end(); ++it) {
      if (start + cost <= it->first) return start;
      start = std::max(start, it->second);
    }
    return start;
  }
  double finish_on(std::size_t t, std::size_t q) const { return start_on(t, q) + g_.p.cost(t, q); }

  void place(std::size_t t, std::size_t q) {
    const double start = start_on(t, q);
    slots_[t] = {q, start, start + g_.p.cost(t, q)};
    auto& busy = busy_[q];
    busy.insert(std::upper_bound(busy.begin(), busy.end(), std::pair{start, slots_[t].finish}),
                {start, slots_[t].finish});
    placed_[t] = 1;
    order_.push_back(t);
    if (const std::size_t k = g_.p.group_of(t); k != DagProblem::kNoGroup && where_[k] == g_.p.processors)
      where_[k] = q, owner_[q] = k;
  }
  bool placed(std::size_t t) const { return placed_[t] != 0; }

  DagSchedule result(SchedulePolicy policy) const {
    DagSchedule s;
    s.policy = policy;
    s.slots = slots_;
    s.order = order_;
    for (const TaskSlot& slot : slots_) s.makespan = std::max(s.makespan, slot.finish);
    return s;
  }

 private:
  const Graph& g_;
  bool insertion_;
  std::vector<std::vector<std::pair<double, double>>> busy_;  // per processor, by start
  std::vector<TaskSlot> slots_;
  std::vector<char> placed_;
  std::vector<std::size_t> order_;
  std::vector<std::size_t> owner_;  // per processor: the group it holds
  std::vector<std::size_t> where_;  // per group: its processor (processors: none yet)
};

// Places ready tasks highest `priority` first (ties: lower index) on the processor `choose`
// picks; a task is ready once every predecessor is placed. O(V log V) plus the choices.
template <typename Choose>
void list_schedule(const Graph& g, Timeline& timeline, const std::vector<double>& priority, Choose choose) {
  std::vector<std::size_t> waiting(g.p.tasks.size(), 0);
  for (const DagEdge& e : g.p.edges) ++waiting[e.to];
  // Priorities equal to a nanosecond count as equal, so that ranks equal in exact arithmetic
  // (80 and 80 in Topcuoglu's example) tie on the index, not on rounding.
  std::vector<double> key(priority.size());
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = std::round(priority[i] * 1e9);
  auto lower = [&](std::size_t a, std::size_t b) { return key[a] != key[b] ? key[a] < key[b] : a > b; };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(lower)> ready(lower);
  for (std::size_t t = 0; t < waiting.size(); ++t)
    if (waiting[t] == 0) ready.push(t);
  while (!ready.empty()) {
    const std::size_t t = ready.top();
    ready.pop();
    timeline.place(t, choose(t));
    for (const Link& s : g.succ[t])
      if (--waiting[s.task] == 0) ready.push(s.task);
  }
}

// The processor minimising score(t, q) among those t may go to (ties: lower index); a bound
// group's task goes to its group's processor.
template <typename Score>
std::size_t best_processor(const Graph& g, const Timeline& timeline, std::size_t t, Score score) {
  if (const std::optional<std::size_t> q = timeline.pinned(t)) return *q;
  std::size_t best = 0;
  double best_score = kInf;
  for (std::size_t q = 0; q < g.p.processors; ++q) {
    if (!std::isfinite(g.p.cost(t, q)) || !timeline.allowed(t, q)) continue;
    const double s = score(t, q);
    if (s < best_score) best_score = s, best = q;
  }
  return best;
}

DagSchedule heft(const Graph& g) {
  Timeline timeline(g, true);
  list_schedule(g, timeline, g.upward_rank(), [&](std::size_t t) {
    return best_processor(g, timeline, t,
                          [&](std::size_t u, std::size_t q) { return timeline.finish_on(u, q); });
  });
  return timeline.result(SchedulePolicy::heft);
}

DagSchedule cpop(const Graph& g) {
  const std::vector<double> up = g.upward_rank(), down = g.downward_rank();
  std::vector<double> priority(up.size());
  for (std::size_t i = 0; i < up.size(); ++i) priority[i] = up[i] + down[i];
  // The critical path: from the entry of highest priority, each time the successor whose
  // priority equals |CP| (the first by index).
  std::size_t entry = 0;
  double length = -1;
  for (std::size_t i = 0; i < up.size(); ++i)
    if (g.pred[i].empty() && priority[i] > length) length = priority[i], entry = i;
  const double tolerance = 1e-9 * std::max(1.0, length);
  std::vector<char> on_path(up.size(), 0);
  for (std::size_t t = entry;;) {
    on_path[t] = 1;
    std::size_t next = up.size();
    for (const Link& s : g.succ[t])
      if (std::abs(priority[s.task] - length) <= tolerance && s.task < next) next = s.task;
    if (next == up.size()) break;
    t = next;
  }
  // The processor that runs the whole path fastest (none when no one processor can run it all).
  std::size_t path_processor = g.p.processors;
  double fastest = kInf;
  for (std::size_t q = 0; q < g.p.processors; ++q) {
    double sum = 0;
    for (std::size_t i = 0; i < up.size(); ++i)
      if (on_path[i] != 0) sum += g.p.cost(i, q);
    if (sum < fastest) fastest = sum, path_processor = q;
  }
  Timeline timeline(g, true);
  list_schedule(g, timeline, priority, [&](std::size_t t) {
    if (on_path[t] != 0 && path_processor < g.p.processors && timeline.allowed(t, path_processor))
      return path_processor;
    return best_processor(g, timeline, t,
                          [&](std::size_t u, std::size_t q) { return timeline.finish_on(u, q); });
  });
  return timeline.result(SchedulePolicy::cpop);
}

DagSchedule peft(const Graph& g) {
  const std::size_t n = g.p.tasks.size(), procs = g.p.processors;
  std::vector<std::vector<double>> oct(n, std::vector<double>(procs, 0));
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it)
    for (std::size_t q = 0; q < procs; ++q) {
      double worst = 0;
      for (const Link& s : g.succ[*it]) {
        double best = kInf;
        for (std::size_t w = 0; w < procs; ++w) {
          const double cost = g.p.cost(s.task, w);
          if (std::isfinite(cost))
            best = std::min(best, oct[s.task][w] + cost + (w == q ? 0 : g.mean_comm(s)));
        }
        worst = std::max(worst, best);
      }
      oct[*it][q] = worst;
    }
  std::vector<double> rank(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    int count = 0;
    for (std::size_t q = 0; q < procs; ++q)
      if (std::isfinite(g.p.cost(i, q))) sum += oct[i][q], ++count;
    rank[i] = count > 0 ? sum / count : 0;
  }
  Timeline timeline(g, true);
  list_schedule(g, timeline, rank, [&](std::size_t t) {
    return best_processor(g, timeline, t,
                          [&](std::size_t u, std::size_t q) { return timeline.finish_on(u, q) + oct[u][q]; });
  });
  return timeline.result(SchedulePolicy::peft);
}

DagSchedule critical_path(const Graph& g) {
  const std::vector<double> up = g.upward_rank();
  double length = 0;
  for (double r : up) length = std::max(length, r);
  std::vector<double> priority(up.size());  // −ALAP: the latest start, smallest first
  for (std::size_t i = 0; i < up.size(); ++i) priority[i] = -(length - up[i]);
  Timeline timeline(g, true);
  list_schedule(g, timeline, priority, [&](std::size_t t) {
    if (const std::optional<std::size_t> q = timeline.pinned(t)) return *q;
    std::size_t best = 0;
    double best_start = kInf, best_finish = kInf;
    for (std::size_t q = 0; q < g.p.processors; ++q) {
      if (!timeline.allowed(t, q)) continue;
      const double start = timeline.start_on(t, q);
      if (!std::isfinite(start)) continue;
      const double finish = start + g.p.cost(t, q);
      if (start < best_start || (start == best_start && finish < best_finish))
        best = q, best_start = start, best_finish = finish;
    }
    return best;
  });
  return timeline.result(SchedulePolicy::cp);
}

DagSchedule min_min(const Graph& g) {
  Timeline timeline(g, false);
  std::vector<std::size_t> waiting(g.p.tasks.size(), 0);
  for (const DagEdge& e : g.p.edges) ++waiting[e.to];
  std::vector<std::size_t> ready;
  for (std::size_t t = 0; t < waiting.size(); ++t)
    if (waiting[t] == 0) ready.push_back(t);
  while (!ready.empty()) {
    std::size_t pick = 0, where = 0;
    double soonest = kInf;
    for (std::size_t k = 0; k < ready.size(); ++k) {  // ready stays sorted by index
      const std::size_t t = ready[k];
      const std::size_t q = best_processor(
          g, timeline, t, [&](std::size_t u, std::size_t r) { return timeline.finish_on(u, r); });
      const double finish = timeline.finish_on(t, q);
      if (finish < soonest) soonest = finish, pick = k, where = q;
    }
    const std::size_t t = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    timeline.place(t, where);
    for (const Link& s : g.succ[t])
      if (--waiting[s.task] == 0) ready.insert(std::lower_bound(ready.begin(), ready.end(), s.task), s.task);
  }
  return timeline.result(SchedulePolicy::minmin);
}

DagSchedule round_robin(const Graph& g) {
  Timeline timeline(g, false);
  std::size_t next = 0;
  for (std::size_t t : g.topo) {
    if (const std::optional<std::size_t> q = timeline.pinned(t)) {
      timeline.place(t, *q);
      continue;
    }
    // check_dag: some processor runs it, and a free one is left for a new group.
    std::size_t q = next % g.p.processors;
    while (!std::isfinite(g.p.cost(t, q)) || !timeline.allowed(t, q)) q = (q + 1) % g.p.processors;
    timeline.place(t, q);
    next = q + 1;
  }
  return timeline.result(SchedulePolicy::rr);
}

double min_cost(const DagProblem& p, std::size_t t) {
  double best = kInf;
  for (std::size_t q = 0; q < p.processors; ++q) best = std::min(best, p.cost(t, q));
  return best;
}

std::string place_of(std::size_t task, const char* field) {
  return "/tasks/" + std::to_string(task) + "/" + field;
}

}  // namespace

std::string_view to_string(SchedulePolicy policy) {
  switch (policy) {
    case SchedulePolicy::strategy:
      return "strategy";
    case SchedulePolicy::heft:
      return "heft";
    case SchedulePolicy::cpop:
      return "cpop";
    case SchedulePolicy::peft:
      return "peft";
    case SchedulePolicy::minmin:
      return "minmin";
    case SchedulePolicy::cp:
      return "cp";
    case SchedulePolicy::rr:
      return "rr";
  }
  return "?";
}

std::optional<SchedulePolicy> parse_schedule_policy(std::string_view name) {
  for (SchedulePolicy p :
       {SchedulePolicy::strategy, SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::peft,
        SchedulePolicy::minmin, SchedulePolicy::cp, SchedulePolicy::rr})
    if (name == to_string(p)) return p;
  return std::nullopt;
}

double DagProblem::comm_time(double data, std::size_t p, std::size_t q) const {
  if (p == q) return 0;
  if (processor_host.empty()) return latency[p][q] + data / bandwidth[p][q];
  const std::size_t a = processor_host[p], b = processor_host[q];
  return a == b ? local_latency + data / local_bandwidth : latency[a][b] + data / bandwidth[a][b];
}

DagProblem unit_link_problem(std::vector<DagTask> tasks, std::vector<DagEdge> edges, std::size_t processors) {
  DagProblem p;
  p.tasks = std::move(tasks);
  p.edges = std::move(edges);
  p.processors = processors;
  p.latency.assign(processors, std::vector<double>(processors, 0));
  p.bandwidth.assign(processors, std::vector<double>(processors, 1));
  return p;
}

void check_dag(const DagProblem& p, const std::string& source) {
  auto fail = [&](const std::string& place, const std::string& problem) {
    throw InputError(input_error_message(source, place, problem));
  };
  if (p.processors == 0) fail("", "no processor to schedule on");
  std::size_t classes = p.processors;
  if (!p.processor_class.empty()) {
    if (p.processor_class.size() != p.processors) fail("/processor_class", "one class per processor");
    classes = *std::max_element(p.processor_class.begin(), p.processor_class.end()) + 1;
  }
  std::size_t link_ends = p.processors;
  if (!p.processor_host.empty()) {
    if (p.processor_host.size() != p.processors) fail("/processor_host", "one host per processor");
    link_ends = *std::max_element(p.processor_host.begin(), p.processor_host.end()) + 1;
    if (!std::isfinite(p.local_latency) || p.local_latency < 0)
      fail("/local_latency", "latency must be a finite number >= 0 s");
    if (!(p.local_bandwidth > 0) || std::isinf(p.local_bandwidth))
      fail("/local_bandwidth", "bandwidth must be a finite number > 0 B/s");
  }
  if (!p.group.empty()) {
    if (p.group.size() != p.tasks.size()) fail("/group", "one group (or none) per task");
    std::vector<char> seen;
    std::size_t groups = 0;
    for (std::size_t k : p.group) {
      if (k == DagProblem::kNoGroup) continue;
      if (k >= seen.size()) seen.resize(k + 1, 0);
      if (seen[k] == 0) seen[k] = 1, ++groups;
    }
    if (groups > p.processors)
      fail("/group", std::to_string(groups) + " groups need a processor each, there are " +
                         std::to_string(p.processors));
  }
  for (std::size_t q = 0; q < p.speed.size(); ++q)
    if (!std::isfinite(p.speed[q]) || p.speed[q] <= 0)
      fail("/speed/" + std::to_string(q), "speed must be a finite number > 0 flop/s");
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const DagTask& t = p.tasks[i];
    bool runnable = false;
    if (t.cost.empty()) {
      if (p.speed.size() != p.processors)
        fail(place_of(i, "work"), "task '" + t.id + "' is given as work, and there are " +
                                      std::to_string(p.speed.size()) + " speeds for " +
                                      std::to_string(p.processors) + " processors");
      if (!std::isfinite(t.work) || t.work < 0)
        fail(place_of(i, "work"), "task '" + t.id + "': work must be a finite number >= 0 flop");
      runnable = true;
    } else if (t.cost.size() != classes) {
      fail(place_of(i, "cost"), "task '" + t.id + "' has " + std::to_string(t.cost.size()) + " costs for " +
                                    std::to_string(classes) +
                                    (p.processor_class.empty() ? " processors" : " processor classes"));
    }
    for (double c : t.cost) {
      if (std::isnan(c) || c < 0) fail(place_of(i, "cost"), "task '" + t.id + "': cost must be >= 0 s");
      runnable = runnable || std::isfinite(c);
    }
    if (!runnable) fail(place_of(i, "cost"), "task '" + t.id + "' can run on no processor");
  }
  for (std::size_t k = 0; k < p.edges.size(); ++k) {
    const DagEdge& e = p.edges[k];
    const std::string place = "/edges/" + std::to_string(k);
    if (e.from >= p.tasks.size() || e.to >= p.tasks.size())
      fail(place, "edge names a task that does not exist");
    if (e.from == e.to) fail(place, "task '" + p.tasks[e.from].id + "' depends on itself");
    if (!std::isfinite(e.data) || e.data < 0) fail(place, "data must be a finite number >= 0");
  }
  const char* square_error = p.processor_host.empty()
                                 ? "latency and bandwidth must be processors x processors"
                                 : "latency and bandwidth must be hosts x hosts";
  if (p.latency.size() != link_ends || p.bandwidth.size() != link_ends) fail("/links", square_error);
  for (std::size_t a = 0; a < link_ends; ++a) {
    if (p.latency[a].size() != link_ends || p.bandwidth[a].size() != link_ends) fail("/links", square_error);
    for (std::size_t b = 0; b < link_ends; ++b) {
      if (a == b) continue;
      if (!std::isfinite(p.latency[a][b]) || p.latency[a][b] < 0)
        fail("/links", "latency must be a finite number >= 0 s");
      if (!(p.bandwidth[a][b] > 0) || std::isinf(p.bandwidth[a][b]))
        fail("/links", "bandwidth must be a finite number > 0 B/s");
    }
  }
  const Graph g(p);
  if (g.topo.size() == p.tasks.size()) return;
  std::vector<char> done(p.tasks.size(), 0);
  for (std::size_t t : g.topo) done[t] = 1;
  for (std::size_t i = 0; i < p.tasks.size(); ++i)
    if (done[i] == 0) fail(place_of(i, "id"), "task '" + p.tasks[i].id + "' is on a dependency cycle");
}

DagSchedule schedule_dag(const DagProblem& problem, SchedulePolicy policy) {
  const Graph g(problem);
  switch (policy) {
    case SchedulePolicy::heft:
      return heft(g);
    case SchedulePolicy::cpop:
      return cpop(g);
    case SchedulePolicy::peft:
      return peft(g);
    case SchedulePolicy::minmin:
      return min_min(g);
    case SchedulePolicy::cp:
      return critical_path(g);
    case SchedulePolicy::rr:
      return round_robin(g);
    case SchedulePolicy::strategy:
      break;
  }
  STRATA_ASSERT(false, "schedule_dag: the strategy's own placement is not a DAG policy");
  return {};
}

double schedule_length_ratio(const DagProblem& p, const DagSchedule& s) {
  const Graph g(p);
  std::vector<double> longest(p.tasks.size(), 0);  // the path to each task's end, by minimum costs
  double path = 0;
  for (std::size_t t : g.topo) {
    double before = 0;
    for (const Link& q : g.pred[t]) before = std::max(before, longest[q.task]);
    longest[t] = before + min_cost(p, t);
    path = std::max(path, longest[t]);
  }
  return path > 0 ? s.makespan / path : 0;
}

double speedup_over_serial(const DagProblem& p, const DagSchedule& s) {
  double serial = kInf;
  for (std::size_t q = 0; q < p.processors; ++q) {
    double sum = 0;
    for (std::size_t t = 0; t < p.tasks.size(); ++t) sum += p.cost(t, q);
    serial = std::min(serial, sum);
  }
  if (!std::isfinite(serial)) {  // no one processor runs everything: each task at its fastest
    serial = 0;
    for (std::size_t t = 0; t < p.tasks.size(); ++t) serial += min_cost(p, t);
  }
  return s.makespan > 0 ? serial / s.makespan : 0;
}

}  // namespace models
}  // namespace strata
