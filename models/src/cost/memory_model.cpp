// Memory model (see memory_model.hpp for the accounting and its sources).
#include "strata/models/cost/memory_model.hpp"

#include <algorithm>
#include <string>

#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

// ZeRO, section 3.1: mixed-precision Adam keeps fp16 parameters and gradients (2 + 2 B) and an
// fp32 copy of the parameters, momentum and variance (K = 12 B). Pure fp32 or fp64 training has
// no master copy. SGD with momentum keeps one state tensor instead of Adam's two.
BytesPerParam bytes_per_param(Optimizer optimizer, DType dtype) {
  const double b = bytes_per_element(dtype);
  return {b, b, optimizer_state_bytes_per_param(optimizer, dtype)};
}

// ZeRO, Fig. 1: stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also
// the parameters, each over the N = dp data-parallel ranks.
MemoryBreakdown model_state_memory(double psi, const StrategyConfig& config) {
  const BytesPerParam per_param = bytes_per_param(config.optimizer, config.dtype);
  const double n = config.dp;
  MemoryBreakdown m;
  m.params = psi * per_param.params / (config.zero >= 3 ? n : 1);
  m.grads = psi * per_param.grads / (config.zero >= 2 ? n : 1);
  // Gradient compression keeps an error-feedback residual of every gradient (docs/compression.md);
  // its wire buffers (top-k's slots, PowerSGD's P and Q) are a few percent of that and not counted.
  if (config.compression != Compression::none && config.dp > 1) m.grads *= 2;
  m.optimizer = psi * per_param.optimizer / (config.zero >= 1 ? n : 1);
  if (config.offload) {
    m.host_optimizer = m.optimizer;
    m.optimizer = 0;
  }
  m.total = m.params + m.grads + m.optimizer;
  return m;
}

double microbatch_size(const Model& model, const StrategyConfig& config) {
  return static_cast<double>(effective_global_batch(model, config)) / config.dp /
         static_cast<double>(microbatch_count(config));
}

std::vector<std::size_t> stage_layers(const Model& model, const std::vector<int>& cuts, int stage) {
  STRATA_ASSERT(stage >= 0 && static_cast<std::size_t>(stage) + 1 < cuts.size(),
                "stage " + std::to_string(stage) + " outside the partition");
  const int first = cuts[static_cast<std::size_t>(stage)];
  const int last = cuts[static_cast<std::size_t>(stage) + 1];
  std::vector<std::size_t> layers;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const int block = model.layers[i].block;
    if (block >= first && block < last) layers.push_back(i);
  }
  return layers;
}

std::vector<int> chunk_cuts(const Model& model, const StrategyConfig& config) {
  if (config.interleave <= 1)
    return config.stage_cuts.empty() ? partition_blocks(model, config.pp) : config.stage_cuts;
  const int chunks = config.pp * config.interleave;
  const int per_chunk = model.num_blocks_or_layers() / chunks;
  STRATA_ASSERT(per_chunk * chunks == model.num_blocks_or_layers(), "interleaved chunks must be equal");
  std::vector<int> cuts;
  for (int c = 0; c <= chunks; ++c) cuts.push_back(c * per_chunk);
  return cuts;
}

namespace {

// Elements of the attention core's s x s tensors (softmax output, its dropout mask and output):
// the attention layer's saved_elems less Q, K and V (zoo_gpt.cpp's accounting), 2.5·a·s².
double score_elems(const Layer& layer) {
  const double scores = layer.saved_elems - 3 * layer.out_elems;
  STRATA_ASSERT(scores >= 0, "attention layer " + layer.name + " saves less than Q, K and V");
  return scores;
}

// Whether the layer keeps the replicated hidden state although it is tensor-split: a
// column-parallel linear keeps its (whole) input, the vocab-parallel embedding its output's
// dropout mask (Korthikanti et al., section 4.2.1).
bool keeps_replicated_tensor(const Layer& layer) {
  return (layer.op == LayerOp::linear && layer.split == TensorSplit::column) ||
         layer.op == LayerOp::embedding;
}

// Bytes per sample the layer keeps for one microbatch, without full recomputation.
double kept_bytes(const Layer& layer, const StrategyConfig& config) {
  double saved = layer.saved_elems;
  const bool no_scores = config.flash_attention || config.recompute == Recompute::selective;
  if (layer.op == LayerOp::attention && no_scores) saved -= score_elems(layer);
  const bool sharded = config.sequence_parallel || (is_split(layer) && !keeps_replicated_tensor(layer));
  double bytes = bytes_per_element(config.dtype);
  if (layer.op == LayerOp::loss) bytes = std::max(bytes, 4.0);  // fp32 logits, section 4.3
  // FlashAttention keeps its softmax statistics for its backward; with selective recomputation
  // the core is re-run and they are made again then (a transient, as the re-run's scores are).
  const double statistics = config.flash_attention && config.recompute != Recompute::selective
                                ? flash_statistics_bytes_per_sample(layer)
                                : 0.0;
  return (saved * bytes + statistics) / (sharded ? config.tp : 1);
}

// Bytes per sample of one full-recomputation checkpoint: the input of the block's first layer,
// sharded by tp only with sequence parallelism.
double checkpoint_bytes(const Layer& first_layer, const StrategyConfig& config) {
  return input_elems(first_layer) / (config.sequence_parallel ? config.tp : 1) *
         bytes_per_element(config.dtype);
}

// What selective recomputation re-makes of an attention core, B per sample on one tp rank: the
// scores (5·a·s² B at 16 bits, Korthikanti et al. section 4.1), or FlashAttention's statistics.
double rerun_core_bytes(const Layer& layer, const StrategyConfig& config) {
  const double made = config.flash_attention ? flash_statistics_bytes_per_sample(layer)
                                             : score_elems(layer) * bytes_per_element(config.dtype);
  return made / config.tp;
}

}  // namespace

std::vector<std::size_t> device_layers(const Model& model, const StrategyConfig& config,
                                       const std::vector<int>& cuts, int stage) {
  STRATA_ASSERT(stage >= 0 && stage < config.pp, "stage outside [0, pp)");
  // Blocks are contiguous and numbered in layer order (zoo.hpp): a chunk is a range of layers.
  auto first_layer = [&](int block) {
    return static_cast<std::size_t>(
        std::lower_bound(model.layers.begin(), model.layers.end(), block,
                         [](const Layer& layer, int b) { return layer.block < b; }) -
        model.layers.begin());
  };
  std::vector<std::size_t> layers;
  for (int c = stage; static_cast<std::size_t>(c) + 1 < cuts.size(); c += config.pp) {
    const std::size_t last = first_layer(cuts[static_cast<std::size_t>(c) + 1]);
    for (std::size_t i = first_layer(cuts[static_cast<std::size_t>(c)]); i < last; ++i) layers.push_back(i);
  }
  return layers;
}

bool in_checkpointed_block(const Model& model, const Layer& layer) {
  return model.family != "gpt" || layer.name.find('/') != std::string::npos;
}

std::vector<BlockMemory> block_memory(const Model& model, const StrategyConfig& config) {
  std::vector<BlockMemory> blocks(static_cast<std::size_t>(model.num_blocks_or_layers()));
  std::vector<bool> has_checkpoint(blocks.size(), false);
  std::vector<double> core(blocks.size(), 0.0);   // selective: the core's re-made bytes
  std::vector<double> after(blocks.size(), 0.0);  // kept by the block's layers after its core
  std::vector<double> input(blocks.size(), 0.0);  // the checkpoint, as its first layer keeps it
  for (const Layer& layer : model.layers) {
    const auto b = static_cast<std::size_t>(layer.block);
    BlockMemory& block = blocks[b];
    block.params += is_split(layer) ? layer.params / config.tp : layer.params;
    const double kept = kept_bytes(layer, config);
    block.kept += kept;
    if (core[b] > 0) after[b] += kept;
    if (layer.op == LayerOp::attention && config.recompute == Recompute::selective)
      core[b] = rerun_core_bytes(layer, config);
    if (!in_checkpointed_block(model, layer)) {
      block.outside += kept;
    } else if (!has_checkpoint[b]) {  // the block's first checkpointed layer: its input
      has_checkpoint[b] = true;
      block.checkpoint = checkpoint_bytes(layer, config);
      if (keeps_input(layer.op)) input[b] = std::min(kept, block.checkpoint);
    }
  }
  // A full re-run makes what the block kept again, less its input: the checkpoint is there.
  for (std::size_t b = 0; b < blocks.size(); ++b)
    blocks[b].rerun = config.recompute == Recompute::full ? blocks[b].kept - blocks[b].outside - input[b]
                                                          : std::max(0.0, core[b] - after[b]);
  return blocks;
}

namespace {

// B per sample that a re-run adds to a stage's memory at its worst moment (BlockMemory::rerun):
// the backward walks a model chunk's blocks from the last, freeing what each kept (a
// recomputed group: its checkpoint and the layers outside it); a group of recompute_blocks
// blocks re-run together (full, method uniform), one block (method block) or one attention core
// (selective) adds what it makes less what this microbatch's backward has freed before it.
double rerun_bytes_per_sample(const std::vector<BlockMemory>& blocks, const StrategyConfig& config,
                              const std::vector<int>& cuts, int stage) {
  if (config.recompute == Recompute::none) return 0;
  const bool full = config.recompute == Recompute::full;
  double largest = 0;
  for (int c = stage; static_cast<std::size_t>(c) + 1 < cuts.size(); c += config.pp) {
    const int first = cuts[static_cast<std::size_t>(c)];
    double freed = 0;
    for (int b = cuts[static_cast<std::size_t>(c) + 1] - 1; b >= first;) {
      const BlockMemory& block = blocks[static_cast<std::size_t>(b)];
      if (!full || !block_recomputed(config, b, first)) {
        if (!full) largest = std::max(largest, block.rerun - freed);
        freed += block.kept;
        --b;
        continue;
      }
      const int start = config.recompute_method == RecomputeMethod::uniform
                            ? first + (b - first) / config.recompute_blocks * config.recompute_blocks
                            : b;
      double made = 0;
      for (int g = start; g <= b; ++g) {
        made += blocks[static_cast<std::size_t>(g)].rerun;
        freed += blocks[static_cast<std::size_t>(g)].outside;
      }
      largest = std::max(largest, made - freed);
      freed += blocks[static_cast<std::size_t>(start)].checkpoint;
      b = start - 1;
    }
  }
  return largest;
}

}  // namespace

double worker_params(const Model& model, const StrategyConfig& config, const std::vector<int>& cuts,
                     int stage) {
  double params = 0;
  for (std::size_t i : device_layers(model, config, cuts, stage)) {
    const Layer& layer = model.layers[i];
    params += is_split(layer) ? layer.params / config.tp : layer.params;
  }
  return params;
}

bool block_recomputed(const StrategyConfig& config, int block, int chunk_first) {
  if (config.recompute != Recompute::full) return false;
  return config.recompute_method == RecomputeMethod::uniform || block - chunk_first < config.recompute_blocks;
}

double activation_bytes_per_sample(const std::vector<BlockMemory>& blocks, const StrategyConfig& config,
                                   const std::vector<int>& cuts, int stage) {
  const int k = config.recompute_blocks;
  double bytes = 0;
  for (int c = stage; static_cast<std::size_t>(c) + 1 < cuts.size(); c += config.pp) {
    const int first = cuts[static_cast<std::size_t>(c)];
    for (int b = first; b < cuts[static_cast<std::size_t>(c) + 1]; ++b) {
      const BlockMemory& block = blocks[static_cast<std::size_t>(b)];
      if (!block_recomputed(config, b, first)) {
        bytes += block.kept;
        continue;
      }
      // Method uniform: one checkpoint per chunk of k blocks; method block: one per block.
      bytes += block.outside;
      if (config.recompute_method == RecomputeMethod::block || (b - first) % k == 0)
        bytes += block.checkpoint;
    }
  }
  return bytes;
}

double activation_bytes_per_sample(const Model& model, const StrategyConfig& config,
                                   const std::vector<int>& cuts, int stage) {
  STRATA_ASSERT(stage >= 0 && stage < config.pp, "stage outside [0, pp)");
  return activation_bytes_per_sample(block_memory(model, config), config, cuts, stage);
}

double microbatches_in_flight(const StrategyConfig& config, int stage) {
  const std::int64_t m = microbatch_count(config);
  if (config.schedule == PipelineSchedule::gpipe) return static_cast<double>(m);
  const std::int64_t p = config.pp;
  const std::int64_t v = config.interleave;
  if (v > 1) {  // Megatron's interleaved warm-up, in model-chunk microbatches, plus one
    const std::int64_t chunks = std::min(m * v, 2 * (p - stage - 1) + (v - 1) * p + 1);
    return static_cast<double>(chunks) / static_cast<double>(v);
  }
  return static_cast<double>(std::min<std::int64_t>(m, p - stage));
}

MemoryBreakdown worker_memory(const std::vector<BlockMemory>& blocks, const Model& model,
                              const StrategyConfig& config, const std::vector<int>& cuts, int stage) {
  STRATA_ASSERT(stage >= 0 && stage < config.pp, "stage outside [0, pp)");
  double params = 0, largest_block = 0;
  for (int c = stage; static_cast<std::size_t>(c) + 1 < cuts.size(); c += config.pp)
    for (int b = cuts[static_cast<std::size_t>(c)]; b < cuts[static_cast<std::size_t>(c) + 1]; ++b) {
      params += blocks[static_cast<std::size_t>(b)].params;
      largest_block = std::max(largest_block, blocks[static_cast<std::size_t>(b)].params);
    }
  MemoryBreakdown m = model_state_memory(params, config);
  const BytesPerParam per_param = bytes_per_param(config.optimizer, config.dtype);
  if (config.dp > 1) {
    // ZeRO-2 and -3 (lowering.cpp): the backward accumulates each layer's gradient unsharded
    // until its bucket's reduce-scatter, once per iteration; with several microbatches the
    // steady state's peak holds all of them.
    if (config.zero >= 2 && microbatch_count(config) > 1) m.grads += params * per_param.grads;
    // ZeRO-3: the gathered copy of the block in use (the prefetched next one overlaps the
    // peak only in part: the replay counts it from its gather's start).
    if (config.zero >= 3) m.params += largest_block * per_param.params;
    m.total = m.params + m.grads + m.optimizer;
  }
  m.activations =
      (activation_bytes_per_sample(blocks, config, cuts, stage) * microbatches_in_flight(config, stage) +
       rerun_bytes_per_sample(blocks, config, cuts, stage)) *
      microbatch_size(model, config);
  m.total += m.activations;
  return m;
}

MemoryBreakdown worker_memory(const Model& model, const StrategyConfig& config, int stage) {
  return worker_memory(block_memory(model, config), model, config, chunk_cuts(model, config), stage);
}

double peak_worker_memory(const Model& model, const StrategyConfig& config) {
  return peak_worker_memory(block_memory(model, config), model, config, chunk_cuts(model, config));
}

double peak_worker_memory(const std::vector<BlockMemory>& blocks, const Model& model,
                          const StrategyConfig& config, const std::vector<int>& cuts) {
  double peak = 0;
  for (int s = 0; s < config.pp; ++s)
    peak = std::max(peak, worker_memory(blocks, model, config, cuts, s).total);
  return peak;
}

}  // namespace models
}  // namespace strata
