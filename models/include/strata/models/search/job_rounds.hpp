// Cluster job scheduling in rounds, with placement on nodes (DESIGN.md, scheduling: the job level).
// Where job_schedule.hpp moves from event to event with jobs whose speed does not depend on where
// they run, this engine follows a cluster scheduler as deployed: every `interval_s` the policy
// orders the jobs present, decides which run, and places each newly started job's GPUs on nodes;
// a job (re)started on a placement first pays `restart_s` (checkpoint restore, process start);
// a job preempted loses its GPUs until a later round. A job either has a fixed service time
// (its speed the same on any placement), a service time per placement (strata's replay of its
// Plan on the nodes it got: the fraction of its work done per second is 1 / that time), or is a
// measured application (trace_application.hpp) whose speed depends on its placement, batch and
// epoch, as in Pollux's simulator (Qiao et al.,
// OSDI 2021): a round of 60 s, a restart of 30 s, an epoch's end rounded to a whole second and a
// job's GPUs given back at the round after it completes.
//
// Order (JobPolicy): fifo: arrival; sjf: service time alone on a packed placement; las: Tiresias's
// discretised least-attained-service: a job's attained service is its GPUs × the rounds it held
// them; thresholds split it into queues; lower queues first and, within a queue, the order jobs
// entered it (arrival for the first, the round of demotion for the others), as Tiresias's and
// Pollux's simulators keep their queues; themis: finish-time fairness as in job_schedule.hpp, on
// the service-time estimate. Running jobs are taken in that order while their GPUs fit; with
// `backfill` a job that does not fit is skipped and later ones may run (Tiresias's and Pollux's
// behaviour), without it the first that does not fit stops the round. Ties: the job's position.
//
// Placement (JobPlacement) of a job's g GPUs on the free GPUs of the nodes, GPU by GPU group:
// most-free: repeatedly the node with the most free GPUs (ties: the lower index), taking as many
// as it has or the job still needs (Pollux's Tiresias); pack: the node whose free GPUs fit the
// rest most tightly, else the one with the most (fewest nodes, least fragmentation left); spread:
// one GPU at a time on the node with the most free GPUs (as many nodes as possible).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/models/search/job_schedule.hpp"
#include "strata/models/search/trace_application.hpp"

namespace strata {
inline namespace models {

enum class JobPlacement : std::uint8_t { most_free, pack, spread };
std::optional<JobPlacement> parse_job_placement(std::string_view text);
std::string_view to_string(JobPlacement placement);

struct RoundJob {
  std::string id;
  double arrival_s = 0;
  int gpus = 1;
  double service_s = 0;                   // fixed-speed jobs: run time alone on its GPUs
  const TraceApplication* app = nullptr;  // measured jobs: the application ...
  int batch = 0;                          // ... and its (fixed) global batch
  // Simulated jobs: the run time alone on a placement (GPUs per node, in the order the nodes were
  // taken; strata replays the job's Plan on those hosts). service_s is ignored when it is set.
  std::function<double(const std::vector<int>& placement)> service_on = {};
};

struct RoundSettings {
  JobPolicy policy = JobPolicy::las;
  JobPlacement placement = JobPlacement::most_free;
  int nodes = 16;
  int gpus_per_node = 4;
  double interval_s = 60;
  double restart_s = 30;
  bool backfill = true;
  std::vector<double> las_thresholds_gpu_s = {57600};  // Pollux's Tiresias: 16 GPU-hours
  double lease_s = 60;                                 // themis
  double horizon_s = 1e9;  // give up (InputError) with jobs left this long after the last arrival
  // ... or after this many rounds: each costs O(jobs present), and rounds of 1e-3 s up to the
  // horizon would be 1e12 of them.
  double max_rounds = 1e8;
};

struct RoundJobRecord : JobRecord {
  int restarts = 0;            // (re)starts after the first
  std::vector<int> placement;  // GPUs per node of its last start
};

struct RoundScheduleResult : JobStreamFigures {  // GPU-seconds: held (restarts included)
  std::vector<RoundJobRecord> jobs;              // in the stream's order
  std::int64_t rounds = 0;
};

// The time (s) a measured job takes alone on a packed placement of its GPUs (restart excluded):
// its service time for sjf and themis, and the record's.
double service_alone_s(const TraceApplication& app, int gpus, int batch, int gpus_per_node);

// Throws InputError naming the job for an arrival or service outside job_schedule.hpp's ranges, a
// bad batch or GPU count (more than the cluster has), for a batch the application's traces do not
// cover, for settings outside those ranges, and when jobs are left past the horizon or max_rounds.
RoundScheduleResult schedule_job_rounds(const std::vector<RoundJob>& jobs, const RoundSettings& settings);

}  // namespace models
}  // namespace strata
