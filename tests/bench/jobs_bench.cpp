// strata_bench_jobs: the job scheduling engine (models/search/job_schedule.hpp) per policy at
// 10^4, 10^5 and 10^6 jobs, as cost per job, with and without backfill; beside it, in the same
// run, strata's engine before it kept the jobs present in ordered structures (the reference of
// tests/models/job_schedule_reference.hpp, which sorts every job present at every event) at 10^4
// jobs, and reading a 10^6-job trace. The stream: jobs 60 s apart (exponential), of 1, 2, 4 or 8
// GPUs, services from 100 s to 100 min (log-uniform, mean 1,441 s), on 64 GPUs (strata jobs'
// default platform): an offered load of 3.75 × 1,441 / 60 / 64 = 141 %, so the jobs waiting grow
// with the stream, which made the engine quadratic (200,000 jobs: more than a minute).
// Measured on the 2-core development machine (2026-12-07, about one core of other work): 10^6 jobs
// in 1.08 s (fifo; 1.09 with backfill), 1.90 s (sjf; 1.73), 2.08 s (las, one threshold at 3,200
// GPU-s; 2.00), 9.92 s (themis; 13.5): 1.1 to 13.5 µs a job, 1.1x to 2.1x the cost per job at
// 10^4; at 10^4 jobs the engine before took 89x (fifo), 43x (sjf), 194x (las) and 40x (themis)
// as long. Reading the 10^6-job trace: 0.63 s. strata jobs on it, reading and printing
// included: 4-6 s (fifo, sjf, las), 12-13 s (themis).
// Goal: strata jobs on a 10^6-job trace within 60 s for every policy.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../models/job_schedule_reference.hpp"
#include "bench_main.hpp"
#include "bench_timing.hpp"
#include "strata/models/search/job_schedule.hpp"
#include "strata/models/search/job_traces.hpp"
#include "strata/traces/random_draws.hpp"

namespace strata::bench {
namespace {

constexpr int kClusterGpus = 64;
const std::vector<JobPolicy> kPolicies = {JobPolicy::fifo, JobPolicy::sjf, JobPolicy::las, JobPolicy::themis};

std::vector<ClusterJob> job_stream(int n) {
  std::mt19937_64 rng(11);
  std::vector<ClusterJob> jobs;
  jobs.reserve(static_cast<std::size_t>(n));
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += -60 * std::log(1 - unit_draw(rng));
    const int gpus = 1 << static_cast<int>(unit_draw(rng) * 4);
    jobs.push_back({"j" + std::to_string(i), t, gpus, 100 * std::pow(60.0, unit_draw(rng))});
  }
  return jobs;
}

const std::vector<ClusterJob>& stream_of(int n) {
  static std::map<int, std::vector<ClusterJob>> streams;
  auto it = streams.find(n);
  if (it == streams.end()) it = streams.emplace(n, job_stream(n)).first;
  return it->second;
}

std::string name_of(JobPolicy policy, bool backfill, int n, bool reference = false) {
  return std::string(reference ? "before/" : "") + std::string(to_string(policy)) +
         (backfill ? "+backfill/" : "/") + std::to_string(n);
}

// One schedule of the stream (the reference's with `reference`), timed alone.
void bm_schedule(benchmark::State& state, JobPolicy policy, bool backfill, bool reference) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<ClusterJob>& jobs = stream_of(n);
  JobSettings settings;
  settings.policy = policy;
  settings.cluster_gpus = kClusterGpus;
  settings.backfill = backfill;
  for (auto _ : state) {
    Stopwatch clock;
    double last = 0;
    if (reference) {
      int stalls = 0;
      last = test::reference_schedule(jobs, settings, &stalls).back().finish_s;
    } else {
      last = schedule_jobs(jobs, settings).jobs.back().finish_s;
    }
    benchmark::DoNotOptimize(last);
    const double wall = clock.wall_seconds();
    state.SetIterationTime(wall);
    record(name_of(policy, backfill, n, reference), wall, clock.cpu_seconds());
  }
  state.counters["us_per_job"] = best(name_of(policy, backfill, n, reference)) / n * 1e6;
}

// Reading the stream as strata's CSV trace (id,arrival_s,gpus,service_s).
void bm_read(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto path =
      std::filesystem::temp_directory_path() / ("strata-bench-jobs-" + std::to_string(::getpid()));
  {
    std::ofstream out(path);
    out << "id,arrival_s,gpus,service_s\n";
    char line[96];
    for (const ClusterJob& j : stream_of(n)) {
      std::snprintf(line, sizeof line, "%s,%.3f,%d,%.3f\n", j.id.c_str(), j.arrival_s, j.gpus, j.service_s);
      out << line;
    }
  }
  for (auto _ : state) {
    Stopwatch clock;
    const StrataJobTrace trace = read_strata_job_trace(path.string());
    benchmark::DoNotOptimize(trace.jobs.size());
    const double wall = clock.wall_seconds();
    state.SetIterationTime(wall);
    record("read/" + std::to_string(n), wall, clock.cpu_seconds());
  }
  std::filesystem::remove(path);
}

void print_summary() {
  std::cout
      << "\n=== strata_bench_jobs summary (64 GPUs, 141 % offered load; fastest pass; µs per job, wall and "
         "CPU)\n";
  double slowest = 0;
  for (JobPolicy p : kPolicies) {
    for (bool backfill : {false, true}) {
      const auto per_job = [&](int n) { return best(name_of(p, backfill, n)) / n * 1e6; };
      const auto cpu_per_job = [&](int n) { return best_cpu(name_of(p, backfill, n)) / n * 1e6; };
      const std::string label = std::string(to_string(p)) + (backfill ? "+backfill" : "");
      std::cout << "  " << label << ": 10^4 jobs " << fixed(per_job(10000), 2) << " µs/job, 10^5 "
                << fixed(per_job(100000), 2) << ", 10^6 " << fixed(per_job(1000000), 2) << " (CPU "
                << fixed(cpu_per_job(1000000), 2) << "; 10^6 jobs in "
                << fixed(best(name_of(p, backfill, 1000000)), 2) << " s); jobs_" << label
                << "_per_job_10^6_over_10^4 = " << fixed(per_job(1000000) / per_job(10000), 2);
      slowest = std::max(slowest, best(name_of(p, backfill, 1000000)));
      if (!backfill)
        std::cout << ", jobs_" << label << "_before_over_now_10^4 = "
                  << fixed(best(name_of(p, false, 10000, true)) / best(name_of(p, false, 10000)), 1);
      std::cout << "\n";
    }
  }
  std::cout << "  reading a 10^6-job trace: " << fixed(best("read/1000000"), 2) << " s ("
            << fixed(best("read/1000000"), 2) << " µs/job)\n";
  std::cout << "  slowest 10^6-job schedule " << fixed(slowest, 2)
            << " s (goal for strata jobs, reading and printing included: <= 60 s)\n";
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  return run_benchmark_program(argc, argv, "strata_bench_jobs", [] {
    for (strata::JobPolicy p : kPolicies) {
      benchmark::RegisterBenchmark(("before/" + std::string(strata::to_string(p))).c_str(), bm_schedule, p,
                                   false, true)
          ->Arg(10000)
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
      for (bool backfill : {false, true})
        benchmark::RegisterBenchmark(
            ("jobs/" + std::string(strata::to_string(p)) + (backfill ? "+backfill" : "")).c_str(),
            bm_schedule, p, backfill, false)
            ->Arg(10000)
            ->Arg(100000)
            ->Arg(1000000)
            ->Iterations(1)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark("jobs/read-trace", bm_read)
        ->Arg(1000000)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RunSpecifiedBenchmarks();
    print_summary();
  });
}
