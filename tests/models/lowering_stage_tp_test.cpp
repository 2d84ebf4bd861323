// Per-stage tensor parallelism in lower() (StrategyConfig::stage_tp): each stage's workers, its
// Megatron collectives, the weights each rank holds, and the pipeline transfers between stages
// of different degrees (rank u of a stage of degree q receives from rank u mod p of a stage of
// degree p).
#include <gtest/gtest.h>

#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

StrategyConfig stage_tp(std::vector<int> degrees, std::int64_t microbatches = 2) {
  StrategyConfig config = config_of(1, 1, static_cast<int>(degrees.size()), microbatches);
  config.stage_tp = std::move(degrees);
  return config;
}

double buffer_bytes(const Plan& plan, const std::string& id) {
  for (const Buffer& b : plan.buffers())
    if (b.id == id) return b.bytes;
  ADD_FAILURE() << "no buffer " << id;
  return -1;
}

// tiny_gpt(2) on two stages, the first on 2 ranks, the second on 1: 3 workers.
TEST(LoweringStageTp, EachStageRunsOnItsOwnDegree) {
  const Plan plan = lower(tiny_gpt(2), stage_tp({2, 1}));
  EXPECT_EQ(plan.num_workers(), 3);
  EXPECT_EQ(plan.info.strategy, "dp=1,tp=2+1,pp=2");
  // Stage 0 (the embedding and block l0) on workers 0 and 1, with its TP collectives; stage 1
  // (block l1, the head and the loss) whole on worker 2, with none.
  EXPECT_EQ(plan.task(index_of(plan, "it0/dp0/pp0/tp1/mb0/fwd/l0/qkv")).worker, 1);
  EXPECT_EQ(plan.task(index_of(plan, "it0/dp0/pp1/tp0/mb0/fwd/l1/qkv")).worker, 2);
  EXPECT_EQ(count_ids(plan, "it0/dp0/pp1/tp1/.*"), 0u);
  EXPECT_GT(count_ids(plan, "it0/dp0/pp0/mb0/.*/ar"), 0u);
  EXPECT_EQ(count_ids(plan, "it0/dp0/pp1/mb0/.*/(ar|rs|ag)"), 0u);
  EXPECT_EQ(plan.task(index_of(plan, "it0/dp0/pp0/mb0/fwd/l0/proj/ar")).group, (std::vector<WorkerId>{0, 1}));
  // A block's weights: halved over stage 0's two ranks, whole on stage 1's one.
  EXPECT_DOUBLE_EQ(2 * buffer_bytes(plan, "dp0/pp0/tp0/w/l0/qkv"),
                   buffer_bytes(plan, "dp0/pp1/tp0/w/l1/qkv"));
  // Forward: rank 0 of stage 0 sends to stage 1's only rank; rank 1 sends nothing.
  const TaskIndex send = index_of(plan, "it0/dp0/pp0/tp0/mb0/send/fwd/tp0");
  EXPECT_EQ(plan.task(send).peer, 2);
  EXPECT_EQ(count_ids(plan, "it0/dp0/pp0/tp1/mb0/send/.*"), 0u);
  const TaskIndex recv = index_of(plan, "it0/dp0/pp1/tp0/mb0/recv/fwd");
  EXPECT_EQ(plan.task(recv).peer, 0);
  EXPECT_TRUE(has(plan.task(recv).data_deps, send));
  // Backward: stage 1's rank sends the whole input gradient to both ranks of stage 0.
  for (int u = 0; u < 2; ++u) {
    const TaskIndex back = index_of(plan, cat("it0/dp0/pp1/tp0/mb0/send/bwd/tp", u));
    EXPECT_EQ(plan.task(back).peer, u);
    EXPECT_DOUBLE_EQ(plan.task(back).comm_bytes, plan.task(send).comm_bytes);
    const TaskIndex arrival = index_of(plan, cat("it0/dp0/pp0/tp", u) + "/mb0/recv/bwd");
    EXPECT_EQ(plan.task(arrival).peer, 2);
    EXPECT_TRUE(has(plan.task(arrival).data_deps, back)) << u;
  }
  const RunResult run = run_unit_durations(plan);
  EXPECT_TRUE(run.finished);
  for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6);
}

// Degree 1 then 4: rank u of stage 1 receives from rank u mod 1 = 0, its u-th send.
TEST(LoweringStageTp, ARankSendsToEveryRankItServes) {
  const Plan plan = lower(tiny_gpt(2), stage_tp({1, 4}));
  EXPECT_EQ(plan.num_workers(), 5);
  for (int u = 0; u < 4; ++u) {
    const TaskIndex send = index_of(plan, cat("it0/dp0/pp0/tp0/mb1/send/fwd/tp", u));
    EXPECT_EQ(plan.task(send).peer, 1 + u);
    EXPECT_TRUE(has(plan.task(index_of(plan, cat("it0/dp0/pp1/tp", u) + "/mb1/recv/fwd")).data_deps, send));
  }
  // Only rank 0 of stage 1 sends the gradient back (to stage 0's one rank).
  EXPECT_EQ(count_ids(plan, "it0/dp0/pp1/tp0/mb0/send/bwd/tp0"), 1u);
  EXPECT_EQ(count_ids(plan, "it0/dp0/pp1/tp[123]/mb0/send/bwd.*"), 0u);
  EXPECT_TRUE(run_unit_durations(plan).finished);
}

// Equal degrees are the uniform lowering, task for task.
TEST(LoweringStageTp, EqualDegreesAreTheUniformPlan) {
  StrategyConfig uniform = config_of(2, 2, 2, 2);
  StrategyConfig per_stage = stage_tp({2, 2});
  per_stage.dp = 2;
  const Plan a = lower(tiny_gpt(2), uniform);
  const Plan b = lower(tiny_gpt(2), per_stage);
  ASSERT_EQ(a.size(), b.size());
  for (TaskIndex t = 0; t < a.size(); ++t) {
    EXPECT_EQ(a.task(t).id, b.task(t).id);
    EXPECT_EQ(a.task(t).worker, b.task(t).worker);
    EXPECT_EQ(a.task(t).data_deps, b.task(t).data_deps);
  }
}

TEST(LoweringStageTp, RefusesWhatItDoesNotLower) {
  const Model gpt = tiny_gpt(2);
  StrategyConfig short_list = stage_tp({2});
  short_list.pp = 2;
  EXPECT_EQ(input_error([&] { lower(gpt, short_list); }),
            "--set stage_tp: 1 degrees given for pp=2 (one per stage)");
  EXPECT_EQ(input_error([&] {
              lower(tiny_gpt(2), stage_tp({2, 3}));
            }),
            "--set stage_tp: 3 (stage 1) does not divide the 4 attention heads of tiny-gpt");
  EXPECT_EQ(input_error([&] {
              lower(gpt, stage_tp({0, 1}));
            }),
            "--set stage_tp: 0 (stage 0): a degree is at least 1");
  StrategyConfig both = stage_tp({2, 1});
  both.tp = 2;
  EXPECT_EQ(
      input_error([&] { lower(gpt, both); }),
      "--set stage_tp: conflicts with tp=2 in --strategy (stage_tp gives every stage's degree; give one of "
      "them)");
  StrategyConfig sp = stage_tp({2, 1});
  sp.sequence_parallel = true;
  EXPECT_EQ(
      input_error([&] { lower(gpt, sp); }),
      "--set stage_tp: not with sequence_parallel (stages of different degrees exchange whole activations)");
  EXPECT_EQ(input_error([&] {
              lower(linear_model(2), stage_tp({2, 1}));
            }),
            "--set stage_tp: 2 (stage 0): tensor parallelism needs a transformer model (gpt*)");
}

}  // namespace
}  // namespace strata
