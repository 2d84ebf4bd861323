// Activation recomputation in a stage (Korthikanti et al., MLSys 2023, "Reducing Activation
// Recomputation in Large Transformer Models"; Megatron-LM's tensor_parallel/random.py
// CheckpointFunction and transformer_block.py _checkpointed_forward): which layers are re-run
// before their backward, what each forward, re-run and backward allocates and frees, and the
// priority positions of a backward slot.
//
// - none: a forward allocates the layer's saved activations, its backward data frees them.
// - selective: the attention core (QK^T, softmax, dropout, attention over V) is re-run right
//   before its backward. Its forward keeps Q, K, V (the core's input) and frees the s x s part
//   (5·a·s² bytes per sample at 16 bits: softmax output, dropout mask and output, section 4.2)
//   when it ends; the re-run allocates that part again and the backward frees everything.
// - full: chunks of transformer blocks re-run whole, TP collectives included. A chunk keeps only
//   its input (allocated by the chunk's first forward, freed by that layer's backward); its
//   forwards keep nothing; before the backward of the chunk's last layer, the whole chunk is
//   re-run and each re-run allocates its layer's saved activations, freed by that layer's
//   backward data. The chunk's input and the first layer's re-run activations are counted
//   apart (Megatron shares the storage of the input when the first layer saves it: an upper
//   bound, by one chunk input, while that chunk is re-run). uniform: the stage's blocks in
//   chunks of recompute_blocks (the last one may be shorter); block: the first recompute_blocks
//   blocks of the stage, each a chunk of its own; the other blocks keep their activations.
//   Megatron checkpoints the transformer layers only: a GPT's embedding and output head (lnf,
//   head, loss), and any model's embedding and loss layers, keep their activations.
#include <algorithm>
#include <string>
#include <variant>

#include "lowering_layout.hpp"
#include "strata/models/lowering/layer_tasks.hpp"

namespace strata {
inline namespace models {
namespace lowering {
namespace {

// Whether full recomputation re-runs `layer` with its block. A GPT's block layers are named
// "l<block>/..." (zoo_gpt.cpp); the embedding and the head share blocks 0 and L-1 with them.
bool checkpointed(const Model& model, const Layer& layer) {
  if (layer.op == LayerOp::embedding || layer.op == LayerOp::loss) return false;
  if (model.family != "gpt") return true;
  const std::string prefix = std::string("l").append(std::to_string(layer.block)).append("/");
  return layer.name.starts_with(prefix);
}

std::vector<Rerun> full_reruns(const Model& model, const StrategyConfig& config, const Stage& stage) {
  const int first_block = model.layers[static_cast<std::size_t>(stage.first_layer)].block;
  const int end_block = model.layers[static_cast<std::size_t>(stage.end_layer - 1)].block + 1;
  const int per_chunk = config.recompute_method == RecomputeMethod::uniform ? config.recompute_blocks : 1;
  const int chunked_end = config.recompute_method == RecomputeMethod::uniform
                              ? end_block
                              : std::min(end_block, first_block + config.recompute_blocks);
  std::vector<Rerun> out;
  for (int b = first_block; b < chunked_end; b += per_chunk) {
    const int b_end = std::min(b + per_chunk, chunked_end);
    Rerun chunk{stage.size(), -1};
    for (int k = 0; k < stage.size(); ++k) {
      const Layer& layer = model.layers[static_cast<std::size_t>(stage.first_layer + k)];
      if (layer.block < b || layer.block >= b_end || !checkpointed(model, layer)) continue;
      chunk.first = std::min(chunk.first, k);
      chunk.end = std::max(chunk.end, k + 1);
    }
    if (chunk.end > chunk.first) out.push_back(chunk);
  }
  return out;
}

std::vector<Rerun> selective_reruns(const Model& model, const Stage& stage) {
  std::vector<Rerun> out;
  for (int k = 0; k < stage.size(); ++k)
    if (model.layers[static_cast<std::size_t>(stage.first_layer + k)].op == LayerOp::attention)
      out.push_back({k, k + 1});
  return out;
}

std::int64_t shape_int(const Layer& layer, const char* key) {
  const auto it = layer.shape.find(key);
  if (it == layer.shape.end()) return 0;
  const auto* value = std::get_if<std::int64_t>(&it->second);
  return value != nullptr ? *value : 0;
}

// The s x s part of an attention core's saved activations on one tp rank: 2.5·a·s² elements
// per sample (5·a·s² bytes at 16 bits, Korthikanti et al. section 4.1), heads split over the
// stage's tp.
// FlashAttention keeps no scores: what its re-run makes again is its softmax statistics.
double attention_core_bytes(const Layer& layer, const LayerPlan& plan, const Layout& layout, int tp) {
  const auto heads = static_cast<double>(shape_int(layer, "heads"));
  const auto seq = static_cast<double>(shape_int(layer, "seq"));
  const double per_sample = layout.config->flash_attention
                                ? flash_statistics_bytes_per_sample(layer)
                                : 2.5 * heads * seq * seq * bytes_per_element(layout.config->dtype);
  return std::min(per_sample * layout.microbatch_size / static_cast<double>(tp), plan.saved_bytes);
}

void plan_backward_positions(Stage& stage) {
  const int n = stage.size();
  stage.bwd_pos.assign(static_cast<std::size_t>(n), {});
  int pos = 1;  // 0: recv/bwd
  for (int k = n - 1; k >= 0; --k) {
    const int rerun = stage.rerun_of[static_cast<std::size_t>(k)];
    if (rerun >= 0 && stage.reruns[static_cast<std::size_t>(rerun)].end == k + 1)
      for (int kk = stage.reruns[static_cast<std::size_t>(rerun)].first; kk <= k; ++kk) {
        stage.bwd_pos[static_cast<std::size_t>(kk)].rerun_gather = pos++;
        stage.bwd_pos[static_cast<std::size_t>(kk)].rerun_ag = pos++;
        stage.bwd_pos[static_cast<std::size_t>(kk)].rerun = pos++;
        stage.bwd_pos[static_cast<std::size_t>(kk)].rerun_ar = pos++;
      }
    BackwardPositions& p = stage.bwd_pos[static_cast<std::size_t>(k)];
    p.gather = pos++;
    p.bwd_ag = pos++;
    p.bwd = pos++;
    p.bwd_ar = pos++;
    p.wgrad_ag = pos++;
    p.bwdw = pos++;
  }
  stage.send_bwd_pos = pos;
}

}  // namespace

// The activation entering stage layer k (the stage's input for k = 0), per microbatch.
double input_bytes(const Model& model, const Layout& layout, const Stage& stage, int k) {
  const int i = stage.first_layer + k;
  if (i == 0) return model.input_elems * layout.microbatch_size * bytes_per_element(layout.config->dtype);
  return layout.layers[static_cast<std::size_t>(i - 1)].out_bytes;
}

void plan_recompute(const Model& model, const Layout& layout, Stage& stage) {
  const StrategyConfig& config = *layout.config;
  const int n = stage.size();
  stage.reruns = config.recompute == Recompute::full        ? full_reruns(model, config, stage)
                 : config.recompute == Recompute::selective ? selective_reruns(model, stage)
                                                            : std::vector<Rerun>{};
  stage.rerun_of.assign(static_cast<std::size_t>(n), -1);
  stage.memory.assign(static_cast<std::size_t>(n), {});
  for (int k = 0; k < n; ++k) {
    double saved = layout.layers[static_cast<std::size_t>(stage.first_layer + k)].saved_bytes;
    // A stage's first layer keeps the input it received when the layer before (on another
    // stage) would have kept it.
    if (k == 0 && stage.first_layer > 0 &&
        model.layers[static_cast<std::size_t>(stage.first_layer)].input_kept_before)
      saved += input_bytes(model, layout, stage, 0);
    stage.memory[static_cast<std::size_t>(k)] = {saved, 0, 0, saved};
  }
  for (std::size_t r = 0; r < stage.reruns.size(); ++r) {
    const Rerun& rerun = stage.reruns[r];
    for (int k = rerun.first; k < rerun.end; ++k) {
      const auto i = static_cast<std::size_t>(stage.first_layer + k);
      const LayerPlan& plan = layout.layers[i];
      LayerMemory& memory = stage.memory[static_cast<std::size_t>(k)];
      stage.rerun_of[static_cast<std::size_t>(k)] = static_cast<int>(r);
      if (config.recompute == Recompute::selective) {
        const double core = attention_core_bytes(model.layers[i], plan, layout, stage.tp);
        memory = {plan.saved_bytes, core, core, plan.saved_bytes};
      } else {
        // A segment's first layer keeps its input through the forward; when its saved
        // activations are that input, the re-run has it already and makes only the rest.
        const double kept = k == rerun.first ? input_bytes(model, layout, stage, k) : 0.0;
        const double again =
            keeps_input(model.layers[i].op) ? std::max(0.0, plan.saved_bytes - kept) : plan.saved_bytes;
        memory = {kept, 0, again, again + kept};
      }
    }
  }
  // The weight gradient reads the layer's input too: it is kept until that task ends (autograd
  // frees a node's saved tensors after its whole backward; ZB-H1 defers the weight gradient).
  for (int k = 0; k < n; ++k) {
    const LayerPlan& plan = layout.layers[static_cast<std::size_t>(stage.first_layer + k)];
    if (!plan.has_bwdw) continue;
    LayerMemory& memory = stage.memory[static_cast<std::size_t>(k)];
    memory.wgrad_free = memory.bwd_free;  // what it saved is its input (and a chunk's kept input)
    memory.bwd_free = 0;
  }
  plan_backward_positions(stage);
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
