// Interleaved 1F1B in lower() (Narayanan et al. 2021, section 2.2.2, fig. 4): pp x v model
// chunks, chunk c on pipeline rank c % pp, each rank running Megatron-LM's order of its chunks'
// forwards and backwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lowering_test_support.hpp"
#include "strata/models/cost/memory_model.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

StrategyConfig interleaved(int dp, int tp, int pp, int v, std::int64_t microbatches) {
  StrategyConfig config = config_of(dp, tp, pp, microbatches);
  config.schedule = PipelineSchedule::one_f_one_b;
  config.interleave = v;
  return config;
}

// The order of rank r's forwards ("F<local chunk>.<microbatch>") and backwards ("B...") in
// iteration 0, read from the priorities of each slot's first task: the forward of the chunk's
// first layer, the backward of its last layer. linear_model(pp * v): one layer fc<c> per chunk.
std::vector<std::string> rank_order(const Plan& plan, int pp, int v, int m, int r) {
  std::vector<std::pair<std::int64_t, std::string>> slots;
  const std::string prefix = cat("it0/dp0/pp", r) + "/tp0/";
  for (int q = 0; q < v; ++q)
    for (int j = 0; j < m; ++j) {
      const std::string layer = cat("fc", q * pp + r);
      const std::string name = cat("", q) + "." + std::to_string(j);
      slots.emplace_back(plan.task(index_of(plan, prefix + cat("mb", j) + "/fwd/" + layer)).priority,
                         "F" + name);
      slots.emplace_back(plan.task(index_of(plan, prefix + cat("mb", j) + "/bwd/" + layer)).priority,
                         "B" + name);
    }
  std::sort(slots.begin(), slots.end());
  std::vector<std::string> out;
  for (const auto& slot : slots) out.push_back(slot.second);
  return out;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// pp = 4, v = 2, m = 8, written by hand from Megatron-LM's schedule
// (forward_backward_pipelining_with_interleaving, megatron/core/pipeline_parallel/schedules.py):
// the k-th forward (k = 0..15) runs local chunk (k mod 8) / 4 on microbatch (k / 8) * 4 + k mod 4,
//   F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 F0.4 F0.5 F0.6 F0.7 F1.4 F1.5 F1.6 F1.7,
// the k-th backward chunk 1 - (k mod 8) / 4 on the same microbatch,
//   B1.0 B1.1 B1.2 B1.3 B0.0 B0.1 B0.2 B0.3 B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7;
// rank r runs 2 (pp - r - 1) + (v - 1) pp warm-up forwards (10, 8, 6, 4), then one forward and
// one backward in turn, then the remaining backwards.
TEST(LoweringInterleave, EachRankRunsMegatronsOrder) {
  const Plan plan = lower(linear_model(8), interleaved(1, 1, 4, 2, 8));
  EXPECT_EQ(plan.info.schedule_label(), "1f1b");
  const std::vector<std::string> expected[4] = {
      split("F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 F0.4 F0.5 "  // 10 warm-up forwards
            "F0.6 B1.0 F0.7 B1.1 F1.4 B1.2 F1.5 B1.3 F1.6 B0.0 F1.7 B0.1 "
            "B0.2 B0.3 B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7"),
      split("F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 "  // 8
            "F0.4 B1.0 F0.5 B1.1 F0.6 B1.2 F0.7 B1.3 F1.4 B0.0 F1.5 B0.1 F1.6 B0.2 F1.7 B0.3 "
            "B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7"),
      split("F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 "  // 6
            "F1.2 B1.0 F1.3 B1.1 F0.4 B1.2 F0.5 B1.3 F0.6 B0.0 F0.7 B0.1 F1.4 B0.2 F1.5 B0.3 "
            "F1.6 B1.4 F1.7 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7"),
      split("F0.0 F0.1 F0.2 F0.3 "  // 4
            "F1.0 B1.0 F1.1 B1.1 F1.2 B1.2 F1.3 B1.3 F0.4 B0.0 F0.5 B0.1 F0.6 B0.2 F0.7 B0.3 "
            "F1.4 B1.4 F1.5 B1.5 F1.6 B1.6 F1.7 B1.7 B0.4 B0.5 B0.6 B0.7"),
  };
  for (int r = 0; r < 4; ++r) EXPECT_EQ(rank_order(plan, 4, 2, 8, r), expected[r]) << "rank " << r;
}

// Chunk c's output goes from rank c % pp to rank (c + 1) % pp: from the last rank to rank 0 for
// the next chunk; the ids carry the chunk (c<k>) only when interleaved.
TEST(LoweringInterleave, ChunksExchangeActivationsAndGradientsAcrossTheRing) {
  const Plan plan = lower(linear_model(8), interleaved(1, 1, 4, 2, 4));
  const Task& send = plan.task(index_of(plan, "it0/dp0/pp3/tp0/mb1/send/fwd/c3"));
  EXPECT_EQ(send.worker, 3);
  EXPECT_EQ(send.peer, 0);
  const TaskIndex recv = index_of(plan, "it0/dp0/pp0/tp0/mb1/recv/fwd/c4");
  EXPECT_EQ(plan.task(recv).peer, 3);
  EXPECT_TRUE(has(plan.task(recv).data_deps, index_of(plan, "it0/dp0/pp3/tp0/mb1/send/fwd/c3")));
  EXPECT_TRUE(has(plan.task(index_of(plan, "it0/dp0/pp0/tp0/mb1/fwd/fc4")).data_deps, recv));
  const Task& send_bwd = plan.task(index_of(plan, "it0/dp0/pp0/tp0/mb1/send/bwd/c4"));
  EXPECT_EQ(send_bwd.peer, 3);
  // 7 chunk boundaries x 4 microbatches x (send, recv) x (fwd, bwd).
  EXPECT_EQ(count_ids(plan, R"(it0/.*/(send|recv)/(fwd|bwd)/c\d)"), 7u * 4u * 4u);
  EXPECT_EQ(count_ids(plan, R"(it0/dp0/pp0/tp0/opt/c[04])"), 2u);  // one step per chunk
  // Without interleaving no id changes shape.
  const Plan plain = lower(linear_model(8), interleaved(1, 1, 4, 1, 4));
  EXPECT_EQ(count_ids(plain, R"(.*/c\d+)"), 0u);
  EXPECT_GE(plain.find("it0/dp0/pp3/tp0/mb1/recv/fwd"), 0);
}

// The in-flight limit of Megatron's warm-up: F(j) of a chunk waits for the backward before it in
// the rank's order. Rank 0 (pp = 4, v = 2, m = 8; local chunk 0 is fc0, 1 is fc4), order above:
// F0.6 before any backward (no wait), F0.7 after B1.0, F1.4 after B1.1; rank 3 (fc3, fc7): F1.1
// after B1.0.
TEST(LoweringInterleave, ForwardsWaitForThePrecedingBackward) {
  const Plan plan = lower(linear_model(8), interleaved(1, 1, 4, 2, 8));
  const auto control = [&](const std::string& id) { return plan.task(index_of(plan, id)).control_deps; };
  const std::string r0 = "it0/dp0/pp0/tp0/";
  const std::string r3 = "it0/dp0/pp3/tp0/";
  EXPECT_TRUE(has(control(r0 + "mb7/fwd/fc0"), index_of(plan, r0 + "mb0/bwd/fc4")));
  EXPECT_TRUE(has(control(r0 + "mb4/fwd/fc4"), index_of(plan, r0 + "mb1/bwd/fc4")));
  EXPECT_TRUE(has(control(r3 + "mb1/fwd/fc7"), index_of(plan, r3 + "mb0/bwd/fc7")));
  EXPECT_FALSE(has(control(r0 + "mb6/fwd/fc0"), index_of(plan, r0 + "mb0/bwd/fc4")));
}

// Plans of several configurations validate (lower() calls Plan::validate: unique ids, acyclic)
// and run to the end on the Dispatcher, every allocation freed.
TEST(LoweringInterleave, PlansRunToTheEnd) {
  struct Case {
    int dp, tp, pp, v, m;
    Recompute recompute;
    bool sp;
    int zero;
  };
  const Case cases[] = {
      {1, 1, 2, 2, 2, Recompute::none, false, 0},      {2, 1, 2, 2, 4, Recompute::none, false, 0},
      {1, 2, 2, 2, 4, Recompute::selective, true, 0},  {2, 2, 4, 2, 8, Recompute::full, false, 1},
      {2, 1, 2, 4, 6, Recompute::full, false, 2},      {2, 2, 2, 2, 2, Recompute::none, true, 3},
      {2, 1, 4, 2, 4, Recompute::selective, false, 3}, {1, 1, 2, 8, 4, Recompute::none, false, 0},
  };
  for (const Case& c : cases) {
    StrategyConfig config = interleaved(c.dp, c.tp, c.pp, c.v, c.m);
    config.iterations = 2;
    config.recompute = c.recompute;
    config.sequence_parallel = c.sp;
    config.zero = c.zero;
    const Plan plan = lower(tiny_gpt(16), config);
    const RunResult run = run_unit_durations(plan);
    EXPECT_TRUE(run.finished) << config.to_string();
    for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6) << config.to_string();
  }
}

// Activations in flight: 10 layers of 100 saved elements (fp32: 400 B a microbatch), pp = 2,
// v = 5 (one layer a chunk), m = 4. Megatron's warm-up on rank 0 is min(2 (2 - 0 - 1) + 4 x 2,
// 20) = 10 chunk-microbatches, plus the one whose forward comes before the first backward: 11
// chunks of 400 B = 4400 B; rank 1: 8 + 1 = 9, 3600 B. The memory model counts the same
// (memory_model.hpp: min(m v, 2 (pp - s - 1) + (v - 1) pp + 1) chunks, each 1/v of the stage).
// Plain 1F1B would hold pp - s = 2 microbatches of the stage's 5 layers on rank 0: 4000 B. The
// replay's peaks also hold a backward's two gradients (the one it reads and the one it writes,
// 100 elements each: 800 B), which the memory model leaves out.
TEST(LoweringInterleave, PeakActivationsFollowMegatronsWarmup) {
  const Model model = fixed_model(10);
  StrategyConfig config = interleaved(1, 1, 2, 5, 4);
  config.global_batch = 4;  // one sample a microbatch
  const RunResult run = run_unit_durations(lower(model, config));
  ASSERT_TRUE(run.finished);
  const double gradients = 2 * 100 * 4;
  EXPECT_DOUBLE_EQ(run.peak_memory[0], 4400 + gradients);
  EXPECT_DOUBLE_EQ(run.peak_memory[1], 3600 + gradients);
  EXPECT_DOUBLE_EQ(worker_memory(model, config, 0).activations, 4400);
  EXPECT_DOUBLE_EQ(worker_memory(model, config, 1).activations, 3600);
  config.interleave = 1;
  EXPECT_DOUBLE_EQ(run_unit_durations(lower(model, config)).peak_memory[0], 4000 + gradients);
}

// With one layer a chunk and unit durations for every task, interleaving shortens the run: the
// pipeline fills by chunks of 1/v of a stage.
TEST(LoweringInterleave, InterleavingShortensTheUnitRun) {
  const Model model = linear_model(8);
  const RunResult plain = run_unit_durations(lower(model, interleaved(1, 1, 4, 1, 8)));
  const RunResult two = run_unit_durations(lower(model, interleaved(1, 1, 4, 2, 8)));
  ASSERT_TRUE(plain.finished);
  ASSERT_TRUE(two.finished);
  EXPECT_LT(two.makespan, plain.makespan);
}

// Gradient buckets (one layer each, one bucket per block) are numbered over a rank's chunks in
// issue order: rank 0's last chunk (fc4) finishes its backward first, b0, then chunk 0 (fc0),
// b1. With ddp=after_flush they make one chain after the rank's flush, which ends with chunk 0's
// last backward (microbatch 3).
TEST(LoweringInterleave, BucketsSpanTheRanksChunks) {
  StrategyConfig config = interleaved(2, 1, 4, 2, 4);
  config.ddp = DdpMode::after_flush;
  const Plan plan = lower(linear_model(8), config);
  const Task& b0 = plan.task(index_of(plan, "it0/pp0/tp0/ar/b0"));
  const TaskIndex b1 = index_of(plan, "it0/pp0/tp0/ar/b1");
  EXPECT_EQ(plan.buffer(b0.reads.front()).id, "dp0/pp0/tp0/wgrad/fc4");
  EXPECT_EQ(plan.buffer(plan.task(b1).reads.front()).id, "dp0/pp0/tp0/wgrad/fc0");
  EXPECT_LT(b0.priority, plan.task(b1).priority);
  EXPECT_TRUE(has(plan.task(b1).control_deps, index_of(plan, "it0/pp0/tp0/ar/b0")));
  EXPECT_TRUE(has(b0.control_deps, index_of(plan, "it0/dp1/pp0/tp0/mb3/bwd/fc0")));
  EXPECT_EQ(count_ids(plan, R"(it0/pp0/tp0/ar/b\d+)"), 2u);
}

TEST(LoweringInterleave, InputErrorsStayOneLine) {
  // 8 layers do not make 3 x 2 chunks: check_strategy's line, before any lowering.
  EXPECT_NE(
      input_error([] { lower(linear_model(8), interleaved(1, 1, 3, 2, 6)); }).find("--set interleave=2"),
      std::string::npos);
}

}  // namespace
}  // namespace strata
