// Cluster job scheduling: see job_schedule.hpp.
#include "strata/models/search/job_schedule.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr std::array<std::pair<JobPolicy, std::string_view>, 4> kPolicies = {{{JobPolicy::fifo, "fifo"},
                                                                              {JobPolicy::sjf, "sjf"},
                                                                              {JobPolicy::las, "las"},
                                                                              {JobPolicy::themis, "themis"}}};

struct State {
  double remaining = 0;
  double attained = 0;  // GPU-seconds
  bool present = false, started = false, running = false, finished = false;
};

}  // namespace

std::optional<JobPolicy> parse_job_policy(std::string_view text) {
  for (const auto& [p, name] : kPolicies)
    if (name == text) return p;
  return std::nullopt;
}

std::string_view to_string(JobPolicy policy) {
  for (const auto& [p, name] : kPolicies)
    if (p == policy) return name;
  return "fifo";
}

JobStreamFigures stream_figures(const std::vector<const JobRecord*>& jobs, double gpu_s, int capacity) {
  STRATA_ASSERT(!jobs.empty(), "stream_figures: no job");
  std::vector<double> jct;
  double first = INFINITY, last = 0, queueing = 0;
  for (const JobRecord* r : jobs) {
    jct.push_back(r->jct_s());
    first = std::min(first, r->arrival_s);
    last = std::max(last, r->finish_s);
    queueing += r->queueing_s();
  }
  std::sort(jct.begin(), jct.end());
  double sum = 0;
  for (double v : jct) sum += v;
  const auto n = static_cast<double>(jobs.size());
  JobStreamFigures f;
  f.average_jct_s = sum / n;
  f.p99_jct_s = jct[static_cast<std::size_t>(std::ceil(0.99 * n)) - 1];
  f.makespan_s = last - first;
  f.average_queueing_s = queueing / n;
  f.gpu_utilisation = f.makespan_s > 0 ? gpu_s / (capacity * f.makespan_s) : 0;
  return f;
}

JobScheduleResult schedule_jobs(const std::vector<ClusterJob>& jobs, const JobSettings& settings) {
  const int capacity = settings.cluster_gpus;
  if (capacity < 1) throw InputError("jobs: the cluster needs at least one GPU");
  if (!std::is_sorted(settings.las_thresholds_gpu_s.begin(), settings.las_thresholds_gpu_s.end()))
    throw InputError("jobs: the LAS thresholds must rise");
  if (!(settings.lease_s > 0) || !std::isfinite(settings.lease_s))
    throw InputError("jobs: the lease must be > 0 s");
  for (const ClusterJob& j : jobs) {
    const std::string name = "jobs: job '" + j.id + "'";
    if (!(j.arrival_s >= 0) || !std::isfinite(j.arrival_s))
      throw InputError(name + ": arrival is not a time >= 0");
    if (!(j.service_s > 0) || !std::isfinite(j.service_s))
      throw InputError(name + ": service time is not > 0");
    if (j.gpus < 1 || j.gpus > capacity)
      throw InputError(name + ": needs " + std::to_string(j.gpus) + " GPUs, the cluster has " +
                       std::to_string(capacity));
  }
  JobScheduleResult result;
  const std::size_t n = jobs.size();
  if (n == 0) return result;
  std::vector<State> s(n);
  result.jobs.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i].remaining = jobs[i].service_s;
    result.jobs[i] = JobRecord{jobs[i].id, jobs[i].arrival_s, 0, 0, jobs[i].gpus, jobs[i].service_s, 0};
  }
  std::vector<std::size_t> by_arrival(n);
  for (std::size_t i = 0; i < n; ++i) by_arrival[i] = i;
  std::stable_sort(by_arrival.begin(), by_arrival.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].arrival_s < jobs[b].arrival_s; });
  const bool preemptive = settings.policy == JobPolicy::las || settings.policy == JobPolicy::themis;
  const auto queue = [&](std::size_t i) {
    const auto& t = settings.las_thresholds_gpu_s;
    return static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), s[i].attained) - t.begin());
  };
  std::size_t next_arrival = 0, done = 0;
  double now = jobs[by_arrival[0]].arrival_s, lease_end = now + settings.lease_s;
  std::vector<std::size_t> active;  // present and unfinished, by index: an event costs O(present)
  std::vector<char> run(n, 0);
  while (done < n) {
    const std::size_t before = active.size();
    while (next_arrival < n && jobs[by_arrival[next_arrival]].arrival_s <= now) {
      s[by_arrival[next_arrival]].present = true;
      active.push_back(by_arrival[next_arrival++]);
    }
    if (active.size() != before) std::sort(active.begin(), active.end());
    // The order of the jobs present.
    std::vector<std::size_t> order = active;
    const std::size_t present = order.size();
    const auto key = [&](std::size_t i) {
      double primary = 0;
      switch (settings.policy) {
        case JobPolicy::fifo:
          break;
        case JobPolicy::sjf:
          primary = s[i].running ? -1 : jobs[i].service_s;  // a running job keeps its GPUs
          break;
        case JobPolicy::las:
          primary = static_cast<double>(queue(i));
          break;
        case JobPolicy::themis: {
          const double shared = (now - jobs[i].arrival_s) + s[i].remaining;
          const double alone =
              jobs[i].service_s * std::max(1.0, static_cast<double>(present) * jobs[i].gpus / capacity);
          primary = -shared / alone;
          break;
        }
      }
      return std::make_tuple(primary, jobs[i].arrival_s, i);
    };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    // Allocation in that order; a job that does not fit blocks the ones after it.
    int free = capacity;
    for (std::size_t i : order) run[i] = 0;
    if (!preemptive)
      for (std::size_t i : order)
        if (s[i].running) {
          run[i] = 1;
          free -= jobs[i].gpus;
        }
    for (std::size_t i : order) {
      if (run[i]) continue;
      if (jobs[i].gpus > free) {
        if (settings.backfill) continue;
        break;
      }
      run[i] = 1;
      free -= jobs[i].gpus;
    }
    for (std::size_t i : order) {
      if (s[i].running && !run[i]) ++result.jobs[i].preemptions;
      if (run[i] && !s[i].started) {
        s[i].started = true;
        result.jobs[i].start_s = now;
      }
      s[i].running = run[i] != 0;
    }
    // The next event: an arrival, a completion, a queue change (las) or a lease end (themis).
    double next = next_arrival < n ? jobs[by_arrival[next_arrival]].arrival_s : INFINITY;
    for (std::size_t i : order) {
      if (!run[i]) continue;
      next = std::min(next, now + s[i].remaining);
      if (settings.policy == JobPolicy::las) {
        const std::size_t q = queue(i);
        if (q < settings.las_thresholds_gpu_s.size())
          next = std::min(next, now + (settings.las_thresholds_gpu_s[q] - s[i].attained) / jobs[i].gpus);
      }
    }
    if (settings.policy == JobPolicy::themis && !order.empty()) {
      while (lease_end <= now) lease_end += settings.lease_s;
      next = std::min(next, lease_end);
    }
    STRATA_ASSERT(std::isfinite(next), "jobs: no event ahead with jobs left");
    const double dt = next - now;
    for (std::size_t i : order) {
      if (!run[i]) continue;
      s[i].attained += jobs[i].gpus * dt;
      s[i].remaining -= dt;
      if (s[i].remaining <= 1e-9 * jobs[i].service_s) {
        s[i].remaining = 0;
        s[i].finished = true;
        s[i].running = false;
        result.jobs[i].finish_s = next;
        ++done;
      }
    }
    active.erase(std::remove_if(active.begin(), active.end(), [&](std::size_t i) { return s[i].finished; }),
                 active.end());
    now = next;
  }
  double gpu_s = 0;
  std::vector<const JobRecord*> records;
  for (const JobRecord& r : result.jobs) {
    gpu_s += r.gpus * r.service_s;
    records.push_back(&r);
  }
  static_cast<JobStreamFigures&>(result) = stream_figures(records, gpu_s, capacity);
  return result;
}

}  // namespace models
}  // namespace strata
