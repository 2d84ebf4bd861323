// The what-if explorer: the configurations it enumerates, the replay reduction it uses for very
// large configurations, and its analytical estimate against SimGrid on the default exploration.
#include <gtest/gtest.h>

#include <cstdio>
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
