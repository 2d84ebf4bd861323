// Internal to the lowering (lowering*.cpp): what is the same for every iteration of a Plan —
// the stages, the per-layer task templates and Megatron communication, the DP buckets, the
// pipeline schedule of each stage and the priority formula.
//
// Priorities. Each stage runs a sequence of slots (F(j): forward of microbatch j, B(j): its
// backward, and with ZB-H1 W(j): its weight gradients), the same on every worker of the stage, so every
// collective (whose members share a stage) gets one priority on all of them. A task's priority is
//   iteration * iteration_stride + slot * slot_stride + position
// with positions inside a slot (n = layers of the stage, k = layer in the stage, r = n-1-k):
//   forward:  recv/fwd 0, ZeRO-3 parameter gather or SP input gather before fwd(k) 1+3k,
//             fwd(k) 2+3k, TP allreduce (SP: reduce-scatter) after it 3+3k, send/fwd 3n+1;
//   backward: recv/bwd 0, then per layer in backward order its re-run segment's forwards (each
//             after its parameter and SP gathers, with their TP collectives) in forward order
//             when the layer is the last of one, the layer's gathers, bwd(k), the TP collective
//             after it, the SP input gather, bwdw(k); send/bwd last (Stage::bwd_pos). With
//             ZB-H1 the weight-gradient tasks keep their positions in the W(j) slot.
// Interleaved 1F1B (interleave = v > 1; Narayanan et al. 2021, section 2.2.2): the model is cut
// into pp x v equal chunks; chunk c is the Stage c, run by pipeline rank c % pp (its model chunk
// c / pp). The slots of a rank are Megatron's order of its chunks' forwards and backwards
// (interleaved(), 2mv slots), and a Stage's slot indices are positions in that order, so the
// chunks of one rank share one priority sequence.
// After the last slot come the DP bucket allreduces (ZeRO: reduce-scatters) in issue order, then
// the optimizer step, then (ZeRO-1/2) the parameter all-gathers in bucket order, so gradient
// traffic never delays a pipeline or TP message that the same backward needs.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "strata/models/lowering/strategy.hpp"

namespace strata {
inline namespace models {
namespace lowering {

inline constexpr TaskIndex kNoTask = std::numeric_limits<TaskIndex>::max();

// Megatron communication around one layer (all zero when tp == 1).
// Bytes are those of the whole (unsharded) tensor; lowering_tensor_parallel.cpp.
struct LayerComm {
  double fwd_allreduce_bytes = 0;           // > 0: an allreduce (or reduce-scatter) follows the forward
  double bwd_allreduce_bytes = 0;           // > 0: an allreduce (or reduce-scatter) follows the backward data
  DType fwd_dtype = DType::fp32;            // what the forward allreduce sums
  TaskKind fwd_kind = TaskKind::allreduce;  // reduce_scatter with sequence parallelism
  TaskKind bwd_kind = TaskKind::allreduce;
  double fwd_gather_bytes = 0;    // SP: all-gather of the input before the forward
  double bwd_gather_bytes = 0;    // SP: all-gather of the output gradient before the backward data
  double wgrad_gather_bytes = 0;  // SP: all-gather of the input before the backward weight
};

// What lowering needs of one layer, computed once per Plan.
struct LayerPlan {
  Task fwd, bwd, bwdw;        // templates from layer_task(); bwdw only if has_bwdw
  bool has_bwdw = false;      // a backward-weight kind and a weight gradient to compute
  bool writes_wgrad = false;  // params > 0: bwdw, or bwd when the op has no bwdw kind
  double saved_bytes = 0;     // activations kept from forward to backward, per microbatch
  double out_bytes = 0;       // output activation on one tp rank, per microbatch
  double weight_bytes = 0;    // parameters on one tp rank, in the training dtype
  double params = 0;          // on one tp rank
  LayerComm comm;
};

// Activation recomputation (lowering_recompute.cpp): layers [first, end) of a stage whose
// forward is re-run, in order, right before the backward of layer end-1 (Megatron's
// CheckpointFunction re-runs its function when the gradient of its output arrives).
struct Rerun {
  int first = 0, end = 0;  // stage layer indices
};

// Bytes a stage layer's tasks allocate and free per microbatch (Task::mem_alloc / mem_free).
struct LayerMemory {
  double fwd_alloc = 0;    // at the forward's start
  double fwd_free = 0;     // at the forward's end (not kept for the backward)
  double rerun_alloc = 0;  // at the re-run's start, held until the backward
  double bwd_free = 0;     // at the backward data's end
  double wgrad_free = 0;   // at the backward weight's end (ZB-H1: the input it still reads)
};

// Priority positions of a stage layer's tasks inside a backward slot.
struct BackwardPositions {
  // Its re-run forward with the collectives around it (rerun_gather: ZeRO-3's parameter
  // all-gather; rerun_ag: SP's input all-gather; rerun_ar: the TP allreduce or reduce-scatter).
  int rerun_gather = 0, rerun_ag = 0, rerun = 0, rerun_ar = 0;
  // Its backward: ZeRO-3's gather, SP's output-gradient gather, the backward data, the TP
  // collective after it, SP's input gather for the weight gradient, the backward weight.
  int gather = 0, bwd_ag = 0, bwd = 0, bwd_ar = 0, wgrad_ag = 0, bwdw = 0;
};

// ZeRO-3 (lowering_zero3.cpp): the layers of one block of a stage that have parameters, whose
// sharded parameters are all-gathered together before they are used and released after.
struct ParamUnit {
  int first = 0, end = 0;  // stage layer indices
  int block = 0;           // the model block
  double bytes = 0;        // whole parameters on one tp rank, training dtype
  int bwd_first_use = 0;   // stage layer whose re-run or backward first reads them in backward
  bool bwd_first_use_rerun = false;
};

// F(j), B(j) or, with ZB-H1, W(j): the slot whose priorities the weight-gradient tasks of
// microbatch j take (they are created with B(j)).
struct Slot {
  bool forward = true;
  int microbatch = 0;
  bool weight = false;  // W(j); forward is false
};

struct Stage {
  int first_layer = 0;  // model layer indices [first_layer, end_layer)
  int end_layer = 0;
  int tp = 1;                           // its tensor-parallel degree (Layout::tp_of)
  std::vector<Slot> slots;              // this stage's F(j), B(j) (and W(j)) in schedule order
  std::vector<int> positions;           // per entry of slots: its slot index on the rank
  std::vector<int> fwd_slot, bwd_slot;  // slot index of F(j), B(j)
  // Per microbatch j: the stage and microbatch of the backward that F(j) waits for (the last
  // backward before F(j) in the rank's order, which bounds the activations in flight), stage -1
  // for none.
  std::vector<std::pair<int, int>> fwd_gate;
  std::vector<int> wgt_slot;              // slot index of W(j): B(j)'s without ZB-H1
  std::vector<int> bwd_order;             // microbatches in backward order
  std::vector<std::vector<int>> buckets;  // model layer indices per gradient bucket, issue order
  std::vector<double> bucket_bytes;
  std::vector<int> bucket_of;              // per stage layer: its gradient bucket, -1 without parameters
  int bucket_offset = 0;                   // interleaved: buckets of the rank's later chunks
  double params = 0;                       // per worker (tp shard)
  std::vector<Rerun> reruns;               // in forward order
  std::vector<int> rerun_of;               // per stage layer: index into reruns, -1 if kept
  std::vector<LayerMemory> memory;         // per stage layer
  std::vector<BackwardPositions> bwd_pos;  // per stage layer
  int send_bwd_pos = 0;                    // position of send/bwd in a backward slot
  std::vector<ParamUnit> units;            // ZeRO-3 only, in forward order
  std::vector<int> bwd_units;              // ZeRO-3: units in order of first use in backward
  int size() const { return end_layer - first_layer; }
  int last_backward_microbatch() const { return bwd_order.back(); }
};

struct Layout {
  const Model* model = nullptr;
  const StrategyConfig* config = nullptr;
  int dp = 1, tp = 1, pp = 1;  // tp: every stage's degree without per-stage degrees
  int replicas = 1;            // data-parallel replicas whose tasks are lowered (see lowered_replicas)
  // Replicas in a data-parallel collective's group, which hold buffers: dp, or the symmetric
  // replicas of a symmetry reduction (StrategyConfig::symmetric_replicas).
  int group_replicas = 1;
  int interleave = 1;  // model chunks per pipeline rank (v); stages.size() == pp * interleave
  int microbatches = 1;
  double microbatch_size = 1;  // samples
  std::int64_t global_batch = 1;
  bool one_f_one_b = true;   // false: GPipe
  bool zero_bubble = false;  // ZB-H1: 1F1B with W slots
  int slot_count = 2;        // slots per stage and iteration: 2m, 3m with ZB-H1
  std::vector<LayerPlan> layers;
  std::vector<Stage> stages;
  std::int64_t slot_stride = 1;
  std::int64_t iteration_stride = 1;
  std::int64_t max_buckets = 0;
  // Per stage: its tensor-parallel degree, and the first of its ranks within a replica
  // (stage_count() + 1 values, the replica's rank count last). Per rank within a replica: its
  // stage.
  std::vector<int> stage_tp, stage_first, stage_of_rank;

  int stage_count() const { return pp * interleave; }
  // The tensor-parallel ranks of stage s whose tasks are lowered: the symmetric representatives
  // (StrategyConfig::symmetric_tp), else all.
  int lowered_tp(int s) const { return config->symmetric_tp > 0 ? config->symmetric_tp : tp_of(s); }
  int device(int s) const { return s % pp; }  // the pipeline rank that runs stage s
  int tp_of(int s) const { return stage_tp[static_cast<std::size_t>(s)]; }
  int replica_ranks() const { return stage_first.back(); }
  int ranks() const { return dp * replica_ranks(); }
  // Index of (dp rank d, stage s, tp rank t) in the builder's per-worker tables: the worker's
  // rank without interleaving; worker() maps it to the Plan's worker.
  WorkerId rank(int d, int s, int t) const {
    return d * replica_ranks() + stage_first[static_cast<std::size_t>(s)] + t;
  }
  // Index of the (stage s, tp rank t) group of dp ranks (DP buckets, ZeRO gathers, codecs).
  std::size_t group(int s, int t) const {
    return static_cast<std::size_t>(stage_first[static_cast<std::size_t>(s)] + t);
  }
  WorkerId worker(WorkerId rank) const {
    if (interleave == 1) return rank;  // (d · pp + s) · tp + t, or stage_first's order
    const int stages = stage_count();
    return (rank / (tp * stages) * pp + device(rank / tp % stages)) * tp + rank % tp;
  }
  int stage_of(WorkerId rank) const {
    return stage_of_rank[static_cast<std::size_t>(rank % replica_ranks())];
  }
  std::int64_t priority(int iteration, int slot, int position) const {
    return iteration * iteration_stride + slot * slot_stride + position;
  }
  std::int64_t bucket_priority(int iteration, int bucket) const {
    return iteration * iteration_stride + slot_count * slot_stride + bucket;
  }
  std::int64_t optimizer_priority(int iteration) const {
    return iteration * iteration_stride + slot_count * slot_stride + max_buckets;
  }
  // ZeRO-1/2: the parameter all-gather of bucket k after the optimizer step.
  std::int64_t param_gather_priority(int iteration, int bucket) const {
    return optimizer_priority(iteration) + 1 + bucket;
  }
};

// REQUIRES: check_strategy(model, config) passed. `model` and `config` outlive the Layout.
// The data-parallel replicas the lowering builds: the symmetric representatives, else
// lowered_replicas (at most dp), else all dp.
int lowered_replica_count(const StrategyConfig& config);

Layout make_layout(const Model& model, const StrategyConfig& config);

// Fills stage.reruns, rerun_of, memory, bwd_pos and send_bwd_pos from the configuration's
// recomputation (lowering_recompute.cpp). REQUIRES: the stage's layers and layout.layers set.
void plan_recompute(const Model& model, const Layout& layout, Stage& stage);
// The activation entering stage layer k (the stage's input for k = 0), bytes per microbatch
// (lowering_recompute.cpp).
double input_bytes(const Model& model, const Layout& layout, const Stage& stage, int k);

// Fills stage.units and bwd_units when config.zero == 3 (lowering_zero3.cpp).
// REQUIRES: plan_recompute(stage) done.
void plan_param_units(const Model& model, const Layout& layout, Stage& stage);

}  // namespace lowering
}  // namespace models
}  // namespace strata
