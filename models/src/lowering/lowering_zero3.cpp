// ZeRO-3 / FSDP (Rajbhandari et al., SC'20, section 5.3; DeepSpeed's stage3.py, PyTorch FSDP):
// each worker holds 1/dp of the parameters. Before a block's parameters are used they are
// all-gathered over the data-parallel group, once per microbatch in forward and again in
// backward, and released after their last use:
//   it<i>/pp<s>/tp<t>/mb<m>/fwd/b<block>/ag   before the block's first forward with weights
//   it<i>/pp<s>/tp<t>/mb<m>/bwd/b<block>/ag   before its first re-run or backward data
// Prefetch, one unit ahead: a unit's gather waits (control) for the first use of the unit used
// before it in the same slot, so at most two units are gathered at a time; the slot's first
// gather waits for what its first use waits for (in forward: the received activation, the
// previous iteration's optimizer step, 1F1B's in-flight limit; in backward: the gradient of the
// stage's output). The gathers read each member's shard ("w/<layer>", ceil(elements/dp)) and
// write its unsharded copy ("w/<layer>/full", not persistent; attrs per_buffer = 1: one ring
// per layer), which the unit's tasks read; a unit's next gather waits for the readers of its
// previous one. Memory: the gather allocates the unit's whole parameters on every member (the
// shard stays), the last use frees them.
// Gradients are reduce-scattered per bucket once per iteration, as with stages 1 and 2.
#include <algorithm>
#include <string>

#include "lowering_builder.hpp"

namespace strata {
inline namespace models {
namespace lowering {

void plan_param_units(const Model& model, const Layout& layout, Stage& stage) {
  stage.units.clear();
  stage.bwd_units.clear();
  if (layout.config->zero != 3) return;
  for (int k = 0; k < stage.size(); ++k) {
    const auto i = static_cast<std::size_t>(stage.first_layer + k);
    if (!layout.layers[i].writes_wgrad) continue;
    const int block = model.layers[i].block;
    if (stage.units.empty() || stage.units.back().block != block)
      stage.units.push_back({k, k, block, 0, 0, false});
    ParamUnit& unit = stage.units.back();
    unit.end = k + 1;
    unit.bytes += layout.layers[i].weight_bytes;
  }
  // First use in backward: the earliest re-run or backward data of a layer with weights.
  std::vector<int> first_position;
  for (ParamUnit& unit : stage.units) {
    int best = -1;
    for (int k = unit.first; k < unit.end; ++k) {
      if (!layout.layers[static_cast<std::size_t>(stage.first_layer + k)].writes_wgrad) continue;
      const bool rerun = stage.rerun_of[static_cast<std::size_t>(k)] >= 0;
      const BackwardPositions& pos = stage.bwd_pos[static_cast<std::size_t>(k)];
      const int position = rerun ? pos.rerun : pos.bwd;
      if (best < 0 || position < best) {
        best = position;
        unit.bwd_first_use = k;
        unit.bwd_first_use_rerun = rerun;
      }
    }
    first_position.push_back(best);
  }
  stage.bwd_units.resize(stage.units.size());
  for (std::size_t u = 0; u < stage.units.size(); ++u) stage.bwd_units[u] = static_cast<int>(u);
  std::sort(stage.bwd_units.begin(), stage.bwd_units.end(), [&](int a, int b) {
    return first_position[static_cast<std::size_t>(a)] < first_position[static_cast<std::size_t>(b)];
  });
}

void PlanBuilder::create_unit_gathers(int it, int s, int t) {
  const Stage& st = stage(s);
  UnitGathers& out = unit_gathers_[layout_.group(s, t)];
  const std::size_t units = st.units.size();
  out.fwd.assign(static_cast<std::size_t>(layout_.microbatches) * units, kNoTask);
  out.bwd.assign(out.fwd.size(), kNoTask);
  std::vector<WorkerId> group;
  for (int d = 0; d < layout_.group_replicas; ++d) group.push_back(layout_.rank(d, s, t));
  const std::string prefix = "it" + std::to_string(it) + "/pp" + std::to_string(layout_.device(s)) + "/tp" +
                             std::to_string(t) + "/mb";
  for (std::size_t slot_index = 0; slot_index < st.slots.size(); ++slot_index) {
    const Slot& slot = st.slots[slot_index];
    if (slot.weight) continue;
    const int j = slot.microbatch;
    for (std::size_t u = 0; u < units; ++u) {
      const ParamUnit& unit = st.units[u];
      const BackwardPositions& pos = st.bwd_pos[static_cast<std::size_t>(unit.bwd_first_use)];
      const int position = slot.forward               ? 1 + 3 * unit.first
                           : unit.bwd_first_use_rerun ? pos.rerun_gather
                                                      : pos.gather;
      const std::string id = prefix + std::to_string(j) + (slot.forward ? "/fwd/b" : "/bwd/b") +
                             std::to_string(unit.block) + "/ag";
      const TaskIndex task =
          add_collective(id, group, layout_.config->dp_algo, layout_.config->dtype, it,
                         layout_.priority(it, st.positions[slot_index], position), unit.bytes);
      Task& ref = plan_.mutable_task(task);
      mark_dp_group(ref);
      ref.kind = TaskKind::allgather;
      ref.attrs["per_buffer"] = std::int64_t{1};
      ref.mem_alloc = unit.bytes;  // every member's unsharded copy, until its last use
      for (WorkerId rank : group)
        for (int k = unit.first; k < unit.end; ++k) {
          const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
          if (b.weight[static_cast<std::size_t>(k)] == kNoBuffer) continue;
          ref.reads.push_back(b.weight[static_cast<std::size_t>(k)]);
          ref.writes.push_back(b.weight_full[static_cast<std::size_t>(k)]);
        }
      (slot.forward ? out.fwd : out.bwd)[static_cast<std::size_t>(j) * units + u] = task;
    }
  }
}

// The tasks of worker `rank` that read unit u's weights in microbatch j: forwards (forward
// pass) or re-runs and backward data (backward pass).
void PlanBuilder::wire_unit_users(WorkerId rank, int j, const ParamUnit& unit, TaskIndex fwd_gather,
                                  TaskIndex bwd_gather) {
  const Stage& st = stage(layout_.stage_of(rank));
  const WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  for (int k = unit.first; k < unit.end; ++k) {
    if (b.weight[static_cast<std::size_t>(k)] == kNoBuffer) continue;
    const auto cell = static_cast<std::size_t>(j * st.size() + k);
    plan_.add_data_dep(fwd_gather, w.fwd[cell]);
    plan_.add_data_dep(bwd_gather, w.bwd[cell]);
    if (w.rfwd[cell] != kNoTask) plan_.add_data_dep(bwd_gather, w.rfwd[cell]);
    // The weight gradient after the backward data (control), as autograd runs a layer's
    // backward: the unsharded gradient is not allocated while the gather it waits for is late.
    if (w.bwdw[cell] != kNoTask) plan_.add_control_dep(w.bwd[cell], w.bwdw[cell]);
  }
  const auto cell = [&](int k) { return static_cast<std::size_t>(j * st.size() + k); };
  plan_.mutable_task(w.fwd[cell(unit.end - 1)]).mem_free += unit.bytes;
  plan_.mutable_task(w.bwd[cell(unit.first)]).mem_free += unit.bytes;
}

TaskIndex PlanBuilder::bwd_first_user(WorkerId rank, int j, const ParamUnit& unit) const {
  const WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const auto cell = static_cast<std::size_t>(j * stage(layout_.stage_of(rank)).size() + unit.bwd_first_use);
  return unit.bwd_first_use_rerun ? w.rfwd[cell] : w.bwd[cell];
}

void PlanBuilder::wire_unit_gathers(int s, int t) {
  const Stage& st = stage(s);
  const UnitGathers& g = unit_gathers_[layout_.group(s, t)];
  const std::size_t units = st.units.size();
  const int n = st.size();
  for (int d = 0; d < layout_.replicas; ++d) {
    const WorkerId rank = layout_.rank(d, s, t);
    const WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
    for (int j = 0; j < layout_.microbatches; ++j) {
      const std::size_t row = static_cast<std::size_t>(j) * units;
      for (std::size_t u = 0; u < units; ++u)
        wire_unit_users(rank, j, st.units[u], g.fwd[row + u], g.bwd[row + u]);
      if (units == 0) continue;
      // Forward: the first gather when the forward could start, then one unit ahead.
      const TaskIndex first = g.fwd[row];
      if (s > 0) plan_.add_control_dep(w.recv_fwd[static_cast<std::size_t>(j)], first);
      if (w.prev_opt != kNoTask) plan_.add_data_dep(w.prev_opt, first);
      if (const TaskIndex gate = forward_gate(d, s, t, j); gate != kNoTask)
        plan_.add_control_dep(gate, first);
      for (std::size_t u = 1; u < units; ++u)
        plan_.add_control_dep(w.fwd[static_cast<std::size_t>(j * n + st.units[u - 1].first)], g.fwd[row + u]);
      // Backward: the first gather once the stage's output gradient is there, then one ahead.
      const auto first_bwd = static_cast<std::size_t>(st.bwd_units[0]);
      const TaskIndex output_grad = output_grad_producer(d, s, t, j, n - 1);
      plan_.add_control_dep(output_grad != kNoTask ? output_grad : output_producer(d, s, t, j, n - 1),
                            g.bwd[row + first_bwd]);
      for (std::size_t i = 1; i < units; ++i) {
        const ParamUnit& previous = st.units[static_cast<std::size_t>(st.bwd_units[i - 1])];
        plan_.add_control_dep(bwd_first_user(rank, j, previous),
                              g.bwd[row + static_cast<std::size_t>(st.bwd_units[i])]);
      }
    }
    // A unit's gathers all write its one unsharded copy: each waits (control) for the tasks
    // that read the copy the unit's previous gather made, in the stage's slot order.
    std::vector<std::vector<TaskIndex>> readers(units);
    for (const Slot& slot : st.slots) {
      if (slot.weight) continue;
      const std::size_t row = static_cast<std::size_t>(slot.microbatch) * units;
      for (std::size_t u = 0; u < units; ++u) {
        const TaskIndex gather = (slot.forward ? g.fwd : g.bwd)[row + u];
        for (TaskIndex reader : readers[u]) plan_.add_control_dep(reader, gather);
        readers[u].clear();
        const ParamUnit& unit = st.units[u];
        for (int k = unit.first; k < unit.end; ++k) {
          if (buffers_[static_cast<std::size_t>(rank)].weight[static_cast<std::size_t>(k)] == kNoBuffer)
            continue;
          const auto cell = static_cast<std::size_t>(slot.microbatch * n + k);
          readers[u].push_back(slot.forward ? w.fwd[cell] : w.bwd[cell]);
          if (!slot.forward && w.rfwd[cell] != kNoTask) readers[u].push_back(w.rfwd[cell]);
        }
      }
    }
  }
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
