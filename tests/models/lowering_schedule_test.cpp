// Pipeline schedules in lower() beyond GPipe and 1F1B: ZB-H1 (Qi et al., ICLR 2024, "Zero Bubble
// Pipeline Parallelism"), its weight-gradient (W) tasks deferred into the cool-down bubbles.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

// 4 linear layers (backward data B and weight W tasks), pp = 2 (2 layers a stage), 4 microbatches.
// Stage 0 defers pp - 1 - 0 = 1 W: F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3; stage 1 defers none:
// F0 B0 W0 F1 B1 W1 ...
TEST(LoweringSchedule, ZeroBubbleDefersTheWeightGradientsIntoTheBubble) {
  StrategyConfig config = config_of(1, 1, 2, 4);
  config.schedule = PipelineSchedule::zb_h1;
  const Plan plan = lower(linear_model(4), config);
  EXPECT_EQ(plan.info.schedule_label(), "zb-h1");
  const auto prio = [&](const std::string& id) { return plan.task(index_of(plan, id)).priority; };
  const std::string s0 = "it0/dp0/pp0/tp0/";
  const std::string s1 = "it0/dp0/pp1/tp0/";
  EXPECT_GT(prio(s0 + "mb0/bwdw/fc0"), prio(s0 + "mb1/bwd/fc0"));   // W0 after B1
  EXPECT_LT(prio(s0 + "mb0/bwdw/fc0"), prio(s0 + "mb3/fwd/fc0"));   // and before F3
  EXPECT_GT(prio(s0 + "mb3/bwdw/fc1"), prio(s0 + "mb2/bwdw/fc1"));  // W3 last
  EXPECT_GT(prio(s0 + "mb3/bwdw/fc1"), prio(s0 + "mb3/bwd/fc0"));
  EXPECT_LT(prio(s1 + "mb0/bwdw/fc3"), prio(s1 + "mb1/fwd/fc2"));  // stage 1: W0 before F1
  // The same tasks as 1F1B, and its in-flight limit.
  config.schedule = PipelineSchedule::one_f_one_b;
  const Plan one_f_one_b = lower(linear_model(4), config);
  EXPECT_EQ(plan.size(), one_f_one_b.size());
  EXPECT_TRUE(
      has(plan.task(index_of(plan, s0 + "mb2/fwd/fc0")).control_deps, index_of(plan, s0 + "mb0/bwd/fc0")));
  // A deferred W still reads its layer's input and its output's gradient: the backward data
  // keeps them, W frees them.
  const Task& fwd = plan.task(index_of(plan, s0 + "mb0/fwd/fc1"));
  const auto output_grad = std::find_if(plan.buffers().begin(), plan.buffers().end(),
                                        [](const Buffer& b) { return b.id == "dp0/pp0/tp0/mb0/grad/fc1"; });
  ASSERT_NE(output_grad, plan.buffers().end());
  EXPECT_DOUBLE_EQ(plan.task(index_of(plan, s0 + "mb0/bwd/fc1")).mem_free, 0);
  EXPECT_DOUBLE_EQ(plan.task(index_of(plan, s0 + "mb0/bwdw/fc1")).mem_free,
                   fwd.mem_alloc + output_grad->bytes);
  const RunResult zb = run_unit_durations(plan);
  const RunResult base = run_unit_durations(one_f_one_b);
  ASSERT_TRUE(zb.finished);
  for (double net : zb.net_memory) EXPECT_NEAR(net, 0, 1e-9);
  EXPECT_LE(zb.makespan, base.makespan);
}

TEST(LoweringSchedule, ZeroBubblePlansRunToTheEnd) {
  for (int pp : {2, 4})
    for (int tp : {1, 2})
      for (Recompute recompute : {Recompute::none, Recompute::full}) {
        StrategyConfig config = config_of(2, tp, pp, 2 * pp);
        config.schedule = PipelineSchedule::zb_h1;
        config.iterations = 2;
        config.recompute = recompute;
        config.sequence_parallel = tp > 1;
        const RunResult run = run_unit_durations(lower(tiny_gpt(4), config));
        EXPECT_TRUE(run.finished) << config.to_string();
        for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6) << config.to_string();
      }
}

}  // namespace
}  // namespace strata
