// Tensor-parallel collectives of one (dp rank, stage) group: Megatron-LM's allreduces (Shoeybi
// et al. 2019, fig. 3) or, with sequence parallelism, their all-gather / reduce-scatter split
// (Korthikanti et al., MLSys 2023, section 4.2.2, fig. 6; Megatron-LM's mappings.py and
// LinearWithGradAccumulationAndAsyncCommunication):
//   .../mb<m>/fwd/<layer>/ar   allreduce after a row-parallel layer's forward (and GPT's
//                              vocab-parallel embedding and cross-entropy)
//   .../mb<m>/fwd/<layer>/rs   its reduce-scatter along the sequence (SP; not the cross-entropy)
//   .../mb<m>/fwd/<layer>/ag   SP: all-gather of a column-parallel layer's input before it
//   .../mb<m>/bwd/<layer>/ar   allreduce of a column-parallel layer's input gradient
//   .../mb<m>/bwd/<layer>/rs   its reduce-scatter (SP)
//   .../mb<m>/bwd/<layer>/ag   SP: all-gather of a row-parallel layer's output gradient before
//                              its backward data (the conjugate of the forward reduce-scatter)
//   .../mb<m>/bwdw/<layer>/ag  SP: the input all-gathered again for the weight gradient (Megatron
//                              keeps the input sharded and re-gathers it in backward)
//   .../mb<m>/rfwd/<layer>/{ag,ar,rs}  what a re-run forward repeats (activation recomputation)
// every id prefixed it<i>/dp<d>/pp<s>/. Each collective reads and writes the activation or
// gradient buffer of every member (with SP a buffer holds the sequence shard; the gathered
// tensor is transient).
#include <string>

#include "lowering_builder.hpp"

namespace strata {
inline namespace models {
namespace lowering {
namespace {

const char* suffix(TaskKind kind) {
  return kind == TaskKind::reduce_scatter ? "/rs" : kind == TaskKind::allgather ? "/ag" : "/ar";
}

}  // namespace

TaskIndex PlanBuilder::add_tp_collective(std::string id, TaskKind kind, const std::vector<WorkerId>& group,
                                         DType dtype, int it, std::int64_t priority, double bytes, int j,
                                         int buffer_slot, bool activation) {
  const TaskIndex task = add_collective(std::move(id) + suffix(kind), group, layout_.config->tp_algo, dtype,
                                        it, priority, bytes);
  Task& ref = plan_.mutable_task(task);
  ref.kind = kind;
  // A tensor-parallel symmetry reduction's collective runs over the representatives with the
  // whole group's chunks and steps (sim/collectives.hpp).
  if (layout_.config->symmetric_tp > 0) ref.attrs["group_size"] = std::int64_t{layout_.config->tp};
  // tp_comm=sync: on the compute stream, which waits for it (StrategyConfig::tp_comm).
  if (layout_.config->tp_comm == TpComm::sync) ref.stream = Stream::compute;
  for (WorkerId rank : group) {
    const BufferIndex buf = activation ? act(rank, j, buffer_slot) : grad(rank, j, buffer_slot);
    ref.reads.push_back(buf);
    ref.writes.push_back(buf);
  }
  return task;
}

void PlanBuilder::create_tp_allreduces(int it, int d, int s) {
  const Stage& st = stage(s);
  const int n = st.size();
  GroupTasks& g = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)];
  for (auto* table : {&g.fwd_ar, &g.bwd_ar, &g.rfwd_ar, &g.fwd_ag, &g.bwd_ag, &g.wgrad_ag, &g.rfwd_ag})
    table->assign(static_cast<std::size_t>(layout_.microbatches * n), kNoTask);
  for (auto* table : {&g.recv_fwd_ag, &g.recv_bwd_ag})
    table->assign(static_cast<std::size_t>(layout_.microbatches), kNoTask);
  if (st.tp == 1) return;
  std::vector<WorkerId> group;
  for (int t = 0; t < layout_.lowered_tp(s); ++t) group.push_back(layout_.rank(d, s, t));
  const std::string prefix = "it" + std::to_string(it) + "/dp" + std::to_string(d) + "/pp" +
                             std::to_string(layout_.device(s)) + "/mb";
  const DType dtype = layout_.config->dtype;
  constexpr TaskKind kGather = TaskKind::allgather;
  for (std::size_t slot_index = 0; slot_index < st.slots.size(); ++slot_index) {
    const Slot& slot = st.slots[slot_index];
    if (slot.weight) continue;  // W(j)'s gathers are created with B(j)
    const int j = slot.microbatch;
    const std::string mb = prefix + std::to_string(j) + "/";
    const auto prio = [&](int position) { return layout_.priority(it, st.positions[slot_index], position); };
    // Scatter-gather: the received 1/t of the activation (or gradient) all-gathered over the
    // stage's ranks, issued right after the recv (its priority, a later index), on the whole
    // tensor (gather_split_1d_tensor in Megatron-LM's p2p_communication.py).
    const bool first_stage = s == 0, last_stage = s + 1 == layout_.stage_count();
    const auto j_index = static_cast<std::size_t>(j);
    if (slot.forward && !first_stage && scatter_gathered(s - 1, s))
      g.recv_fwd_ag[j_index] = add_tp_collective(mb + "recv/fwd" + chunk_suffix(s), kGather, group, dtype, it,
                                                 prio(0), layer(st.first_layer - 1).out_bytes, j, 0, true);
    if (!slot.forward && !last_stage && scatter_gathered(s + 1, s))
      g.recv_bwd_ag[j_index] = add_tp_collective(mb + "recv/bwd" + chunk_suffix(s), kGather, group, dtype, it,
                                                 prio(0), layer(st.end_layer - 1).out_bytes, j, n, false);
    for (int k = 0; k < n; ++k) {
      const std::string name = layer_name(st.first_layer + k);
      const LayerComm& c = layer(st.first_layer + k).comm;
      const auto cell = static_cast<std::size_t>(j * n + k);
      const BackwardPositions& pos = st.bwd_pos[static_cast<std::size_t>(k)];
      if (slot.forward) {
        if (c.fwd_gather_bytes > 0)
          g.fwd_ag[cell] = add_tp_collective(mb + "fwd/" + name, kGather, group, dtype, it, prio(1 + 3 * k),
                                             c.fwd_gather_bytes, j, k, true);
        if (c.fwd_allreduce_bytes > 0)
          g.fwd_ar[cell] = add_tp_collective(mb + "fwd/" + name, c.fwd_kind, group, c.fwd_dtype, it,
                                             prio(3 + 3 * k), c.fwd_allreduce_bytes, j, k + 1, true);
        continue;
      }
      if (st.rerun_of[static_cast<std::size_t>(k)] >= 0) {
        if (c.fwd_gather_bytes > 0)
          g.rfwd_ag[cell] = add_tp_collective(mb + "rfwd/" + name, kGather, group, dtype, it,
                                              prio(pos.rerun_ag), c.fwd_gather_bytes, j, k, true);
        if (c.fwd_allreduce_bytes > 0)
          g.rfwd_ar[cell] = add_tp_collective(mb + "rfwd/" + name, c.fwd_kind, group, c.fwd_dtype, it,
                                              prio(pos.rerun_ar), c.fwd_allreduce_bytes, j, k + 1, true);
      }
      if (c.bwd_gather_bytes > 0)
        g.bwd_ag[cell] = add_tp_collective(mb + "bwd/" + name, kGather, group, dtype, it, prio(pos.bwd_ag),
                                           c.bwd_gather_bytes, j, k + 1, false);
      if (c.bwd_allreduce_bytes > 0)
        g.bwd_ar[cell] = add_tp_collective(mb + "bwd/" + name, c.bwd_kind, group, dtype, it, prio(pos.bwd_ar),
                                           c.bwd_allreduce_bytes, j, k, false);
      if (c.wgrad_gather_bytes > 0)
        g.wgrad_ag[cell] =
            add_tp_collective(mb + "bwdw/" + name, kGather, group, dtype, it,
                              layout_.priority(it, st.wgt_slot[static_cast<std::size_t>(j)], pos.wgrad_ag),
                              c.wgrad_gather_bytes, j, k, true);
    }
  }
}

// What the forward of stage layer k reads: the previous layer's output (or the TP collective
// after it), recv/fwd for the stage's first layer; kNoTask for the model's first layer.
TaskIndex PlanBuilder::input_producer(int d, int s, int t, int j, int k) const {
  if (k > 0) return output_producer(d, s, t, j, k - 1);
  return s > 0 ? stage_input(d, s, t, j) : kNoTask;
}

TaskIndex PlanBuilder::stage_input(int d, int s, int t, int j) const {
  const TaskIndex ag = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)]
                           .recv_fwd_ag[static_cast<std::size_t>(j)];
  return ag != kNoTask
             ? ag
             : tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))].recv_fwd[static_cast<std::size_t>(j)];
}

void PlanBuilder::wire_tp_allreduces(int d, int s) {
  const GroupTasks& g = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)];
  const auto n = static_cast<std::size_t>(stage(s).size());
  for (std::size_t j = 0; j < g.recv_fwd_ag.size(); ++j)
    for (int t = 0; t < layout_.lowered_tp(s); ++t) {
      const WorkerTasks& w = tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))];
      if (g.recv_fwd_ag[j] != kNoTask) plan_.add_data_dep(w.recv_fwd[j], g.recv_fwd_ag[j]);
      if (g.recv_bwd_ag[j] != kNoTask) plan_.add_data_dep(w.recv_bwd[j], g.recv_bwd_ag[j]);
    }
  for (std::size_t cell = 0; cell < g.fwd_ar.size(); ++cell)
    for (int t = 0; t < layout_.lowered_tp(s); ++t) {
      const WorkerTasks& w = tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))];
      const int j = static_cast<int>(cell / n);
      const int k = static_cast<int>(cell % n);
      if (g.fwd_ar[cell] != kNoTask) plan_.add_data_dep(w.fwd[cell], g.fwd_ar[cell]);
      if (g.bwd_ar[cell] != kNoTask) plan_.add_data_dep(w.bwd[cell], g.bwd_ar[cell]);
      if (g.rfwd_ar[cell] != kNoTask) plan_.add_data_dep(w.rfwd[cell], g.rfwd_ar[cell]);
      const TaskIndex input = input_producer(d, s, t, j, k);
      if (g.fwd_ag[cell] != kNoTask && input != kNoTask) plan_.add_data_dep(input, g.fwd_ag[cell]);
      const TaskIndex output_grad = output_grad_producer(d, s, t, j, k);
      if (g.bwd_ag[cell] != kNoTask && output_grad != kNoTask)
        plan_.add_data_dep(output_grad, g.bwd_ag[cell]);
      if (g.wgrad_ag[cell] != kNoTask) {
        // Issued with the backward (it waits for the output gradient, as the backward does), on
        // the input the forward or its re-run read.
        if (const TaskIndex grad = gathered_output_grad(d, s, t, j, k); grad != kNoTask)
          plan_.add_data_dep(grad, g.wgrad_ag[cell]);
        plan_.add_data_dep(w.rfwd[cell] != kNoTask ? w.rfwd[cell] : w.fwd[cell], g.wgrad_ag[cell]);
      }
    }
}

TaskIndex PlanBuilder::gathered_output_grad(int d, int s, int t, int j, int k) const {
  const auto cell = static_cast<std::size_t>(j * stage(s).size() + k);
  const TaskIndex ag = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)].bwd_ag[cell];
  return ag != kNoTask ? ag : output_grad_producer(d, s, t, j, k);
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
