// Shared pieces of the strata_bench_* programs that simulate: generated platforms and timing in
// child processes. The clocks and the samples the summary tables are computed from are in
// bench_timing.hpp, which the programs that never link SimGrid include alone.
//
// Every simulation runs in its own process (SimGrid 3.32 keeps one engine per process,
// DESIGN.md): a benchmark iteration forks a child with strata::run_in_child, the child times
// what is measured with steady_clock and returns the seconds as text, and the parent hands them
// to Google Benchmark as manual time. Process start and plan lowering are never timed.
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "strata/sim/process.hpp"

namespace strata::bench {

inline std::string platforms_dir() { return std::string(STRATA_SOURCE_DIR) + "/platforms/"; }

// Writes `text` to a file of this process's temporary folder and returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("strata-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

inline void remove_temp() {
  std::error_code ignored;
  std::filesystem::remove_all(
      std::filesystem::temp_directory_path() / ("strata-bench-" + std::to_string(::getpid())), ignored);
}

// A flat cluster: `hosts` hosts node-0 .. node-(hosts-1) with one GPU slot each (1 TFLOP/s in
// every dtype, 1 TB/s memory) and a private SPLITDUPLEX link of `bw` B/s and `lat` s per host,
// so every transfer crosses two links of the network model (the sender's up, the receiver's
// down).
inline std::string flat_platform(int hosts, double bw = 10e9, double lat = 1e-6) {
  std::ostringstream xml;
  xml << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      << "<platform version=\"4.1\">\n"
      << "<cluster id=\"c\" prefix=\"node-\" radical=\"0-" << hosts - 1 << "\" suffix=\"\" speed=\"1e12f\" "
      << "core=\"1\" bw=\"" << bw << "Bps\" lat=\"" << lat << "s\" sharing_policy=\"SPLITDUPLEX\" "
      << ">\n"
      << "<prop id=\"gpus\" value=\"1\"/>\n"
      << "<prop id=\"flops_fp32\" value=\"1e12\"/><prop id=\"flops_bf16\" value=\"1e12\"/>\n"
      << "<prop id=\"mem_bw\" value=\"1e12\"/><prop id=\"gpu_memory\" value=\"80e9\"/>\n"
      << "</cluster>\n</platform>\n";
  return write_temp("flat-" + std::to_string(hosts) + ".xml", xml.str());
}

// Runs `timed_child` (which returns Stopwatch::text() then, optionally, " <anything>") in a fresh
// process per iteration, reports the wall seconds as the iteration's manual time and records
// wall and CPU seconds under `name`. Returns the text after the times from the last iteration.
inline std::string run_timed(benchmark::State& state, const std::string& name,
                             const std::function<std::string()>& timed_child) {
  std::string rest;
  for (auto _ : state) {
    std::istringstream in(run_in_child(timed_child));
    double wall = 0;
    double cpu = 0;
    in >> wall >> cpu;
    rest.clear();
    std::getline(in >> std::ws, rest, '\0');
    state.SetIterationTime(wall);
    record(name, wall, cpu);
  }
  state.counters["best_wall_s"] = best(name);
  state.counters["best_cpu_s"] = best_cpu(name);
  return rest;
}

}  // namespace strata::bench
