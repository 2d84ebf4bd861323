// Memory model: the bytes one worker holds at its peak during a training iteration.
//
// Model states follow ZeRO's accounting (Rajbhandari et al., SC'20, section 3.1), without ZeRO
// sharding (every dp replica holds them whole), per parameter:
//                           params  grads  optimizer state
//   adam, bf16/fp16 mixed      2      2     12  (fp32 master weights, momentum, variance)
//   adam, fp32                 4      4      8  (momentum, variance)
//   sgd,  bf16/fp16 mixed      2      2      8  (fp32 master weights, momentum)
//   sgd,  fp32                 4      4      4  (momentum)
//   fp64: fp32's layout with 8-byte elements.
// Optimizer::sgd is SGD with momentum (what PyTorch training scripts use); plain SGD would hold
// no state (8 B per fp32 parameter).
//
// A worker of pipeline stage s holds the parameters of the layers of its stage's blocks
// (partition_blocks in strategy.hpp); a tensor-split layer's parameters are divided by tp,
// a replicated one's are held whole.
//
// Activations: one microbatch of stage s saves Σ saved_elems x microbatch size x
// bytes_per_element(dtype), divided by tp for split layers only (Megatron without sequence
// parallelism: norms, residuals and dropouts are replicated; Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models").
// The schedule decides how many microbatches are in flight at the peak: GPipe runs every forward
// before any backward and holds all m; 1F1B (PipeDream-Flush) holds at most min(m, pp - s) on
// stage s, its warm-up depth. Not modelled: temporary buffers, communication buffers,
// fragmentation, the framework's own footprint.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata {
inline namespace models {

struct MemoryBreakdown {
  double params = 0;       // B
  double grads = 0;        // B
  double optimizer = 0;    // B
  double activations = 0;  // B
  double total = 0;        // B, the sum of the above
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

// Samples per microbatch: effective_global_batch / dp / microbatch_count (strategy.hpp);
// fractional if they do not divide.
double microbatch_size(const Model& model, const StrategyConfig& config);

// Indices of the layers of pipeline stage `stage`, given the stage's first blocks `cuts` (as
// returned by partition_blocks): layers whose block is in [cuts[stage], cuts[stage + 1]).
std::vector<std::size_t> stage_layers(const Model& model, const std::vector<int>& cuts, int stage);

// Parameters one worker of `stage` holds (split layers divided by tp).
double worker_params(const Model& model, const StrategyConfig& config, const std::vector<int>& cuts,
                     int stage);

// REQUIRES: 0 <= stage < config.pp; the configuration passes check_strategy.
MemoryBreakdown worker_memory(const Model& model, const StrategyConfig& config, int stage);

// Maximum over the pipeline stages of worker_memory(...).total (B).
double peak_worker_memory(const Model& model, const StrategyConfig& config);

}  // namespace models
}  // namespace strata
