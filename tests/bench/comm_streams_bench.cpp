// strata_bench_comm_streams: what one communication stream per communicator (ReplayOptions::
// comm_streams = per_group, the default; traces/dispatch.hpp) costs the replay, against the single
// comm stream per worker (one_per_worker) on the same Plans in the same run.
//
// Each replay runs in a child process of its own (bench_common.hpp), timed from engine creation
// to the report (trace kept); lowering happens before, in the parent. Cases:
// - pipeline: GPT-2 small cut to 8 blocks, pp=8 on 8 one-GPU hosts, 8 microbatches, 1F1B, 20
//   iterations: sends and recvs only (each stage's forward sends and backward sends become two
//   streams);
// - hybrid: GPT-2 small (12 blocks), dp=2, tp=2, pp=4 on 16 one-GPU hosts, 8 microbatches, 1F1B,
//   bucketed DP allreduces, 4 iterations: TP allreduces, DP allreduces and pipeline transfers on
//   separate streams.
// Printed per case: tasks, µs per task under each rule, the ratio per_group / one_per_worker
// (goal <= 1.2: issue 15, "replay cost per task unchanged within 20 %"), and both simulated
// iteration times (the effect of the rule itself, not a cost).
#include <iostream>
#include <memory>

#include "bench_common.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/sim/replay.hpp"

namespace strata::bench {
namespace {

struct Case {
  std::string name;
  std::function<Plan()> make_plan;
  int hosts = 0;
  std::unique_ptr<Plan> plan;
  std::string platform;
  std::size_t tasks = 0;
  double iteration_s[2] = {0, 0};  // per_group, one_per_worker

  const Plan& get_plan() {
    if (!plan) {
      plan = std::make_unique<Plan>(make_plan());
      platform = flat_platform(hosts);
      tasks = plan->size();
    }
    return *plan;
  }
};

std::vector<std::unique_ptr<Case>>& cases() {
  static std::vector<std::unique_ptr<Case>> all;
  return all;
}

Plan gpt2_plan(const std::string& blocks, int dp, int tp, int pp, int iterations) {
  StrategyConfig c;
  c.dp = dp;
  c.tp = tp;
  c.pp = pp;
  c.microbatches = 8;
  c.schedule = PipelineSchedule::one_f_one_b;
  c.iterations = iterations;
  return lower(make_model("gpt2-small", {{"layers", blocks}}), c);
}

const char* rule_name(CommStreams rule) {
  return rule == CommStreams::per_group ? "per_group" : "one_per_worker";
}

// Child: "<wall s> <cpu s> <iteration time s>".
std::string timed_replay(const Plan& plan, const std::string& platform, CommStreams rule) {
  ReplayOptions options;
  options.collectives = CollectiveMode::aggregated;
  options.comm_streams = rule;
  const Stopwatch watch;
  ReplayResult result = replay(plan, platform, options);
  const std::string times = watch.text();
  std::ostringstream out;
  out.precision(17);
  out << times << ' ' << result.report.iteration_time_s;
  return out.str();
}

void bm_rule(benchmark::State& state, Case& c, CommStreams rule) {
  const Plan& plan = c.get_plan();
  const std::string key = c.name + "/" + rule_name(rule);
  std::istringstream rest(run_timed(state, key, [&] { return timed_replay(plan, c.platform, rule); }));
  rest >> c.iteration_s[rule == CommStreams::per_group ? 0 : 1];
  state.counters["tasks"] = static_cast<double>(c.tasks);
  state.counters["us_per_task"] = best(key) / static_cast<double>(c.tasks) * 1e6;
}

void register_benchmarks() {
  auto add = [](std::string name, int hosts, std::function<Plan()> make) {
    auto c = std::make_unique<Case>();
    c->name = std::move(name);
    c->hosts = hosts;
    c->make_plan = std::move(make);
    cases().push_back(std::move(c));
  };
  add("pipeline", 8, [] { return gpt2_plan("8", 1, 1, 8, 20); });
  add("hybrid", 16, [] { return gpt2_plan("12", 2, 2, 4, 4); });
  for (auto& owned : cases()) {
    Case* c = owned.get();
    // Alternating the rules spreads the machine's other load over both.
    for (CommStreams rule : {CommStreams::one_per_worker, CommStreams::per_group})
      benchmark::RegisterBenchmark(("comm_streams/" + c->name + "/" + rule_name(rule)).c_str(),
                                   [c, rule](benchmark::State& s) { bm_rule(s, *c, rule); })
          ->UseManualTime()
          ->Iterations(5)
          ->Unit(benchmark::kMillisecond);
  }
}

void print_summary() {
  std::cout << "\n=== strata_bench_comm_streams summary: best of 5 runs, one replay per process ===\n";
  for (const auto& c : cases()) {
    const std::string per = c->name + "/per_group";
    const std::string one = c->name + "/one_per_worker";
    if (!has_samples(per) || !has_samples(one)) continue;
    const double tasks = static_cast<double>(c->tasks);
    const double ratio = best(per) / best(one);
    std::cout << c->name << ": " << c->plan->info.model << " " << c->plan->info.strategy << ", " << c->tasks
              << " tasks\n"
              << "  per_group      " << fixed(best(per) / tasks * 1e6, 3) << " us/task ("
              << fixed(best_cpu(per), 3) << " s CPU), simulated iteration " << fixed(c->iteration_s[0], 6)
              << " s\n"
              << "  one_per_worker " << fixed(best(one) / tasks * 1e6, 3) << " us/task ("
              << fixed(best_cpu(one), 3) << " s CPU), simulated iteration " << fixed(c->iteration_s[1], 6)
              << " s\n"
              << "  " << c->name << "_per_group_vs_one_per_worker_ratio = " << fixed(ratio, 2)
              << " (goal <= 1.2: " << (ratio <= 1.2 ? "met" : "MISSED")
              << ") [on CPU time: " << fixed(best_cpu(per) / best_cpu(one), 2) << "]\n";
  }
  std::cout.flush();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int status = 0;
  try {
    strata::bench::register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    strata::bench::print_summary();
  } catch (const std::exception& e) {
    std::cerr << "strata_bench_comm_streams: " << e.what() << '\n';
    status = 1;
  }
  benchmark::Shutdown();
  strata::bench::remove_temp();
  return status;
}
