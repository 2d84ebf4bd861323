// Activation recomputation in lower(): re-run tasks, their order before the backward that needs
// them, their TP collectives, and the memory the Plan allocates (Korthikanti et al. 2023).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

StrategyConfig full(RecomputeMethod method, int blocks, StrategyConfig config = config_of(1, 1, 1, 1)) {
  config.recompute = Recompute::full;
  config.recompute_method = method;
  config.recompute_blocks = blocks;
  return config;
}

// Ids of the tasks of worker `prefix` in the order the Dispatcher started them.
std::vector<std::string> started_ids(const Plan& plan, const RunResult& run, const std::string& prefix) {
  std::vector<std::string> out;
  for (TaskIndex i : run.started)
    if (plan.task(i).id.starts_with(prefix)) out.push_back(plan.task(i).id.substr(prefix.size()));
  return out;
}

// 8 fixed layers (one per block) saving 300 fp32 elements (1,200 B) each, with 100-element
// (400 B) inputs and outputs, one sample, one microbatch: without recomputation the forward
// holds all 8 x 1,200 = 9,600 B when the backward starts, and the last layer's backward (which
// reads no gradient) writes its input's gradient, 400 B: 10,000 B. Every peak below is at such
// a backward: what is kept, plus one 400 B gradient.
TEST(LoweringRecompute, FullKeepsOnlyEachChunkInputAndReRunsOneChunkAtATime) {
  const Model model = fixed_model(8, 1000, 300);
  const RunResult none = run_unit_durations(lower(model, config_of(1, 1, 1, 1)));
  EXPECT_DOUBLE_EQ(none.peak_memory[0], 9600 + 400);

  // uniform, 1 block per chunk: 8 chunk inputs of 400 B, plus one chunk re-run (1,200 B) while
  // its backward runs: 3,200 + 1,200 = 4,400 B, i.e. 9,600 - 8 x (1,200 - 400) + 1,200, and
  // the gradient.
  const Plan one = lower(model, full(RecomputeMethod::uniform, 1));
  EXPECT_EQ(count_ids(one, R"(it0/dp0/pp0/tp0/mb0/rfwd/l\d)"), 8u);
  const RunResult one_run = run_unit_durations(one);
  ASSERT_TRUE(one_run.finished);
  EXPECT_DOUBLE_EQ(one_run.peak_memory[0], 4400 + 400);
  EXPECT_NEAR(one_run.net_memory[0], 0, 1e-9);

  // uniform, 2 blocks per chunk: 4 inputs (1,600 B) + a 2-layer re-run (2,400 B) = 4,000 B, and
  // the gradient.
  const Plan two = lower(model, full(RecomputeMethod::uniform, 2));
  EXPECT_DOUBLE_EQ(run_unit_durations(two).peak_memory[0], 4000 + 400);
  // The chunk's first forward keeps its input, the others keep nothing; the re-runs allocate the
  // saved activations and the backward frees them (and the input for the first layer, and the
  // 400 B gradient it read: l7 wrote it, l6 is its last reader).
  const Task& fwd6 = two.task(index_of(two, "it0/dp0/pp0/tp0/mb0/fwd/l6"));
  const Task& fwd7 = two.task(index_of(two, "it0/dp0/pp0/tp0/mb0/fwd/l7"));
  EXPECT_DOUBLE_EQ(fwd6.mem_alloc, 400);
  EXPECT_DOUBLE_EQ(fwd7.mem_alloc, 0);
  EXPECT_DOUBLE_EQ(two.task(index_of(two, "it0/dp0/pp0/tp0/mb0/rfwd/l7")).mem_alloc, 1200);
  EXPECT_DOUBLE_EQ(two.task(index_of(two, "it0/dp0/pp0/tp0/mb0/bwd/l6")).mem_free, 1600 + 400);
  EXPECT_DOUBLE_EQ(two.task(index_of(two, "it0/dp0/pp0/tp0/mb0/bwd/l7")).mem_free, 1200);

  // block, 3 blocks: l0, l1, l2 re-run one by one, l3..l7 keep theirs: 3 x 400 + 5 x 1,200, and
  // the gradient.
  const Plan block = lower(model, full(RecomputeMethod::block, 3));
  EXPECT_EQ(count_ids(block, R"(.*/rfwd/l\d)"), 3u);
  EXPECT_EQ(count_ids(block, R"(.*/rfwd/l[0-2])"), 3u);
  EXPECT_DOUBLE_EQ(run_unit_durations(block).peak_memory[0], 7200 + 400);
}

TEST(LoweringRecompute, AChunkIsReRunWhenItsOutputGradientArrivesRightBeforeItsBackward) {
  const Plan plan = lower(fixed_model(4, 1000, 300), full(RecomputeMethod::uniform, 2));
  const std::string w = "it0/dp0/pp0/tp0/mb0/";
  const RunResult run = run_unit_durations(plan);
  ASSERT_TRUE(run.finished);
  EXPECT_EQ(started_ids(plan, run, w),
            (std::vector<std::string>{"fwd/l0", "fwd/l1", "fwd/l2", "fwd/l3", "rfwd/l2", "rfwd/l3", "bwd/l3",
                                      "bwd/l2", "rfwd/l0", "rfwd/l1", "bwd/l1", "bwd/l0"}));
  // The re-run of chunk {l0, l1} waits (control) for the gradient of its output, l2's input
  // gradient; each re-run reads the previous one's output; the backward reads the re-run.
  const Task& rerun0 = plan.task(index_of(plan, w + "rfwd/l0"));
  EXPECT_TRUE(has(rerun0.control_deps, index_of(plan, w + "bwd/l2")));
  EXPECT_TRUE(has(rerun0.data_deps, index_of(plan, w + "fwd/l0")));
  EXPECT_TRUE(has(plan.task(index_of(plan, w + "rfwd/l1")).data_deps, index_of(plan, w + "rfwd/l0")));
  EXPECT_TRUE(has(plan.task(index_of(plan, w + "bwd/l1")).data_deps, index_of(plan, w + "rfwd/l1")));
  const auto prio = [&](const std::string& id) { return plan.task(index_of(plan, w + id)).priority; };
  EXPECT_LT(prio("bwd/l2"), prio("rfwd/l0"));
  EXPECT_LT(prio("rfwd/l0"), prio("rfwd/l1"));
  EXPECT_LT(prio("rfwd/l1"), prio("bwd/l1"));
}

TEST(LoweringRecompute, FullReRunsTheTransformerBlocksWithTheirTensorParallelAllreduces) {
  const int blocks = 2;
  const Model model = tiny_gpt(blocks);
  const Plan plan = lower(model, full(RecomputeMethod::uniform, 1, config_of(1, 2, 1, 1)));
  // 10 layers per block on each of 2 tp ranks; the embedding and the head are not re-run.
  EXPECT_EQ(count_ids(plan, R"(.*/tp\d/mb0/rfwd/l\d/\w+)"), 2u * 10 * blocks);
  EXPECT_EQ(count_ids(plan, R"(.*/rfwd/(embed|lnf|head|loss))"), 0u);
  // The forward allreduces after proj and fc2 are repeated, and only those.
  EXPECT_EQ(count_ids(plan, R"(it0/dp0/pp0/mb0/rfwd/l\d/(proj|fc2)/ar)"), 2u * blocks);
  EXPECT_EQ(count_ids(plan, R"(.*/rfwd/.*/ar)"), 2u * blocks);
  const TaskIndex ar = index_of(plan, "it0/dp0/pp0/mb0/rfwd/l1/proj/ar");
  EXPECT_DOUBLE_EQ(plan.task(ar).comm_bytes, 8.0 * 8 * 64 * 4);  // mb 8 x seq 8 x hidden 64 x fp32
  for (int t = 0; t < 2; ++t) {
    const std::string p = cat("it0/dp0/pp0/tp", t) + "/mb0/";
    EXPECT_TRUE(has(plan.task(ar).data_deps, index_of(plan, p + "rfwd/l1/proj")));
    EXPECT_TRUE(has(plan.task(index_of(plan, p + "rfwd/l1/res1")).data_deps, ar));
    // Block 1's input (l0's output, 8 x 8 x 64 fp32 = 16,384 B) is kept until ln1's backward,
    // which also frees the gradient of ln1's output it read (16,384 B). The re-run of ln1 does
    // not allocate its saved input again: it is the kept input.
    EXPECT_DOUBLE_EQ(plan.task(index_of(plan, p + "fwd/l1/ln1")).mem_alloc, 16384);
    EXPECT_DOUBLE_EQ(plan.task(index_of(plan, p + "rfwd/l1/ln1")).mem_alloc, 0);
    EXPECT_DOUBLE_EQ(plan.task(index_of(plan, p + "bwd/l1/ln1")).mem_free, 16384 + 16384);
  }
  const RunResult run = run_unit_durations(plan);
  EXPECT_TRUE(run.finished);
  for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6);
}

// tiny_gpt: s = 8, h = 64, a = 4, 8 sequences per microbatch, fp32. The attention core saves
// 3·s·h + 2.5·a·s² = 2,176 elements per sample, of which 2.5·a·s² = 640 are s x s: per tp rank
// (tp = 2) 2,176 x 8 x 4 / 2 = 34,816 B, of which 10,240 B are freed after the forward.
TEST(LoweringRecompute, SelectiveReRunsTheAttentionCoreAndKeepsOnlyItsInputs) {
  StrategyConfig config = config_of(1, 2, 1, 1);
  config.recompute = Recompute::selective;
  const Plan plan = lower(tiny_gpt(2), config);
  EXPECT_EQ(count_ids(plan, R"(.*/rfwd/.*)"), 2u * 2);  // tp x blocks
  const std::string w = "it0/dp0/pp0/tp1/mb0/";
  const Task& fwd = plan.task(index_of(plan, w + "fwd/l1/attn"));
  const Task& rerun = plan.task(index_of(plan, w + "rfwd/l1/attn"));
  const Task& bwd = plan.task(index_of(plan, w + "bwd/l1/attn"));
  EXPECT_EQ(rerun.kind, TaskKind::attention_fwd);
  EXPECT_DOUBLE_EQ(rerun.flops, fwd.flops);
  EXPECT_DOUBLE_EQ(fwd.mem_alloc, 34816);
  EXPECT_DOUBLE_EQ(fwd.mem_free, 10240);
  EXPECT_DOUBLE_EQ(rerun.mem_alloc, 10240);
  // And the gradient of its output it read (8 x 8 x 64 / 2 x 4 B = 8,192 B per rank).
  EXPECT_DOUBLE_EQ(bwd.mem_free, 34816 + 8192);
  EXPECT_TRUE(has(rerun.control_deps, index_of(plan, w + "bwd/l1/proj")));
  EXPECT_TRUE(has(bwd.data_deps, index_of(plan, w + "rfwd/l1/attn")));
  const auto prio = [&](const std::string& id) { return plan.task(index_of(plan, w + id)).priority; };
  EXPECT_LT(prio("bwd/l1/proj"), prio("rfwd/l1/attn"));
  EXPECT_LT(prio("rfwd/l1/attn"), prio("bwd/l1/attn"));

  // One worker, the whole forward held at the backward's start: selective holds 2 blocks x
  // 2.5·a·s² x 8 x 4 B = 2 x 20,480 B less (the re-run of the last core comes after the
  // backward freed more than that: the block's MLP and the head).
  StrategyConfig single = config_of(1, 1, 1, 1);
  const RunResult none = run_unit_durations(lower(tiny_gpt(2), single));
  single.recompute = Recompute::selective;
  const RunResult selective = run_unit_durations(lower(tiny_gpt(2), single));
  ASSERT_TRUE(selective.finished);
  EXPECT_DOUBLE_EQ(none.peak_memory[0] - selective.peak_memory[0], 2 * 20480);
}

TEST(LoweringRecompute, EveryRecomputingPlanUpToEightWorkersRunsToTheEnd) {
  for (int tp : {1, 2})
    for (int pp : {1, 2, 4})
      for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
        for (Recompute recompute : {Recompute::selective, Recompute::full})
          for (RecomputeMethod method : {RecomputeMethod::uniform, RecomputeMethod::block}) {
            StrategyConfig config = config_of(2, tp, pp, 2 * pp);
            config.schedule = schedule;
            config.iterations = 2;
            config.recompute = recompute;
            config.recompute_method = method;
            const Plan plan = lower(tiny_gpt(4), config);
            const RunResult run = run_unit_durations(plan);
            const std::string label = config.to_string() + " " + std::string(to_string(schedule)) + " " +
                                      std::string(to_string(recompute)) + " " +
                                      std::string(to_string(method));
            EXPECT_TRUE(run.finished) << label;
            for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6) << label;
            const Plan again = lower(tiny_gpt(4), config);
            ASSERT_EQ(again.size(), plan.size()) << label;
            for (TaskIndex i = 0; i < plan.size(); ++i) ASSERT_EQ(again.task(i).id, plan.task(i).id) << label;
          }
}

// FlashAttention (Dao 2023): the core keeps Q, K, V and one fp32 logsumexp per row and head, not
// the s x s scores. tiny_gpt: s = 8, h = 64, a = 4, fp32, 8 samples per microbatch, tp = 2:
// 3·s·h x 4 B = 6,144 B and 4·a·s = 128 B per sample, x 8 / 2 = 25,088 B per rank (34,816 B
// without flash attention, SelectiveReRunsTheAttentionCoreAndKeepsOnlyItsInputs).
TEST(LoweringRecompute, FlashAttentionKeepsItsStatisticsNotTheScores) {
  StrategyConfig config = config_of(1, 2, 1, 1);
  config.flash_attention = true;
  const Plan plan = lower(tiny_gpt(2), config);
  const std::string w = "it0/dp0/pp0/tp1/mb0/";
  const Task& fwd = plan.task(index_of(plan, w + "fwd/l1/attn"));
  const Task& bwd = plan.task(index_of(plan, w + "bwd/l1/attn"));
  EXPECT_EQ(fwd.attr_int("flash"), 1);
  EXPECT_EQ(bwd.attr_int("flash"), 1);
  EXPECT_DOUBLE_EQ(bwd.flops, 2.5 * fwd.flops);  // five s x s x d matmuls for the forward's two
  EXPECT_DOUBLE_EQ(fwd.mem_alloc, 25088);
  EXPECT_DOUBLE_EQ(fwd.mem_free, 0);
  EXPECT_DOUBLE_EQ(bwd.mem_free, 25088 + 8192);  // and the 8,192 B gradient of its output
  EXPECT_EQ(count_ids(plan, R"(.*/rfwd/.*)"), 0u);

  // With selective recomputation the flash forward is re-run; between its forward and the re-run
  // the core keeps Q, K and V only: the statistics, 128 x 8 / 2 = 512 B, are made again.
  config.recompute = Recompute::selective;
  const Plan selective = lower(tiny_gpt(2), config);
  EXPECT_DOUBLE_EQ(selective.task(index_of(selective, w + "fwd/l1/attn")).mem_free, 512);
  EXPECT_DOUBLE_EQ(selective.task(index_of(selective, w + "rfwd/l1/attn")).mem_alloc, 512);
  EXPECT_EQ(selective.task(index_of(selective, w + "rfwd/l1/attn")).attr_int("flash"), 1);

  // One worker: the whole forward is held when the backward starts; flash attention holds
  // 2 blocks x (2.5·a·s² x 4 B - 4·a·s B) x 8 = 2 x (2,560 - 128) x 8 = 38,912 B less.
  StrategyConfig single = config_of(1, 1, 1, 1);
  const RunResult none = run_unit_durations(lower(tiny_gpt(2), single));
  single.flash_attention = true;
  const RunResult flash = run_unit_durations(lower(tiny_gpt(2), single));
  ASSERT_TRUE(flash.finished);
  EXPECT_DOUBLE_EQ(none.peak_memory[0] - flash.peak_memory[0], 38912);
  EXPECT_NEAR(flash.net_memory[0], 0, 1e-9);
}

}  // namespace
}  // namespace strata
