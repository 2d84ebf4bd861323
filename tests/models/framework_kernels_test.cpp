// Megatron-LM's memory-bound kernels on a GPT block's tasks (layer_tasks.hpp KernelSet), against
// the bytes derived by hand from the Megatron-LM source kernel by kernel
// (models/src/lowering/framework_kernels.cpp), at the 175 B shape of Korthikanti et al. 2023:
// s = 2048, h = 12288, a = 96, micro-batch 1, t = 8, bf16. Bytes are counted in bf16 activations
// of the micro-batch, 2·s·h bytes each (the "2X" of the kernel table).
#include <gtest/gtest.h>

#include <string>

#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata {
namespace {

constexpr double kS = 2048, kH = 12288;
constexpr double kX = kS * kH;  // elements of one activation of a micro-batch of 1
constexpr int kTp = 8;

Model gpt175() { return make_gpt("gpt3-175b", GptConfig{2, 12288, 96, 2048, 51200}); }

bool is_gemm_or_attention(const Task& task) {
  return is_linear(task.kind) || task.kind == TaskKind::attention_fwd || task.kind == TaskKind::attention_bwd;
}

// Bytes of block 0's memory-bound tasks and of the passes beside its GEMMs and attention core
// (the attention core's own softmax and dropout kernels are priced by gpu_kernels.cpp), in X.
struct BlockBytes {
  double forward = 0, backward = 0, main_grad = 0;
  std::int64_t backward_launches = 0;
};

BlockBytes block_bytes(KernelSet kernels) {
  const Model model = gpt175();
  const LayerTaskOptions options{.kernels = kernels};
  BlockBytes out;
  for (const Layer& layer : model.layers) {
    if (!layer.name.starts_with("l0/")) continue;
    for (Phase phase : {Phase::forward, Phase::backward_data, Phase::backward_weight}) {
      if (phase == Phase::backward_weight && !has_backward_weight(layer)) continue;
      const Task task = layer_task(layer, phase, 1, kTp, DType::bf16, options);
      double bytes = is_gemm_or_attention(task) ? 0 : task.bytes_read + task.bytes_written;
      const double pass = task.attr_real("pass_bytes").value_or(0);
      const bool wgrad = phase == Phase::backward_weight;
      // A weight-gradient task's passes: the fp32 accumulation, 8 B or 10 B per weight, and
      // qkv's bias gradient (3h/t of every token, 2 B).
      const double bias = layer.name == "l0/qkv" && wgrad ? 2 * 3 * kX / kTp : 0;
      if (wgrad) out.main_grad += (pass - bias) / (2 * kX);
      bytes += wgrad ? bias : pass;
      (phase == Phase::forward ? out.forward : out.backward) += bytes / (2 * kX);
      if (phase != Phase::forward)
        out.backward_launches += task.attr_int("passes").value_or(0) + task.attr_int("kernels").value_or(0);
    }
  }
  return out;
}

TEST(FrameworkKernels, Megatron2022BlockBytesAreTheSourcesKernels) {
  const BlockBytes b = block_bytes(KernelSet::megatron_2022);
  // Forward, in units of 2X (one bf16 activation): two LayerNorms 2 x 2, qkv's bias add 2 x 3/8,
  // the context permute 2 x 1/8, two bias-dropout-adds 2 x (2 + 1 + 1/2 mask), bias-GeLU 2 x 4/8:
  // 4 + 0.75 + 0.25 + 7 + 1 = 13 (26X), and the LayerNorms' gamma and beta, 2 x 2h x 2 B.
  EXPECT_NEAR(b.forward, 13 + 8 * kH / (2 * kX), 1e-9);
  // Backward: two dropout-add backwards with the bias gradient of proj and fc2, 2 x (1 + 1/2
  // mask + 1 + 1 written) = 7; bias-GeLU backward and fc1's bias gradient 3/2 + 1/2 = 2; two
  // persistent LayerNorm backwards with the residual stream's gradient add, 2 x (3 + 3) = 12; dQ
  // and dK scaled and concatenated with dV, (4 + 6) / 8 = 1.25; qkv's bias gradient 3/8:
  // 22.625 (45.25X); and gamma, beta read and their gradients written, 2 x 8h B.
  EXPECT_NEAR(b.backward, 22.625 + 16 * kH / (2 * kX), 1e-9);
  // The four weight gradients' fp32 accumulation, 8 B per weight of 12h²/t: 12h²·8/(8·2X)
  // = 6h/s = 36 (72X).
  EXPECT_NEAR(b.main_grad, 6 * kH / kS, 1e-6);
}

TEST(FrameworkKernels, Megatron2021RunsThreeLayerNormKernelsAndSeparateGradientAdds) {
  const BlockBytes b21 = block_bytes(KernelSet::megatron_2021);
  const BlockBytes b22 = block_bytes(KernelSet::megatron_2022);
  EXPECT_NEAR(b21.forward, b22.forward, 1e-9);
  // Megatron's own LayerNorm backward reads dy and x twice: 2 more activations each.
  EXPECT_NEAR(b21.backward, b22.backward + 2 * 2, 1e-3);
  // The bf16 gradient is written by the GEMM, then main_grad.add_ reads 4 + 2 and writes 4 B.
  EXPECT_NEAR(b21.main_grad, 10.0 / 8 * b22.main_grad, 1e-6);
  // ... in four kernels of their own, and one more per LayerNorm backward.
  EXPECT_EQ(b21.backward_launches, b22.backward_launches + 4 + 2);
}

TEST(FrameworkKernels, GenericTasksAndOtherModelsAreUnchanged) {
  const Model model = gpt175();
  for (const Layer& layer : model.layers) {
    const Task generic = layer_task(layer, Phase::forward, 1, kTp, DType::bf16);
    EXPECT_FALSE(generic.attrs.contains("kernels") || generic.attrs.contains("passes")) << layer.name;
  }
  StrategyConfig config;
  config.framework = Framework::megatron_2021;
  EXPECT_EQ(layer_task_options(config, model).kernels, KernelSet::megatron_2021);
  config.framework = Framework::megatron_core;
  EXPECT_EQ(layer_task_options(config, model).kernels, KernelSet::megatron_2022);
  EXPECT_EQ(layer_task_options(config, make_mlp("mlp", {784, 512, 10})).kernels, KernelSet::generic);
}

TEST(FrameworkKernels, TheLossRunsInFp32OnTheLogits) {
  const Model model = gpt175();
  const Layer* loss = nullptr;
  for (const Layer& layer : model.layers)
    if (layer.name == "loss") loss = &layer;
  ASSERT_NE(loss, nullptr);
  const double logits = kS * 51200 / kTp;
  const LayerTaskOptions options{.kernels = KernelSet::megatron_2022};
  const Task fwd = layer_task(*loss, Phase::forward, 1, kTp, DType::bf16, options);
  // .float() (2 B read, 4 written), max, subtract, exp, sum, divide (20 read, 12 written).
  EXPECT_DOUBLE_EQ(fwd.bytes_read, 22 * logits);
  EXPECT_DOUBLE_EQ(fwd.bytes_written, 16 * logits);
  EXPECT_EQ(fwd.attr_int("kernels"), 6);
  const Task bwd = layer_task(*loss, Phase::backward_data, 1, kTp, DType::bf16, options);
  EXPECT_DOUBLE_EQ(bwd.bytes_read + bwd.bytes_written, 14 * logits);
}

TEST(FrameworkKernels, MegatronsOptimizerStepMoves42BytesPerParameter) {
  const Model model = gpt175();
  const Task generic = optimizer_step_task(model, 1e9, Optimizer::adam, DType::bf16);
  EXPECT_DOUBLE_EQ(generic.bytes_read + generic.bytes_written, 16e9);
  const Task megatron =
      optimizer_step_task(model, 1e9, Optimizer::adam, DType::bf16, KernelSet::megatron_2022);
  EXPECT_DOUBLE_EQ(megatron.bytes_read, 24e9);
  EXPECT_DOUBLE_EQ(megatron.bytes_written, 18e9);
  EXPECT_EQ(megatron.attr_int("kernels"), 4);
  // SGD keeps the generic count: the presets describe Megatron's Adam.
  const Task sgd = optimizer_step_task(model, 1e9, Optimizer::sgd, DType::bf16, KernelSet::megatron_2022);
  EXPECT_FALSE(sgd.attrs.contains("kernels"));
}

}  // namespace
}  // namespace strata
