// Cluster job scheduling in rounds: see job_rounds.hpp.
#include "strata/models/search/job_rounds.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr std::array<std::pair<JobPlacement, std::string_view>, 3> kPlacements = {
    {{JobPlacement::most_free, "most-free"}, {JobPlacement::pack, "pack"}, {JobPlacement::spread, "spread"}}};

struct Run {
  bool present = false, finished = false, started = false;
  double finish_s = -1;  // set when the job completes inside a round
  double remaining = 0;  // fixed-speed jobs: service left (s); per-placement jobs: work left (1 at first)
  int epoch = 0;         // measured jobs
  double progress = 0;
  AtomicBatch batch;
  std::vector<int> nodes;  // the node of each of its GPUs, in the order taken; empty: not running
  std::vector<int> placement;
  double restart_left = 0;
  double attained = 0;  // GPU-seconds held
  std::size_t queue = 0;
  double entered_s = 0;  // when it entered its queue
};

// Progress per second of a measured job on its placement at its epoch (Pollux's goodput).
double goodput(const TraceApplication& app, const std::vector<int>& placement, const AtomicBatch& b,
               int epoch) {
  int replicas = 0;
  for (int c : placement) replicas += c;
  const double batch = static_cast<double>(replicas) * b.atomic * (b.accum_steps + 1);
  const double scale = batch / app.init_batch;
  const auto [step, sync] = app.step_time(placement, b.atomic);
  const auto [sqr, var] = app.grad_stats(batch, epoch);
  const double denominator = var / scale + sqr;
  const double gain = denominator > 0 ? (var + sqr) / denominator : 1.0;
  return gain / (step + (step - sync) * b.accum_steps);
}

// Runs a measured job for `seconds` from `now`; returns the completion time, or -1.
double advance_measured(const TraceApplication& app, Run& r, double seconds, double now, bool round_epochs) {
  while (seconds > 0) {
    const double rate = goodput(app, r.placement, r.batch, r.epoch);
    const double next = app.progress_at(r.epoch + 1);
    if (r.progress + rate * seconds < next) {
      r.progress += rate * seconds;
      return -1;
    }
    ++r.epoch;
    double delta = (next - r.progress) / rate;
    if (round_epochs) delta = std::nearbyint(delta);  // Pollux rounds an epoch's end to a second
    r.progress = next;
    now += delta;
    seconds -= delta;
    if (r.epoch >= app.max_epochs) return now;
  }
  return -1;
}

std::vector<int> packed(int gpus, int per_node) {
  std::vector<int> p;
  for (int left = gpus; left > 0; left -= per_node) p.push_back(std::min(left, per_node));
  return p;
}

// The nodes of `gpus` GPUs taken from `free` (changed), in the order taken.
std::vector<int> place(std::vector<int>& free, int gpus, JobPlacement policy) {
  std::vector<int> nodes;
  const auto most_free = [&] {
    std::size_t best = 0;
    for (std::size_t i = 1; i < free.size(); ++i)
      if (free[i] > free[best]) best = i;
    return best;
  };
  while (static_cast<int>(nodes.size()) < gpus) {
    const int need = gpus - static_cast<int>(nodes.size());
    std::size_t node = most_free();
    int take = std::min(free[node], need);
    if (policy == JobPlacement::pack) {
      for (std::size_t i = 0; i < free.size(); ++i)
        if (free[i] >= need && (free[node] < need || free[i] < free[node])) node = i;
      take = std::min(free[node], need);
    } else if (policy == JobPlacement::spread) {
      take = 1;
    }
    STRATA_ASSERT(take > 0, "jobs: placing a job on no free GPU");
    free[node] -= take;
    nodes.insert(nodes.end(), static_cast<std::size_t>(take), static_cast<int>(node));
  }
  return nodes;
}

// GPUs per node, in the order the nodes were first taken.
std::vector<int> counts_of(const std::vector<int>& nodes) {
  std::vector<int> order, counts;
  for (int n : nodes) {
    const auto it = std::find(order.begin(), order.end(), n);
    if (it == order.end()) {
      order.push_back(n);
      counts.push_back(1);
    } else {
      ++counts[static_cast<std::size_t>(it - order.begin())];
    }
  }
  return counts;
}

}  // namespace

std::optional<JobPlacement> parse_job_placement(std::string_view text) {
  for (const auto& [p, name] : kPlacements)
    if (name == text) return p;
  return std::nullopt;
}

std::string_view to_string(JobPlacement placement) {
  for (const auto& [p, name] : kPlacements)
    if (p == placement) return name;
  return "most-free";
}

double service_alone_s(const TraceApplication& app, int gpus, int batch, int gpus_per_node) {
  Run r;
  r.placement = packed(gpus, gpus_per_node);
  r.batch = atomic_batch(app, batch, gpus);
  double now = 0;
  while (r.epoch < app.max_epochs) {
    const double rate = goodput(app, r.placement, r.batch, r.epoch);
    const double next = app.progress_at(r.epoch + 1);
    now += (next - r.progress) / rate;
    r.progress = next;
    ++r.epoch;
  }
  return now;
}

RoundScheduleResult schedule_job_rounds(const std::vector<RoundJob>& jobs, const RoundSettings& s) {
  if (s.nodes < 1 || s.gpus_per_node < 1)
    throw InputError("jobs: the cluster needs at least one node and GPU");
  if (static_cast<std::int64_t>(s.nodes) * s.gpus_per_node > (std::int64_t{1} << 24))
    throw InputError("jobs: " + std::to_string(s.nodes) + " nodes of " + std::to_string(s.gpus_per_node) +
                     " GPUs is more than 2^24 GPUs");
  const int capacity = s.nodes * s.gpus_per_node;
  require_in_range("jobs", "interval_s", s.interval_s, kMinLeaseS, kMaxJobTimeS, "s");
  require_in_range("jobs", "restart_s", s.restart_s, 0, kMaxJobTimeS, "s");
  if (!std::is_sorted(s.las_thresholds_gpu_s.begin(), s.las_thresholds_gpu_s.end()))
    throw InputError("jobs: the LAS thresholds must rise");
  for (double t : s.las_thresholds_gpu_s)
    require_in_range("jobs", "LAS threshold", t, 0, kMaxThresholdGpuS, "GPU-s");
  const std::size_t n = jobs.size();
  RoundScheduleResult result;
  if (n == 0) return result;
  std::vector<Run> runs(n);
  std::vector<double> service(n);
  for (std::size_t i = 0; i < n; ++i) {
    const RoundJob& j = jobs[i];
    const std::string name = "jobs: job '" + j.id + "'";
    require_in_range(name, "arrival_s", j.arrival_s, 0, kMaxJobTimeS, "s");
    if (j.gpus < 1 || j.gpus > capacity)
      throw InputError(name + ": needs " + std::to_string(j.gpus) + " GPUs, the cluster has " +
                       std::to_string(capacity));
    if (j.service_on) {
      service[i] = j.service_on(packed(j.gpus, s.gpus_per_node));
      require_in_range(name, "service_s", service[i], kMinServiceS, kMaxJobTimeS, "s");
      runs[i].remaining = 1;
    } else if (j.app) {
      const AtomicBatch b = atomic_batch(*j.app, j.batch, j.gpus);
      const long long batch = static_cast<long long>(j.gpus) * b.atomic * (b.accum_steps + 1);
      if (j.batch < 1 || j.batch > j.app->validation.rbegin()->first || b.atomic < 1 ||
          batch < j.app->validation.begin()->first || batch > j.app->validation.rbegin()->first)
        throw InputError(name + ": batch " + std::to_string(j.batch) + " on " + std::to_string(j.gpus) +
                         " GPUs is outside " + j.app->name + "'s measured batches " +
                         std::to_string(j.app->validation.begin()->first) + "-" +
                         std::to_string(j.app->validation.rbegin()->first));
      service[i] = service_alone_s(*j.app, j.gpus, j.batch, s.gpus_per_node);
    } else {
      require_in_range(name, "service_s", j.service_s, kMinServiceS, kMaxJobTimeS, "s");
      service[i] = j.service_s;
      runs[i].remaining = j.service_s;
    }
    result.jobs.push_back({});
    static_cast<JobRecord&>(result.jobs.back()) = JobRecord{j.id, j.arrival_s, 0, 0, j.gpus, service[i], 0};
  }
  const bool preemptive = s.policy == JobPolicy::las || s.policy == JobPolicy::themis;
  const auto fraction_left = [&](std::size_t i) {
    if (jobs[i].service_on) return runs[i].remaining;
    if (!jobs[i].app) return runs[i].remaining / service[i];
    return 1 - runs[i].progress / jobs[i].app->progress_at(jobs[i].app->max_epochs);
  };
  double t = 0, held_gpu_s = 0;
  std::size_t done = 0;
  std::vector<int> free(static_cast<std::size_t>(s.nodes), s.gpus_per_node);
  // Jobs by arrival, and those present and unfinished (by index): a round costs O(present), not
  // O(stream).
  std::vector<std::size_t> by_arrival(n);
  for (std::size_t i = 0; i < n; ++i) by_arrival[i] = i;
  std::stable_sort(by_arrival.begin(), by_arrival.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].arrival_s < jobs[b].arrival_s; });
  std::size_t next_arrival = 0;
  const double last_arrival = jobs[by_arrival.back()].arrival_s;
  std::vector<std::size_t> active;
  std::vector<char> run(n, 0);
  while (done < n) {
    // The jobs present, their queues and order.
    const std::size_t before = active.size();
    while (next_arrival < n && jobs[by_arrival[next_arrival]].arrival_s <= t) {
      const std::size_t i = by_arrival[next_arrival++];
      runs[i].present = true;
      runs[i].entered_s = t;
      active.push_back(i);
    }
    if (active.size() != before) std::sort(active.begin(), active.end());
    std::vector<std::size_t> order;
    for (std::size_t i : active) {
      Run& r = runs[i];
      const auto& th = s.las_thresholds_gpu_s;
      const auto q =
          static_cast<std::size_t>(std::upper_bound(th.begin(), th.end(), r.attained) - th.begin());
      if (q != r.queue) {
        r.queue = q;
        r.entered_s = t;
      }
      order.push_back(i);
    }
    const auto key = [&](std::size_t i) {
      double primary = 0, secondary = jobs[i].arrival_s;
      switch (s.policy) {
        case JobPolicy::fifo:
          break;
        case JobPolicy::sjf:
          primary = service[i];
          break;
        case JobPolicy::las:
          primary = static_cast<double>(runs[i].queue);
          secondary = runs[i].entered_s;
          break;
        case JobPolicy::themis: {
          const double shared = (t - jobs[i].arrival_s) + fraction_left(i) * service[i];
          const double alone =
              service[i] * std::max(1.0, static_cast<double>(order.size()) * jobs[i].gpus / capacity);
          primary = -shared / alone;
          break;
        }
      }
      const bool keeps = !preemptive && !runs[i].nodes.empty();  // fifo, sjf: a running job keeps its GPUs
      return std::make_tuple(!keeps, primary, secondary, i);
    };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    int count = capacity;
    for (std::size_t i : order) run[i] = 0;
    for (std::size_t i : order) {
      if (jobs[i].gpus <= count) {
        run[i] = 1;
        count -= jobs[i].gpus;
      } else if (!s.backfill) {
        break;
      }
    }
    for (std::size_t i : order) {
      Run& r = runs[i];
      if (run[i] || r.nodes.empty()) continue;
      ++result.jobs[i].preemptions;
      for (int node : r.nodes) ++free[static_cast<std::size_t>(node)];
      r.nodes.clear();
      r.placement.clear();
    }
    for (std::size_t i : order) {
      Run& r = runs[i];
      if (!run[i] || !r.nodes.empty()) continue;
      r.nodes = place(free, jobs[i].gpus, s.placement);
      r.placement = counts_of(r.nodes);
      r.restart_left = s.restart_s;
      if (jobs[i].app) r.batch = atomic_batch(*jobs[i].app, jobs[i].batch, jobs[i].gpus);
      if (r.started) {
        ++result.jobs[i].restarts;
      } else {
        r.started = true;
        result.jobs[i].start_s = t;
      }
      result.jobs[i].placement = r.placement;
    }
    if (order.empty()) {  // nothing present: on to the round of the next arrival
      STRATA_ASSERT(next_arrival < n, "jobs: no job ahead with jobs left");
      const double next = jobs[by_arrival[next_arrival]].arrival_s;
      t = std::ceil(next / s.interval_s) * s.interval_s;
      continue;
    }
    // Run the round [t, t + interval).
    for (std::size_t i : active) {
      Run& r = runs[i];
      if (r.nodes.empty()) continue;
      held_gpu_s += jobs[i].gpus * s.interval_s;
      r.attained += jobs[i].gpus * s.interval_s;
      const double delay = std::min(r.restart_left, s.interval_s);
      r.restart_left -= delay;
      const double left = s.interval_s - delay;
      if (left <= 0) continue;
      if (jobs[i].service_on) {
        const double on = jobs[i].service_on(r.placement);
        if (!(on > 0) || !std::isfinite(on))
          throw InputError("jobs: job '" + jobs[i].id + "': service time on its placement is not > 0");
        if (r.remaining * on <= left) {
          r.finish_s = t + delay + r.remaining * on;
          r.remaining = 0;
        } else {
          r.remaining -= left / on;
        }
      } else if (jobs[i].app) {
        r.finish_s = advance_measured(*jobs[i].app, r, left, t + delay, true);
      } else if (r.remaining <= left) {
        r.finish_s = t + delay + r.remaining;
        r.remaining = 0;
      } else {
        r.remaining -= left;
      }
    }
    t += s.interval_s;
    ++result.rounds;
    if (t > last_arrival + s.horizon_s)
      throw InputError("jobs: jobs left " + format_number(s.horizon_s) + " s after the last arrival");
    if (static_cast<double>(result.rounds) >= s.max_rounds)
      throw InputError("jobs: not every job finished within " + format_number(s.max_rounds) + " rounds of " +
                       format_number(s.interval_s) + " s; give a longer interval");
    // Completions give their GPUs back.
    for (std::size_t i : active) {
      Run& r = runs[i];
      if (r.finish_s < 0) continue;
      r.finished = true;
      ++done;
      result.jobs[i].finish_s = r.finish_s;
      for (int node : r.nodes) ++free[static_cast<std::size_t>(node)];
      r.nodes.clear();
    }
    active.erase(
        std::remove_if(active.begin(), active.end(), [&](std::size_t i) { return runs[i].finished; }),
        active.end());
  }
  std::vector<const JobRecord*> records;
  for (const RoundJobRecord& r : result.jobs) records.push_back(&r);
  static_cast<JobStreamFigures&>(result) = stream_figures(records, held_gpu_s, capacity);
  return result;
}

}  // namespace models
}  // namespace strata
