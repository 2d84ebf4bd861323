// The straightforward reference of cluster job scheduling (models/search/job_schedule.hpp), as
// strata computed it before its engine kept the jobs present in ordered structures: at every
// event every job present sorted by the policy's key, O(present log present) an event. Used by
// job_schedule_reference_test.cpp (the engine must agree to the bit) and strata_bench_jobs (the
// baseline measured in the same run). No input checks: give it what schedule_jobs accepts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <vector>

#include "strata/models/search/job_schedule.hpp"

namespace strata::test {

struct ReferenceState {
  double remaining = 0;
  double attained = 0;
  bool started = false, running = false, finished = false;
};

// The reference: at every event, every job present sorted by the policy's key and the GPUs given
// in that order. `stalls` counts the events due at once (see below).
inline std::vector<JobRecord> reference_schedule(const std::vector<ClusterJob>& jobs,
                                                 const JobSettings& settings, int* stalls) {
  const int capacity = settings.cluster_gpus;
  const std::size_t n = jobs.size();
  std::vector<ReferenceState> s(n);
  std::vector<JobRecord> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i].remaining = jobs[i].service_s;
    out[i] = JobRecord{jobs[i].id, jobs[i].arrival_s, 0, 0, jobs[i].gpus, jobs[i].service_s, 0};
  }
  std::vector<std::size_t> by_arrival(n);
  for (std::size_t i = 0; i < n; ++i) by_arrival[i] = i;
  std::stable_sort(by_arrival.begin(), by_arrival.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].arrival_s < jobs[b].arrival_s; });
  const bool preemptive = settings.policy == JobPolicy::las || settings.policy == JobPolicy::themis;
  const auto& th = settings.las_thresholds_gpu_s;
  const auto queue = [&](std::size_t i) {
    return static_cast<std::size_t>(std::upper_bound(th.begin(), th.end(), s[i].attained) - th.begin());
  };
  std::size_t next_arrival = 0, done = 0;
  double now = jobs[by_arrival[0]].arrival_s, lease_end = now + settings.lease_s;
  std::vector<std::size_t> active;
  std::vector<char> run(n, 0);
  while (done < n) {
    const std::size_t before = active.size();
    while (next_arrival < n && jobs[by_arrival[next_arrival]].arrival_s <= now)
      active.push_back(by_arrival[next_arrival++]);
    if (active.size() != before) std::sort(active.begin(), active.end());
    std::vector<std::size_t> order = active;
    const std::size_t present = order.size();
    const auto key = [&](std::size_t i) {
      double primary = 0;
      if (settings.policy == JobPolicy::sjf) primary = s[i].running ? -1 : jobs[i].service_s;
      if (settings.policy == JobPolicy::las) primary = static_cast<double>(queue(i));
      if (settings.policy == JobPolicy::themis) {
        const double shared = (now - jobs[i].arrival_s) + s[i].remaining;
        const double alone =
            jobs[i].service_s * std::max(1.0, static_cast<double>(present) * jobs[i].gpus / capacity);
        primary = -shared / alone;
      }
      return std::make_tuple(primary, jobs[i].arrival_s, i);
    };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
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
      if (s[i].running && !run[i]) ++out[i].preemptions;
      if (run[i] && !s[i].started) {
        s[i].started = true;
        out[i].start_s = now;
      }
      s[i].running = run[i] != 0;
    }
    double next = next_arrival < n ? jobs[by_arrival[next_arrival]].arrival_s : INFINITY;
    for (std::size_t i : order) {
      if (!run[i]) continue;
      next = std::min(next, now + s[i].remaining);
      if (settings.policy == JobPolicy::las && queue(i) < th.size())
        next = std::min(next, now + (th[queue(i)] - s[i].attained) / jobs[i].gpus);
    }
    if (settings.policy == JobPolicy::themis && !order.empty()) {
      while (lease_end <= now) lease_end += settings.lease_s;
      next = std::min(next, lease_end);
    }
    if (!(next > now)) {
      // The one change from strata before: it spun here forever (the step due is less than the
      // clock can add to now); what is due happens now.
      ++*stalls;
      for (std::size_t i : order) {
        if (!run[i]) continue;
        const std::size_t q = queue(i);
        if (now + s[i].remaining == now) {
          s[i].finished = true;
          s[i].running = false;
          out[i].finish_s = now;
          ++done;
        } else if (settings.policy == JobPolicy::las && q < th.size() &&
                   now + (th[q] - s[i].attained) / jobs[i].gpus == now) {
          s[i].attained = th[q];
        }
      }
      active.erase(std::remove_if(active.begin(), active.end(), [&](std::size_t i) { return s[i].finished; }),
                   active.end());
      continue;
    }
    const double dt = next - now;
    for (std::size_t i : order) {
      if (!run[i]) continue;
      s[i].attained += jobs[i].gpus * dt;
      s[i].remaining -= dt;
      if (s[i].remaining <= 1e-9 * jobs[i].service_s) {
        s[i].finished = true;
        s[i].running = false;
        out[i].finish_s = next;
        ++done;
      }
    }
    active.erase(std::remove_if(active.begin(), active.end(), [&](std::size_t i) { return s[i].finished; }),
                 active.end());
    now = next;
  }
  return out;
}

}  // namespace strata::test
