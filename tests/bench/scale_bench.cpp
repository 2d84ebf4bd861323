// strata_bench_scale: replays at 16,384 and 65,536 GPUs against the 1,024-GPU anchor run of the
// same binary, and the symmetry reduction against the full replay (docs/simulator.md).
//
// Each run is `strata simulate`'s path: replay_experiment (lowering, the symmetry choice, the
// replay and the report), in a child process of its own, timed there (wall and CPU), with the
// child's peak resident memory. Runs:
// - anchor/N: the README's anchor workload (anchor-96, dp=N, bf16, one bucket per layer,
//   hierarchical allreduce, aggregated collectives) on platforms/anchor-1024.xml widened by its
//   radical to N / 8 nodes: 1,024 (the shipped file), 16,384 and 65,536 GPUs;
// - gpt3/16384: GPT-3 175B, dp=128 tp=8 pp=16, global batch 1,536 (the GPT-3 paper's), 12
//   microbatches of 1, on platforms/h100-16384.xml;
// - exact/...: the same experiment with --symmetry auto and off: the anchor at 1,024 and 4,096
//   GPUs and GPT-3 175B dp=8 tp=8 pp=16 on 1,024 H100s; iteration time, exposed communication
//   and the bytes per link class must agree within 0.1 %.
// Goals (issue "Scale"): anchor 16,384 <= 60 s and <= 8 GB, 65,536 <= 300 s, GPT-3 16,384 <= 60 s,
// the 1,024-GPU anchor <= 1.3 s, cost per task at 16,384 <= 2x that at 1,024.
#include <sys/resource.h>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "bench_common.hpp"
#include "strata/models/experiment.hpp"
#include "strata/sim/replay.hpp"

namespace strata::bench {
namespace {

struct Run {
  std::string platform;
  int gpus = 0;
  std::size_t tasks = 0;        // replayed
  std::size_t whole_tasks = 0;  // of the whole Plan, about: tasks x dp / replicas replayed
  double rss_mb = 0;
  nlohmann::json report;
};

std::map<std::string, Run>& runs() {
  static std::map<std::string, Run> r;
  return r;
}

std::string widened_anchor(int gpus) {
  if (gpus == 1024) return platforms_dir() + "anchor-1024.xml";
  std::ifstream in(platforms_dir() + "anchor-1024.xml");
  std::stringstream text;
  text << in.rdbuf();
  std::string xml = text.str();
  const std::string from = "radical=\"0-127\"";
  xml.replace(xml.find(from), from.size(), "radical=\"0-" + std::to_string(gpus / 8 - 1) + "\"");
  return write_temp("anchor-" + std::to_string(gpus) + ".xml", xml);
}

Experiment anchor(int gpus) {
  Experiment e;
  e.model = "anchor-96";
  e.dp = gpus;
  e.dtype = DType::bf16;
  e.bucket_mb = 0;
  e.dp_algo = CollectiveAlgo::hierarchical;
  return e;
}

Experiment gpt3(int dp) {
  Experiment e;
  e.model = "gpt3-175b";
  e.dp = dp, e.tp = 8, e.pp = 16;
  e.global_batch = 12 * dp;
  e.microbatches = 12;
  return e;
}

void bm_run(benchmark::State& state, const std::string& key, const Experiment& e, const std::string& platform,
            SymmetryMode symmetry) {
  Run& r = runs()[key];
  r.platform = platform;
  r.gpus = e.workers();
  const std::string text = run_timed(state, key, [&] {
    ReplayOptions options;
    options.collectives = CollectiveMode::aggregated;
    options.keep_trace = false;
    options.symmetry = symmetry;
    const Stopwatch watch;
    const ReplayResult replayed = replay_experiment(e, platform, options);
    const std::string times = watch.text();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return times + " " + std::to_string(usage.ru_maxrss) + " " + report_to_json(replayed.report).dump();
  });
  std::istringstream in(text);
  double rss_kb = 0;
  in >> rss_kb;
  std::string json;
  std::getline(in >> std::ws, json, '\0');
  r.rss_mb = rss_kb / 1024;
  r.report = nlohmann::json::parse(json);
  r.tasks = r.report.at("tasks").get<std::size_t>();
  const std::string symmetry_line = r.report.value("symmetry", "");
  r.whole_tasks = r.tasks;
  if (const auto of = symmetry_line.find(" of ");
      of != std::string::npos && symmetry_line.rfind("none", 0) != 0)
    r.whole_tasks = r.tasks * static_cast<std::size_t>(e.dp) / std::stoul(symmetry_line.substr(0, of));
  state.counters["tasks"] = static_cast<double>(r.tasks);
  state.counters["rss_mb"] = r.rss_mb;
}

std::string verdict(bool met) { return met ? "met" : "MISSED"; }

void print_run(const std::string& key, double goal_s) {
  const auto it = runs().find(key);
  if (it == runs().end()) return;
  const Run& r = it->second;
  std::cout << key << " on " << r.platform.substr(r.platform.rfind('/') + 1) << ": " << r.gpus << " GPUs, "
            << r.tasks << " tasks replayed of about " << r.whole_tasks << " (x dp / replicas replayed), wall "
            << fixed(best(key), 3) << " s (CPU " << fixed(best_cpu(key), 3) << " s), peak memory "
            << fixed(r.rss_mb, 0) << " MB, iteration "
            << fixed(r.report.at("iteration_time_s").get<double>() * 1e3, 3) << " ms";
  if (goal_s > 0)
    std::cout << " (goal <= " << fixed(goal_s, 1) << " s: " << verdict(best(key) <= goal_s) << ")";
  std::cout << "\n  symmetry: " << r.report.value("symmetry", "(none)") << '\n';
}

void print_exactness(const std::string& name) {
  const auto a = runs().find("exact/" + name + "/auto"), f = runs().find("exact/" + name + "/off");
  if (a == runs().end() || f == runs().end()) return;
  const nlohmann::json& reduced = a->second.report;
  const nlohmann::json& full = f->second.report;
  double worst = 0;
  std::cout << "exactness " << name << " (reduced " << fixed(best(a->first), 3) << " s, full "
            << fixed(best(f->first), 3) << " s):";
  for (const char* k : {"iteration_time_s", "exposed_comm_s", "bytes_intra_host", "bytes_inter_host"}) {
    const double x = reduced.at(k).get<double>(), y = full.at(k).get<double>();
    const double rel = y != 0 ? std::abs(x - y) / std::abs(y) : std::abs(x);
    worst = std::max(worst, rel);
    std::cout << ' ' << k << " " << x << " vs " << y << ";";
  }
  std::cout << "\n  exact_" << name << "_worst_relative_difference = " << worst
            << " (goal <= 0.001: " << verdict(worst <= 1e-3) << ")\n  exact_" << name
            << "_full_vs_reduced_wall_ratio = " << fixed(best(f->first) / best(a->first), 1) << '\n';
}

void print_summary() {
  std::cout << "\n=== strata_bench_scale summary: one replay per child process (best of the runs), lowering, "
               "engine, platform load and report included ===\n";
  print_run("anchor/1024", 1.3);
  print_run("anchor/16384", 60);
  print_run("anchor/65536", 300);
  print_run("gpt3/16384", 60);
  const auto base = runs().find("anchor/1024");
  if (base != runs().end()) {
    const double wall = best("anchor/1024");
    const double per_task = wall / static_cast<double>(base->second.whole_tasks);
    for (const char* key : {"anchor/16384", "anchor/65536", "gpt3/16384"}) {
      const auto it = runs().find(key);
      if (it == runs().end()) continue;
      const double w = best(key);
      std::cout << std::string(key) << "_wall_vs_anchor_1024_ratio = " << fixed(w / wall, 2) << '\n';
      if (std::string(key).rfind("anchor", 0) == 0) {
        const double ratio = (w / static_cast<double>(it->second.whole_tasks)) / per_task;
        std::cout << std::string(key) << "_cost_per_task_vs_anchor_1024_ratio = " << fixed(ratio, 4)
                  << " (per task of the whole run; goal at 16,384 <= 2: " << verdict(ratio <= 2) << ")\n";
      }
    }
    if (const auto big = runs().find("anchor/16384"); big != runs().end())
      std::cout << "anchor/16384 peak memory " << fixed(big->second.rss_mb, 0)
                << " MB (goal <= 8,000 MB: " << verdict(big->second.rss_mb <= 8000) << ")\n";
  }
  print_exactness("anchor1024");
  print_exactness("anchor4096");
  print_exactness("gpt3_1024");
  std::cout.flush();
}

void add(const std::string& key, const Experiment& e, const std::string& platform, SymmetryMode symmetry) {
  benchmark::RegisterBenchmark(
      key.c_str(),
      [key, e, platform, symmetry](benchmark::State& s) { bm_run(s, key, e, platform, symmetry); })
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kSecond);
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata;
  using namespace strata::bench;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int status = 0;
  try {
    const std::string h100 = platforms_dir() + "h100-16384.xml";
    add("anchor/1024", anchor(1024), widened_anchor(1024), SymmetryMode::automatic);
    add("anchor/16384", anchor(16384), widened_anchor(16384), SymmetryMode::automatic);
    add("anchor/65536", anchor(65536), widened_anchor(65536), SymmetryMode::automatic);
    add("gpt3/16384", gpt3(128), h100, SymmetryMode::automatic);
    add("exact/anchor1024/auto", anchor(1024), widened_anchor(1024), SymmetryMode::automatic);
    add("exact/anchor1024/off", anchor(1024), widened_anchor(1024), SymmetryMode::off);
    add("exact/anchor4096/auto", anchor(4096), widened_anchor(4096), SymmetryMode::automatic);
    add("exact/anchor4096/off", anchor(4096), widened_anchor(4096), SymmetryMode::off);
    add("exact/gpt3_1024/auto", gpt3(8), h100, SymmetryMode::automatic);
    add("exact/gpt3_1024/off", gpt3(8), h100, SymmetryMode::off);
    benchmark::RunSpecifiedBenchmarks();
    print_summary();
  } catch (const std::exception& e) {
    std::cerr << "strata_bench_scale: " << e.what() << '\n';
    status = 1;
  }
  remove_temp();
  benchmark::Shutdown();
  return status;
}
