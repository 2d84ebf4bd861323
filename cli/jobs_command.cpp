// strata jobs: a stream of training jobs on one platform's GPUs under a cluster scheduling policy
// (models/search/job_schedule.hpp; docs/search.md).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/search/job_schedule.hpp"
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
};

// strata's job trace: CSV (no quoting; `#` starts a comment line) with one of two headers:
// - id,arrival_s,gpus,service_s: each job's GPUs and its run time alone on them;
// - id,arrival_s,model,dp,tp,pp,global_batch,iterations: each job as an Experiment (a zoo model,
//   its parallelism and global batch) run for `iterations` iterations: its GPUs are dp·tp·pp and
//   its service time `iterations` times its iteration replayed on the platform (one replay per
//   distinct model, parallelism and batch, each in its own process).
std::vector<ClusterJob> read_job_trace(const std::string& path, const std::string& platform) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the job trace");
  const std::string given = "id,arrival_s,gpus,service_s";
  const std::string modelled = "id,arrival_s,model,dp,tp,pp,global_batch,iterations";
  std::vector<ClusterJob> jobs;
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
    ClusterJob j;
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
    }
    jobs.push_back(std::move(j));
  }
  if (header.empty()) throw InputError(path + ": no header " + given + " or " + modelled);
  if (jobs.empty()) throw InputError(path + ": no job");
  return jobs;
}

int run_jobs(const JobsOptions& o) {
  const std::optional<JobPolicy> policy = parse_job_policy(o.policy);
  if (!policy) throw InputError("--policy: unknown '" + o.policy + "' (fifo, sjf, las, themis)");
  JobSettings settings;
  settings.policy = *policy;
  settings.lease_s = o.lease_s;
  settings.las_thresholds_gpu_s = o.thresholds;
  const std::string platform = resolve_platform(o.platform);
  const NetworkOptions network;
  check_platform(platform, network);
  const std::vector<ClusterJob> jobs = read_job_trace(o.trace, platform);
  const int slots = load_platform_summary_apart(platform, network).total_slots();
  settings.cluster_gpus = o.gpus > 0 ? o.gpus : slots;
  if (settings.cluster_gpus > slots)
    throw InputError("--gpus: " + std::to_string(o.gpus) + ", the platform has " + std::to_string(slots) +
                     " worker slots");
  const JobScheduleResult r = schedule_jobs(jobs, settings);
  std::printf("jobs %s: %zu jobs on %d GPUs of %s\n", o.policy.c_str(), jobs.size(), settings.cluster_gpus,
              std::filesystem::path(platform).filename().c_str());
  std::printf("%-16s %12s %5s %12s %12s %12s %12s %11s\n", "job", "arrival (s)", "GPUs", "service (s)",
              "start (s)", "finish (s)", "JCT (s)", "preemptions");
  std::vector<nlohmann::json> rows;
  for (const JobRecord& j : r.jobs) {
    std::printf("%-16s %12.1f %5d %12.1f %12.1f %12.1f %12.1f %11d\n", j.id.c_str(), j.arrival_s, j.gpus,
                j.service_s, j.start_s, j.finish_s, j.jct_s(), j.preemptions);
    rows.push_back({{"job", j.id},
                    {"arrival_s", j.arrival_s},
                    {"gpus", j.gpus},
                    {"service_s", j.service_s},
                    {"start_s", j.start_s},
                    {"finish_s", j.finish_s},
                    {"jct_s", j.jct_s()},
                    {"queueing_s", j.queueing_s()},
                    {"preemptions", j.preemptions}});
  }
  std::printf(
      "average JCT %.1f s, p99 JCT %.1f s, makespan %.1f s, average queueing delay %.1f s, GPU utilisation "
      "%.1f %%\n",
      r.average_jct_s, r.p99_jct_s, r.makespan_s, r.average_queueing_s, 100 * r.gpu_utilisation);
  write_table_files(
      rows,
      {"job", "arrival_s", "gpus", "service_s", "start_s", "finish_s", "jct_s", "queueing_s", "preemptions"},
      o.csv, o.json,
      {{"format", "strata-jobs"},
       {"schema_version", 1},
       {"policy", o.policy},
       {"cluster_gpus", settings.cluster_gpus},
       {"average_jct_s", r.average_jct_s},
       {"p99_jct_s", r.p99_jct_s},
       {"makespan_s", r.makespan_s},
       {"average_queueing_s", r.average_queueing_s},
       {"gpu_utilisation", r.gpu_utilisation}},
      "jobs");
  return 0;
}

}  // namespace

void add_jobs_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("jobs", "a stream of training jobs on one cluster under a scheduling policy");
  auto o = std::make_shared<JobsOptions>();
  add_input_option(*cmd, "--trace", o->trace,
                   "the job trace (CSV: id,arrival_s,gpus,service_s or "
                   "id,arrival_s,model,dp,tp,pp,global_batch,iterations)")
      ->required();
  cmd->add_option("--policy", o->policy, "fifo, sjf, las (Tiresias) or themis")
      ->check(CLI::IsMember({"fifo", "sjf", "las", "themis"}))
      ->capture_default_str();
  add_input_option(*cmd, "--platform", o->platform, "SimGrid platform XML whose worker slots are the GPUs")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "GPUs of the platform the jobs share (default: every worker slot)")
      ->transform(whole_number(1, 1 << 24));
  cmd->add_option("--lease", o->lease_s, "themis: seconds between allocation rounds")
      ->transform(real_number(1e-6, 1e9))
      ->capture_default_str();
  cmd->add_option("--las-thresholds", o->thresholds, "las: queue limits in GPU-seconds, rising")
      ->delimiter(',')
      ->capture_default_str();
  add_output_option(*cmd, "--csv", o->csv, "write the jobs as CSV (default: none)");
  add_output_option(*cmd, "--json", o->json, "write the jobs and the summary as JSON (default: none)");
  cmd->callback([&action, o] { action = [o] { return run_jobs(*o); }; });
}

}  // namespace strata::cli
