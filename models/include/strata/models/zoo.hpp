// The model zoo: networks as layer graphs with per-layer FLOPs, parameters and activations.
//
// A Model is a sequence of Layers in execution order (residual edges are implicit: a layer's
// input is the previous layer's output). All per-sample figures are for one sample: one image
// for vision models, one sequence of `seq` tokens for GPT. FLOPs count a multiply-add as 2 FLOP.
// Element counts are dtype-free; the strategy multiplies by the dtype's size.
//
// Presets: mlp (784-256-128-10), lenet5, vgg16, resnet50, gpt2-small, gpt3-1.3b, gpt3-13b,
// gpt3-175b, anchor-96 (the synthetic DP workload of README's anchor section). `--set key=value`
// overrides a family's hyperparameters (gpt: layers, hidden, heads, seq, vocab; mlp: sizes;
// vision: image, batch-independent only).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {

enum class LayerOp : std::uint8_t {
  embedding,    // token + position embedding lookup
  linear,       // dense matmul: attrs m (rows per sample), n (out), k (in)
  conv,         // 2-D convolution: attrs c_in, c_out, h_out, w_out, kh, kw, stride
  attention,    // attention core softmax(QK^T/sqrt(d))V: attrs heads, seq, head_dim
  norm,         // layer norm or batch norm
  activation,   // relu, gelu, tanh
  pool,         // max or average pooling
  loss,         // softmax cross-entropy (with the output projection's logits)
  elementwise,  // residual add
  fixed,        // synthetic layer with given forward/backward durations
};
std::string_view to_string(LayerOp op);

// How Megatron tensor parallelism splits a layer across tp ranks.
enum class TensorSplit : std::uint8_t {
  replicated,  // every tp rank computes it whole (norms, residuals, small layers)
  column,      // weight split by output columns: no communication in forward
  row,         // weight split by input rows: partial sums, allreduce after forward
  heads,       // attention core split by heads
};

struct Layer {
  std::string name;              // unique in the model, e.g. "l7/qkv", "conv2_1/a"
  LayerOp op = LayerOp::linear;
  std::int32_t block = 0;        // repeating unit (transformer block, conv stage), for PP cuts
  TensorSplit split = TensorSplit::replicated;
  double params = 0;             // parameter count
  double fwd_flops = 0;          // FLOP per sample
  double bwd_data_flops = 0;     // FLOP per sample (gradient w.r.t. the input)
  double bwd_weight_flops = 0;   // FLOP per sample (gradient w.r.t. the weights)
  double out_elems = 0;          // output activation elements per sample
  double saved_elems = 0;        // elements kept from forward for backward, per sample
  double fixed_fwd_s = 0;        // LayerOp::fixed: forward time per microbatch (s)
  double fixed_bwd_s = 0;        // LayerOp::fixed: backward time per microbatch (s)
  Attributes shape;              // op-specific shape attributes (see LayerOp)
};

struct Model {
  std::string name;
  std::string family;            // mlp | lenet | vgg | resnet | gpt | synthetic
  std::vector<Layer> layers;
  std::int64_t seq = 1;          // tokens per sample (1 for vision models)
  double input_elems = 0;        // per sample
  // Transformer shape; zero for other families.
  std::int32_t num_blocks = 0;
  std::int32_t hidden = 0;
  std::int32_t heads = 0;
  std::int32_t vocab = 0;

  double params() const;
  double fwd_flops_per_sample() const;
  double train_flops_per_sample() const;  // forward + backward (data + weight)
  double activation_elems_per_sample() const;  // sum of saved_elems
  // Model FLOPs per token (PaLM appendix B): 6N + 12·layers·hidden·seq for GPT, no
  // recomputation; for other families, train_flops_per_sample / seq.
  double model_flops_per_token() const;
  int num_blocks_or_layers() const;  // what PP may cut: blocks (max block + 1)
};

struct GptConfig {
  std::int32_t layers = 12;
  std::int32_t hidden = 768;
  std::int32_t heads = 12;
  std::int32_t seq = 1024;
  std::int32_t vocab = 50257;
};
Model make_gpt(const std::string& name, const GptConfig& config);

// Preset names, in the order `strata models` lists them.
const std::vector<std::string>& zoo_names();

// Builds a preset, applying `overrides` (from --set). Throws InputError for an unknown model
// ("unknown model 'x' (known: ...)") or an unknown or invalid override.
Model make_model(const std::string& name, const std::map<std::string, std::string>& overrides = {});

}  // namespace strata
