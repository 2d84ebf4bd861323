// Layer costs: what every layer's compute tasks cost for one microbatch on one tensor rank, as
// the cost model times layer_cost_task() (layer_tasks.hpp), computed once per (microbatch, tp,
// dtype, layer options) and reused. The closed-form estimate's inner loop (analytical.hpp): an
// exploration evaluates thousands of configurations that share a handful of these keys, and
// building and timing ~1,000 tasks per configuration would dominate it.
//
// Owns nothing but its cache; the model, host and cost model must outlive it and stay unchanged.
// Not thread-safe (one table per thread).
#pragma once

#include <map>
#include <tuple>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata {
inline namespace models {

struct LayerCost {
  double fwd_s = 0;      // forward task
  double bwd_s = 0;      // backward data + backward weight tasks
  double bwdw_s = 0;     // the backward weight task alone (0 when the layer has none)
  double fwd_flops = 0;  // FLOP of the forward task (0 for fixed layers: their time is given)
  double bwd_flops = 0;  // FLOP of the backward tasks (idem)
  // Megatron's tensor-parallel collective of the layer (analytical.cpp's tp_collective_s):
  // elements per sample of its full-size buffer (0: none), and whether it is in forward.
  double tp_elems = 0;
  bool tp_forward = true;
};

// The layers of one block summed: what a stage of the closed-form estimate adds up per block.
struct BlockCost {
  double fwd_s = 0, bwd_s = 0, bwdw_s = 0;  // LayerCost's, summed
  double flops = 0;                         // forward + backward
  double attention_fwd_s = 0;               // attention cores (selective recomputation re-runs them)
  double attention_flops = 0;
  double checkpointed_fwd_s = 0;  // layers of the checkpointed block (full recomputation re-runs them)
  double checkpointed_flops = 0;
  double tp_fwd_count = 0, tp_fwd_elems = 0;  // TP collectives and their elements per sample
  double tp_bwd_count = 0, tp_bwd_elems = 0;
  // s of weight-gradient GEMMs of the layers whose TP collective is in backward (column-split
  // linears): what tp_comm=async hides their dX all-reduces behind (Megatron-LM's
  // LinearWithGradAccumulationAndAsyncCommunication).
  double tp_bwd_overlap_s = 0;
  double checkpointed_tp_count = 0, checkpointed_tp_elems = 0;  // forward ones of checkpointed layers
  double out_elems = 0;                                         // the block's last layer's output
};

class LayerCostTable {
 public:
  LayerCostTable(const Model& model, const HostSpec& host, const CostModel& cost)
      : model_(model), host_(host), cost_(cost) {}

  // The costs of model.layers, in order. REQUIRES: microbatch > 0, tp >= 1. The reference stays
  // valid until the next call.
  const std::vector<LayerCost>& costs(double microbatch, int tp, DType dtype,
                                      const LayerTaskOptions& options);
  // The same summed per block (indexed by block; in_checkpointed_block of memory_model.hpp).
  const std::vector<BlockCost>& blocks(double microbatch, int tp, DType dtype,
                                       const LayerTaskOptions& options);

 private:
  using Key = std::tuple<double, int, DType, bool, bool, KernelSet>;
  struct Entry {
    std::vector<LayerCost> layers;
    std::vector<BlockCost> blocks;
  };
  Entry& entry(double microbatch, int tp, DType dtype, const LayerTaskOptions& options);
  const Model& model_;
  const HostSpec& host_;
  const CostModel& cost_;
  std::map<Key, Entry> cache_;
};

}  // namespace models
}  // namespace strata
