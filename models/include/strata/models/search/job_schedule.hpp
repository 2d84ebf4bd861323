// Cluster job scheduling (DESIGN.md, scheduling: the job level): a stream of training jobs with
// arrival times, GPU counts and service times shares one cluster under a policy; the result is
// each job's start, finish, queueing delay and preemptions, and the stream's average and p99 job
// completion time (JCT), makespan and GPU utilisation. Engine-free: a job's service time (its run
// time alone on its GPUs) comes from strata's simulator or a trace.
//
// Policies (JobPolicy), each allocating whole jobs (gang scheduling: all of a job's GPUs or none)
// in priority order; a job that does not fit blocks the jobs after it (unless `backfill`: then
// it is skipped and later ones may start), so a policy is exactly its order:
// - fifo: arrival order, never preempted.
// - sjf: shortest service time first among the waiting jobs, never preempted (a running job keeps
//   its GPUs).
// - las: Tiresias's discretised two-dimensional least-attained-service (Gu et al., NSDI 2019):
//   a job's attained service is GPUs × time run; thresholds split it into queues (below the
//   first: queue 0); lower queues first, arrival order within a queue; preemptive: the order is
//   taken again at every arrival, completion and queue change.
// - themis: finish-time fairness (Mahajan et al., NSDI 2020): at every arrival, completion and
//   lease end (`lease_s`), jobs by their estimated rho = T_shared / T_independent, highest first,
//   where T_shared = (now − arrival) + remaining service and T_independent = service × max(1,
//   N · gpus / G) with N the jobs present (its time on a 1/N share of the cluster); preemptive.
// Ties break to the earlier arrival, then the job's position in the stream.
//
// Cost (n jobs, E events, R jobs running at an event: at most the cluster's GPUs over the
// narrowest job's): the engine moves from event to event (arrivals, completions, las queue
// changes, themis lease ends, and at most two more per completion or queue change where rounding
// leaves a sliver) and at each brings every running job's progress forward, O(R), which keeps its
// times exact to the bit; the jobs present are kept in each policy's order, so that choosing the
// jobs that run costs O(log n) per job it starts, preempts or looks at:
// - fifo, sjf: a static order (arrival; service, then arrival) of the waiting jobs; E <= 2n;
//   O(n log n + E R) in all.
// - las: a static arrival order per queue, every job present in its queue's; a running job
//   changes queue at most once per threshold, so E <= n (T + 2) for T thresholds (at most
//   kMaxLasThresholds); an event costs O(R log n + T).
// - themis: rho changes with time, at a rate of its own per waiting job: per GPU count, a kinetic
//   tournament of the waiting jobs (each a line in time) yields them in falling rho, and rho is
//   evaluated exactly only for the jobs an allocation looks at (the running ones, sorted, and per
//   GPU count the few it must compare with them). A tournament node is re-decided when its two
//   leaders cross; between changes to a subtree of m jobs that happens at most m - 1 times (the
//   upper envelope of m lines has m pieces), a few per event in practice. E <= 2n + the lease
//   ends, which the stream's service time over the lease bounds (at most kMaxLeaseEnds); an event
//   costs O(R log R + (G + k) log n) for G distinct GPU counts and k jobs started or preempted.
// Measured (strata_bench_jobs, 2-core development machine, 64 GPUs at 141 % load): 10^6 jobs in
// 1.1 s (fifo), 1.9 s (sjf), 2.1 s (las), 9.9 s (themis). On 4,096 GPUs at 130 % load, with about
// 1,100 jobs running at once, the O(R) part dominates: 10^5 jobs in 1.0 s (fifo), 2.8 s (las) and
// 21 s (themis, whose leases preempt each job 180 times, each a tournament update).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {
inline namespace models {

// The ranges the job engines accept (schedule_jobs here, schedule_job_rounds in job_rounds.hpp,
// and the readers and flags of strata jobs), chosen so that the arithmetic stays exact enough to
// end: a clock of 1e12 s (about 31,700 years) still tells apart instants 1.2e-4 s apart (one unit
// in its last place), finer than the shortest lease or round; at 1e17 s a unit is 16 s, a job of a
// second never moves the clock and the engine would wait for it forever. A service of at least
// 1e-6 s keeps rho, a time over a service, finite (below 1e30) and a service of at most 1e12 s
// keeps the figures finite (1e308 s made the average JCT inf). LAS thresholds up to 1e20 GPU-s
// exceed what any job attains (2^24 GPUs for 1e12 s); a lease of at least 1e-3 s is more than
// twice the clock's unit at 1e12 s, so a lease always moves the lease clock.
inline constexpr double kMaxJobTimeS = 1e12;  // arrival, service, lease, interval, restart
inline constexpr double kMinServiceS = 1e-6;
inline constexpr double kMinLeaseS = 1e-3;         // and the shortest round (job_rounds.hpp)
inline constexpr double kMaxThresholdGpuS = 1e20;  // las
inline constexpr std::size_t kMaxLasThresholds = 16;
// Themis: a lease ends at most (the stream's total service time) / lease times while jobs are
// present (some job runs whenever one is present); streams and leases that could make more are
// refused, as their events alone would take hours.
inline constexpr double kMaxLeaseEnds = 1e9;

// Throws InputError "<where>: <name> <value> outside [<low>, <high>] <unit>" unless low <= value
// <= high (a NaN is outside).
void require_in_range(const std::string& where, const std::string& name, double value, double low,
                      double high, const char* unit);

enum class JobPolicy : std::uint8_t { fifo, sjf, las, themis };
std::optional<JobPolicy> parse_job_policy(std::string_view text);
std::string_view to_string(JobPolicy policy);

struct ClusterJob {
  std::string id;
  double arrival_s = 0;
  int gpus = 1;
  double service_s = 0;  // run time alone on its GPUs
};

struct JobSettings {
  JobPolicy policy = JobPolicy::fifo;
  int cluster_gpus = 8;
  std::vector<double> las_thresholds_gpu_s = {3200};  // Tiresias's queue limits (GPU-seconds)
  double lease_s = 60;                                // themis: how often the order is taken again
  bool backfill = false;  // a job that does not fit is skipped and later ones may start
};

struct JobRecord {
  std::string id;
  double arrival_s = 0, start_s = 0, finish_s = 0;
  int gpus = 1;
  double service_s = 0;
  int preemptions = 0;
  double jct_s() const { return finish_s - arrival_s; }
  double queueing_s() const { return start_s - arrival_s; }
};

// The figures of a scheduled stream.
struct JobStreamFigures {
  double average_jct_s = 0;
  double p99_jct_s = 0;   // nearest rank
  double makespan_s = 0;  // the last finish minus the first arrival
  double average_queueing_s = 0;
  double gpu_utilisation = 0;  // GPU-seconds (below) over cluster GPUs × makespan
};
// Of `jobs` (none empty, every one finished) with `gpu_s` GPU-seconds used on `capacity` GPUs.
JobStreamFigures stream_figures(const std::vector<const JobRecord*>& jobs, double gpu_s, int capacity);

struct JobScheduleResult : JobStreamFigures {  // GPU-seconds: of service
  std::vector<JobRecord> jobs;                 // in the stream's order
};

// Throws InputError naming the job for an arrival or service outside the ranges above, a job of
// no GPU or more GPUs than the cluster has; and for a cluster of no GPU, LAS thresholds that fall,
// are too many or out of range, a lease out of range, or (themis) more lease ends than
// kMaxLeaseEnds.
JobScheduleResult schedule_jobs(const std::vector<ClusterJob>& jobs, const JobSettings& settings);

}  // namespace models
}  // namespace strata
