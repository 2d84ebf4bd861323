// Timing pieces shared by every strata_bench_* program: wall and CPU clocks, the CPU that other
// processes took meanwhile, the samples of every benchmark by name, and the fastest of them, which
// the summary tables turn into ratios against a baseline of the same run. Kept apart from bench_common.hpp,
// which needs strata::sim, so that the benchmarks of strata::real (no SimGrid) can use them too.
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace strata::bench {

// CPU seconds this process has used (all threads).
inline double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Wall time (steady_clock) and CPU time of what runs between construction and the reading. The
// benchmarks report wall time; CPU time is printed beside it because the machine they run on may
// be shared (other processes stretch wall time, not CPU time).
class Stopwatch {
 public:
  Stopwatch() : wall_(std::chrono::steady_clock::now()), cpu_(process_cpu_seconds()) {}
  double wall_seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  }
  double cpu_seconds() const { return process_cpu_seconds() - cpu_; }
  // "<wall s> <cpu s>", read by run_timed (bench_common.hpp).
  std::string text() const {
    std::ostringstream out;
    out.precision(17);
    out << wall_seconds() << ' ' << cpu_seconds();
    return out.str();
  }

 private:
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

// CPU seconds the whole machine has been busy (every process: the user, nice, system, irq,
// softirq and steal ticks of /proc/stat's first line); 0 where it cannot be read.
inline double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double ticks[8] = {};  // user nice system idle iowait irq softirq steal
  stat >> cpu;
  for (double& t : ticks) stat >> t;
  if (!stat || cpu != "cpu") return 0;
  const double busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7];
  return busy / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The cores other processes kept busy, on average, between construction and the reading: what
// the machine spent busy less what this process spent, over the wall time. A two-thread sample
// beside 1 core of other work ran on one core. /proc/stat counts in ticks (10 ms), so spans of a
// few tenths of a second read to about ±0.1 core.
class OtherLoad {
 public:
  OtherLoad()
      : wall_(std::chrono::steady_clock::now()),
        machine_(machine_busy_seconds()),
        own_(process_cpu_seconds()) {}
  double cores() const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    const double others = (machine_busy_seconds() - machine_) - (process_cpu_seconds() - own_);
    return wall > 0 ? std::max(0.0, others / wall) : 0;
  }

 private:
  std::chrono::steady_clock::time_point wall_;
  double machine_;
  double own_;
};

// Wall and CPU seconds of every iteration of every benchmark, by name, for the summary tables.
struct Samples {
  std::vector<double> wall;
  std::vector<double> cpu;
  std::vector<double> other_cores;  // OtherLoad::cores(), where the benchmark measured it
};
inline std::map<std::string, Samples>& samples() {
  static std::map<std::string, Samples> all;
  return all;
}

inline void record(const std::string& name, double wall, double cpu, double other_cores = 0) {
  samples()[name].wall.push_back(wall);
  samples()[name].cpu.push_back(cpu);
  samples()[name].other_cores.push_back(other_cores);
}

inline bool has_samples(const std::string& name) {
  auto it = samples().find(name);
  return it != samples().end() && !it->second.wall.empty();
}

// Fastest sample: the least disturbed by other load on the machine.
inline double best(const std::string& name) {
  const auto& s = samples().at(name).wall;
  return *std::min_element(s.begin(), s.end());
}
inline double best_cpu(const std::string& name) {
  const auto& s = samples().at(name).cpu;
  return *std::min_element(s.begin(), s.end());
}
// The other processes' load during the fastest sample.
inline double other_cores_at_best(const std::string& name) {
  const Samples& s = samples().at(name);
  return s
      .other_cores[static_cast<std::size_t>(std::min_element(s.wall.begin(), s.wall.end()) - s.wall.begin())];
}

inline std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

}  // namespace strata::bench
