// Collective expansion: flow structure by hand, the two fidelities against each other under
// contention, and the anchor workload at 16 GPUs against its α–β value.
#include <gtest/gtest.h>

#include <numeric>

#include "sim_fixtures.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/sim/collectives.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
namespace {

Task allreduce(int n, double bytes, CollectiveAlgo algo) {
  Task t = test::comm_task("ar", TaskKind::allreduce, bytes);
  t.algo = algo;
  for (int w = 0; w < n; ++w) t.group.push_back(w);
  return t;
}

double bytes_sent_by(const std::vector<Flow>& flows, WorkerId w) {
  double s = 0;
  for (const Flow& f : flows)
    if (f.src == w) s += f.bytes;
  return s;
}

TEST(Collectives, RingStepHasTwoNMinusOneStepsOfSOverN) {
  const std::vector<int> hosts = {0, 1, 2, 3};
  auto flows = expand_collective(allreduce(4, 400, CollectiveAlgo::ring), CollectiveFidelity::step, hosts);
  ASSERT_EQ(flows.size(), 2u * 3u * 4u);
  for (const Flow& f : flows) EXPECT_DOUBLE_EQ(f.bytes, 100);
  EXPECT_DOUBLE_EQ(bytes_sent_by(flows, 0), 2.0 * 3 / 4 * 400);
  // Step 1 of rank 1 waits for step 0 of ranks 0 (data) and 1 (its own send).
  EXPECT_EQ(flows[5].src, 1);
  EXPECT_EQ(flows[5].deps, (std::vector<std::uint32_t>{1, 0}));
}

TEST(Collectives, RingAggregatedIsOneFlowPerRankWithLatencyTerms) {
  const std::vector<int> hosts = {0, 1, 2, 3};
  auto flows =
      expand_collective(allreduce(4, 400, CollectiveAlgo::ring), CollectiveFidelity::aggregated, hosts);
  ASSERT_EQ(flows.size(), 4u);
  for (const Flow& f : flows) {
    EXPECT_DOUBLE_EQ(f.bytes, 600);
    EXPECT_EQ(f.extra_latencies, 5);
  }
}

TEST(Collectives, HierarchicalSplitsIntraAndInterHost) {
  // 2 hosts x 4 ranks: intra reduce-scatter (3 steps of S/4), inter allreduce among the 4
  // rank pairs (2 steps of S/8), intra allgather (3 steps of S/4).
  const std::vector<int> hosts = {0, 0, 0, 0, 1, 1, 1, 1};
  auto flows =
      expand_collective(allreduce(8, 800, CollectiveAlgo::hierarchical), CollectiveFidelity::step, hosts);
  EXPECT_EQ(flows.size(), 3u * 8 + 2u * 8 + 3u * 8);
  double inter = 0;
  for (const Flow& f : flows)
    if (hosts[static_cast<std::size_t>(f.src)] != hosts[static_cast<std::size_t>(f.dst)]) inter += f.bytes;
  EXPECT_DOUBLE_EQ(inter, 8 * 2 * 100.0);
  EXPECT_EQ(step_flow_count(allreduce(8, 800, CollectiveAlgo::hierarchical), hosts), flows.size());
}

TEST(Collectives, HalvingDoublingMovesTheRingVolume) {
  const std::vector<int> hosts = {0, 1, 2, 3, 4, 5, 6, 7};
  auto flows =
      expand_collective(allreduce(8, 800, CollectiveAlgo::halving_doubling), CollectiveFidelity::step, hosts);
  EXPECT_EQ(flows.size(), 2u * 3 * 8);
  EXPECT_DOUBLE_EQ(bytes_sent_by(flows, 3), 2.0 * 7 / 8 * 800);
}

TEST(Collectives, TreeReducesThenBroadcastsWholeBuffer) {
  const std::vector<int> hosts = {0, 1, 2, 3, 4};
  auto flows = expand_collective(allreduce(5, 100, CollectiveAlgo::tree), CollectiveFidelity::step, hosts);
  EXPECT_EQ(flows.size(), 2u * 4);
  for (const Flow& f : flows) EXPECT_DOUBLE_EQ(f.bytes, 100);
}

// Two concurrent DP rings (dp=4 x tp=2) across a fat-tree whose leaf uplinks are oversubscribed
// 2:1: the fidelities share links differently but must agree within 10 %.
double contended_dp_time(CollectiveMode mode) {
  Model model = test::fixed_model(4, 1e-3, 2e-3, 50e6);
  model.family = "synthetic";
  StrategyConfig c;
  c.dp = 4;
  c.tp = 1;
  c.pp = 2;
  c.microbatches = 2;
  c.global_batch = 8;
  c.dtype = DType::fp32;
  c.optimizer = Optimizer::sgd;
  c.bucket_bytes = 0;
  ReplayOptions options;
  options.collectives = mode;
  return replay(lower(model, c), test::platforms_dir() + "test-fattree-2to1.xml", options)
      .report.iteration_time_s;
}

TEST(Collectives, FidelitiesAgreeUnderContention) {
  auto step = std::stod(run_in_child([] { return std::to_string(contended_dp_time(CollectiveMode::step)); }));
  auto agg =
      std::stod(run_in_child([] { return std::to_string(contended_dp_time(CollectiveMode::aggregated)); }));
  EXPECT_NEAR(agg, step, 0.10 * step) << "step " << step << " s, aggregated " << agg << " s";
}

// The anchor workload at 16 GPUs (2 nodes x 8): 96 layers, forward 300 µs and backward 600 µs,
// a 48 MB hierarchical allreduce per layer issued when its backward ends.
TEST(Collectives, AnchorSixteenGpusMatchesAlphaBeta) {
  Model model = make_model("anchor-96");
  StrategyConfig c;
  c.dp = 16;
  c.global_batch = 16;
  c.dtype = DType::bf16;
  c.bucket_bytes = 0;
  c.dp_algo = CollectiveAlgo::hierarchical;
  ReplayOptions options;
  options.collectives = CollectiveMode::aggregated;
  Report r = replay(lower(model, c), test::platforms_dir() + "anchor-16.xml", options).report;
  // α–β: intra reduce-scatter 7·(0.94 µs + 6 MB / 400 GB/s), inter ring allreduce of 6 MB over
  // 2 nodes 2·(2 µs + 3 MB / 50 GB/s), intra allgather as the reduce-scatter: 347.16 µs, hidden
  // behind the next layer's 600 µs backward except for the last one.
  const double intra = 7 * (0.94e-6 + 6e6 / 400e9);
  const double inter = 2 * (2e-6 + 3e6 / 50e9);
  const double allreduce_s = 2 * intra + inter;
  EXPECT_NEAR(r.exposed_comm_s, allreduce_s, 0.05 * allreduce_s);
  const double compute = 96 * 900e-6;                 // 86.4 ms; the synthetic model's update costs nothing
  EXPECT_NEAR(r.compute_s, compute, 1e-7 * compute);  // SimGrid work-amount precision
  EXPECT_NEAR(r.iteration_time_s, compute + allreduce_s, 0.05 * (compute + allreduce_s));
}

}  // namespace
}  // namespace strata
