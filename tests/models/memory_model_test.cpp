// Memory model on hand-built models, so that every byte is derived by hand.
#include "strata/models/cost/memory_model.hpp"

#include <gtest/gtest.h>

namespace strata {
namespace {

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

StrategyConfig config_with(int dp, int tp, int pp, std::int64_t microbatches, std::int64_t global_batch,
                           DType dtype, Optimizer optimizer) {
  StrategyConfig config;
  config.dp = dp;
  config.tp = tp;
  config.pp = pp;
  config.microbatches = microbatches;
  config.global_batch = global_batch;
  config.dtype = dtype;
  config.optimizer = optimizer;
  return config;
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
  // params, 100 saved). tp = 2, fp32 Adam: (500 + 10) x 16 B = 8160 B of states; batch 4 in
  // one microbatch: (50 + 100) x 4 x 4 B = 2400 B of activations.
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
  EXPECT_DOUBLE_EQ(m.activations, 2400);
  EXPECT_DOUBLE_EQ(m.total, 10560);
  // Data parallelism replicates states and divides the batch: dp = 2, batch 8 -> same worker.
  EXPECT_DOUBLE_EQ(worker_memory(model, config_with(2, 2, 1, 1, 8, DType::fp32, Optimizer::adam), 0).total,
                   10560);
}

TEST(MemoryModel, SgdWithMomentumInFp32) {
  // 4000 params x (4 + 4 + 4) B.
  const Model model = uniform_model(4);
  const auto config = config_with(1, 1, 1, 1, 1, DType::fp32, Optimizer::sgd);
  const MemoryBreakdown m = worker_memory(model, config, 0);
  EXPECT_DOUBLE_EQ(m.params + m.grads + m.optimizer, 48000);
  EXPECT_DOUBLE_EQ(m.activations, 400 * 4.0);
}

}  // namespace
}  // namespace strata
