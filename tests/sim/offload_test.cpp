// Optimizer offload in the replay: a lowered offload Plan on a Selene-like platform (whose hosts
// give pcie_bw) against the closed-form estimate, against the same Plan without offload, and a
// platform without pcie_bw refused. Each replay and each platform load runs in its own child
// process (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "sim_fixtures.hpp"
#include "strata/models/cost/analytical.hpp"
#include "strata/models/cost/host_offload.hpp"
#include "strata/models/cost/memory_model.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

std::string selene() { return test::platforms_dir() + "selene-64.xml"; }

// A 4-block GPT with GPT-3 1.3B's widths (h = 2048, a = 16, s = 2048, V = 51,200).
Model gpt() {
  GptConfig g;
  g.layers = 4;
  g.hidden = 2048;
  g.heads = 16;
  g.seq = 2048;
  g.vocab = 51200;
  return make_gpt("gpt-4x2048", g);
}

// dp = 8, tp = 2 (16 A100s, two DGX nodes), 4 microbatches of one sequence, bf16 Adam.
StrategyConfig config_of(int zero, bool offload) {
  StrategyConfig c;
  c.dp = 8;
  c.tp = 2;
  c.microbatches = 4;
  c.global_batch = 32;
  c.dtype = DType::bf16;
  c.zero = zero;
  c.offload = offload;
  return c;
}

struct Replayed {
  double iteration_s = 0;
  double peak_memory_bytes = 0;  // worker 0
};

Replayed replayed(const StrategyConfig& config, const std::string& platform = selene()) {
  const std::string text = run_in_child([&] {
    ReplayOptions options;
    options.collectives = CollectiveMode::aggregated;
    const Report r = replay(lower(gpt(), config), platform, options).report;
    char out[64];
    std::snprintf(out, sizeof out, "%.17g %.17g", r.iteration_time_s, r.per_worker.at(0).peak_memory_bytes);
    return std::string(out);
  });
  Replayed out;
  std::istringstream(text) >> out.iteration_s >> out.peak_memory_bytes;
  return out;
}

double estimated(const StrategyConfig& config) {
  return std::stod(run_in_child([&] {
    const ClusterSpec cluster = cluster_spec(load_platform_summary(selene()));
    char out[32];
    std::snprintf(out, sizeof out, "%.17g", estimate(gpt(), config, cluster, CostModel()).iteration_s);
    return std::string(out);
  }));
}

// Replay against estimate() with offload, every ZeRO stage; and what offload adds to each, which
// both take from host_offload.hpp's figures. (ZeRO-3 was 7.9 % apart here before the estimate
// exposed each phase's first parameter gather as the lowering does: 0.0568 s against 0.0616 s.)
TEST(OffloadReplay, WithinFivePercentOfTheEstimateAndAddsWhatTheEstimateAdds) {
  for (int zero : {1, 2, 3}) {
    const double sim = replayed(config_of(zero, true)).iteration_s;
    const double est = estimated(config_of(zero, true));
    const double sim_plain = replayed(config_of(zero, false)).iteration_s;
    const double est_plain = estimated(config_of(zero, false));
    std::printf(
        "dp=8,tp=2 zero=%d offload=1 on selene-64: estimate %.4f s, replay %.4f s, error %+.2f %%; "
        "offload adds %.4f s (estimate), %.4f s (replay)\n",
        zero, est, sim, 100 * (est - sim) / sim, est - est_plain, sim - sim_plain);
    std::fflush(stdout);
    EXPECT_NEAR(est, sim, 0.05 * sim) << "zero=" << zero;
    EXPECT_NEAR(est - est_plain, sim - sim_plain, 0.02 * (sim - sim_plain)) << "zero=" << zero;
  }
}

// Workers are symmetric (pp = 1) and the parameter all-gathers (stage 1) await each worker's
// optimizer chain, so the chain is on the critical path: the replay with offload takes the one
// without it plus d2h + host step + h2d, minus the GPU step it replaces. Per worker with
// Ψ = the tp rank's parameters and shard = Ψ / 8 (bf16, 2 B): copies 2 x (1 µs launch +
// 2 shard / 31.5 GB/s), host step 28 shard / 51.2 GB/s.
TEST(OffloadReplay, AddsTheCopiesAndTheHostStepToTheIteration) {
  const StrategyConfig off = config_of(1, true);
  const Plan plain_plan = lower(gpt(), config_of(1, false));
  double psi = 0;
  for (const Buffer& b : plain_plan.buffers())
    if (b.worker == 0 && b.id.find("/w/") != std::string::npos) psi += b.bytes / 2;
  const double shard = psi / 8;
  const double chain = 2 * (1e-6 + 2 * shard / 31.5e9) + 28 * shard / kHostMemBwPerGpu;
  // The GPU step's time, as the replay prices it on selene-64's hosts.
  const Task& step = plain_plan.task(static_cast<TaskIndex>(plain_plan.find("it0/dp0/pp0/tp0/opt")));
  const double gpu_step = std::stod(run_in_child([&] {
    char out[32];
    std::snprintf(out, sizeof out, "%.17g",
                  CostModel().compute_time(step, load_platform_summary(selene()).hosts.at(0)));
    return std::string(out);
  }));
  const double with = replayed(off).iteration_s;
  const double without = replayed(config_of(1, false)).iteration_s;
  std::printf("zero=1: without offload %.6f s, with %.6f s; chain %.6f s, GPU step %.6f s\n", without, with,
              chain, gpu_step);
  std::fflush(stdout);
  EXPECT_NEAR(with - without, chain - gpu_step, 1e-3 * chain);
}

// The optimizer state shard leaves the GPU: the replay's peak per worker drops by it, by what
// the memory model moves to host_optimizer.
TEST(OffloadReplay, PeakMemoryDropsByTheOptimizerStateShard) {
  for (int zero : {1, 2}) {
    const double with = replayed(config_of(zero, true)).peak_memory_bytes;
    const double without = replayed(config_of(zero, false)).peak_memory_bytes;
    const Plan plan = lower(gpt(), config_of(zero, true));
    double state = 0, psi = 0;
    for (const Buffer& b : plan.buffers()) {
      if (b.worker != 0) continue;
      if (b.on_host) state += b.bytes;
      if (b.id.find("/w/") != std::string::npos) psi += b.bytes / 2;
    }
    const MemoryBreakdown m = model_state_memory(psi, config_of(zero, true));
    std::printf("zero=%d: peak without offload %.4g B, with %.4g B, state shard %.4g B\n", zero, without,
                with, state);
    std::fflush(stdout);
    EXPECT_DOUBLE_EQ(state, m.host_optimizer);  // 12 Ψ / 8
    EXPECT_NEAR(without - with, state, 1e-9 * without);
  }
}

TEST(OffloadReplay, PlatformWithoutPcieBandwidthIsRefusedInOneLine) {
  const std::string flat = test::flat_cluster(2, 8, 1e11, 1e-6);
  std::string error;
  try {
    replayed(config_of(1, true), flat);
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("task 'it0/dp0/pp0/tp0/opt/d2h'"), std::string::npos) << error;
  EXPECT_NE(error.find("host node-0 has no pcie_bw"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

}  // namespace
}  // namespace strata
