// strata jobs: a stream of training jobs on one platform's GPUs under a cluster scheduling policy
// (models/search/job_schedule.hpp; docs/search.md).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/search/job_rounds.hpp"
#include "strata/models/search/job_schedule.hpp"
#include "strata/models/search/job_traces.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {
namespace {

struct JobsOptions {
  std::string trace;
  std::string policy = "fifo";
  std::string platform = "platforms/a100-cluster-64.xml";
  int gpus = 0;
  double lease_s = 60;
  std::vector<double> thresholds{3200};
  std::string csv, json;
  // Rounds with placement (job_rounds.hpp): a Pollux workload always, any trace with --interval.
  std::string applications = std::string(STRATA_VALIDATION_DIR) + "/pollux/applications.json";
  int nodes = 0, gpus_per_node = 0;
  double interval_s = 0, restart_s = 30;
  std::string placement = "most-free";
  bool backfill = false;
  bool platform_given = false;
};

// The service times of the jobs of strata's trace given as Experiments: `iterations` times the
// iteration replayed on the platform, one replay per distinct model, parallelism and batch (each
// in its own process).
void time_experiments(StrataJobTrace& trace, const std::string& platform) {
  std::map<std::string, double> iteration_s;  // by canonical Experiment
  for (const StrataJobTrace::Modelled& m : trace.modelled) {
    const std::string key = canonical_json(m.experiment).dump();
    auto it = iteration_s.find(key);
    if (it == iteration_s.end()) {
      try {
        const Plan plan = lower(m.experiment);
        const ReplayOptions options;
        it = iteration_s.emplace(key, replay_report_apart(plan, platform, options).iteration_time_s).first;
      } catch (const InputError& error) {
        throw InputError(m.at + ": " + error.what());
      }
    }
    double& service = trace.jobs[m.job].service_s;
    service = it->second * static_cast<double>(m.iterations);
    require_in_range(
        m.at,
        "service_s (" + std::to_string(m.iterations) + " iterations of " + format_number(it->second) + " s)",
        service, kMinServiceS, kMaxJobTimeS, "s");
  }
}

// The cluster of a rounds schedule: --nodes × --gpus-per-node, else the platform's hosts (all
// holding the same number of worker slots).
std::pair<int, int> cluster_shape(const JobsOptions& o, const std::string& platform, bool pollux) {
  if (pollux) return {o.nodes > 0 ? o.nodes : 16, o.gpus_per_node > 0 ? o.gpus_per_node : 4};
  const PlatformSummary summary = load_platform_summary_apart(platform, NetworkOptions{});
  int per_node = 0;
  for (const HostSpec& h : summary.hosts) {
    if (per_node != 0 && h.slots != per_node && o.gpus_per_node == 0)
      throw InputError(platform + ": hosts hold different numbers of worker slots (" +
                       std::to_string(per_node) + ", " + std::to_string(h.slots) +
                       "); give --nodes and --gpus-per-node");
    per_node = h.slots;
  }
  return {o.nodes > 0 ? o.nodes : static_cast<int>(summary.hosts.size()),
          o.gpus_per_node > 0 ? o.gpus_per_node : per_node};
}

// The iteration time of an Experiment on a placement (GPUs per node, in the order the nodes were
// taken), replayed with its workers on the platform's first hosts in that shape (hosts alike and a
// symmetric network assumed: the shape, not which nodes, decides), one replay per Experiment and
// shape, each in its own process.
class PlacedReplays {
 public:
  // `text`: canonical_json(e).dump(), made once per job (this is asked every round).
  double on(const Experiment& e, const std::string& text, const std::vector<int>& counts,
            const std::string& platform) {
    std::string key = text + "@";
    for (int c : counts) key += std::to_string(c) + ",";
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (!summary_) summary_ = load_platform_summary_apart(platform, NetworkOptions{});
    ReplayOptions options;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      STRATA_ASSERT(k < summary_->hosts.size(), "jobs: a placement past the platform's hosts");
      options.placement.insert(options.placement.end(), static_cast<std::size_t>(counts[k]),
                               summary_->hosts[k].name);
    }
    const double t = replay_report_apart(lower(e), platform, options).iteration_time_s;
    ++replays_;
    return cache_.emplace(key, t).first->second;
  }
  int replays() const { return replays_; }

 private:
  std::optional<PlatformSummary> summary_;
  std::map<std::string, double> cache_;
  int replays_ = 0;
};

// A stream's jobs as read, for either engine: rounds take RoundJobs (a Pollux or imported trace
// always, strata's with --interval), events ClusterJobs.
struct LoadedJobs {
  std::vector<RoundJob> round_jobs;
  std::vector<ClusterJob> jobs;
  std::string source = "strata";
};

LoadedJobs load_jobs(const JobsOptions& o, const std::string& platform, bool pollux, bool rounds,
                     const std::shared_ptr<PlacedReplays>& replays,
                     std::map<std::string, TraceApplication>& apps) {
  LoadedJobs loaded;
  if (pollux) {
    apps = read_trace_applications(o.applications);
    loaded.round_jobs = read_pollux_workload(o.trace, apps);
    loaded.source = "Pollux";
  } else if (is_philly_log(o.trace) || is_helios_log(o.trace)) {
    const bool philly = is_philly_log(o.trace);
    ImportedTrace imported = philly ? read_philly_log(o.trace) : read_helios_log(o.trace);
    loaded.round_jobs = std::move(imported.jobs);
    loaded.source = philly ? "Philly" : "Helios";
    if (imported.left_out > 0)
      std::printf("%s: %zu jobs left out (no GPU or no complete run time)\n", o.trace.c_str(),
                  imported.left_out);
  } else {
    StrataJobTrace trace = read_strata_job_trace(o.trace);
    time_experiments(trace, platform);
    if (!rounds) {
      loaded.jobs = std::move(trace.jobs);
      return loaded;
    }
    for (const ClusterJob& j : trace.jobs)
      loaded.round_jobs.push_back({j.id, j.arrival_s, j.gpus, j.service_s});
    for (const StrataJobTrace::Modelled& m : trace.modelled)
      loaded.round_jobs[m.job].service_on = [e = m.experiment, text = canonical_json(m.experiment).dump(),
                                             iterations = m.iterations, platform,
                                             replays](const std::vector<int>& counts) {
        return static_cast<double>(iterations) * replays->on(e, text, counts, platform);
      };
  }
  if (!rounds)
    for (const RoundJob& j : loaded.round_jobs)
      loaded.jobs.push_back({j.id, j.arrival_s, j.gpus, j.service_s});
  return loaded;
}

// The scheduled stream, as either engine gives it.
struct ScheduledJobs {
  std::vector<RoundJobRecord> records;
  JobStreamFigures figures;
  int cluster_gpus = 0;
  std::string where;  // the cluster and settings, for the title line
};

ScheduledJobs in_rounds(const JobsOptions& o, JobPolicy policy, JobPlacement placement,
                        const std::string& platform, bool pollux, const LoadedJobs& loaded,
                        const PlacedReplays& replays) {
  RoundSettings settings;
  settings.policy = policy;
  settings.placement = placement;
  std::tie(settings.nodes, settings.gpus_per_node) = cluster_shape(o, platform, pollux);
  settings.interval_s = o.interval_s > 0 ? o.interval_s : 60;
  settings.restart_s = o.restart_s;
  settings.backfill = o.backfill;
  settings.las_thresholds_gpu_s = o.thresholds;
  settings.lease_s = o.lease_s;
  RoundScheduleResult r = schedule_job_rounds(loaded.round_jobs, settings);
  ScheduledJobs out;
  out.records = std::move(r.jobs);
  out.figures = r;
  out.cluster_gpus = settings.nodes * settings.gpus_per_node;
  char text[256];
  std::snprintf(text, sizeof text, "%d nodes of %d GPUs%s, rounds of %g s, restarts of %g s, %s placement%s",
                settings.nodes, settings.gpus_per_node, pollux ? " (Pollux's testbed)" : "",
                settings.interval_s, settings.restart_s, o.placement.c_str(), o.backfill ? ", backfill" : "");
  out.where = text;
  if (replays.replays() > 0) out.where += ", " + std::to_string(replays.replays()) + " placement replays";
  return out;
}

ScheduledJobs by_events(const JobsOptions& o, JobPolicy policy, const std::string& platform,
                        const LoadedJobs& loaded) {
  JobSettings settings;
  settings.policy = policy;
  settings.lease_s = o.lease_s;
  settings.las_thresholds_gpu_s = o.thresholds;
  settings.backfill = o.backfill;
  const int slots = load_platform_summary_apart(platform, NetworkOptions{}).total_slots();
  settings.cluster_gpus = o.gpus > 0 ? o.gpus : slots;
  if (settings.cluster_gpus > slots)
    throw InputError("--gpus: " + std::to_string(o.gpus) + ", the platform has " + std::to_string(slots) +
                     " worker slots");
  JobScheduleResult r = schedule_jobs(loaded.jobs, settings);
  ScheduledJobs out;
  out.records.reserve(r.jobs.size());
  for (JobRecord& j : r.jobs) static_cast<JobRecord&>(out.records.emplace_back()) = std::move(j);
  out.figures = r;
  out.cluster_gpus = settings.cluster_gpus;
  out.where = std::to_string(settings.cluster_gpus) + " GPUs of " +
              std::filesystem::path(platform).filename().string() + (o.backfill ? ", backfill" : "");
  return out;
}

// The table on stdout, and the --csv and --json files (streamed: 10^6 rows as JSON values would
// take a gigabyte).
void report(const JobsOptions& o, const ScheduledJobs& s, const std::string& source) {
  std::printf("jobs %s: %zu jobs (%s trace) on %s\n", o.policy.c_str(), s.records.size(), source.c_str(),
              s.where.c_str());
  std::printf("%-16s %12s %5s %12s %12s %12s %12s %11s %8s\n", "job", "arrival (s)", "GPUs", "service (s)",
              "start (s)", "finish (s)", "JCT (s)", "preemptions", "restarts");
  for (const RoundJobRecord& j : s.records)
    std::printf("%-16s %12.1f %5d %12.1f %12.1f %12.1f %12.1f %11d %8d\n", j.id.c_str(), j.arrival_s, j.gpus,
                j.service_s, j.start_s, j.finish_s, j.jct_s(), j.preemptions, j.restarts);
  const JobStreamFigures& f = s.figures;
  std::printf(
      "average JCT %.2f s, p99 JCT %.1f s, makespan %.1f s, average queueing delay %.1f s, GPU utilisation "
      "%.1f %%\n",
      f.average_jct_s, f.p99_jct_s, f.makespan_s, f.average_queueing_s, 100 * f.gpu_utilisation);
  const auto row = [&](std::size_t i) {
    const RoundJobRecord& j = s.records[i];
    return nlohmann::json{{"job", j.id},
                          {"arrival_s", j.arrival_s},
                          {"gpus", j.gpus},
                          {"service_s", j.service_s},
                          {"start_s", j.start_s},
                          {"finish_s", j.finish_s},
                          {"jct_s", j.jct_s()},
                          {"queueing_s", j.queueing_s()},
                          {"preemptions", j.preemptions},
                          {"restarts", j.restarts}};
  };
  write_table_files(s.records.size(), row,
                    {"job", "arrival_s", "gpus", "service_s", "start_s", "finish_s", "jct_s", "queueing_s",
                     "preemptions", "restarts"},
                    o.csv, o.json,
                    {{"format", "strata-jobs"},
                     {"schema_version", 1},
                     {"policy", o.policy},
                     {"trace", source},
                     {"cluster_gpus", s.cluster_gpus},
                     {"average_jct_s", f.average_jct_s},
                     {"p99_jct_s", f.p99_jct_s},
                     {"makespan_s", f.makespan_s},
                     {"average_queueing_s", f.average_queueing_s},
                     {"gpu_utilisation", f.gpu_utilisation}},
                    "jobs");
}

int run_jobs(const JobsOptions& o) {
  const std::optional<JobPolicy> policy = parse_job_policy(o.policy);
  if (!policy) throw InputError("--policy: unknown '" + o.policy + "' (fifo, sjf, las, themis)");
  if (o.thresholds.size() > kMaxLasThresholds)
    throw InputError("--las-thresholds: " + std::to_string(o.thresholds.size()) + " thresholds, at most " +
                     std::to_string(kMaxLasThresholds));
  const std::optional<JobPlacement> placement = parse_job_placement(o.placement);
  if (!placement) throw InputError("--placement: unknown '" + o.placement + "' (most-free, pack, spread)");
  const bool pollux = is_pollux_workload(o.trace);
  if (pollux && o.platform_given)
    throw InputError(
        "--platform: a Pollux workload runs on the testbed its traces were measured on (16 nodes of 4 "
        "GPUs); give --nodes and --gpus-per-node instead");
  const std::string platform = resolve_platform(o.platform);
  if (!pollux) check_platform(platform, NetworkOptions{});
  const bool rounds = pollux || o.interval_s > 0;
  std::map<std::string, TraceApplication> apps;  // a Pollux workload's jobs point into it
  auto replays = std::make_shared<PlacedReplays>();
  const LoadedJobs loaded = load_jobs(o, platform, pollux, rounds, replays, apps);
  const ScheduledJobs scheduled = rounds
                                      ? in_rounds(o, *policy, *placement, platform, pollux, loaded, *replays)
                                      : by_events(o, *policy, platform, loaded);
  report(o, scheduled, loaded.source);
  return 0;
}

}  // namespace

void add_jobs_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("jobs", "a stream of training jobs on one cluster under a scheduling policy");
  auto o = std::make_shared<JobsOptions>();
  add_input_option(*cmd, "--trace", o->trace,
                   "the job trace: strata's CSV (id,arrival_s,gpus,service_s or "
                   "id,arrival_s,model,dp,tp,pp,global_batch,iterations), a Pollux workload, Philly's "
                   "cluster_job_log or Helios's cluster_log.csv")
      ->required();
  cmd->add_option("--policy", o->policy, "fifo, sjf, las (Tiresias) or themis")
      ->check(CLI::IsMember({"fifo", "sjf", "las", "themis"}))
      ->capture_default_str();
  add_input_option(*cmd, "--platform", o->platform, "SimGrid platform XML whose worker slots are the GPUs")
      ->capture_default_str()
      ->each([o](const std::string&) { o->platform_given = true; });
  cmd->add_option("--gpus", o->gpus, "GPUs of the platform the jobs share (default: every worker slot)")
      ->transform(whole_number(1, 1 << 24));
  // The ranges of job_schedule.hpp, which keep the engines' arithmetic exact enough to end.
  cmd->add_option("--lease", o->lease_s, "themis: seconds between allocation rounds")
      ->transform(real_number(kMinLeaseS, kMaxJobTimeS))
      ->capture_default_str();
  cmd->add_option("--las-thresholds", o->thresholds, "las: queue limits in GPU-seconds, rising")
      ->delimiter(',')
      ->transform(real_number(0, kMaxThresholdGpuS))
      ->capture_default_str();
  cmd->add_option("--interval", o->interval_s,
                  "schedule in rounds of this many seconds with placement on nodes (a Pollux workload: 60)")
      ->transform(real_number(kMinLeaseS, kMaxJobTimeS));
  cmd->add_option("--restart", o->restart_s, "rounds: seconds a job pays at every (re)start")
      ->transform(real_number(0, kMaxJobTimeS))
      ->capture_default_str();
  cmd->add_option("--placement", o->placement, "rounds: most-free, pack or spread")
      ->check(CLI::IsMember({"most-free", "pack", "spread"}))
      ->capture_default_str();
  cmd->add_option("--nodes", o->nodes, "rounds: nodes (default: the platform's hosts; Pollux: 16)")
      ->transform(whole_number(1, 1 << 16));
  cmd->add_option("--gpus-per-node", o->gpus_per_node,
                  "rounds: GPUs per node (default: the hosts'; Pollux: 4)")
      ->transform(whole_number(1, 1 << 10));
  cmd->add_flag("--backfill", o->backfill, "a job that does not fit is skipped, not waited for");
  add_input_option(*cmd, "--applications", o->applications,
                   "Pollux workloads: the measured applications (strata-pollux-applications JSON)")
      ->capture_default_str();
  add_output_option(*cmd, "--csv", o->csv, "write the jobs as CSV (default: none)");
  add_output_option(*cmd, "--json", o->json, "write the jobs and the summary as JSON (default: none)");
  cmd->callback([&action, o] { action = [o] { return run_jobs(*o); }; });
}

}  // namespace strata::cli
