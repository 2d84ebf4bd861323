// Layer tasks under sequence parallelism and flash attention, and the activations a layer keeps,
// against hand-derived figures and Korthikanti et al. 2023 (arXiv:2205.05198), eq. 1-2.
#include "strata/models/lowering/layer_tasks.hpp"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

// One GPT block of s = 32, h = 64, a = 4 (5·a·s/h = 10), vocabulary 128.
constexpr double kS = 32, kH = 64, kA = 4;

Model small_gpt() { return make_gpt("gpt-test", GptConfig{1, 64, 4, 32, 128}); }

const Layer& layer_named(const Model& model, const std::string& name) {
  for (const Layer& layer : model.layers)
    if (layer.name == name) return layer;
  ADD_FAILURE() << "no layer " << name;
  return model.layers.front();
}

// Bytes one transformer block keeps per sample at 2 B per element.
double block_bytes(const Model& model, int tp, const LayerTaskOptions& options) {
  double elems = 0;
  for (const Layer& layer : model.layers)
    if (layer.name.starts_with("l0/")) elems += saved_elems_per_sample(layer, tp, options);
  return 2 * elems;
}

TEST(SavedElems, BlockMatchesKorthikantiEquationTwo) {
  const Model model = small_gpt();
  const double sh = kS * kH;
  // No parallelism: s·h·(34 + 5·a·s/h) = 2048 x 44.
  EXPECT_DOUBLE_EQ(block_bytes(model, 1, {}), sh * (34 + 5 * kA * kS / kH));
  // Tensor parallelism t = 4: s·h·(10 + 24/t + 5·a·s/(h·t)) = 2048 x 18.5.
  EXPECT_DOUBLE_EQ(block_bytes(model, 4, {}), sh * (10 + 24.0 / 4 + 5 * kA * kS / (kH * 4)));
  // Tensor and sequence parallelism: s·h/t·(34 + 5·a·s/h) = 512 x 44.
  EXPECT_DOUBLE_EQ(block_bytes(model, 4, {.sequence_parallel = true}), sh / 4 * (34 + 5 * kA * kS / kH));
}

TEST(SavedElems, FlashAttentionKeepsNoScoresButItsStatistics) {
  const Model model = small_gpt();
  const double sh = kS * kH;
  // The 5·a·s² bytes of softmax output, dropout mask and dropout output go; the logsumexp stays:
  // a·s fp32 values, 4·a·s bytes. 34·s·h + 4·a·s = 69,632 + 512.
  EXPECT_DOUBLE_EQ(block_bytes(model, 1, {.flash_attention = true}), 34 * sh + 4 * kA * kS);
  // The core alone: Q, K, V and the statistics, in 16-bit elements, split by heads.
  EXPECT_DOUBLE_EQ(saved_elems_per_sample(layer_named(model, "l0/attn"), 2, {.flash_attention = true}),
                   (3 * sh + 2 * kA * kS) / 2);
}

TEST(LayerTask, SequenceParallelismDividesReplicatedLayersByTp) {
  const Model model = small_gpt();
  const Layer& ln = layer_named(model, "l0/ln1");
  const Task whole = layer_task(ln, Phase::forward, 2, 4, DType::bf16);
  const Task sharded = layer_task(ln, Phase::forward, 2, 4, DType::bf16, {.sequence_parallel = true});
  EXPECT_DOUBLE_EQ(sharded.flops, whole.flops / 4);
  // Reads its input (2 x s·h elements, now a quarter) and gamma, beta (2h, not divided); writes
  // its output (a quarter), 2 B each.
  EXPECT_DOUBLE_EQ(whole.bytes_read, 2 * (2 * kS * kH + 2 * kH));
  EXPECT_DOUBLE_EQ(sharded.bytes_read, 2 * (2 * kS * kH / 4 + 2 * kH));
  EXPECT_DOUBLE_EQ(sharded.bytes_written, whole.bytes_written / 4);
  // The residual add's backward too (split in two tasks it keeps the same total).
  const Layer& res = layer_named(model, "l0/res1");
  EXPECT_DOUBLE_EQ(
      layer_task(res, Phase::backward_data, 2, 4, DType::bf16, {.sequence_parallel = true}).flops,
      layer_task(res, Phase::backward_data, 2, 4, DType::bf16).flops / 4);
  // Split layers keep their Megatron split.
  const Layer& qkv = layer_named(model, "l0/qkv");
  EXPECT_DOUBLE_EQ(layer_task(qkv, Phase::forward, 2, 4, DType::bf16, {.sequence_parallel = true}).flops,
                   layer_task(qkv, Phase::forward, 2, 4, DType::bf16).flops);
}

TEST(LayerTask, FlashAttentionBackwardIsTwoAndAHalfForwards) {
  const Model model = small_gpt();
  const Layer& attn = layer_named(model, "l0/attn");
  const LayerTaskOptions flash{.flash_attention = true};
  const Task fwd = layer_task(attn, Phase::forward, 2, 2, DType::bf16, flash);
  const Task bwd = layer_task(attn, Phase::backward_data, 2, 2, DType::bf16, flash);
  // Forward as unfused: 4·s²·h per sample, x 2 samples / 2 ranks.
  EXPECT_DOUBLE_EQ(fwd.flops, 4 * kS * kS * kH);
  EXPECT_DOUBLE_EQ(bwd.flops, 2.5 * fwd.flops);
  EXPECT_EQ(fwd.attr_int("flash"), 1);
  EXPECT_EQ(bwd.attr_int("flash"), 1);
  // It reads Q, K, V (3 x s·h per sample on its half of the heads), no s x s scores.
  EXPECT_DOUBLE_EQ(fwd.bytes_read, 2 * 3 * kS * kH * 2 / 2);
  EXPECT_FALSE(layer_task(attn, Phase::forward, 2, 2, DType::bf16).attr_int("flash").has_value());
}

TEST(LayerTask, CostTaskCarriesTheGemmShapes) {
  // The analytical estimate's tasks carry what a GPU's cost model reads: qkv on 2 ranks is a
  // (2 x 32) x 64 x (192 / 2) GEMM; the attention core batch 2, 4 / 2 heads.
  const Model model = small_gpt();
  const Task qkv = layer_cost_task(layer_named(model, "l0/qkv"), Phase::forward, 2, 2, DType::bf16);
  EXPECT_EQ(qkv.attr_int("m"), 64);
  EXPECT_EQ(qkv.attr_int("k"), 64);
  EXPECT_EQ(qkv.attr_int("n"), 96);
  const Task attn = layer_cost_task(layer_named(model, "l0/attn"), Phase::backward_data, 2, 2, DType::bf16);
  EXPECT_EQ(attn.attr_int("batch"), 2);
  EXPECT_EQ(attn.attr_int("heads"), 2);
  EXPECT_EQ(attn.attr_int("seq"), 32);
  EXPECT_EQ(attn.attr_int("head_dim"), 16);
}

TEST(LayerTask, CostTaskShapesAreThePlanTasksShapes) {
  // The estimate and the replay must price the same GEMMs: every attribute of a cost task has the
  // value the Plan's task has, for every layer, phase, tp and flash setting.
  const Model model = small_gpt();
  for (const Layer& layer : model.layers)
    for (Phase phase : {Phase::forward, Phase::backward_data})
      for (int tp : {1, 2, 4})
        for (bool flash : {false, true}) {
          const LayerTaskOptions options{.flash_attention = flash};
          const Task cost = layer_cost_task(layer, phase, 3, tp, DType::bf16, options);
          const Task full = layer_task(layer, phase, 3, tp, DType::bf16, options);
          for (const auto& [key, value] : cost.attrs)
            EXPECT_EQ(full.attrs.at(key), value) << layer.name << " " << key;
          EXPECT_EQ(cost.flops, full.flops);
        }
}

}  // namespace
}  // namespace strata
