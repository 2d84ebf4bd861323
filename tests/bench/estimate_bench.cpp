// strata_bench_estimate: configurations per second of the closed-form estimate (analytical.hpp)
// over the explorer's grid with the memory options of issue 15 (recompute, ZeRO stage, offload,
// interleaving, schedule, ddp), beside the same grid without options, measured in the same run.
//
// Model gpt3-175b (96 blocks, 964 layers), global batch 1536, bf16 Adam, on 1,024 A100-like
// GPUs (128 hosts of 8). The grid: tp in {1, 2, 4, 8}, pp in {1, 2, 4, 8, 16}, dp = 1024 / (tp pp),
// microbatches pp x {1, 2, 4} (where they divide the batch); with options, each of those crossed
// with recompute {none, selective, full}, zero {0, 1, 2, 3}, offload (zero >= 1), interleave
// {1, 2} (where 96 blocks split into pp x 2 chunks), schedule {1f1b, zb-h1} and ddp {overlap,
// after_flush}; every configuration checked by check_strategy first (not timed). One thread.
// The options grid is timed again priced (price_estimate on the 128 hosts, as explore prices
// every configuration for --objective money, energy and tokens-per-dollar).
// Goal: >= 10^5 configurations/s with options, priced, on one core.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "bench_timing.hpp"
#include "strata/models/cost/analytical.hpp"
#include "strata/traces/error.hpp"

namespace strata::bench {
namespace {

constexpr int kGpus = 1024;
constexpr std::int64_t kGlobalBatch = 1536;

// Benchmark inputs, not model parameters: an A100 80 GB (NVIDIA A100 datasheet: 312 TFLOP/s
// bf16 dense, 2,039 GB/s HBM2e, 80 GB), NVLink 3 at 300 GB/s per direction, one 200 Gb/s HDR
// port per GPU (25 GB/s), PCIe 4.0 x16 (32 GB/s).
ClusterSpec a100_cluster() {
  ClusterSpec c;
  c.host.name = "a100";
  c.host.slots = 8;
  c.host.flops_fp32 = 19.5e12;
  c.host.flops_bf16 = 312e12;
  c.host.mem_bw = 2.039e12;
  c.host.gpu_memory = 80e9;
  c.host.pcie_bw = 32e9;
  c.hosts = kGpus / 8;
  c.intra_bw = 300e9;
  c.intra_latency = 1e-6;
  c.inter_bw = 25e9;
  c.inter_latency = 5e-6;
  return c;
}

// The hosts as priced: platforms/a100-cluster-64.xml's DGX A100 figures (USD 40.96 per host-hour,
// 1,500 W idle, 6,500 W busy; cited there).
std::vector<HostSpec> priced_hosts(const ClusterSpec& cluster) {
  HostSpec h = cluster.host;
  h.price_per_hour = 40.96;
  h.watts_idle = 1500;
  h.watts_busy = 6500;
  return std::vector<HostSpec>(static_cast<std::size_t>(cluster.hosts), h);
}

bool valid(const Model& model, const StrategyConfig& config) {
  try {
    check_strategy(model, config);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

std::vector<StrategyConfig> plain_grid(const Model& model) {
  std::vector<StrategyConfig> grid;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2, 4, 8, 16}) {
      for (int factor : {1, 2, 4}) {
        StrategyConfig c;
        c.tp = tp;
        c.pp = pp;
        c.dp = kGpus / (tp * pp);
        c.microbatches = static_cast<std::int64_t>(pp) * factor;
        c.global_batch = kGlobalBatch;
        c.dtype = DType::bf16;
        if (valid(model, c)) grid.push_back(c);
      }
    }
  }
  return grid;
}

std::vector<StrategyConfig> option_grid(const Model& model) {
  std::vector<StrategyConfig> grid;
  for (const StrategyConfig& base : plain_grid(model))
    for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full})
      for (int zero : {0, 1, 2, 3})
        for (bool offload : {false, true})
          for (int interleave : {1, 2})
            for (PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1})
              for (DdpMode ddp : {DdpMode::overlap, DdpMode::after_flush}) {
                StrategyConfig c = base;
                c.recompute = recompute;
                c.zero = zero;
                c.offload = offload;
                c.interleave = interleave;
                c.schedule = schedule;
                c.ddp = ddp;
                if (valid(model, c)) grid.push_back(c);
              }
  return grid;
}

struct Inputs {
  Model model = make_model("gpt3-175b");
  ClusterSpec cluster = a100_cluster();
  CostModel cost;
};

Inputs& inputs() {
  static Inputs in;
  return in;
}

// One Estimator per grid, warmed by a first pass outside the timing, as an exploration keeps it
// across its configurations (its caches fill once per microbatch size, tp and partition).
void bm_grid(benchmark::State& state, const std::string& name, const std::vector<StrategyConfig>& grid,
             bool priced = false) {
  const Inputs& in = inputs();
  Estimator estimator(in.model, in.cluster, in.cost);
  const std::vector<HostSpec> hosts = priced_hosts(in.cluster);
  for (const StrategyConfig& c : grid) benchmark::DoNotOptimize(estimator(c).iteration_s);
  for (auto _ : state) {
    Stopwatch clock;
    double sum = 0;
    for (const StrategyConfig& c : grid) {
      Estimate e = estimator(c);
      if (priced) price_estimate(e, c.workers(), hosts);
      sum += e.iteration_s + e.cost_usd;
    }
    benchmark::DoNotOptimize(sum);
    const double wall = clock.wall_seconds();
    state.SetIterationTime(wall);
    record(name, wall, clock.cpu_seconds());
  }
  state.counters["configs"] = static_cast<double>(grid.size());
}

// Rates on CPU time (the machine may be shared: other processes stretch wall time, not CPU time);
// the fastest pass of each grid.
void print_summary(std::size_t plain, std::size_t options) {
  const double plain_rate = static_cast<double>(plain) / best_cpu("plain");
  const double options_rate = static_cast<double>(options) / best_cpu("options");
  const double priced_rate = static_cast<double>(options) / best_cpu("priced");
  std::cout
      << "\n=== strata_bench_estimate summary (gpt3-175b on 1,024 GPUs, one thread; fastest pass, CPU time)\n"
      << "  plain grid:   " << plain << " configurations, " << fixed(plain_rate, 0)
      << " configurations/s (wall " << fixed(static_cast<double>(plain) / best("plain"), 0) << "/s)\n"
      << "  options grid: " << options << " configurations, " << fixed(options_rate, 0)
      << " configurations/s (wall " << fixed(static_cast<double>(options) / best("options"), 0)
      << "/s; goal >= 100000: " << (options_rate >= 1e5 ? "met" : "NOT met") << ")\n"
      << "  options grid, priced: " << fixed(priced_rate, 0) << " configurations/s (wall "
      << fixed(static_cast<double>(options) / best("priced"), 0)
      << "/s; goal >= 100000: " << (priced_rate >= 1e5 ? "met" : "NOT met") << ")\n"
      << "  estimate_options_vs_plain_time_ratio = " << fixed(plain_rate / options_rate, 2)
      << " (CPU time per configuration with options / without)\n"
      << "  estimate_priced_vs_options_time_ratio = " << fixed(options_rate / priced_rate, 2)
      << " (CPU time per configuration priced / not)\n";
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  return run_benchmark_program(argc, argv, "strata_bench_estimate", [&] {
    const auto plain = plain_grid(inputs().model);
    const auto options = option_grid(inputs().model);
    benchmark::RegisterBenchmark("estimate/plain", [&](benchmark::State& s) { bm_grid(s, "plain", plain); })
        ->UseManualTime()
        ->Iterations(200)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("estimate/options",
                                 [&](benchmark::State& s) { bm_grid(s, "options", options); })
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("estimate/options_priced",
                                 [&](benchmark::State& s) { bm_grid(s, "priced", options, true); })
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    benchmark::RunSpecifiedBenchmarks();
    print_summary(plain.size(), options.size());
  });
}
