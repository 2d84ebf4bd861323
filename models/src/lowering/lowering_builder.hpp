// Internal to the lowering: PlanBuilder adds the buffers of a run and the tasks of each
// iteration to a Plan, following a Layout (lowering_layout.hpp).
//
// Per iteration it first creates every task (lowering_tasks.cpp), recording their indices in
// tables by logical coordinates, then wires data and control dependencies from those tables
// (lowering_deps.cpp). Each step is linear in the number of tasks it adds.
#pragma once

#include <string>
#include <vector>

#include "lowering_layout.hpp"

namespace strata {
inline namespace models {
namespace lowering {

inline constexpr BufferIndex kNoBuffer = std::numeric_limits<BufferIndex>::max();

// An id's coordinate segment, "dp3". Built by append: GCC 12 warns falsely (-Wrestrict) on
// "literal" + std::string&&.
inline std::string coord(const char* name, int value) {
  return std::string(name).append(std::to_string(value));
}

// "it<i>/dp<d>/pp<s>/tp<t>/": the start of a worker's task ids (s: the pipeline rank).
inline std::string worker_prefix(int it, int d, int s, int t) {
  return coord("it", it) + "/" + coord("dp", d) + "/" + coord("pp", s) + "/" + coord("tp", t) + "/";
}

class PlanBuilder {
 public:
  // REQUIRES: layout and plan outlive the builder; plan has layout's worker count.
  PlanBuilder(const Layout& layout, Plan& plan);

  void add_buffers();
  void add_iteration(int iteration);

 private:
  // Buffers of one worker (one model chunk of it when interleaved: the tables are indexed by
  // Layout::rank, the Plan's workers are Layout::worker). Activation slot a of microbatch j: a = 0 is the
  // stage's input, a = k + 1 the output of the stage's layer k; the gradient slots mirror them.
  struct WorkerBuffers {
    std::vector<BufferIndex> weight, wgrad;  // per stage layer; kNoBuffer without params
    // ZeRO-3: the gathered weights the layer's tasks read (weight holds the shard); ZeRO-2 and
    // -3: the unsharded gradient its backward accumulates (wgrad holds the reduced shard).
    // Otherwise the same as weight and wgrad.
    std::vector<BufferIndex> weight_full, wgrad_full;
    BufferIndex opt = kNoBuffer;
    BufferIndex act_base = 0, grad_base = 0;
  };
  // Tasks of one worker in the current iteration; compute tables are [j * n + k].
  struct WorkerTasks {
    std::vector<TaskIndex> fwd, bwd, bwdw;
    std::vector<TaskIndex> rfwd;                // re-run forwards (activation recomputation), kNoTask if kept
    std::vector<TaskIndex> recv_fwd, recv_bwd;  // per microbatch
    // Per microbatch, one per receiving tp rank of the next (send_fwd) or previous (send_bwd)
    // stage: rank u of a stage of degree q receives from rank u mod p of a stage of degree p
    // (the (u / p)-th send of it), so that every rank gets the whole activation or gradient;
    // one send to the same tp rank when the degrees are equal.
    std::vector<std::vector<TaskIndex>> send_fwd, send_bwd;
    TaskIndex opt = kNoTask;        // the optimizer step (offload: its last task, the copy back)
    TaskIndex opt_first = kNoTask;  // the optimizer's first task (offload: the copy to the host)
    TaskIndex prev_opt = kNoTask;   // the previous iteration's optimizer step
  };
  // TP allreduces of one (dp rank, stage) group, [j * n + k].
  struct GroupTasks {
    std::vector<TaskIndex> fwd_ar, bwd_ar;
    std::vector<TaskIndex> rfwd_ar;  // after a re-run forward
    // Sequence parallelism: all-gathers of a forward's (or re-run's) input, of a backward
    // data's output gradient, and of a backward weight's input.
    std::vector<TaskIndex> fwd_ag, rfwd_ag, bwd_ag, wgrad_ag;
    // Scatter-gather (StrategyConfig::p2p_scatter_gather), per microbatch: the all-gathers of the
    // activation and of the gradient each rank received 1/t of; kNoTask without.
    std::vector<TaskIndex> recv_fwd_ag, recv_bwd_ag;
  };

  // ZeRO-3 parameter gathers of one (stage, tp rank) group, [j * units + u].
  struct UnitGathers {
    std::vector<TaskIndex> fwd, bwd;
  };

  // Gradient compression (lowering_compression.cpp). A rank's codec buffers of one bucket: the
  // error-feedback residual, the wire (topk: the all-gathered slots; powersgd: P) and
  // PowerSGD's Q.
  struct CodecBuffers {
    BufferIndex ef = kNoBuffer, wire = kNoBuffer, q = kNoBuffer;
  };
  // A group's codec tasks of one bucket: per lowered replica, and PowerSGD's Q allreduce.
  struct CodecTasks {
    std::vector<TaskIndex> encode, project, decode;
    TaskIndex second = kNoTask;
  };
  // A bucket's sizes as the codec sees them.
  struct BucketCodec {
    double elements = 0;    // gradient elements S
    double topk = 0;        // ceil(topk_ratio * S)
    double p_elements = 0;  // PowerSGD: sum of rows·r plus the values sent whole
    double q_elements = 0;  // sum of cols·r
    double matmul_flops = 0, orth_flops = 0;
    std::string matrices;  // "rows x cols + rest" per gradient, ';'-separated (attr matrices)
  };
  BucketCodec bucket_codec(int s, std::size_t k) const;
  void add_codec_buffers(WorkerId rank, int s, const std::string& prefix);
  TaskIndex add_codec_task(const std::string& step, const BucketCodec& codec, std::string id, WorkerId rank,
                           int it, std::int64_t priority, double flops, double bytes);
  void create_codec_tasks(int it, int s, int t);
  void wire_codec_tasks(int s, int t);

  const Stage& stage(int s) const { return layout_.stages[static_cast<std::size_t>(s)]; }
  const LayerPlan& layer(int i) const { return layout_.layers[static_cast<std::size_t>(i)]; }
  const std::string& layer_name(int i) const;
  std::string input_name(int s) const;  // name of the activation a stage receives
  // "/c<s>" when interleaved (the id segment naming stage s's model chunk), else empty.
  std::string chunk_suffix(int s) const;
  // A send's id segment naming its receiver, tp rank u of stage r: "/tp<u>" when stage s, the
  // sender's, has another degree than r, else empty.
  std::string receiver_suffix(int s, int r, int u) const;
  // Adds the sends of (d, s, t) to stage r's ranks (send/fwd, send/bwd), each reading `buffer`.
  void add_sends(std::vector<TaskIndex>& out, const std::string& id, int d, int s, int t, int r, int it,
                 std::int64_t priority, double bytes, BufferIndex buffer);
  // Whether the transfers between stages `from` and `to` are scatter-gathered: each of t ranks
  // sends 1/t and the receiving stage all-gathers (StrategyConfig::p2p_scatter_gather; both
  // stages of t > 1 ranks, no sequence parallelism).
  bool scatter_gathered(int from, int to) const;
  // What the forward of stage s's first layer waits for as its input (s > 0): the all-gather of
  // the received activation, or the recv.
  TaskIndex stage_input(int d, int s, int t, int j) const;
  // The backward of stage layer 0 that F(j) of stage s waits for (Stage::fwd_gate), or kNoTask.
  TaskIndex forward_gate(int d, int s, int t, int j) const;
  BufferIndex act(WorkerId rank, int j, int slot) const;
  BufferIndex grad(WorkerId rank, int j, int slot) const;

  // lowering_tasks.cpp
  void create_worker_tasks(int it, int d, int s, int t);
  void create_forward(int it, int d, int s, int t, int slot_index, int j);
  void create_backward(int it, int d, int s, int t, int slot_index, int j);
  void create_rerun(int it, int d, int s, int t, int slot_index, int j, const Rerun& rerun);
  // A residual add's forward (stage position k of stage s) also reads its block's input
  // (layer_tasks.hpp, residual_span).
  void add_skip(Task& forward, WorkerId rank, int j, int s, int k) const;
  void create_optimizer(int it, int d, int s, int t);
  // lowering_offload.cpp: the step's three tasks with offload, ids `id`/d2h, `id`, `id`/h2d.
  void create_offloaded_optimizer(int it, int d, int s, int t, const std::string& id);
  void create_tp_allreduces(int it, int d, int s);
  void create_bucket_allreduces(int it, int s, int t);
  void create_param_gathers(int it, int s, int t);
  void create_unit_gathers(int it, int s, int t);  // lowering_zero3.cpp
  // A TP collective (id + "/ar", "/rs" or "/ag" by kind) over `group` on the activation (or
  // gradient) slot `buffer_slot` of microbatch j of every member (lowering_tensor_parallel.cpp).
  TaskIndex add_tp_collective(std::string id, TaskKind kind, const std::vector<WorkerId>& group, DType dtype,
                              int it, std::int64_t priority, double bytes, int j, int buffer_slot,
                              bool activation);
  TaskIndex add_compute(const Task& model_task, std::string id, WorkerId rank, int it, std::int64_t priority);
  TaskIndex add_p2p(TaskKind kind, std::string id, WorkerId rank, WorkerId peer, int it,
                    std::int64_t priority, double bytes);
  // A data-parallel collective of a symmetry reduction (over the symmetric replicas only) carries
  // the whole group's size, attribute `group_size` (sim/collectives.hpp).
  void mark_dp_group(Task& task) const {
    if (layout_.group_replicas != layout_.dp) task.attrs["group_size"] = std::int64_t{layout_.dp};
  }
  TaskIndex add_collective(std::string id, std::vector<WorkerId> group, CollectiveAlgo algo, DType dtype,
                           int it, std::int64_t priority, double bytes);

  // lowering_deps.cpp
  void wire_worker(int d, int s, int t);
  void wire_microbatch(int d, int s, int t, int j);
  void wire_reruns(int d, int s, int t, int j);
  void wire_tp_allreduces(int d, int s);
  void wire_bucket_allreduces(int s, int t);
  void wire_param_gathers(int s, int t);
  void wire_unit_gathers(int s, int t);  // lowering_zero3.cpp
  // The memory of the gradient tensors of the iteration whose tasks start at `first`.
  void account_gradient_buffers(TaskIndex first);
  void wire_unit_users(WorkerId rank, int j, const ParamUnit& unit, TaskIndex fwd_gather,
                       TaskIndex bwd_gather);
  TaskIndex bwd_first_user(WorkerId rank, int j, const ParamUnit& unit) const;
  int shards(int from_stage) const;  // dp when config.zero >= from_stage, else 1
  void wire_optimizer(int d, int s, int t);
  TaskIndex output_producer(int d, int s, int t, int j, int k) const;
  TaskIndex rerun_output_producer(int d, int s, int t, int j, int k) const;
  TaskIndex input_producer(int d, int s, int t, int j, int k) const;
  // The output gradient as the backward of layer k reads it: its SP all-gather, or
  // output_grad_producer.
  TaskIndex gathered_output_grad(int d, int s, int t, int j, int k) const;
  TaskIndex input_grad_producer(int d, int s, int t, int j, int k) const;
  // What the backward of stage layer k waits for as its output gradient; kNoTask for the
  // model's last layer (the loss), which starts the backward.
  TaskIndex output_grad_producer(int d, int s, int t, int j, int k) const;
  TaskIndex wgrad_producer(WorkerId rank, int j, int k) const;

  const Layout& layout_;
  Plan& plan_;
  std::vector<WorkerBuffers> buffers_;           // per rank
  std::vector<WorkerTasks> tasks_;               // per rank
  std::vector<GroupTasks> groups_;               // per d * pp + s
  std::vector<std::vector<TaskIndex>> buckets_;  // per s * tp + t
  // ZeRO-1/2 parameter all-gathers per s * tp + t, of this and of the previous iteration.
  std::vector<std::vector<TaskIndex>> gathers_, prev_gathers_;
  std::vector<UnitGathers> unit_gathers_;                 // ZeRO-3, per s * tp + t
  std::vector<std::vector<CodecBuffers>> codec_buffers_;  // per rank, per stage bucket
  std::vector<std::vector<CodecTasks>> codecs_;           // per s * tp + t, per bucket
};

}  // namespace lowering
}  // namespace models
}  // namespace strata
