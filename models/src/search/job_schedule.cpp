// Cluster job scheduling: see job_schedule.hpp. The engine (Events) moves from event to event and
// asks the policy's order (job_policies.hpp) which jobs run.
#include "strata/models/search/job_schedule.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>

#include "job_policies.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

using job_orders::JobOrder;
using job_orders::Stream;

constexpr std::array<std::pair<JobPolicy, std::string_view>, 4> kPolicies = {{{JobPolicy::fifo, "fifo"},
                                                                              {JobPolicy::sjf, "sjf"},
                                                                              {JobPolicy::las, "las"},
                                                                              {JobPolicy::themis, "themis"}}};

// The engine: from event to event, each running job's progress brought forward at every one.
class Events {
 public:
  Events(Stream& stream, const JobSettings& settings, JobOrder& order, std::vector<JobRecord>& records)
      : s_(stream),
        settings_(settings),
        order_(order),
        records_(records),
        is_running_(stream.size(), 0),
        chosen_mark_(stream.size(), 0),
        started_(stream.size(), 0) {}
  void run();

 private:
  void admit();
  void allocate();
  double next_event();
  void advance(double next);
  void stall();
  void finish(std::size_t at, double t);
  void requeue(int job);

  Stream& s_;
  const JobSettings& settings_;
  JobOrder& order_;
  std::vector<JobRecord>& records_;
  std::vector<int> running_, chosen_;
  std::vector<char> is_running_, chosen_mark_, started_;
  std::size_t next_arrival_ = 0, present_ = 0, done_ = 0;
  double now_ = 0, lease_end_ = 0;
};

void Events::run() {
  now_ = s_.arrival[s_.by_arrival[0]];
  lease_end_ = now_ + settings_.lease_s;
  while (done_ < s_.size()) {
    admit();
    allocate();
    const double next = next_event();
    STRATA_ASSERT(std::isfinite(next), "jobs: no event ahead with jobs left");
    if (next > now_)
      advance(next);
    else
      stall();
  }
}

void Events::admit() {
  const auto& th = settings_.las_thresholds_gpu_s;
  for (; next_arrival_ < s_.size() && s_.arrival[s_.by_arrival[next_arrival_]] <= now_; ++next_arrival_) {
    const int job = s_.by_arrival[next_arrival_];
    s_.queue[job] = static_cast<std::size_t>(std::upper_bound(th.begin(), th.end(), 0.0) - th.begin());
    ++present_;
    order_.arrive(job, now_);
  }
}

void Events::allocate() {
  chosen_.clear();
  order_.choose(now_, present_, running_, chosen_);
  for (int job : chosen_) chosen_mark_[job] = 1;
  for (int job : running_)
    if (!chosen_mark_[job]) {
      ++records_[job].preemptions;
      is_running_[job] = 0;
      order_.preempt(job, now_);
    }
  for (int job : chosen_) {
    chosen_mark_[job] = 0;
    if (is_running_[job]) continue;
    is_running_[job] = 1;
    if (!started_[job]) {
      started_[job] = 1;
      records_[job].start_s = now_;
    }
    order_.start(job, now_);
  }
  running_.swap(chosen_);
}

// A lease end `lease` after another, by repeated addition from the first, the first past `now`,
// as `while (end <= now) end += lease` gives it but in O(binades) rather than one step per lease
// (an idle gap of 1e12 s under a lease of 1e-3 s is 1e15 of them): within a binade every addition
// adds the same multiple of the binade's unit (once the first has settled a tie to even), so a run
// of them is one multiplication, exact. The run stops 4 additions short of what the rounded
// quotients allow (they may be 3 over), well before the binade's end and `now`.
double lease_end_after(double end, double lease, double now) {
  while (end <= now) {
    end += lease;
    if (end > now || lease > end) continue;
    const double step = (end + lease) - end;  // exact (Sterbenz): end + lease is within 2 end
    STRATA_ASSERT(step > 0, "jobs: a lease too short for the clock");
    int exponent = 0;
    std::frexp(end, &exponent);
    const double binade_end = std::ldexp(1.0, exponent);
    const double runs = std::min((binade_end - lease - end) / step, (now - end) / step);
    if (runs >= 8) end += (std::floor(runs) - 4) * step;
  }
  return end;
}

double Events::next_event() {
  double next = next_arrival_ < s_.size() ? s_.arrival[s_.by_arrival[next_arrival_]] : INFINITY;
  const auto& th = settings_.las_thresholds_gpu_s;
  const bool las = settings_.policy == JobPolicy::las;
  for (int job : running_) {
    next = std::min(next, now_ + s_.remaining[job]);
    if (las && s_.queue[job] < th.size())
      next = std::min(next, now_ + (th[s_.queue[job]] - s_.attained[job]) / s_.gpus[job]);
  }
  if (settings_.policy == JobPolicy::themis && present_ > 0) {
    lease_end_ = lease_end_after(lease_end_, settings_.lease_s, now_);
    next = std::min(next, lease_end_);
  }
  return next;
}

void Events::advance(double next) {
  const double dt = next - now_;
  for (std::size_t k = 0; k < running_.size();) {
    const int job = running_[k];
    s_.attained[job] += s_.gpus[job] * dt;
    s_.remaining[job] -= dt;
    if (s_.remaining[job] <= 1e-9 * s_.service[job]) {
      finish(k, next);
      continue;
    }
    requeue(job);
    ++k;
  }
  now_ = next;
}

// The next event is due now: a job's service left, or its attained service short of its next
// threshold, is less than the clock can add to now (rounding left it a sliver). Nothing would
// ever move; what is due happens now instead.
void Events::stall() {
  const auto& th = settings_.las_thresholds_gpu_s;
  for (std::size_t k = 0; k < running_.size();) {
    const int job = running_[k];
    if (now_ + s_.remaining[job] == now_) {
      finish(k, now_);
      continue;
    }
    const std::size_t q = s_.queue[job];
    if (settings_.policy == JobPolicy::las && q < th.size() &&
        now_ + (th[q] - s_.attained[job]) / s_.gpus[job] == now_) {
      s_.attained[job] = th[q];
      requeue(job);
    }
    ++k;
  }
}

void Events::finish(std::size_t at, double t) {
  const int job = running_[at];
  running_[at] = running_.back();
  running_.pop_back();
  s_.remaining[job] = 0;
  is_running_[job] = 0;
  records_[job].finish_s = t;
  ++done_;
  --present_;
  order_.finish(job);
}

void Events::requeue(int job) {
  if (settings_.policy != JobPolicy::las) return;
  const auto& th = settings_.las_thresholds_gpu_s;
  const std::size_t from = s_.queue[job];
  std::size_t& q = s_.queue[job];
  while (q < th.size() && th[q] <= s_.attained[job]) ++q;
  if (q != from) order_.requeue(job, from);
}

void check_settings(const JobSettings& settings) {
  if (settings.cluster_gpus < 1) throw InputError("jobs: the cluster needs at least one GPU");
  const auto& th = settings.las_thresholds_gpu_s;
  if (!std::is_sorted(th.begin(), th.end())) throw InputError("jobs: the LAS thresholds must rise");
  if (th.size() > kMaxLasThresholds)
    throw InputError("jobs: " + std::to_string(th.size()) + " LAS thresholds, at most " +
                     std::to_string(kMaxLasThresholds));
  for (double t : th) require_in_range("jobs", "LAS threshold", t, 0, kMaxThresholdGpuS, "GPU-s");
  require_in_range("jobs", "lease_s", settings.lease_s, kMinLeaseS, kMaxJobTimeS, "s");
}

std::string rounded(double value) {  // to 3 significant digits, for messages
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

void check_jobs(const std::vector<ClusterJob>& jobs, const JobSettings& settings) {
  double service = 0;
  for (const ClusterJob& j : jobs) {
    const std::string name = "jobs: job '" + j.id + "'";
    require_in_range(name, "arrival_s", j.arrival_s, 0, kMaxJobTimeS, "s");
    require_in_range(name, "service_s", j.service_s, kMinServiceS, kMaxJobTimeS, "s");
    if (j.gpus < 1 || j.gpus > settings.cluster_gpus)
      throw InputError(name + ": needs " + std::to_string(j.gpus) + " GPUs, the cluster has " +
                       std::to_string(settings.cluster_gpus));
    service += j.service_s;
  }
  if (settings.policy == JobPolicy::themis && service / settings.lease_s > kMaxLeaseEnds)
    throw InputError("jobs: a lease of " + format_number(settings.lease_s) + " s could end " +
                     rounded(service / settings.lease_s) + " times over the stream's " + rounded(service) +
                     " s of service, more than " + rounded(kMaxLeaseEnds) + " (a lease of " +
                     rounded(service / kMaxLeaseEnds) + " s or more)");
}

}  // namespace

void require_in_range(const std::string& where, const std::string& name, double value, double low,
                      double high, const char* unit) {
  if (value >= low && value <= high) return;
  throw InputError(where + ": " + name + " " + format_number(value) + " outside [" + format_number(low) +
                   ", " + format_number(high) + "] " + unit);
}

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
  jct.reserve(jobs.size());
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
  check_settings(settings);
  check_jobs(jobs, settings);
  if (jobs.size() > static_cast<std::size_t>(INT32_MAX))
    throw InputError("jobs: " + std::to_string(jobs.size()) + " jobs, at most 2^31 - 1");
  JobScheduleResult result;
  if (jobs.empty()) return result;
  result.jobs.reserve(jobs.size());
  for (const ClusterJob& j : jobs) result.jobs.push_back({j.id, j.arrival_s, 0, 0, j.gpus, j.service_s, 0});
  Stream stream(jobs);
  const std::unique_ptr<JobOrder> order = job_orders::order_of(stream, settings);
  Events(stream, settings, *order, result.jobs).run();
  double gpu_s = 0;
  std::vector<const JobRecord*> records;
  records.reserve(result.jobs.size());
  for (const JobRecord& r : result.jobs) {
    gpu_s += r.gpus * r.service_s;
    records.push_back(&r);
  }
  static_cast<JobStreamFigures&>(result) = stream_figures(records, gpu_s, settings.cluster_gpus);
  return result;
}

}  // namespace models
}  // namespace strata
