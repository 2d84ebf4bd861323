// strata_bench_schedule: the scheduling room's costs (models/schedule). HEFT (with insertion)
// and Min-Min on random layered DAGs (seeded; 8 tasks a layer, each with 3 parents in the layer
// before, costs uniform in [1, 10] s per processor, edges of 0-5 s at bandwidth 1) at 1,000 and
// 4,000 tasks on 64 processors; HEFT at the scale, tasks given as work on 1,024
// processors, at 10,000 and 100,000 tasks, and at 10,000 the naive HEFT beside it as the
// baseline measured in the same run; the pipeline partitioner on 128 layers x 64 stages.
// The sizes show how the cost grows: 4x the tasks takes 16x the time for a quadratic cost.
// Measured on the 2-core development machine (2026-11-26, nothing else running):
//   heft 1.26 ms and 5.72 ms (4.5x); minmin 3.71 ms and 15.6 ms (4.2x);
//   heft on 1,024 processors 108 ms at 10^4 tasks and 1.09 s at 10^5 (10.1x); the naive
//   baseline (V x P cost matrix, insertion scans from each processor's first slot) 177 ms at
//   10^4 (1.6x heft's, the same makespan; about 10 slots a processor leave little to skip) and,
//   at 10^5, a 0.8 GB cost matrix, so it is not run there;
//   partition 0.35 ms;
//   place_plan with HEFT on a data-parallel training Plan over 1,024 hosts: 10,241 tasks
//   65.7 ms, 102,406 tasks 584 ms (8.9x for 10x the tasks).
// Goals (issue 17): a 10^5-task Plan on 1,024 hosts with HEFT in <= 10 s (place_plan: 0.58 s);
// the partitioner for 128 layers x 64 stages x 4 TP degrees in <= 1 s (partition_layers_and_tp:
// 24.8 ms; one degree: 0.54 ms).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_main.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/schedule/dag_schedule.hpp"
#include "strata/models/schedule/partition.hpp"
#include "strata/models/schedule/plan_placement.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata::bench {
namespace {

DagProblem layered_dag(std::size_t tasks, std::size_t processors, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> cost(1, 10), data(0, 5);
  std::vector<DagTask> list;
  std::vector<DagEdge> edges;
  constexpr std::size_t kWidth = 8;
  for (std::size_t t = 0; t < tasks; ++t) {
    DagTask task{"t" + std::to_string(t), {}};
    for (std::size_t p = 0; p < processors; ++p) task.cost.push_back(cost(rng));
    list.push_back(std::move(task));
    if (t < kWidth) continue;
    const std::size_t layer_start = (t / kWidth - 1) * kWidth;
    for (std::size_t k = 0; k < 3; ++k) edges.push_back({layer_start + (t + k) % kWidth, t, data(rng)});
  }
  return unit_link_problem(std::move(list), std::move(edges), processors);
}

// The scale: tasks given as work (1-10 GFLOP) on processors of 1-4 GFLOP/s, links of
// 10 µs and 1-10 GB/s, so the problem holds O(V + P) costs.
DagProblem layered_work_dag(std::size_t tasks, std::size_t processors, unsigned seed) {
  DagProblem p = layered_dag(0, processors, seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> work(1e9, 1e10), speed(1e9, 4e9), bw(1e9, 1e10), data(0, 1e8);
  for (std::size_t q = 0; q < processors; ++q) p.speed.push_back(speed(rng));
  for (auto& row : p.latency) std::fill(row.begin(), row.end(), 10e-6);
  for (auto& row : p.bandwidth)
    for (double& b : row) b = bw(rng);
  constexpr std::size_t kWidth = 8;
  for (std::size_t t = 0; t < tasks; ++t) {
    p.tasks.push_back({"t" + std::to_string(t), {}, work(rng)});
    if (t < kWidth) continue;
    const std::size_t layer_start = (t / kWidth - 1) * kWidth;
    for (std::size_t k = 0; k < 3; ++k) p.edges.push_back({layer_start + (t + k) % kWidth, t, data(rng)});
  }
  return p;
}

// The baseline: HEFT as first written, with the V x P cost matrix and each insertion scanning a
// processor's slots from the first. Same ranks, ties and choices as schedule_dag's, so the two
// give the same schedule (checked: the same makespan).
double naive_heft(const DagProblem& p) {
  const std::size_t n = p.tasks.size(), procs = p.processors;
  std::vector<std::vector<double>> cost(n, std::vector<double>(procs));
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t q = 0; q < procs; ++q) cost[t][q] = p.cost(t, q);
  double lat = 0, bw = 0;
  for (std::size_t a = 0; a < procs; ++a)
    for (std::size_t b = 0; b < procs; ++b)
      if (a != b) lat += p.latency[a][b], bw += p.bandwidth[a][b];
  const double pairs = static_cast<double>(procs * (procs - 1));
  std::vector<std::vector<std::pair<std::size_t, double>>> succ(n), pred(n);
  for (const DagEdge& e : p.edges)
    succ[e.from].push_back({e.to, e.data}), pred[e.to].push_back({e.from, e.data});
  std::vector<double> rank(n, 0);
  for (std::size_t i = n; i-- > 0;) {  // layered_work_dag numbers tasks in topological order
    double mean = 0, tail = 0;
    for (double c : cost[i]) mean += c / static_cast<double>(procs);
    for (const auto& [j, d] : succ[i]) tail = std::max(tail, lat / pairs + d / (bw / pairs) + rank[j]);
    rank[i] = mean + tail;
  }
  std::vector<double> key(n);
  for (std::size_t i = 0; i < n; ++i) key[i] = std::round(rank[i] * 1e9);
  auto lower = [&](std::size_t a, std::size_t b) { return key[a] != key[b] ? key[a] < key[b] : a > b; };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(lower)> ready(lower);
  std::vector<std::size_t> waiting(n, 0), where(n, 0);
  std::vector<double> finish(n, 0);
  for (const DagEdge& e : p.edges) ++waiting[e.to];
  for (std::size_t t = 0; t < n; ++t)
    if (waiting[t] == 0) ready.push(t);
  std::vector<std::vector<std::pair<double, double>>> busy(procs);
  double makespan = 0;
  while (!ready.empty()) {
    const std::size_t t = ready.top();
    ready.pop();
    std::size_t best = 0;
    double best_start = 0, best_finish = std::numeric_limits<double>::infinity();
    for (std::size_t q = 0; q < procs; ++q) {
      double start = 0;
      for (const auto& [u, d] : pred[t])
        start = std::max(
            start, finish[u] + (where[u] == q ? 0 : p.latency[where[u]][q] + d / p.bandwidth[where[u]][q]));
      for (const auto& [b, e] : busy[q]) {  // every slot from the first
        if (start + cost[t][q] <= b) break;
        start = std::max(start, e);
      }
      if (start + cost[t][q] < best_finish) best = q, best_start = start, best_finish = start + cost[t][q];
    }
    where[t] = best;
    finish[t] = best_finish;
    busy[best].insert(
        std::upper_bound(busy[best].begin(), busy[best].end(), std::pair{best_start, best_finish}),
        {best_start, best_finish});
    makespan = std::max(makespan, best_finish);
    for (const auto& [j, d] : succ[t])
      if (--waiting[j] == 0) ready.push(j);
  }
  return makespan;
}

void naive_large(benchmark::State& state) {
  const DagProblem p = layered_work_dag(static_cast<std::size_t>(state.range(0)), 1024, 7);
  double makespan = 0;
  for (auto _ : state) makespan = naive_heft(p);
  state.counters["makespan_s"] = makespan;
  state.counters["same_as_heft"] = makespan == schedule_dag(p, SchedulePolicy::heft).makespan ? 1 : 0;
}

void schedule_large(benchmark::State& state) {
  const DagProblem p = layered_work_dag(static_cast<std::size_t>(state.range(0)), 1024, 7);
  double makespan = 0;
  for (auto _ : state) makespan = schedule_dag(p, SchedulePolicy::heft).makespan;
  state.counters["makespan_s"] = makespan;
}

void schedule(benchmark::State& state, SchedulePolicy policy) {
  const DagProblem p = layered_dag(static_cast<std::size_t>(state.range(0)), 64, 7);
  double makespan = 0;
  for (auto _ : state) makespan = schedule_dag(p, policy).makespan;
  state.counters["makespan_s"] = makespan;
}

// A training Plan at the scale: data parallel over 1,024 workers, `layers` linear layers
// of 1,024 x 1,024 (about 3 tasks per layer and worker: 3 layers make ~10^4 tasks, 33 ~10^5), on 1,024
// one-slot hosts of two speeds (1 and 2 TFLOP/s) with 10 µs, 12.5 GB/s routes. place_plan with
// HEFT: the Plan as a DagProblem (a ring of 2 x 1,024 nodes per allreduce), the schedule, and
// the two estimates (the strategy's placement and the policy's).
void place_training_plan(benchmark::State& state) {
  Model model;
  model.name = "linear-bench";
  model.family = "mlp";
  model.input_elems = 1024;
  for (int i = 0; i < state.range(0); ++i)
    model.layers.push_back(make_linear("fc" + std::to_string(i), i, 1, 1024, 1024));
  StrategyConfig config;
  config.dp = 1024;
  const Plan plan = lower(model, config);
  SlotPlatform platform;
  platform.path = "bench";
  for (int h = 0; h < 1024; ++h) {
    HostSpec host;
    host.name = "node-" + std::to_string(h);
    host.flops_fp32 = host.flops_bf16 = host.flops_fp16 = host.flops_fp64 = h % 2 == 0 ? 1e12 : 2e12;
    host.mem_bw = 1e12;
    platform.hosts.push_back(host);
  }
  platform.latency.assign(1024, std::vector<double>(1024, 10e-6));
  platform.bandwidth.assign(1024, std::vector<double>(1024, 12.5e9));
  const CostModel cost;
  PlanPlacement placed;
  for (auto _ : state) placed = place_plan(plan, platform, cost, SchedulePolicy::heft);
  state.counters["plan_tasks"] = static_cast<double>(plan.size());
  state.counters["estimate_s"] = placed.estimate_s;
  state.counters["strategy_estimate_s"] = placed.strategy_estimate_s;
}

void partition(benchmark::State& state) {
  PartitionProblem p;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2);
  for (int i = 0; i < 128; ++i) p.layers.push_back({u(rng), 0.01 * u(rng), 1e9 * u(rng), 1e8 * u(rng)});
  for (int s = 0; s < 64; ++s) p.stages.push_back({s % 2 == 0 ? 1.0 : 2.0, 0, double(64 - s), {}});
  double bottleneck = 0;
  for (auto _ : state) bottleneck = partition_layers(p, "bench").bottleneck_s;
  state.counters["bottleneck_s"] = bottleneck;
}

// The goal's size: 128 layers on 64 stages, each stage at tensor-parallel degree 1, 2, 4 or 8
// (a layer at degree d: its time / d x (1 + 0.1 log2 d), the collective's overhead; its bytes /
// d), with 256 devices in all.
void partition_tp(benchmark::State& state) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2);
  PartitionProblem base;
  for (int i = 0; i < 128; ++i) base.layers.push_back({u(rng), 0.01 * u(rng), 1e9 * u(rng), 1e8 * u(rng)});
  for (int s = 0; s < 64; ++s) base.stages.push_back({s % 2 == 0 ? 1.0 : 2.0, 0, double(64 - s), {}});
  const std::vector<int> degrees = {1, 2, 4, 8};
  std::vector<PartitionProblem> problems;
  for (int d : degrees) {
    PartitionProblem p = base;
    for (PartitionLayer& l : p.layers) {
      l.time_s *= (1 + 0.1 * std::log2(d)) / d;
      l.static_bytes /= d;
      l.activation_bytes /= d;
    }
    problems.push_back(p);
  }
  TpPartition result;
  for (auto _ : state) result = partition_layers_and_tp(degrees, problems, 256, "bench");
  state.counters["bottleneck_s"] = result.partition.bottleneck_s;
  state.counters["devices"] = result.devices;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata;
  return bench::run_benchmark_program(argc, argv, "strata_bench_schedule", [] {
    benchmark::RegisterBenchmark("heft", bench::schedule, SchedulePolicy::heft)
        ->Arg(1000)
        ->Arg(4000)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("minmin", bench::schedule, SchedulePolicy::minmin)
        ->Arg(1000)
        ->Arg(4000)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("heft_1024_hosts", bench::schedule_large)
        ->Arg(10000)
        ->Arg(100000)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("naive_heft_1024_hosts", bench::naive_large)
        ->Arg(10000)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("place_plan_heft_1024_hosts", bench::place_training_plan)
        ->Arg(3)
        ->Arg(33)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("partition_128x64", bench::partition)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("partition_128x64x4tp", bench::partition_tp)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RunSpecifiedBenchmarks();
  });
}
