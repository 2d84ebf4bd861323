// Memory model: the bytes one worker holds at its peak during a training iteration.
//
// Model states follow ZeRO's accounting (Rajbhandari et al., SC'20, section 3.1 and Fig. 1), per
// parameter:
//                           params  grads  optimizer state
//   adam, bf16/fp16 mixed      2      2     12  (K: fp32 master weights, momentum, variance)
//   adam, fp32                 4      4      8  (momentum, variance)
//   sgd,  bf16/fp16 mixed      2      2      8  (fp32 master weights, momentum)
//   sgd,  fp32                 4      4      4  (momentum)
//   fp64: fp32's layout with 8-byte elements.
// Optimizer::sgd is SGD with momentum (what PyTorch training scripts use); plain SGD would hold
// no state (8 B per fp32 parameter).
// ZeRO stage z shards them over the N = dp replicas (Fig. 1): stage 1 the optimizer state
// (mixed-precision Adam: 4Ψ + 12Ψ/N bytes), stage 2 also the gradients (2Ψ + 14Ψ/N), stage 3
// also the parameters (16Ψ/N). Offload (ZeRO-Offload, Ren et al., USENIX ATC'21) keeps the
// optimizer state, fp32 master copy included, in host memory: it leaves the GPU total and is
// reported as host_optimizer. Not counted, as in Fig. 1: ZeRO-3's gathered parameters of the
// layers being computed and prefetched, communication buckets.
//
// A worker of pipeline stage s holds the parameters of the layers of its stage's blocks
// (partition_blocks in strategy.hpp; with interleave = v > 1 the model is cut into pp x v equal
// chunks of blocks and stage s holds chunks s, s + pp, ..., as Megatron's interleaved schedule
// places them); a tensor-split layer's parameters are divided by tp, a replicated one's are held
// whole.
//
// Activations (docs/memory.md) follow Korthikanti et al., "Reducing Activation Recomputation in
// Large Transformer Models" (MLSys 2023, arXiv:2205.05198), section 4 and Table 2. One
// microbatch of b samples keeps Σ saved_elems x b x bytes_per_element(dtype) (zoo.hpp), each
// layer's share divided by tp as Megatron holds it:
// - without sequence parallelism, split layers that keep a sharded tensor (attention, row
//   linears, GeLU, the vocab-parallel loss) are divided by tp, and everything that keeps the
//   replicated hidden state is held whole: layer norms, dropout masks, the inputs of the
//   column-parallel linears (QKV, fc1, the LM head) and the embedding's dropout mask. For a GPT
//   block that is sbh(10 + 24/t + 5as/(ht)) bytes (eq. 2);
// - with sequence parallelism every tensor is divided by tp: sbh/t (34 + 5as/h) (eq. 3);
// - selective recomputation and FlashAttention (Dao et al., NeurIPS 2022) keep no s x s term:
//   the attention layer's saved_elems less Q, K and V (3 x out_elems), the 5as/h term; the
//   softmax statistics FlashAttention keeps (a·s values per sample) are not counted;
// - full recomputation keeps, per checkpoint, the input of the checkpointed transformer blocks
//   (2sbh bytes at 16 bits, divided by tp with sequence parallelism), as Table 2's "full
//   activation recompute" row: method uniform, one checkpoint per recompute_blocks blocks of a
//   stage (of a model chunk); method block, the first recompute_blocks blocks of a stage (of a
//   model chunk) checkpointed, the others whole. As the paper, the full activations of the one
//   block being re-run during its backward are not counted;
// - the layers outside the transformer blocks (a GPT's "embed", "lnf", "head", "loss": names
//   without '/', zoo.hpp) are never recomputed; the loss keeps its logits in fp32 (4 B per
//   element at 16-bit dtypes, section 4.3's 4sbv/t, as Megatron's cross entropy runs in fp32).
// The schedule decides how many microbatches are in flight at the peak: GPipe holds all m; 1F1B
// (PipeDream-Flush) and ZB-H1 (Qi et al., ICLR 2024: 1F1B's peak) hold min(m, pp - s) on stage s,
// its warm-up depth (section 4.2.3: the first stage holds pp microbatches); interleaved 1F1B
// holds min(m v, 2 (pp - s - 1) + (v - 1) pp + 1) model-chunk microbatches (Megatron's warm-up
// plus one), each 1/v of the stage: on the first stage pp (1 + (pp - 1)/(pp v)) microbatches, as
// section 4.2.3. Not modelled: temporary buffers, communication buffers, fragmentation, the
// framework's own footprint.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata {
inline namespace models {

struct MemoryBreakdown {
  double params = 0;          // B, on the GPU (divided by dp with ZeRO-3)
  double grads = 0;           // B, on the GPU (divided by dp with ZeRO-2 and 3)
  double optimizer = 0;       // B, on the GPU (divided by dp with ZeRO >= 1; 0 with offload)
  double activations = 0;     // B, at the schedule's peak
  double total = 0;           // B on the GPU, the sum of the above
  double host_optimizer = 0;  // B in host memory with offload (this worker's optimizer shard)
};

// Bytes per parameter held for params, grads and optimizer state (table above).
struct BytesPerParam {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double total() const { return params + grads + optimizer; }
};
// The optimizer share is strategy.hpp's optimizer_state_bytes_per_param, so that the lowering's
// buffers and this model agree.
BytesPerParam bytes_per_param(Optimizer optimizer, DType dtype);

// What `psi` parameters cost one worker of `config` on the GPU (params, grads, optimizer; total)
// and in host memory (host_optimizer), with ZeRO sharding over dp and offload; activations 0.
MemoryBreakdown model_state_memory(double psi, const StrategyConfig& config);

// Samples per microbatch: effective_global_batch / dp / microbatch_count (strategy.hpp);
// fractional if they do not divide.
double microbatch_size(const Model& model, const StrategyConfig& config);

// Indices of the layers of pipeline stage `stage`, given the stage's first blocks `cuts` (as
// returned by partition_blocks): layers whose block is in [cuts[stage], cuts[stage + 1]).
std::vector<std::size_t> stage_layers(const Model& model, const std::vector<int>& cuts, int stage);

// The first block of each model chunk (size pp x v + 1): partition_blocks(model, pp) without
// interleaving, pp x v equal chunks with interleave = v > 1 (check_strategy requires that they
// divide). Stage s holds chunks s, s + pp, ...
std::vector<int> chunk_cuts(const Model& model, const StrategyConfig& config);

// Indices of the layers the worker of `stage` holds, in model order, given chunk_cuts().
// REQUIRES: the model's blocks are contiguous in layer order (zoo.hpp).
std::vector<std::size_t> device_layers(const Model& model, const StrategyConfig& config,
                                       const std::vector<int>& cuts, int stage);

// Parameters one worker of `stage` holds (split layers divided by tp), given chunk_cuts().
double worker_params(const Model& model, const StrategyConfig& config, const std::vector<int>& cuts,
                     int stage);

// Whether `layer` is part of a transformer block that full recomputation checkpoints (every
// layer but a GPT's embedding and output layers, see above).
bool in_checkpointed_block(const Model& model, const Layer& layer);

// What one block costs one worker, with the options of `config` (tp, sequence_parallel,
// flash_attention, recompute == selective, dtype; nothing else of it is read).
struct BlockMemory {
  double params = 0;      // parameters (split layers divided by tp)
  double kept = 0;        // B per sample, every layer's activations as kept without full recompute
  double outside = 0;     // B per sample of its layers outside the checkpointed block (kept always)
  double checkpoint = 0;  // B per sample of a full-recomputation checkpoint of its input
  // B per sample made again while the block's backward runs, on top of what is kept: with full
  // recomputation its checkpointed layers' activations (kept - outside); with selective, the
  // attention core's scores (FlashAttention: its statistics) less what the block's later layers
  // freed before the core is re-run.
  double rerun = 0;
};
// Indexed by block. O(layers): the closed-form estimate keeps it across configurations.
std::vector<BlockMemory> block_memory(const Model& model, const StrategyConfig& config);

// Whether full recomputation (config.recompute == full) re-runs `block` of a model chunk (of a
// stage) starting at `chunk_first`: every block with method uniform, the first recompute_blocks
// with method block.
bool block_recomputed(const StrategyConfig& config, int block, int chunk_first);

// Activation bytes per sample one worker of `stage` keeps for one microbatch, with the options
// of `config` (Korthikanti et al., above), given chunk_cuts() (and block_memory(model, config)).
double activation_bytes_per_sample(const Model& model, const StrategyConfig& config,
                                   const std::vector<int>& cuts, int stage);
double activation_bytes_per_sample(const std::vector<BlockMemory>& blocks, const StrategyConfig& config,
                                   const std::vector<int>& cuts, int stage);

// Microbatches whose activations stage `stage` holds at its peak (fractional when interleaved).
double microbatches_in_flight(const StrategyConfig& config, int stage);

// REQUIRES: 0 <= stage < config.pp; the configuration passes check_strategy.
MemoryBreakdown worker_memory(const Model& model, const StrategyConfig& config, int stage);
// The same from block_memory(model, config) and chunk_cuts(model, config).
MemoryBreakdown worker_memory(const std::vector<BlockMemory>& blocks, const Model& model,
                              const StrategyConfig& config, const std::vector<int>& cuts, int stage);

// Maximum over the pipeline stages of worker_memory(...).total (B).
double peak_worker_memory(const Model& model, const StrategyConfig& config);
// The same from block_memory(model, config) and chunk_cuts(model, config).
double peak_worker_memory(const std::vector<BlockMemory>& blocks, const Model& model,
                          const StrategyConfig& config, const std::vector<int>& cuts);

}  // namespace models
}  // namespace strata
