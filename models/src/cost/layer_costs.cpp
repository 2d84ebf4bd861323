// Layer costs (see layer_costs.hpp).
#include "strata/models/cost/layer_costs.hpp"

#include "strata/models/cost/memory_model.hpp"

namespace strata {
inline namespace models {

namespace {

// A bound on the keys kept: an exploration uses a few microbatch sizes and tp degrees; a caller
// that sweeps many more only recomputes.
constexpr std::size_t kMaxKeys = 64;

// Megatron's f/g operators (Shoeybi et al. 2019, section 3): an allreduce of the full-size
// output after each row-split linear in forward, of the full-size input gradient of each
// column-split linear in backward; a vocab-parallel embedding reduces its output in forward, a
// vocab-parallel loss its per-token partial sums (zoo.hpp).
void set_tp_collective(const Layer& layer, LayerCost& c) {
  if (!is_split(layer)) return;
  if (layer.op == LayerOp::linear && layer.split == TensorSplit::row) c.tp_elems = layer.out_elems;
  if (layer.op == LayerOp::linear && layer.split == TensorSplit::column) {
    c.tp_elems = input_elems(layer);
    c.tp_forward = false;
  }
  if (layer.op == LayerOp::embedding || layer.op == LayerOp::loss) c.tp_elems = layer.out_elems;
}

void add_to_block(const Model& model, const Layer& layer, const LayerCost& c, BlockCost& block) {
  block.fwd_s += c.fwd_s;
  block.bwd_s += c.bwd_s;
  block.bwdw_s += c.bwdw_s;
  block.flops += c.fwd_flops + c.bwd_flops;
  if (layer.op == LayerOp::attention) {
    block.attention_fwd_s += c.fwd_s;
    block.attention_flops += c.fwd_flops;
  }
  const bool has_tp = c.tp_elems > 0;
  (c.tp_forward ? block.tp_fwd_count : block.tp_bwd_count) += has_tp ? 1 : 0;
  (c.tp_forward ? block.tp_fwd_elems : block.tp_bwd_elems) += c.tp_elems;
  if (!c.tp_forward && has_tp) block.tp_bwd_overlap_s += c.bwdw_s;
  if (in_checkpointed_block(model, layer)) {
    block.checkpointed_fwd_s += c.fwd_s;
    block.checkpointed_flops += c.fwd_flops;
    if (c.tp_forward && has_tp) {
      block.checkpointed_tp_count += 1;
      block.checkpointed_tp_elems += c.tp_elems;
    }
  }
  block.out_elems = layer.out_elems;
}

}  // namespace

LayerCostTable::Entry& LayerCostTable::entry(double microbatch, int tp, DType dtype,
                                             const LayerTaskOptions& options) {
  const Key key{microbatch, tp, dtype, options.sequence_parallel, options.flash_attention, options.kernels};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxKeys) cache_.clear();
  Entry e;
  e.layers.reserve(model_.layers.size());
  e.blocks.resize(static_cast<std::size_t>(model_.num_blocks_or_layers()));
  for (const Layer& layer : model_.layers) {
    const bool counts_flops = layer.op != LayerOp::fixed;
    auto time = [&](Phase phase, double& flops) {
      const Task task = layer_cost_task(layer, phase, microbatch, tp, dtype, options);
      if (counts_flops) flops += task.flops;
      return cost_.compute_time(task, host_);
    };
    LayerCost c;
    c.fwd_s = time(Phase::forward, c.fwd_flops);
    c.bwd_s = time(Phase::backward_data, c.bwd_flops);
    if (has_backward_weight(layer)) {
      c.bwdw_s = time(Phase::backward_weight, c.bwd_flops);
      c.bwd_s += c.bwdw_s;
    }
    set_tp_collective(layer, c);
    add_to_block(model_, layer, c, e.blocks[static_cast<std::size_t>(layer.block)]);
    e.layers.push_back(c);
  }
  return cache_.emplace(key, std::move(e)).first->second;
}

const std::vector<LayerCost>& LayerCostTable::costs(double microbatch, int tp, DType dtype,
                                                    const LayerTaskOptions& options) {
  return entry(microbatch, tp, dtype, options).layers;
}

const std::vector<BlockCost>& LayerCostTable::blocks(double microbatch, int tp, DType dtype,
                                                     const LayerTaskOptions& options) {
  return entry(microbatch, tp, dtype, options).blocks;
}

}  // namespace models
}  // namespace strata
