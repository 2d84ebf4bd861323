// The what-if explorer: the configurations it enumerates, the replay reduction it uses for very
// large configurations, and its analytical estimate against SimGrid on the default exploration.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "sim_fixtures.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/process.hpp"

namespace strata {
namespace {

PlatformSummary one_host(int slots) {
  PlatformSummary p;
  p.path = "one-host";
  HostSpec h;
  h.name = "node-0";
  h.slots = slots;
  p.hosts.push_back(h);
  return p;
}

TEST(Explore, EnumeratesEveryValidConfigurationOnce) {
  // GPT with 4 heads and 2 blocks, 4 workers on one 4-slot host, global batch 8:
  //   tp=1 pp=1 dp=4 (2 per replica): m in {1,2}                         2
  //   tp=1 pp=2 dp=2 (4 per replica): m in {2,4} x {1f1b, gpipe}         4
  //   tp=2 pp=1 dp=2 (4 per replica): m in {1,2,4}                       3
  //   tp=2 pp=2 dp=1 (8 per replica): m in {2,4,8} x {1f1b, gpipe}       6
  //   tp=4 pp=1 dp=1 (8 per replica): m in {1,2,4,8}                     4   -> 19
  GptConfig g;
  g.layers = 2;
  g.hidden = 64;
  g.heads = 4;
  g.seq = 16;
  g.vocab = 100;
  const Model model = make_gpt("tiny", g);
  ExploreOptions options;
  options.workers = 4;
  options.base.global_batch = 8;
  options.space = {};  // the memory options at their defaults: parallel dimensions only
  auto configs = enumerate_configs(model, options, one_host(4));
  EXPECT_EQ(configs.size(), 19u);
  std::set<std::string> seen;
  for (const StrategyConfig& c : configs) {
    EXPECT_EQ(c.workers(), 4);
    EXPECT_EQ(model.heads % c.tp, 0);
    EXPECT_LE(c.pp, 2);
    EXPECT_EQ((c.global_batch / c.dp) % c.microbatches, 0);
    EXPECT_TRUE(seen.insert(c.to_string() + "/" + std::to_string(c.microbatches) + "/" +
                            std::string(to_string(c.schedule)))
                    .second);
  }
  // TP stays inside a host unless allowed: with 2-slot hosts tp=4 disappears (4 configurations).
  PlatformSummary two_hosts = one_host(2);
  two_hosts.hosts.push_back(two_hosts.hosts.front());
  EXPECT_EQ(enumerate_configs(model, options, two_hosts).size(), 15u);
  options.allow_cross_host_tp = true;
  EXPECT_EQ(enumerate_configs(model, options, two_hosts).size(), 19u);
}

// The memory options as search dimensions, widened beyond what today's estimate models: GPT with
// 2 heads and 4 blocks, 2 workers on one 2-slot host with pcie_bw, global batch 2.
//   tp=1 pp=1 dp=2 (1 per replica): m=1; recompute x3; zero 0 (offload 0) or 1-3 (offload 0|1):
//     7 ZeRO/offload pairs; sequence_parallel needs tp > 1, interleave pp > 1    3 x 7 = 21
//   tp=1 pp=2 dp=1 (2 per replica): m=2; 1f1b with interleave 1|2 (4 blocks = 2 x 2 chunks),
//     gpipe with 1 only                                                         3 x (2 + 1) = 9
//   tp=2 pp=1 dp=1 (2 per replica): m in {1, 2}; sequence_parallel 0|1          2 x 3 x 2 = 12
// 42 in all; without pcie_bw no offload: the dp=2 row has 4 ZeRO stages, 3 x 4 + 9 + 12 = 33.
TEST(Explore, SearchesMemoryOptionsOnlyWhereTheyMeanSomething) {
  GptConfig g;
  g.layers = 4;
  g.hidden = 64;
  g.heads = 2;
  g.seq = 16;
  g.vocab = 100;
  const Model model = make_gpt("tiny", g);
  ExploreOptions options;
  options.workers = 2;
  options.base.global_batch = 2;
  options.space = {{"recompute", {"none", "selective", "full"}},
                   {"sequence_parallel", {"0", "1"}},
                   {"zero", {"0", "1", "2", "3"}},
                   {"offload", {"0", "1"}},
                   {"interleave", {"1", "2"}}};
  PlatformSummary platform = one_host(2);
  platform.hosts.front().pcie_bw = 31.5e9;
  const auto configs = enumerate_configs(model, options, platform);
  EXPECT_EQ(configs.size(), 42u);
  for (const StrategyConfig& c : configs) {
    EXPECT_TRUE(!c.sequence_parallel || c.tp > 1);
    EXPECT_TRUE(c.zero == 0 || c.dp > 1);
    EXPECT_TRUE(!c.offload || c.zero >= 1);
    EXPECT_TRUE(c.interleave == 1 || (c.pp > 1 && c.schedule == PipelineSchedule::one_f_one_b));
  }
  platform.hosts.front().pcie_bw = 0;
  EXPECT_EQ(enumerate_configs(model, options, platform).size(), 33u);
  // The default space (recompute, sequence parallelism, ZeRO, offload, interleave 1|2|4) on this
  // platform without pcie_bw: as the space above, 33 (4 blocks make no 2 x 4 chunks).
  options.space = estimated_search_space();
  EXPECT_EQ(enumerate_configs(model, options, platform).size(), 33u);
  options.space = {{"recompute_everything", {"1"}}};
  EXPECT_THROW(enumerate_configs(model, options, platform), InputError);
}

// Microbatches down to one sample: gpt3-175b on 1,024 GPUs includes dp=8,tp=8,pp=16 with 1,024
// one-sequence microbatches (global batch 8 x 1,024 = 8,192), which fits in 80 GB (issue 15);
// and the enumeration over every dimension stays fast (printed: configurations per second).
TEST(Explore, TriesEveryMicrobatchSizeDownToOneSequence) {
  const Model model = make_model("gpt3-175b", {});
  ExploreOptions options;
  options.workers = 1024;
  options.base.dtype = DType::bf16;
  PlatformSummary platform = one_host(8);
  for (int i = 1; i < 128; ++i) platform.hosts.push_back(platform.hosts.front());
  platform.hosts.front().pcie_bw = 31.5e9;
  bool found = false;
  for (const StrategyConfig& c : enumerate_configs(model, options, platform))
    found = found || (c.dp == 8 && c.tp == 8 && c.pp == 16 && c.microbatches == 1024);
  EXPECT_TRUE(found);
  options.space = {{"recompute", {"none", "selective", "full"}},
                   {"sequence_parallel", {"0", "1"}},
                   {"zero", {"0", "1", "2", "3"}},
                   {"offload", {"0", "1"}},
                   {"interleave", {"1", "2", "3", "4", "6", "8", "12", "16", "24", "48"}}};
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t widened = enumerate_configs(model, options, platform).size();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  options.space = {};
  const std::size_t plain = enumerate_configs(model, options, platform).size();
  std::printf(
      "gpt3-175b on 1024 GPUs: %zu configurations without the memory options; every "
      "dimension: %zu in %.3f s, %.0f configurations/s\n",
      plain, widened, wall, static_cast<double>(widened) / wall);
  EXPECT_GT(widened, 10 * plain);
}

// The best line: the first row if it fits; otherwise no best, and the least-memory row with what
// it lacks. 80e9 B = 74.51 GiB; 96 GiB needs 21.49 GiB more.
TEST(Explore, NeverCallsAConfigurationThatDoesNotFitBest) {
  ExploreResult result;
  result.gpu_memory = 80e9;
  result.candidates = 2;
  ExploreRow a;
  a.config.dp = 4;
  a.config.global_batch = 8;
  a.config.microbatches = 2;
  a.estimate.fits = false;
  a.estimate.peak_memory_bytes = 120.0 * 1073741824;
  ExploreRow b = a;
  b.config.dp = 2;
  b.config.tp = 2;
  b.config.zero = 1;
  b.estimate.peak_memory_bytes = 96.0 * 1073741824;
  result.rows = {a, b};
  EXPECT_EQ(best_row(result), nullptr);
  EXPECT_EQ(
      best_line(result),
      "best: none - none of the 2 configurations fits in 74.5 GiB per GPU; least memory: dp=2,tp=2,pp=1 - "
      "microbatches=2 (2 per microbatch) recompute=none sequence_parallel=0 zero=1 offload=0 interleave=1 "
      "needs 96.0 GiB per GPU (21.5 GiB over)");
  result.rows[0].estimate.fits = true;
  result.rows[0].estimate.peak_memory_bytes = 64.0 * 1073741824;
  ASSERT_EQ(best_row(result), &result.rows[0]);
  EXPECT_EQ(
      best_line(result).rfind("best: dp=4,tp=1,pp=1 - microbatches=2 (1 per microbatch) recompute=none", 0),
      0u)
      << best_line(result);
  EXPECT_NE(best_line(result).find("(fits: 64.0 GiB of 74.5 GiB per GPU)"), std::string::npos);

  result.rows[1].not_replayed = "--set zero=1: not lowered to a Plan by this version of strata";
  const std::string table = format_explore_table(result, 10);
  EXPECT_EQ(table.rfind("rank   dp  tp  pp fits sched", 0), 0u) << table;
  for (const char* column : {"microbatches", "mbs", "recompute", "sequence_parallel", "zero", "offload",
                             "interleave", "analytic(s) simulated(s)", "mem(GiB)"})
    EXPECT_NE(table.find(column), std::string::npos) << column;
  EXPECT_NE(table.find("rank 2 not replayed: --set zero=1: not lowered"), std::string::npos) << table;
  const std::string csv = explore_csv(result, 10);
  EXPECT_EQ(
      csv.rfind("rank,dp,tp,pp,fits,schedule,microbatches,microbatch_size,recompute,sequence_parallel,zero,"
                "offload,interleave,",
                0),
      0u)
      << csv;
  EXPECT_NE(csv.find("\n2,2,2,1,no,-,2,2,none,0,1,0,1,"), std::string::npos) << csv;
  const auto json = nlohmann::json::parse(explore_json(result, 10));
  EXPECT_EQ(json["best"], 1);
  EXPECT_EQ(json["rows"][1]["zero"], 1);
  EXPECT_EQ(json["rows"][1]["not_replayed"], result.rows[1].not_replayed);
}

// The best configuration's spec records its memory options.
TEST(Explore, ExperimentForRecordsTheOptions) {
  StrategyConfig c;
  c.dp = 2;
  c.recompute = Recompute::full;
  c.sequence_parallel = true;
  c.zero = 2;
  c.offload = true;
  c.interleave = 3;
  c.ddp = DdpMode::after_flush;
  const Experiment e = experiment_for(Experiment{}, c);
  EXPECT_EQ(e.dp, 2);
  EXPECT_EQ(e.recompute, Recompute::full);
  EXPECT_TRUE(e.sequence_parallel);
  EXPECT_EQ(e.zero, 2);
  EXPECT_TRUE(e.offload);
  EXPECT_EQ(e.interleave, 3);
  EXPECT_EQ(e.ddp, DdpMode::after_flush);
}

double replay_time(int replicas) {
  Model model = make_model("gpt2-small", {{"layers", "4"}});
  StrategyConfig c;
  c.dp = 8;
  c.tp = 4;
  c.pp = 2;
  c.microbatches = 4;
  c.global_batch = 64;
  c.dtype = DType::bf16;
  c.lowered_replicas = replicas;
  ReplayOptions options;
  options.collectives = CollectiveMode::aggregated;
  return replay(lower(model, c), test::platforms_dir() + "a100-cluster-64.xml", options)
      .report.iteration_time_s;
}

// The reduction used for very large replays (one DP replica, full DP allreduce groups) against
// the full replay, at a size where both run.
TEST(Explore, OneReplicaReductionMatchesFullReplay) {
  const double full = std::stod(run_in_child([] { return std::to_string(replay_time(0)); }));
  const double reduced = std::stod(run_in_child([] { return std::to_string(replay_time(1)); }));
  std::printf("dp=8,tp=4,pp=2 gpt2-small(4 layers) on a100-cluster-64: full %.6f s, one replica %.6f s\n",
              full, reduced);
  EXPECT_NEAR(reduced, full, 0.01 * full);
}

// The default exploration (gpt3-13b, 64 A100s): every replayed row's closed-form estimate is
// within 15 % of its SimGrid replay.
TEST(Explore, DefaultExplorationAnalyticalWithinFifteenPercent) {
  ExploreOptions options;
  options.model = "gpt3-13b";
  options.platform = test::platforms_dir() + "a100-cluster-64.xml";
  options.workers = 64;
  options.base.dtype = DType::bf16;
  ExploreResult result = explore(options);
  ASSERT_GE(result.rows.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    const ExploreRow& row = result.rows[i];
    ASSERT_TRUE(row.simulated.has_value());
    const double sim = row.simulated->iteration_time_s;
    const double est = row.estimate.iteration_s;
    std::printf("%s m=%lld %s: analytical %.4f s, simulated %.4f s, error %+.1f %%\n",
                row.config.to_string().c_str(), static_cast<long long>(row.config.microbatches),
                std::string(to_string(row.config.schedule)).c_str(), est, sim, 100 * (est - sim) / sim);
    EXPECT_NEAR(est, sim, 0.15 * sim) << row.config.to_string();
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// Kendall's tau-b, against values worked by hand: identical orders 1, reversed -1; with a tie
// in the first sample (a = 1, 1, 2; b = 1, 2, 3): one concordant pair of three counted, two
// pairs left, one tied in a only: (2 - 0) / sqrt((2 + 0 + 1) * (2 + 0 + 0)) = 2 / sqrt(6).
TEST(ExploreFidelities, KendallTauB) {
  EXPECT_DOUBLE_EQ(kendall_tau_b({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau_b({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(kendall_tau_b({1, 1, 2}, {1, 2, 3}), 2 / std::sqrt(6.0), 1e-12);
  EXPECT_TRUE(std::isnan(kendall_tau_b({1}, {2})));
}

// An estimate's money and energy: 12 workers fill a host of 8 slots and 4 of the next; each
// used host costs its price for the iteration and draws idle power plus (busy - idle) times the
// busy share of its slots (compute 0.5 s of a 2 s iteration: 0.25 on all 8 slots, 0.125 on 4).
TEST(ExploreFidelities, EstimatesArePricedOnTheHostsTheyUse) {
  PlatformSummary p;
  for (int h = 0; h < 3; ++h) {
    HostSpec s;
    s.slots = 8;
    s.price_per_hour = 36;
    s.watts_idle = 100;
    s.watts_busy = 900;
    p.hosts.push_back(s);
  }
  Estimate e;
  e.iteration_s = 2;
  e.compute_s = 0.5;
  price_estimate(e, 12, p);
  EXPECT_DOUBLE_EQ(e.cost_usd, 2 * 36 * 2 / 3600.0);
  EXPECT_DOUBLE_EQ(e.energy_j, 2 * (100 + 800 * 0.25) + 2 * (100 + 800 * 0.125));
}

}  // namespace
}  // namespace strata
