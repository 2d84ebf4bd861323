// The iteration-independent part of the lowering: stages, layer templates, Megatron
// communication, gradient buckets and pipeline schedules (see lowering_layout.hpp).
#include "lowering_layout.hpp"

#include <algorithm>

#include "strata/models/cost/memory_model.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace lowering {
namespace {

// Whether layer i's input is whole on every tp rank (without sequence parallelism).
bool input_whole(const Model& model, std::size_t i) {
  return i == 0 || model.layers[i - 1].split == TensorSplit::replicated ||
         model.layers[i - 1].split == TensorSplit::row;
}

bool splits_output(const Layer& layer) {
  // Column and heads splits leave each tp rank a slice of the output; a vocab-parallel embedding
  // or loss ends with an allreduce that makes it whole again.
  return (layer.split == TensorSplit::column || layer.split == TensorSplit::heads) &&
         layer.op != LayerOp::embedding && layer.op != LayerOp::loss;
}

// Megatron-LM (Shoeybi et al. 2019, fig. 3): g (allreduce in forward) after every row-split
// layer, f (allreduce in backward) before every column-parallel region, i.e. on the input
// gradient of a split layer whose input is whole. GPT's vocab-parallel embedding sums partial
// lookups in forward; its vocab-parallel cross-entropy reduces the max, the target logit and
// the sum of exponentials (three fp32 values per token, merged into one allreduce here).
// With sequence parallelism (Korthikanti et al. 2023, section 4.2.2) the layers between those
// regions run on seq/tp tokens: g becomes a reduce-scatter along the sequence (its backward an
// all-gather of the output gradient) and f an all-gather of the input (its backward a
// reduce-scatter of the input gradient); the weight gradient gathers the input again. The
// cross-entropy's allreduce stays.
LayerComm tp_comm(const Model& model, std::size_t i, double microbatch, int tp, DType dtype, bool sp,
                  bool has_bwdw) {
  LayerComm comm;
  if (tp <= 1) return comm;
  const Layer& layer = model.layers[i];
  const double elem = bytes_per_element(dtype);
  if (layer.split == TensorSplit::row ||
      (layer.split == TensorSplit::column && layer.op == LayerOp::embedding)) {
    comm.fwd_allreduce_bytes = layer.out_elems * microbatch * elem;
    comm.fwd_dtype = dtype;
    if (sp) {
      comm.fwd_kind = TaskKind::reduce_scatter;
      comm.bwd_gather_bytes = comm.fwd_allreduce_bytes;
    }
  } else if (layer.split == TensorSplit::column && layer.op == LayerOp::loss) {
    comm.fwd_allreduce_bytes = 3.0 * static_cast<double>(model.seq) * microbatch * 4.0;
    comm.fwd_dtype = DType::fp32;
  }
  if (splits_output(layer) && input_whole(model, i)) {
    comm.bwd_allreduce_bytes = input_elems(layer) * microbatch * elem;
    if (sp) {
      comm.bwd_kind = TaskKind::reduce_scatter;
      comm.fwd_gather_bytes = comm.bwd_allreduce_bytes;
      if (has_bwdw) comm.wgrad_gather_bytes = comm.bwd_allreduce_bytes;
    }
  }
  return comm;
}

// Whether tp ranks hold whole copies of the layer's saved activations without sequence
// parallelism: replicated layers, and column-parallel linears and embeddings, whose input (what
// they save) is whole (Korthikanti et al. 2023, eq. 2: s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes per
// transformer layer). With sequence parallelism every rank keeps 1/tp of them.
bool saves_whole(const Model& model, std::size_t i) {
  const Layer& layer = model.layers[i];
  if (!is_split(layer)) return true;
  return layer.split == TensorSplit::column &&
         (layer.op == LayerOp::linear || layer.op == LayerOp::embedding) && input_whole(model, i);
}

// Layer i on the `degree` tensor-parallel ranks of its stage.
LayerPlan plan_layer(const Model& model, std::size_t i, const Layout& layout, DType dtype, int degree) {
  const Layer& layer = model.layers[i];
  const int tp = is_split(layer) ? degree : 1;
  const double elem = bytes_per_element(dtype);
  const double mb = layout.microbatch_size;
  LayerPlan out;
  out.params = layer.params / tp;
  out.weight_bytes = out.params * elem;
  const bool sp = layout.config->sequence_parallel && degree > 1;
  const LayerTaskOptions options = layer_task_options(*layout.config, *layout.model);
  // FlashAttention keeps Q, K, V and its softmax statistics instead of the s x s scores
  // (layer_tasks.hpp, saved_elems_per_sample); attention is split by heads.
  const double saved = layer.op == LayerOp::attention && options.flash_attention
                           ? 3 * layer.out_elems * elem + flash_statistics_bytes_per_sample(layer)
                           : layer.saved_elems * elem;
  out.saved_bytes = saved * mb / (sp || !saves_whole(model, i) ? degree : 1);
  // With SP every output is a sequence or hidden shard but the loss's (one value per token).
  const bool sharded_output = splits_output(layer) || (sp && layer.op != LayerOp::loss);
  out.out_bytes = layer.out_elems * mb * elem / (sharded_output ? degree : 1);
  // With sequence parallelism the replicated layers work on seq/tp tokens of each rank
  // (layer_task divides them by the tp it is given); flash attention marks the core's tasks.
  const int task_tp = sp ? degree : tp;
  out.fwd = layer_task(layer, Phase::forward, mb, task_tp, dtype, options);
  out.bwd = layer_task(layer, Phase::backward_data, mb, task_tp, dtype, options);
  // A weight tied to another layer's (GPT's head) has no parameters of its own but still
  // computes a weight gradient; its FLOPs are kept, its gradient is not communicated (Megatron's
  // embedding-group allreduce between the first and last stage is not modelled).
  out.has_bwdw =
      backward_weight_kind(layer.op).has_value() && (layer.params > 0 || layer.bwd_weight_flops > 0);
  if (out.has_bwdw) out.bwdw = layer_task(layer, Phase::backward_weight, mb, task_tp, dtype, options);
  out.writes_wgrad = layer.params > 0;
  // The simulator's memory follows the memory model: saved activations live from a
  // microbatch's forward of the layer to its backward data.
  out.fwd.mem_alloc = out.saved_bytes;
  out.bwd.mem_free = out.saved_bytes;
  out.comm = tp_comm(model, i, mb, degree, dtype, sp, out.has_bwdw);
  return out;
}

// PipeDream-Flush (Narayanan et al. 2021): stage s runs min(pp-s-1, m) warm-up forwards, then
// alternates one forward and one backward, then drains the backwards. Without PP this is plain
// gradient accumulation, F0 B0 F1 B1 ... GPipe: all forwards, then backwards in reverse order.
std::vector<Slot> schedule(bool one_f_one_b, int pp, int stage, int m) {
  std::vector<Slot> slots;
  slots.reserve(static_cast<std::size_t>(2 * m));
  if (!one_f_one_b) {
    for (int j = 0; j < m; ++j) slots.push_back({true, j});
    for (int j = m - 1; j >= 0; --j) slots.push_back({false, j});
    return slots;
  }
  const int warmup = std::min(pp - stage - 1, m);
  for (int j = 0; j < warmup; ++j) slots.push_back({true, j});
  for (int k = 0; k < m - warmup; ++k) {
    slots.push_back({true, warmup + k});
    slots.push_back({false, k});
  }
  for (int j = m - warmup; j < m; ++j) slots.push_back({false, j});
  return slots;
}

// ZB-H1 (Qi et al., ICLR 2024, section 3, fig. 3): 1F1B's F and B order, each B(j) followed by
// W(j - d) with d = pp - 1 - stage deferred weight gradients (the stage's cool-down waits, which
// the deferred W's fill), the last d W's after the last B. The in-flight limit stays 1F1B's.
std::vector<Slot> zero_bubble(const std::vector<Slot>& one_f_one_b, int pp, int stage, int m) {
  const int deferred = std::min(pp - 1 - stage, m);
  std::vector<Slot> slots;
  slots.reserve(static_cast<std::size_t>(3 * m));
  int next_w = 0;
  for (const Slot& slot : one_f_one_b) {
    slots.push_back(slot);
    if (!slot.forward && slot.microbatch >= deferred) slots.push_back({false, next_w++, true});
  }
  while (next_w < m) slots.push_back({false, next_w++, true});
  return slots;
}

// A slot of a pipeline rank's interleaved order: which of its model chunks (0..v-1) it runs.
struct ChunkSlot {
  int chunk = 0;
  Slot slot;
};

// Megatron-LM's interleaved 1F1B for pipeline rank r (Narayanan et al. 2021, section 2.2.2,
// fig. 4; forward_backward_pipelining_with_interleaving in megatron/core/pipeline_parallel/
// schedules.py): the m*v chunk-microbatches run in groups of pp microbatches; the k-th forward
// runs chunk (k mod pp*v) / pp on microbatch (k / pp*v) * pp + k mod pp, the k-th backward the
// same microbatch on chunk v - 1 - (k mod pp*v) / pp. The rank runs min(2(pp - r - 1) +
// (v - 1) pp, m v) warm-up forwards, then alternates one forward and one backward, then drains.
std::vector<ChunkSlot> interleaved(int pp, int v, int r, int m) {
  const int total = m * v;
  const int group = pp * v;
  auto at = [&](int k, bool forward) {
    const int in_group = k % group;
    const int chunk = forward ? in_group / pp : v - 1 - in_group / pp;
    return ChunkSlot{chunk, {forward, k / group * pp + in_group % pp}};
  };
  const int warmup = std::min(2 * (pp - r - 1) + (v - 1) * pp, total);
  std::vector<ChunkSlot> order;
  order.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) order.push_back(at(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(at(warmup + k, true));
    order.push_back(at(k, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(at(k, false));
  return order;
}

// The slots, positions and forward gates of pipeline rank r's stages (chunks r, r + pp, ...) from
// its order, in one pass over it.
void assign_slots(Layout& layout, int r) {
  std::vector<ChunkSlot> order;
  if (layout.interleave > 1) {
    order = interleaved(layout.pp, layout.interleave, r, layout.microbatches);
  } else {
    std::vector<Slot> slots = schedule(layout.one_f_one_b, layout.pp, r, layout.microbatches);
    if (layout.zero_bubble) slots = zero_bubble(slots, layout.pp, r, layout.microbatches);
    order.reserve(slots.size());
    for (const Slot& slot : slots) order.push_back({0, slot});
  }
  const auto m = static_cast<std::size_t>(layout.microbatches);
  for (int s = r; s < layout.stage_count(); s += layout.pp) {
    Stage& stage = layout.stages[static_cast<std::size_t>(s)];
    stage.fwd_slot.assign(m, 0);
    stage.bwd_slot.assign(m, 0);
    stage.wgt_slot.assign(m, 0);
    stage.fwd_gate.assign(m, {-1, 0});
  }
  std::pair<int, int> last_backward{-1, 0};
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Slot& slot = order[k].slot;
    const int s = order[k].chunk * layout.pp + r;
    Stage& stage = layout.stages[static_cast<std::size_t>(s)];
    const auto j = static_cast<std::size_t>(slot.microbatch);
    stage.slots.push_back(slot);
    stage.positions.push_back(static_cast<int>(k));
    auto& table = slot.forward ? stage.fwd_slot : slot.weight ? stage.wgt_slot : stage.bwd_slot;
    table[j] = static_cast<int>(k);
    if (slot.forward) stage.fwd_gate[j] = last_backward;
    if (!slot.forward && !slot.weight) {
      stage.bwd_order.push_back(slot.microbatch);
      last_backward = {s, slot.microbatch};
    }
  }
  if (layout.zero_bubble) return;
  for (int s = r; s < layout.stage_count(); s += layout.pp) {
    Stage& stage = layout.stages[static_cast<std::size_t>(s)];
    stage.wgt_slot = stage.bwd_slot;
  }
}

// Gradient buckets in backward order (PyTorch DDP): close a bucket once it holds bucket_bytes,
// or, with bucket_bytes == 0, at every block boundary.
void make_buckets(const Model& model, const Layout& layout, double bucket_bytes, Stage& stage) {
  std::vector<int> current;
  double bytes = 0;
  int block = -1;
  auto close = [&] {
    if (current.empty()) return;
    stage.buckets.push_back(std::move(current));
    stage.bucket_bytes.push_back(bytes);
    current.clear();
    bytes = 0;
  };
  for (int i = stage.end_layer - 1; i >= stage.first_layer; --i) {
    const LayerPlan& layer = layout.layers[static_cast<std::size_t>(i)];
    if (!layer.writes_wgrad) continue;
    const int layer_block = model.layers[static_cast<std::size_t>(i)].block;
    if (bucket_bytes == 0 && layer_block != block) close();
    block = layer_block;
    current.push_back(i);
    bytes += layer.weight_bytes;
    if (bucket_bytes > 0 && bytes >= bucket_bytes) close();
  }
  close();
  stage.bucket_of.assign(static_cast<std::size_t>(stage.size()), -1);
  for (std::size_t b = 0; b < stage.buckets.size(); ++b)
    for (int i : stage.buckets[b])
      stage.bucket_of[static_cast<std::size_t>(i - stage.first_layer)] = static_cast<int>(b);
}

void make_stage(const Model& model, const Layout& layout, int s, const std::vector<int>& bounds,
                Stage& stage) {
  const auto begin = std::find_if(model.layers.begin(), model.layers.end(), [&](const Layer& l) {
    return l.block >= bounds[static_cast<std::size_t>(s)];
  });
  const auto end = std::find_if(begin, model.layers.end(), [&](const Layer& l) {
    return l.block >= bounds[static_cast<std::size_t>(s) + 1];
  });
  stage.first_layer = static_cast<int>(begin - model.layers.begin());
  stage.end_layer = static_cast<int>(end - model.layers.begin());
  stage.tp = layout.tp_of(s);
  STRATA_ASSERT(stage.size() > 0, "every pipeline stage holds at least one layer");
  for (int i = stage.first_layer; i < stage.end_layer; ++i)
    stage.params += layout.layers[static_cast<std::size_t>(i)].params;
  make_buckets(model, layout, layout.config->bucket_bytes, stage);
  plan_recompute(model, layout, stage);
  plan_param_units(model, layout, stage);
}

}  // namespace

int lowered_replica_count(const StrategyConfig& config) {
  if (config.symmetric_replicas > 0) return config.symmetric_replicas;
  return config.lowered_replicas > 0 ? std::min(config.lowered_replicas, config.dp) : config.dp;
}

Layout make_layout(const Model& model, const StrategyConfig& config) {
  Layout layout;
  layout.model = &model;
  layout.config = &config;
  layout.dp = config.dp;
  layout.replicas = lowered_replica_count(config);
  layout.group_replicas = config.symmetric_replicas > 0 ? config.symmetric_replicas : config.dp;
  layout.tp = config.tp;
  layout.pp = config.pp;
  layout.microbatches = static_cast<int>(microbatch_count(config));
  layout.global_batch = effective_global_batch(model, config);
  layout.microbatch_size =
      static_cast<double>(layout.global_batch) / (static_cast<double>(config.dp) * layout.microbatches);
  layout.zero_bubble = config.pp > 1 && config.schedule == PipelineSchedule::zb_h1;
  layout.one_f_one_b = config.pp == 1 || config.schedule != PipelineSchedule::gpipe;
  layout.interleave = config.pp > 1 ? config.interleave : 1;
  layout.slot_count = (layout.zero_bubble ? 3 : 2) * layout.microbatches * layout.interleave;
  // The memory model's cut: pp x v equal chunks when interleaved, else partition_blocks.
  const std::vector<int> bounds = chunk_cuts(model, config);
  layout.stage_first.push_back(0);
  for (int s = 0; s < layout.stage_count(); ++s) {
    const int degree = config.tp_of(s);
    layout.stage_tp.push_back(degree);
    layout.stage_first.push_back(layout.stage_first.back() + degree);
    layout.stage_of_rank.insert(layout.stage_of_rank.end(), static_cast<std::size_t>(degree), s);
  }
  layout.layers.reserve(model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    // The stage holding the layer's block.
    const auto after = std::upper_bound(bounds.begin() + 1, bounds.end() - 1, model.layers[i].block);
    const int s = static_cast<int>(after - bounds.begin()) - 1;
    layout.layers.push_back(plan_layer(model, i, layout, config.dtype, layout.tp_of(s)));
  }
  layout.stages.resize(static_cast<std::size_t>(layout.stage_count()));
  for (int r = 0; r < layout.pp; ++r) assign_slots(layout, r);
  std::int64_t positions = 0;  // per slot: forward 2n + 2, backward send/bwd + 1
  for (int s = 0; s < layout.stage_count(); ++s) {
    Stage& stage = layout.stages[static_cast<std::size_t>(s)];
    make_stage(model, layout, s, bounds, stage);
    positions = std::max({positions, static_cast<std::int64_t>(3 * stage.size() + 2),
                          static_cast<std::int64_t>(stage.send_bwd_pos + 1)});
  }
  // A rank's buckets in issue order: its last chunk's backward ends first (interleaved()).
  for (int s = layout.stage_count() - 1; s >= 0; --s) {
    Stage& stage = layout.stages[static_cast<std::size_t>(s)];
    if (s + layout.pp < layout.stage_count()) {
      const Stage& later = layout.stages[static_cast<std::size_t>(s + layout.pp)];
      stage.bucket_offset = later.bucket_offset + static_cast<int>(later.buckets.size());
    }
    layout.max_buckets =
        std::max(layout.max_buckets, static_cast<std::int64_t>(stage.bucket_offset + stage.buckets.size()));
  }
  layout.slot_stride = positions;
  layout.iteration_stride = layout.slot_count * layout.slot_stride + 2 * layout.max_buckets + 1;
  return layout;
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
