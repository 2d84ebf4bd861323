// strata jobs: a stream of training jobs on one platform's GPUs under a cluster scheduling policy
// (models/search/job_schedule.hpp; docs/search.md).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
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

// strata's job trace: CSV (no quoting; `#` starts a comment line) with one of two headers:
// - id,arrival_s,gpus,service_s: each job's GPUs and its run time alone on them;
// - id,arrival_s,model,dp,tp,pp,global_batch,iterations: each job as an Experiment (a zoo model,
//   its parallelism and global batch) run for `iterations` iterations: its GPUs are dp·tp·pp and
//   its service time `iterations` times its iteration replayed on the platform (one replay per
//   distinct model, parallelism and batch, each in its own process).
struct TraceJob {
  ClusterJob job;
  std::optional<Experiment> experiment;  // jobs given as Experiments ...
  std::int64_t iterations = 0;           // ... and their iterations
};

std::vector<TraceJob> read_job_trace(const std::string& path, const std::string& platform) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the job trace");
  const std::string given = "id,arrival_s,gpus,service_s";
  const std::string modelled = "id,arrival_s,model,dp,tp,pp,global_batch,iterations";
  std::vector<TraceJob> jobs;
  std::map<std::string, double> iteration_s;  // by model, parallelism and batch
  std::string line, header;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream split(line);
    for (std::string cell; std::getline(split, cell, ',');) cells.push_back(cell);
    const std::string at = path + ":" + std::to_string(number);
    if (header.empty()) {
      if (line != given && line != modelled)
        throw InputError(at + ": expected the header " + given + " or " + modelled);
      header = line;
      continue;
    }
    const std::size_t width = header == given ? 4 : 8;
    if (cells.size() != width)
      throw InputError(at + ": expected " + std::to_string(width) + " cells, got " +
                       std::to_string(cells.size()));
    const auto number_of = [&](const std::string& text, const char* column) {
      std::size_t used = 0;
      double v = NAN;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || text.empty() || !std::isfinite(v))
        throw InputError(at + ": " + column + ": not a number '" + text + "'");
      return v;
    };
    const auto whole_of = [&](const std::string& text, const char* column) {
      const double v = number_of(text, column);
      if (v != std::floor(v) || v < 1 || v > 1e12)
        throw InputError(at + ": " + column + ": not a whole number >= 1");
      return static_cast<std::int64_t>(v);
    };
    TraceJob traced;
    ClusterJob& j = traced.job;
    j.id = cells[0];
    if (j.id.empty()) throw InputError(at + ": id: empty");
    j.arrival_s = number_of(cells[1], "arrival_s");
    if (header == given) {
      j.gpus = static_cast<int>(std::min<std::int64_t>(whole_of(cells[2], "gpus"), 1 << 24));
      j.service_s = number_of(cells[3], "service_s");
    } else {
      nlohmann::json spec = {{"format", "strata-experiment"},
                             {"schema_version", 1},
                             {"model", {{"name", cells[2]}}},
                             {"global_batch", whole_of(cells[6], "global_batch")},
                             {"strategy",
                              {{"dp", whole_of(cells[3], "dp")},
                               {"tp", whole_of(cells[4], "tp")},
                               {"pp", whole_of(cells[5], "pp")}}}};
      const Experiment e = experiment_from_json(spec, at);
      const std::int64_t iterations = whole_of(cells[7], "iterations");
      const std::string key = canonical_json(e).dump();
      auto it = iteration_s.find(key);
      if (it == iteration_s.end()) {
        try {
          const Plan plan = lower(e);
          const ReplayOptions options;
          it = iteration_s.emplace(key, replay_report_apart(plan, platform, options).iteration_time_s).first;
        } catch (const InputError& error) {
          throw InputError(at + ": " + error.what());
        }
      }
      j.gpus = static_cast<int>(e.workers());
      j.service_s = it->second * static_cast<double>(iterations);
      traced.experiment = e;
      traced.iterations = iterations;
    }
    jobs.push_back(std::move(traced));
  }
  if (header.empty()) throw InputError(path + ": no header " + given + " or " + modelled);
  if (jobs.empty()) throw InputError(path + ": no job");
  return jobs;
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

int run_jobs(const JobsOptions& o) {
  const std::optional<JobPolicy> policy = parse_job_policy(o.policy);
  if (!policy) throw InputError("--policy: unknown '" + o.policy + "' (fifo, sjf, las, themis)");
  const std::optional<JobPlacement> placement = parse_job_placement(o.placement);
  if (!placement) throw InputError("--placement: unknown '" + o.placement + "' (most-free, pack, spread)");
  const bool pollux = is_pollux_workload(o.trace);
  if (pollux && o.platform_given)
    throw InputError(
        "--platform: a Pollux workload runs on the testbed its traces were measured on (16 nodes of 4 "
        "GPUs); give --nodes and --gpus-per-node instead");
  const std::string platform = resolve_platform(o.platform);
  if (!pollux) check_platform(platform, NetworkOptions{});
  // The jobs: a Pollux workload, a Philly or Helios log, or strata's own trace.
  std::map<std::string, TraceApplication> apps;
  std::vector<RoundJob> round_jobs;
  auto replays = std::make_shared<PlacedReplays>();
  std::vector<ClusterJob> jobs;
  std::string source = "strata";
  if (pollux) {
    apps = read_trace_applications(o.applications);
    round_jobs = read_pollux_workload(o.trace, apps);
    source = "Pollux";
  } else if (is_philly_log(o.trace) || is_helios_log(o.trace)) {
    const bool philly = is_philly_log(o.trace);
    const ImportedTrace imported = philly ? read_philly_log(o.trace) : read_helios_log(o.trace);
    round_jobs = imported.jobs;
    source = philly ? "Philly" : "Helios";
    if (imported.left_out > 0)
      std::printf("%s: %zu jobs left out (no GPU or no complete run time)\n", o.trace.c_str(),
                  imported.left_out);
  } else {
    for (const TraceJob& traced : read_job_trace(o.trace, platform)) {
      const ClusterJob& j = traced.job;
      round_jobs.push_back({j.id, j.arrival_s, j.gpus, j.service_s});
      if (traced.experiment && o.interval_s > 0)
        round_jobs.back().service_on =
            [e = *traced.experiment, text = canonical_json(*traced.experiment).dump(),
             iterations = traced.iterations, platform, replays](const std::vector<int>& counts) {
              return static_cast<double>(iterations) * replays->on(e, text, counts, platform);
            };
    }
  }
  const bool rounds = pollux || o.interval_s > 0;
  std::vector<RoundJobRecord> records;
  double average = 0, p99 = 0, makespan = 0, queueing = 0, utilisation = 0;
  int cluster_gpus = 0;
  std::string where;
  if (rounds) {
    RoundSettings settings;
    settings.policy = *policy;
    settings.placement = *placement;
    std::tie(settings.nodes, settings.gpus_per_node) = cluster_shape(o, platform, pollux);
    settings.interval_s = o.interval_s > 0 ? o.interval_s : 60;
    settings.restart_s = o.restart_s;
    settings.backfill = o.backfill;
    settings.las_thresholds_gpu_s = o.thresholds;
    settings.lease_s = o.lease_s;
    const RoundScheduleResult r = schedule_job_rounds(round_jobs, settings);
    records = r.jobs;
    average = r.average_jct_s, p99 = r.p99_jct_s, makespan = r.makespan_s, queueing = r.average_queueing_s;
    utilisation = r.gpu_utilisation;
    cluster_gpus = settings.nodes * settings.gpus_per_node;
    char text[256];
    std::snprintf(text, sizeof text,
                  "%d nodes of %d GPUs%s, rounds of %g s, restarts of %g s, %s placement%s", settings.nodes,
                  settings.gpus_per_node, pollux ? " (Pollux's testbed)" : "", settings.interval_s,
                  settings.restart_s, o.placement.c_str(), o.backfill ? ", backfill" : "");
    where = text;
    if (replays->replays() > 0) where += ", " + std::to_string(replays->replays()) + " placement replays";
  } else {
    JobSettings settings;
    settings.policy = *policy;
    settings.lease_s = o.lease_s;
    settings.las_thresholds_gpu_s = o.thresholds;
    settings.backfill = o.backfill;
    const int slots = load_platform_summary_apart(platform, NetworkOptions{}).total_slots();
    settings.cluster_gpus = o.gpus > 0 ? o.gpus : slots;
    if (settings.cluster_gpus > slots)
      throw InputError("--gpus: " + std::to_string(o.gpus) + ", the platform has " + std::to_string(slots) +
                       " worker slots");
    for (const RoundJob& j : round_jobs) jobs.push_back({j.id, j.arrival_s, j.gpus, j.service_s});
    const JobScheduleResult r = schedule_jobs(jobs, settings);
    for (const JobRecord& j : r.jobs) {
      records.emplace_back();
      static_cast<JobRecord&>(records.back()) = j;
    }
    average = r.average_jct_s, p99 = r.p99_jct_s, makespan = r.makespan_s, queueing = r.average_queueing_s;
    utilisation = r.gpu_utilisation;
    cluster_gpus = settings.cluster_gpus;
    where = std::to_string(cluster_gpus) + " GPUs of " + std::filesystem::path(platform).filename().string() +
            (o.backfill ? ", backfill" : "");
  }
  std::printf("jobs %s: %zu jobs (%s trace) on %s\n", o.policy.c_str(), records.size(), source.c_str(),
              where.c_str());
  std::printf("%-16s %12s %5s %12s %12s %12s %12s %11s %8s\n", "job", "arrival (s)", "GPUs", "service (s)",
              "start (s)", "finish (s)", "JCT (s)", "preemptions", "restarts");
  std::vector<nlohmann::json> rows;
  for (const RoundJobRecord& j : records) {
    std::printf("%-16s %12.1f %5d %12.1f %12.1f %12.1f %12.1f %11d %8d\n", j.id.c_str(), j.arrival_s, j.gpus,
                j.service_s, j.start_s, j.finish_s, j.jct_s(), j.preemptions, j.restarts);
    rows.push_back({{"job", j.id},
                    {"arrival_s", j.arrival_s},
                    {"gpus", j.gpus},
                    {"service_s", j.service_s},
                    {"start_s", j.start_s},
                    {"finish_s", j.finish_s},
                    {"jct_s", j.jct_s()},
                    {"queueing_s", j.queueing_s()},
                    {"preemptions", j.preemptions},
                    {"restarts", j.restarts}});
  }
  std::printf(
      "average JCT %.2f s, p99 JCT %.1f s, makespan %.1f s, average queueing delay %.1f s, GPU utilisation "
      "%.1f %%\n",
      average, p99, makespan, queueing, 100 * utilisation);
  write_table_files(rows,
                    {"job", "arrival_s", "gpus", "service_s", "start_s", "finish_s", "jct_s", "queueing_s",
                     "preemptions", "restarts"},
                    o.csv, o.json,
                    {{"format", "strata-jobs"},
                     {"schema_version", 1},
                     {"policy", o.policy},
                     {"trace", source},
                     {"cluster_gpus", cluster_gpus},
                     {"average_jct_s", average},
                     {"p99_jct_s", p99},
                     {"makespan_s", makespan},
                     {"average_queueing_s", queueing},
                     {"gpu_utilisation", utilisation}},
                    "jobs");
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
  cmd->add_option("--lease", o->lease_s, "themis: seconds between allocation rounds")
      ->transform(real_number(1e-6, 1e9))
      ->capture_default_str();
  cmd->add_option("--las-thresholds", o->thresholds, "las: queue limits in GPU-seconds, rising")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--interval", o->interval_s,
                  "schedule in rounds of this many seconds with placement on nodes (a Pollux workload: 60)")
      ->transform(real_number(1e-3, 1e9));
  cmd->add_option("--restart", o->restart_s, "rounds: seconds a job pays at every (re)start")
      ->transform(real_number(0, 1e9))
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
