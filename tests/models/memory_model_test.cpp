// Memory model on hand-built models, so that every byte is derived by hand.
#include "strata/models/cost/memory_model.hpp"
#include "estimate_fixtures.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

using estimate_test::config_with;

// `blocks` blocks of one linear layer each: 1000 parameters, 100 saved elements per sample,
// equal FLOPs (so any balanced partition cuts them evenly).
Model uniform_model(int blocks) {
  Model model;
  model.name = "uniform";
  model.family = "synthetic";
  for (int b = 0; b < blocks; ++b) {
    Layer layer;
    layer.name = std::string("l").append(std::to_string(b));
    layer.op = LayerOp::linear;
    layer.block = b;
    layer.params = 1000;
    layer.fwd_flops = 2e6;
    layer.bwd_data_flops = 2e6;
    layer.bwd_weight_flops = 2e6;
    layer.out_elems = 100;
    layer.saved_elems = 100;
    model.layers.push_back(layer);
  }
  return model;
}

TEST(MemoryModel, BytesPerParameterFollowZeRO) {
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::adam, DType::bf16).total(), 16);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::adam, DType::bf16).optimizer, 12);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::adam, DType::fp16).params, 2);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::adam, DType::fp32).total(), 16);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::adam, DType::fp32).optimizer, 8);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::sgd, DType::fp32).total(), 12);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::sgd, DType::bf16).total(), 12);
  EXPECT_DOUBLE_EQ(bytes_per_param(Optimizer::adam, DType::fp64).total(), 32);
}

TEST(MemoryModel, MixedPrecisionAdamHoldsSixteenBytesPerParameter) {
  // 4 blocks x 1000 params: 2 + 2 + 12 B each. Batch 8 in one microbatch: 400 saved elements
  // per sample x 8 samples x 2 B = 6400 B.
  const Model model = uniform_model(4);
  const auto config = config_with(1, 1, 1, 1, 8, DType::bf16, Optimizer::adam);
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.params, 8000);
  EXPECT_DOUBLE_EQ(m.grads, 8000);
  EXPECT_DOUBLE_EQ(m.optimizer, 48000);
  EXPECT_DOUBLE_EQ(m.params + m.grads + m.optimizer, 16 * 4000);
  EXPECT_DOUBLE_EQ(m.activations, 6400);
  EXPECT_DOUBLE_EQ(m.total, 70400);
  EXPECT_DOUBLE_EQ(peak_worker_memory(model, config), 70400);
}

TEST(MemoryModel, MicrobatchSizeAndDefaults) {
  const Model model = uniform_model(4);
  EXPECT_DOUBLE_EQ(microbatch_size(model, config_with(2, 1, 2, 4, 32, DType::fp32, Optimizer::adam)),
                   4);  // 32 / 2 / 4
  // microbatches 0 = pp.
  EXPECT_EQ(microbatch_count(config_with(1, 1, 4, 0, 8, DType::fp32, Optimizer::adam)), 4);
  EXPECT_DOUBLE_EQ(microbatch_size(model, config_with(1, 1, 4, 0, 8, DType::fp32, Optimizer::adam)), 2);
}

TEST(MemoryModel, GPipeHoldsEveryMicrobatch) {
  // pp = 2 cuts blocks {0, 1} | {2, 3}. Batch 8 in 4 microbatches of 2: one microbatch saves
  // 200 elements x 2 samples x 2 B = 800 B per stage; GPipe holds 4 of them on every stage.
  const Model model = uniform_model(4);
  auto config = config_with(1, 1, 2, 4, 8, DType::bf16, Optimizer::adam);
  config.schedule = PipelineSchedule::gpipe;
  for (int stage : {0, 1}) {
    const MemoryBreakdown m = worker_memory(model, config, stage);
    EXPECT_DOUBLE_EQ(m.activations, 4 * 800.0) << "stage " << stage;
    EXPECT_DOUBLE_EQ(m.params, 2000 * 2.0) << "stage " << stage;
  }
}

TEST(MemoryModel, OneFOneBHoldsItsWarmUpDepth) {
  // Same microbatch of 800 B; 1F1B holds min(m, pp - s): stage 0 min(4, 2) = 2, stage 1 one.
  const Model model = uniform_model(4);
  auto config = config_with(1, 1, 2, 4, 8, DType::bf16, Optimizer::adam);
  config.schedule = PipelineSchedule::one_f_one_b;
  EXPECT_DOUBLE_EQ(worker_memory(model, config, 0).activations, 2 * 800.0);
  EXPECT_DOUBLE_EQ(worker_memory(model, config, 1).activations, 1 * 800.0);
  // States 2000 x 16 B on each stage; the peak is stage 0's.
  EXPECT_DOUBLE_EQ(peak_worker_memory(model, config), 32000 + 1600);
  // Fewer microbatches than the warm-up depth: m bounds it.
  config.microbatches = 1;  // batch 8 in one microbatch: 200 x 8 x 2 B = 3200 B
  EXPECT_DOUBLE_EQ(worker_memory(model, config, 0).activations, 3200);
}

TEST(MemoryModel, TensorParallelDividesOnlySplitLayers) {
  // One block: a column-split linear (1000 params, 100 saved) and a replicated norm (10
  // params, 100 saved). tp = 2, fp32 Adam: (500 + 10) x 16 B = 8160 B of states. A
  // column-parallel linear keeps its input, the replicated hidden state, whole on every tp rank
  // (Korthikanti et al. 2023, section 4.2.1; issue 15 changed this figure from 2400 B): batch 4
  // in one microbatch: (100 + 100) x 4 x 4 B = 3200 B of activations.
  Model model;
  model.name = "tp";
  Layer linear;
  linear.name = "fc";
  linear.op = LayerOp::linear;
  linear.split = TensorSplit::column;
  linear.params = 1000;
  linear.fwd_flops = 1e6;
  linear.saved_elems = 100;
  Layer norm;
  norm.name = "ln";
  norm.op = LayerOp::norm;
  norm.params = 10;
  norm.fwd_flops = 1e3;
  norm.saved_elems = 100;
  model.layers = {linear, norm};
  const auto config = config_with(1, 2, 1, 1, 4, DType::fp32, Optimizer::adam);
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.params + m.grads + m.optimizer, 8160);
  EXPECT_DOUBLE_EQ(m.activations, 3200);
  EXPECT_DOUBLE_EQ(m.total, 11360);
  // Data parallelism replicates states and divides the batch: dp = 2, batch 8 -> same worker.
  EXPECT_DOUBLE_EQ(worker_memory(model, config_with(2, 2, 1, 1, 8, DType::fp32, Optimizer::adam), 0).total,
                   11360);
}

TEST(MemoryModel, SgdWithMomentumInFp32) {
  // 4000 params x (4 + 4 + 4) B.
  const Model model = uniform_model(4);
  const auto config = config_with(1, 1, 1, 1, 1, DType::fp32, Optimizer::sgd);
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.params + m.grads + m.optimizer, 48000);
  EXPECT_DOUBLE_EQ(m.activations, 400 * 4.0);
}

// --- activations: Korthikanti et al. 2023 (arXiv:2205.05198), section 4 and Table 2 ---------

// A small GPT: s = 16, h = 8, a = 2, vocabulary 32, 4 blocks; one sample per microbatch.
// s·b·h = 128 and 5as/h = 5·2·16/8 = 20, so one block keeps, in bytes at 16 bits (Table 2):
//   no parallelism      sbh (34 + 5as/h)             = 128 x 54           = 6912
//   tp = 2              sbh (10 + 24/t + 5as/(ht))   = 128 x (10 + 12 + 10) = 4096
//   tp = 2 + SP         sbh/t (34 + 5as/h)           = 64 x 54            = 3456
//   tp = 2, selective   sbh (10 + 24/t)              = 128 x 22           = 2816
//   tp = 2 + SP, sel.   sbh 34/t                     = 64 x 34            = 2176
//   full recompute      2 sbh (2 sbh / t with SP)    = 256 (128)
// Outside the blocks (section 4.3), per sample: the embedding keeps its dropout mask sbh bytes
// and its token ids (s elements, 32 B; strata's zoo counts them, the paper does not), whole on
// every tp rank without SP, divided by t with it: 160 B (80 B); the final norm and the LM head
// keep their inputs, 2sbh each: 256 + 256 B (128 + 128 B with SP); the loss its fp32 logits
// 4sbv/t = 4 x 16 x 32 / 2 = 1024 B (2048 B at t = 1). Extras: 1696 B at tp = 2, 1360 B with
// SP (the paper's 4sbh/t (1 + v/h) = 1280 B plus the embedding's 80 B), 2720 B at t = 1.
Model small_gpt(int layers = 4) { return make_gpt("small", {layers, 8, 2, 16, 32}); }

StrategyConfig gpt_config(int tp) {
  StrategyConfig config = config_with(1, tp, 1, 1, 1, DType::bf16, Optimizer::adam);
  return config;
}

double activation_bytes(const Model& model, const StrategyConfig& config) {
  return activation_bytes_per_sample(model, config, chunk_cuts(model, config), 0);
}

TEST(MemoryModel, GptBlockWithoutParallelismIsKorthikantiEquationOne) {
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), gpt_config(1)), 4 * 6912 + 2720);
}

TEST(MemoryModel, TensorParallelHoldsTheReplicatedActivationsWhole) {
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), gpt_config(2)), 4 * 4096 + 1696);
}

TEST(MemoryModel, SequenceParallelDividesEveryActivationByTp) {
  StrategyConfig config = gpt_config(2);
  config.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * 3456 + 1360);
}

TEST(MemoryModel, SelectiveRecomputeAndFlashAttentionDropTheScoreTerm) {
  StrategyConfig config = gpt_config(2);
  config.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * 2816 + 1696);
  config.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * 2176 + 1360);
  // FlashAttention keeps no s x s tensor either, but its softmax statistics: one fp32 logsumexp
  // per row and head, 4·a·s = 128 B per block, 64 B per tp rank.
  config.recompute = Recompute::none;
  config.flash_attention = true;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * (2176 + 64) + 1360);
  // With selective recomputation as well they are made again by the re-run (a transient).
  config.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * 2176 + 1360);
}

TEST(MemoryModel, FullRecomputeKeepsOneBlockInputPerCheckpoint) {
  StrategyConfig config = gpt_config(2);
  config.recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * 256 + 1696);
  // Uniform chunks of two blocks: two checkpoints for four blocks.
  config.recompute_blocks = 2;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 2 * 256 + 1696);
  // Method block: the first two blocks checkpointed, the other two keep everything.
  config.recompute_method = RecomputeMethod::block;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 2 * 256 + 2 * 4096 + 1696);
  // With sequence parallelism the checkpoints are sharded too.
  config.recompute_method = RecomputeMethod::uniform;
  config.recompute_blocks = 1;
  config.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(activation_bytes(small_gpt(), config), 4 * 128 + 1360);
}

// Table 2's formulas at the shapes of the paper's Table 3 (s = 2048, t = 8, one sample): one
// transformer block per GPU, measured as the difference between a 2-block and a 1-block model
// (same vocabulary, so everything outside the blocks cancels).
double paper_block_bytes(double s, double h, double a, double t, bool sp, bool selective) {
  const double sbh = s * h;
  const double scores = selective ? 0 : 5 * a * s / h;
  return sp ? sbh / t * (34 + scores) : sbh * (10 + 24 / t + scores / t);
}

TEST(MemoryModel, PaperModelsMatchTableTwoPerBlock) {
  struct Row {
    const char* name;
    int h, a;
  };
  // Korthikanti et al., Table 3: 22B, 175B (GPT-3), 530B (MT-NLG), 1T; all at t = 8.
  for (const Row& row :
       {Row{"22B", 6144, 64}, Row{"175B", 12288, 96}, Row{"530B", 20480, 128}, Row{"1T", 25600, 160}}) {
    const Model one = make_gpt("one", {1, row.h, row.a, 2048, 51200});
    const Model two = make_gpt("two", {2, row.h, row.a, 2048, 51200});
    for (bool sp : {false, true}) {
      for (bool selective : {false, true}) {
        StrategyConfig config = gpt_config(8);
        config.sequence_parallel = sp;
        config.recompute = selective ? Recompute::selective : Recompute::none;
        const double block = activation_bytes(two, config) - activation_bytes(one, config);
        const double expected = paper_block_bytes(2048, row.h, row.a, 8, sp, selective);
        EXPECT_NEAR(block, expected, expected * 1e-12) << row.name << " sp " << sp << " sel " << selective;
      }
    }
  }
  // By hand for 175B: sbh = 2048 x 12288 = 25,165,824; 5as/h = 5 x 96 x 2048 / 12288 = 80:
  // tp only 23 sbh = 578,813,952 B; SP 114/8 sbh = 358,612,992 B; SP + selective 4.25 sbh =
  // 106,954,752 B (18.5 % of tp only: the paper's "5x").
  EXPECT_DOUBLE_EQ(paper_block_bytes(2048, 12288, 96, 8, false, false), 578813952);
  EXPECT_DOUBLE_EQ(paper_block_bytes(2048, 12288, 96, 8, true, false), 358612992);
  EXPECT_DOUBLE_EQ(paper_block_bytes(2048, 12288, 96, 8, true, true), 106954752);
}

TEST(MemoryModel, InterleavedScheduleHoldsTheFirstStageFactorOfSectionFourTwoThree) {
  // p = 4, v = 2, m = 8: Megatron's warm-up on stage s is 2 (p - s - 1) + (v - 1) p chunk
  // microbatches, plus the one in its steady state: stage 0 2·3 + 4 + 1 = 11 chunks of half a
  // stage = 5.5 microbatches = p (1 + (p - 1)/(p v)) = 4 (1 + 3/8); stage 3 (0 + 4 + 1)/2 = 2.5.
  StrategyConfig config = config_with(1, 1, 4, 8, 8, DType::bf16, Optimizer::adam);
  config.interleave = 2;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(config, 0), 5.5);
  EXPECT_DOUBLE_EQ(microbatches_in_flight(config, 3), 2.5);
  // Plain 1F1B and ZB-H1: the warm-up depth p - s; GPipe: every microbatch.
  config.interleave = 1;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(config, 0), 4);
  config.schedule = PipelineSchedule::zb_h1;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(config, 1), 3);
  config.schedule = PipelineSchedule::gpipe;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(config, 3), 8);
}

TEST(MemoryModel, InterleavedStagesHoldEveryPthChunk) {
  // uniform_model(8), pp = 2, v = 2: chunks of 2 blocks, stage 0 holds blocks {0, 1, 4, 5}:
  // 4000 params; one microbatch of batch 1 (m = 2, batch 2): 400 elements x 2 B = 800 B;
  // in flight on stage 0 min(4, 2 + 2 + 1) / 2 = 2 microbatches: 1600 B.
  const Model model = uniform_model(8);
  StrategyConfig config = config_with(1, 1, 2, 2, 2, DType::bf16, Optimizer::adam);
  config.interleave = 2;
  const std::vector<int> cuts = chunk_cuts(model, config);
  EXPECT_EQ(cuts, (std::vector<int>{0, 2, 4, 6, 8}));
  EXPECT_EQ(device_layers(model, config, cuts, 0), (std::vector<std::size_t>{0, 1, 4, 5}));
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.params, 4000 * 2.0);
  EXPECT_DOUBLE_EQ(m.activations, 1600);
}

// --- model states: ZeRO (Rajbhandari et al. 2020, Fig. 1), mixed-precision Adam, K = 12 ------

TEST(MemoryModel, ZeroStagesShardStatesOverDataParallelRanks) {
  // Fig. 1's example: Ψ = 7.5 B parameters, N = 64: baseline 16Ψ = 120 GB; stage 1
  // 4Ψ + 12Ψ/N = 31.4 GB; stage 2 2Ψ + 14Ψ/N = 16.6 GB; stage 3 16Ψ/N = 1.9 GB.
  const double psi = 7.5e9;
  StrategyConfig config = config_with(64, 1, 1, 1, 64, DType::bf16, Optimizer::adam);
  EXPECT_DOUBLE_EQ(model_state_memory(psi, config).total, 16 * psi);
  config.zero = 1;
  EXPECT_DOUBLE_EQ(model_state_memory(psi, config).total, 4 * psi + 12 * psi / 64);
  EXPECT_NEAR(model_state_memory(psi, config).total, 31.4e9, 0.05e9);
  config.zero = 2;
  EXPECT_DOUBLE_EQ(model_state_memory(psi, config).total, 2 * psi + 14 * psi / 64);
  EXPECT_NEAR(model_state_memory(psi, config).total, 16.6e9, 0.05e9);
  config.zero = 3;
  EXPECT_DOUBLE_EQ(model_state_memory(psi, config).total, 16 * psi / 64);
  EXPECT_NEAR(model_state_memory(psi, config).total, 1.9e9, 0.05e9);
}

TEST(MemoryModel, ZeroOnAStageShardsItsOwnParameters) {
  // uniform_model(4), dp = 4: Ψ = 4000 per worker. Stage 2: 2Ψ + 2Ψ/4 + 12Ψ/4 = 8000 + 2000 +
  // 12000 = 22000 B; activations 400 elements x 1 sample x 2 B = 800 B.
  const Model model = uniform_model(4);
  StrategyConfig config = config_with(4, 1, 1, 1, 4, DType::bf16, Optimizer::adam);
  config.zero = 2;
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.params, 8000);
  EXPECT_DOUBLE_EQ(m.grads, 2000);
  EXPECT_DOUBLE_EQ(m.optimizer, 12000);
  EXPECT_DOUBLE_EQ(m.total, 22800);
  EXPECT_DOUBLE_EQ(m.host_optimizer, 0);
}

TEST(MemoryModel, OffloadMovesTheOptimizerStateToTheHost) {
  // Same worker with offload: the 12Ψ/N = 12000 B of fp32 master weights, momentum and variance
  // leave the GPU (ZeRO-Offload) and are counted in host memory.
  const Model model = uniform_model(4);
  StrategyConfig config = config_with(4, 1, 1, 1, 4, DType::bf16, Optimizer::adam);
  config.zero = 2;
  config.offload = true;
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.optimizer, 0);
  EXPECT_DOUBLE_EQ(m.host_optimizer, 12000);
  EXPECT_DOUBLE_EQ(m.total, 8000 + 2000 + 800);
}
}  // namespace
}  // namespace strata
