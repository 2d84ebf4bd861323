// The balanced pipeline cut on hosts that differ 2x in speed (models/schedule/
// pipeline_partition.hpp, platforms/test-hetero-8.xml): GPT-2 small on 6 stages, alternately on
// a half-speed and a full-speed GPU. The uniform cut (blocks balanced by FLOPs) gives the slow
// stages as much as the fast ones; the balanced one gives them less. The test derives from the
// partitioner's stage costs what 1F1B's iteration should take with each cut, and holds the
// replay to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "strata/models/experiment.hpp"
#include "strata/models/schedule/pipeline_partition.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
namespace {

const std::string kPlatform = std::string(STRATA_SOURCE_DIR) + "/platforms/test-hetero-8.xml";

double replayed(const Experiment& e, const std::string& platform = kPlatform) {
  return nlohmann::json::parse(run_in_child([&] {
           ReplayOptions options;
           options.keep_trace = false;
           return nlohmann::json(replay(lower(e), platform, options).report.iteration_time_s).dump();
         }))
      .get<double>();
}

// 1F1B with m microbatches on stages of per-microbatch times t_s (forward + backward, the send
// included): stage k runs its m forwards and m backwards back to back once the first microbatch
// has reached it, and its last backward must still go back through the stages before it, so
// T >= sum_{s<k} t_s + m t_k for every k; the slowest stage, with the stages before it, sets T.
double one_f_one_b(const Partition& p, int microbatches) {
  double t = 0, before = 0;
  for (double stage : p.stage_time_s) {
    t = std::max(t, before + microbatches * stage);
    before += stage;
  }
  return t;
}

TEST(PipelinePartition, BalancedCutBeatsTheUniformOneAsTheStageCostsPredict) {
  Experiment e;
  e.model = "gpt2-small";
  e.pp = 6;
  e.microbatches = 12;
  // A vocabulary of 8,000 keeps the last stage's LM head and fp32 cross entropy (52 B per logit,
  // Megatron-LM's) at about two blocks' work: with GPT-2's 50,257 they alone outweigh 12 blocks'
  // worth and set the pipeline's time whatever the cut.
  apply_set(e, "vocab", "8000");
  const Model model = model_of(e);
  const StrategyConfig config = strategy_of(e, model);
  const PipelineCut cut =
      balanced_pipeline_cut(model, config, load_slot_platform(kPlatform), CostModel(), "test");
  ASSERT_EQ(cut.stage_blocks.size(), 6u);
  EXPECT_EQ(std::accumulate(cut.stage_blocks.begin(), cut.stage_blocks.end(), std::int64_t{0}),
            model.num_blocks_or_layers());
  // Stages 0 and 2 run on half-speed hosts: each holds fewer blocks than the fast stage after it
  // (stage 5, fast, holds the LM head and the loss besides its blocks).
  for (std::size_t s : {0, 2}) EXPECT_LT(cut.stage_blocks[s], cut.stage_blocks[s + 1]) << s;
  const double predicted_uniform = one_f_one_b(cut.default_cut, 12);
  const double predicted_balanced = one_f_one_b(cut.balanced, 12);
  const double uniform = replayed(e);
  Experiment balanced = e;
  balanced.stage_blocks = cut.stage_blocks;
  const double faster = replayed(balanced);
  std::printf(
      "gpt2-small pp=6 on test-hetero-8: uniform %.3f ms (1F1B from stage costs %.3f ms), balanced %.3f ms "
      "(%.3f ms): %.1f %% faster, predicted %.1f %%\n",
      uniform * 1e3, predicted_uniform * 1e3, faster * 1e3, predicted_balanced * 1e3,
      100 * (1 - faster / uniform), 100 * (1 - predicted_balanced / predicted_uniform));
  EXPECT_LT(faster, 0.9 * uniform);  // the goal: at least 10 % faster
  // The replay keeps the margin the stage costs predict, to 2 points (the bound leaves out the
  // optimizer step and the gradient accumulation after the flush).
  EXPECT_NEAR(faster / uniform, predicted_balanced / predicted_uniform, 0.02);
}

// Per-stage tensor parallelism chosen with the cut (partition_layers_and_tp) on alike GPUs:
// GPT-2 small cut into one block per stage (pp = 12, tp = 2: 24 GPUs of a100-cluster-64). The
// last stage also holds the LM head (a 768 x 50,257 GEMM, about five blocks' work), so with
// every stage at tp = 2 it is the pipeline's bottleneck whatever the cut. The joint search
// gives it more ranks and the blocks fewer, within the 24 GPUs.
TEST(PipelinePartition, PerStageTensorParallelismRelievesTheHeadStage) {
  const std::string platform = std::string(STRATA_SOURCE_DIR) + "/platforms/a100-cluster-64.xml";
  Experiment e;
  e.model = "gpt2-small";
  e.tp = 2;
  e.pp = 12;
  e.microbatches = 24;
  const Model model = model_of(e);
  const StrategyConfig config = strategy_of(e, model);
  const PipelineCut cut =
      balanced_pipeline_cut(model, config, load_slot_platform(platform), CostModel(), "test");
  ASSERT_EQ(cut.stage_tp.size(), 12u);
  EXPECT_GT(cut.stage_tp.back(), 2);  // the head's stage gets more ranks than tp
  EXPECT_LE(std::accumulate(cut.stage_tp.begin(), cut.stage_tp.end(), 0), 24);
  const double predicted_uniform = one_f_one_b(cut.default_cut, 24);
  const double predicted_joint = one_f_one_b(cut.balanced, 24);
  const double uniform = replayed(e, platform);
  Experiment joint = e;
  joint.tp = 1;
  joint.stage_blocks = cut.stage_blocks;
  joint.stage_tp.emplace(cut.stage_tp.begin(), cut.stage_tp.end());
  const double faster = replayed(joint, platform);
  std::string degrees;
  for (int d : cut.stage_tp) degrees += (degrees.empty() ? "" : ",") + std::to_string(d);
  std::printf(
      "gpt2-small tp=2,pp=12 on a100-cluster-64: uniform %.3f ms (1F1B from stage costs %.3f ms), degrees %s "
      "%.3f ms (%.3f ms): %.1f %% faster, predicted %.1f %%\n",
      uniform * 1e3, predicted_uniform * 1e3, degrees.c_str(), faster * 1e3, predicted_joint * 1e3,
      100 * (1 - faster / uniform), 100 * (1 - predicted_joint / predicted_uniform));
  EXPECT_LT(faster, 0.8 * uniform);
  // Measured 23.2 % faster against 27.3 % predicted: gpt2-small's 1.5 MB TP all-reduces run at
  // about a tenth of NVLink on the A100 NVSwitch curve (bus_bandwidth.hpp), so they weigh on
  // the head's 6-rank stage, which the partitioner prices alone, with no neighbour to wait for.
  EXPECT_NEAR(faster / uniform, predicted_joint / predicted_uniform, 0.05);
}

}  // namespace
}  // namespace strata
