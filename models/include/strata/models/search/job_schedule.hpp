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
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {
inline namespace models {

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

// Throws InputError naming the job for a negative or non-finite arrival or service, a job of no
// GPU or more GPUs than the cluster has; and for a cluster of no GPU, unsorted LAS thresholds or
// a lease <= 0.
JobScheduleResult schedule_jobs(const std::vector<ClusterJob>& jobs, const JobSettings& settings);

}  // namespace models
}  // namespace strata
