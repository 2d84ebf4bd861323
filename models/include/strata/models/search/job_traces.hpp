// Readers of job traces (DESIGN.md, data the tool reads) into the job streams of job_schedule.hpp
// and job_rounds.hpp: strata's own CSV, and importers of published cluster traces, each naming the
// columns it uses and what it assumes where a trace lacks something (docs/search.md has the same
// list):
// - strata's job trace: CSV (no quoting; `#` starts a comment line) with one of two headers:
//   id,arrival_s,gpus,service_s: each job's GPUs and its run time alone on them; or
//   id,arrival_s,model,dp,tp,pp,global_batch,iterations: each job as an Experiment (a zoo model,
//   its parallelism and global batch) run for `iterations` iterations, its GPUs dp·tp·pp and its
//   service time to be found by replaying its iteration (strata jobs does, on its platform).
// - Pollux's workloads (github.com/petuum/adaptdl, osdi21-artifact, simulator/workloads/*.csv;
//   Apache-2.0): name,time,application,num_replicas,batch_size. Every column is used: the job's
//   id, arrival (s), measured application (trace_application.hpp), GPUs and global batch
//   ("TunedJobs": the GPUs and batch Pollux's authors tuned per job).
// - Philly (Jeon et al., ATC 2019; github.com/msr-fiddle/philly-traces, CC BY 4.0), the
//   `cluster_job_log` JSON: jobid, submitted_time, attempts[].start_time/end_time/detail[].gpus.
//   Arrival: submission time less the earliest in the file (s); GPUs: those of the last attempt;
//   service: the attempts' run times summed. Philly records no model, batch or iteration count,
//   so a job is its measured GPU count and run time, whatever its status (a killed or failed job
//   held its GPUs too); a job without an attempt or with an attempt missing a time is left out
//   and counted. Unused: status, vc, user, the server ids.
// - Helios (Hu et al., SC 2021; github.com/S-Lab-System-Group/HeliosData, CC BY 4.0), each
//   cluster's `cluster_log.csv`, columns found by name: job_id, gpu_num, submit_time, duration.
//   Arrival as for Philly; GPUs: gpu_num; service: duration (end − start, s). Jobs of no GPU are
//   CPU jobs and left out and counted; no model or iterations, as for Philly. Unused: user, vc,
//   cpu_num, node_num, state, start_time, end_time, queue (the original scheduler's outcome).
// Times are "YYYY-MM-DD HH:MM:SS" read as UTC (only differences matter).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/models/experiment.hpp"
#include "strata/models/search/job_rounds.hpp"
#include "strata/models/search/job_schedule.hpp"
#include "strata/models/search/trace_application.hpp"

namespace strata {
inline namespace models {

struct StrataJobTrace {
  std::vector<ClusterJob> jobs;  // in the file's order; service_s 0 for a job given as an Experiment
  struct Modelled {
    std::size_t job = 0;  // in `jobs`
    Experiment experiment;
    std::int64_t iterations = 0;
    std::string at;  // "path:line", to name the job in messages
  };
  std::vector<Modelled> modelled;  // the jobs given as Experiments
};
// Throws InputError naming the file and line of a malformed row, an arrival or service time
// outside job_schedule.hpp's ranges, or an Experiment that does not validate; and naming the file
// when it has no header or no job. Linear in the file's size.
StrataJobTrace read_strata_job_trace(const std::string& path);

// True when the first line of the file at `path` is the header of a Pollux workload.
bool is_pollux_workload(const std::string& path);
// Throws InputError naming the file, line and column of a malformed row or an application that
// `apps` lacks. The jobs point into `apps`.
std::vector<RoundJob> read_pollux_workload(const std::string& path,
                                           const std::map<std::string, TraceApplication>& apps);

struct ImportedTrace {
  std::vector<RoundJob> jobs;  // in submission order (ties: the file's order)
  std::size_t left_out = 0;    // jobs the importer could not use (see above)
};
// True when the file at `path` starts with a Helios cluster_log header (job_id,...).
bool is_helios_log(const std::string& path);
// True when the file at `path` is JSON (its first non-blank character is '[').
bool is_philly_log(const std::string& path);
// Both throw InputError naming the file and the job (or line and column) of a malformed entry.
ImportedTrace read_philly_log(const std::string& path);
ImportedTrace read_helios_log(const std::string& path);

}  // namespace models
}  // namespace strata
