// Sequence parallelism in lower() (Korthikanti et al., MLSys 2023, section 4.2.2): the tensor-
// parallel allreduces split into reduce-scatters and all-gathers, their bytes, dependencies and
// the activations each rank keeps.
#include <gtest/gtest.h>

#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

StrategyConfig sp_config(int dp, int tp, int pp, std::int64_t m) {
  StrategyConfig config = config_of(dp, tp, pp, m);
  config.sequence_parallel = true;
  return config;
}

double saved_by_block(const Plan& plan, const std::string& prefix) {
  double sum = 0;
  for (const Task& t : plan.tasks())
    if (t.id.starts_with(prefix)) sum += t.mem_alloc;
  return sum;
}

// tiny_gpt(2): s = 8, h = 64, a = 4, one microbatch of 8 sequences, fp32, tp = 2. Every TP
// collective carries s·b·h x 4 B = 8 x 8 x 64 x 4 = 16,384 B.
TEST(LoweringSequenceParallel, AllreducesBecomeReduceScattersAndAllGathers) {
  const Plan plan = lower(tiny_gpt(2), sp_config(1, 2, 1, 1));
  const std::string mb = "it0/dp0/pp0/mb0/";
  // Per block: forward gathers before qkv and fc1, reduce-scatters after proj and fc2; backward
  // gathers of the output gradients of fc2 and proj, reduce-scatters of the input gradients of
  // fc1 and qkv, and gathers of the inputs of qkv and fc1 for their weight gradients.
  EXPECT_EQ(count_ids(plan, R"(.*/l\d/.*/ar)"), 0u);
  EXPECT_EQ(count_ids(plan, R"(.*/fwd/l\d/(qkv|fc1)/ag)"), 2u * 2);
  EXPECT_EQ(count_ids(plan, R"(.*/fwd/l\d/(proj|fc2)/rs)"), 2u * 2);
  EXPECT_EQ(count_ids(plan, R"(.*/bwd/l\d/(proj|fc2)/ag)"), 2u * 2);
  EXPECT_EQ(count_ids(plan, R"(.*/bwd/l\d/(qkv|fc1)/rs)"), 2u * 2);
  EXPECT_EQ(count_ids(plan, R"(.*/bwdw/l\d/(qkv|fc1)/ag)"), 2u * 2);
  EXPECT_EQ(count_ids(plan, R"(.*/l\d/.*/(ag|rs))"), 10u * 2);
  // Embedding: reduce-scatter, gradient gathered; head: input gathered (twice), gradient
  // reduce-scattered; the cross-entropy keeps its allreduce.
  EXPECT_EQ(count_ids(plan, mb + "fwd/embed/rs"), 1u);
  EXPECT_EQ(count_ids(plan, mb + "bwd/embed/ag"), 1u);
  EXPECT_EQ(count_ids(plan, mb + "(fwd|bwdw)/head/ag"), 2u);
  EXPECT_EQ(count_ids(plan, mb + "bwd/head/rs"), 1u);
  EXPECT_EQ(count_ids(plan, mb + "fwd/loss/ar"), 1u);
  const Task& gather = plan.task(index_of(plan, mb + "fwd/l1/qkv/ag"));
  const Task& scatter = plan.task(index_of(plan, mb + "fwd/l1/proj/rs"));
  EXPECT_EQ(gather.kind, TaskKind::allgather);
  EXPECT_EQ(scatter.kind, TaskKind::reduce_scatter);
  EXPECT_EQ(gather.group, (std::vector<WorkerId>{0, 1}));
  for (const Task* t : {&gather, &scatter}) EXPECT_DOUBLE_EQ(t->comm_bytes, 16384);
  EXPECT_DOUBLE_EQ(plan.task(index_of(plan, mb + "bwdw/l1/fc1/ag")).comm_bytes, 16384);

  for (int t = 0; t < 2; ++t) {
    const std::string w = cat("it0/dp0/pp0/tp", t) + "/mb0/";
    EXPECT_TRUE(has(gather.data_deps, index_of(plan, w + "fwd/l1/ln1")));
    EXPECT_TRUE(
        has(plan.task(index_of(plan, w + "fwd/l1/qkv")).data_deps, index_of(plan, mb + "fwd/l1/qkv/ag")));
    EXPECT_TRUE(has(scatter.data_deps, index_of(plan, w + "fwd/l1/proj")));
    EXPECT_TRUE(
        has(plan.task(index_of(plan, w + "fwd/l1/res1")).data_deps, index_of(plan, mb + "fwd/l1/proj/rs")));
    // proj's output gradient is gathered from res1's backward before proj's backward data.
    EXPECT_TRUE(
        has(plan.task(index_of(plan, mb + "bwd/l1/proj/ag")).data_deps, index_of(plan, w + "bwd/l1/res1")));
    EXPECT_TRUE(
        has(plan.task(index_of(plan, w + "bwd/l1/proj")).data_deps, index_of(plan, mb + "bwd/l1/proj/ag")));
    EXPECT_TRUE(
        has(plan.task(index_of(plan, w + "bwd/l1/ln1")).data_deps, index_of(plan, mb + "bwd/l1/qkv/rs")));
    EXPECT_TRUE(
        has(plan.task(index_of(plan, w + "bwdw/l1/qkv")).data_deps, index_of(plan, mb + "bwdw/l1/qkv/ag")));
  }
  const RunResult run = run_unit_durations(plan);
  EXPECT_TRUE(run.finished);
}

// Korthikanti et al. 2023, eq. 2 (here in fp32, 4 B per element, and the zoo's per-layer split,
// zoo_gpt.cpp): without SP a tp rank keeps 5·s·h whole (norm inputs, dropout masks, the inputs of
// qkv and fc1) and (12·s·h + 2.5·a·s²)/t; with SP all of (17·s·h + 2.5·a·s²)/t. Per sequence:
// s·h = 512, 2.5·a·s² = 640; 8 sequences x 4 B.
TEST(LoweringSequenceParallel, EachRankKeepsASequenceShardOfTheActivations) {
  const double whole = 5 * 512 * 8 * 4.0;               // 81,920 B
  const double split = (12 * 512 + 640) * 8 * 4.0 / 2;  // 108,544 B
  const std::string block = "it0/dp0/pp0/tp1/mb0/fwd/l1/";
  EXPECT_DOUBLE_EQ(saved_by_block(lower(tiny_gpt(2), config_of(1, 2, 1, 1)), block), whole + split);
  EXPECT_DOUBLE_EQ(saved_by_block(lower(tiny_gpt(2), sp_config(1, 2, 1, 1)), block),
                   (17 * 512 + 640) * 8 * 4.0 / 2);  // 149,504 B
  // The stage boundary carries the sequence shard: 2 microbatches of 4 sequences, s·b·h x 4 B / 2
  // = 8 x 4 x 64 x 4 / 2 = 4,096 B (8,192 B without SP).
  const Plan pipeline = lower(tiny_gpt(2), sp_config(1, 2, 2, 2));
  EXPECT_DOUBLE_EQ(pipeline.task(index_of(pipeline, "it0/dp0/pp0/tp1/mb1/send/fwd")).comm_bytes, 4096);
  const Plan plain = lower(tiny_gpt(2), config_of(1, 2, 2, 2));
  EXPECT_DOUBLE_EQ(plain.task(index_of(plain, "it0/dp0/pp0/tp1/mb1/send/fwd")).comm_bytes, 8192);
}

TEST(LoweringSequenceParallel, SequenceParallelPlansRunToTheEnd) {
  for (int pp : {1, 2})
    for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full})
      for (int zero : {0, 3}) {
        StrategyConfig config = sp_config(2, 2, pp, 2 * pp);
        config.iterations = 2;
        config.recompute = recompute;
        config.zero = zero;
        const Plan plan = lower(tiny_gpt(4), config);
        const RunResult run = run_unit_durations(plan);
        const std::string label =
            config.to_string() + " " + std::string(to_string(recompute)) + " zero=" + std::to_string(zero);
        EXPECT_TRUE(run.finished) << label;
        for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6) << label;
        if (recompute == Recompute::full) {
          EXPECT_GT(count_ids(plan, R"(.*/rfwd/l\d/(qkv|fc1)/ag)"), 0u) << label;  // the re-run gathers again
        }
      }
}

}  // namespace
}  // namespace strata
