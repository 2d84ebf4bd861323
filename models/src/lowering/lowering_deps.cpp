// Dependencies of one iteration's tasks (all on the same microbatch unless said otherwise):
// - fwd(k) after the output of layer k-1: its forward, or the TP allreduce that follows it; the
//   stage's first layer after recv/fwd (stage > 0);
// - bwd(k) and bwdw(k) after fwd(k) and after the gradient of their output: the input gradient
//   of layer k+1 (its bwd, or the TP allreduce that follows it), recv/bwd for the stage's last
//   layer; the model's last layer (the loss) only after its forward (and its TP allreduce);
// - the weight gradient of a layer accumulates over microbatches: its producer (bwdw, or bwd for
//   ops without a backward-weight kind) after the same layer's producer for the previous
//   microbatch in backward order (ZeRO-2 and -3: it also reads the unsharded gradient it adds
//   into, which the first microbatch's producer allocates and the bucket's reduce-scatter frees);
// - send/fwd after the stage's output, send/bwd after the stage's input gradient, every recv
//   after its send;
// - a TP allreduce after the matching forward / backward data of every tp rank;
// - DP bucket k after the weight gradients of its layers for the last microbatch in backward
//   order on every dp rank (the accumulation chain makes that all microbatches); with
//   ddp=after_flush (Megatron's local DDP) bucket 0 also after every bwd and bwdw task of that
//   last microbatch on every dp rank (control) and bucket k after bucket k-1 (control), when
//   interleaved over the rank's chunks;
// - ZeRO-1/2: parameter all-gather k after the optimizer step of every dp rank; in the next
//   iteration, every forward of a layer of bucket k after it (control);
// - the optimizer step (with offload its first task, the copy to the host: lowering_offload.cpp)
//   after its buckets (dp > 1) or weight gradients (dp = 1), and (control) after every
//   microbatch's backward of the stage's first layer, since it overwrites weights those read
//   (and after the weight gradients of tied weights, which nothing else awaits);
// - activation recomputation: a re-run segment's first re-run after its forward (data) and after
//   the gradient of the segment's output (control: what the backward of its last layer awaits),
//   each further re-run after the previous one's output (or the TP allreduce the re-run
//   repeats); bwd(k) and bwdw(k) of a re-run layer also after its re-run;
// - control: the first forward of every microbatch after the previous iteration's optimizer
//   step of the worker; 1F1B (and plain accumulation without PP): F(j) at stage s after the
//   backward of the stage's first layer for microbatch j - (pp - s), which holds at most pp - s
//   microbatches' activations in flight (Narayanan et al. 2021, PipeDream-Flush); interleaved:
//   F(j) of a chunk after the backward (of its chunk's first layer) that precedes it in the
//   rank's order (Stage::fwd_gate), the same rule.
#include "lowering_builder.hpp"

namespace strata {
inline namespace models {
namespace lowering {

TaskIndex PlanBuilder::output_producer(int d, int s, int t, int j, int k) const {
  const auto cell = static_cast<std::size_t>(j * stage(s).size() + k);
  const TaskIndex ar = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)].fwd_ar[cell];
  return ar != kNoTask ? ar : tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))].fwd[cell];
}

TaskIndex PlanBuilder::rerun_output_producer(int d, int s, int t, int j, int k) const {
  const auto cell = static_cast<std::size_t>(j * stage(s).size() + k);
  const TaskIndex ar = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)].rfwd_ar[cell];
  return ar != kNoTask ? ar : tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))].rfwd[cell];
}

TaskIndex PlanBuilder::output_grad_producer(int d, int s, int t, int j, int k) const {
  if (k + 1 < stage(s).size()) return input_grad_producer(d, s, t, j, k + 1);
  if (s + 1 < layout_.stage_count()) {
    const TaskIndex ag = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)]
                             .recv_bwd_ag[static_cast<std::size_t>(j)];
    return ag != kNoTask ? ag
                         : tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))]
                               .recv_bwd[static_cast<std::size_t>(j)];
  }
  return kNoTask;
}

TaskIndex PlanBuilder::input_grad_producer(int d, int s, int t, int j, int k) const {
  const auto cell = static_cast<std::size_t>(j * stage(s).size() + k);
  const TaskIndex ar = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)].bwd_ar[cell];
  return ar != kNoTask ? ar : tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))].bwd[cell];
}

TaskIndex PlanBuilder::forward_gate(int d, int s, int t, int j) const {
  const auto [gate_stage, microbatch] = stage(s).fwd_gate[static_cast<std::size_t>(j)];
  if (gate_stage < 0) return kNoTask;
  const auto cell = static_cast<std::size_t>(microbatch * stage(gate_stage).size());
  return tasks_[static_cast<std::size_t>(layout_.rank(d, gate_stage, t))].bwd[cell];
}

TaskIndex PlanBuilder::wgrad_producer(WorkerId rank, int j, int k) const {
  const int s = layout_.stage_of(rank);
  const Stage& st = stage(s);
  const auto cell = static_cast<std::size_t>(j * st.size() + k);
  const WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  if (!layer(st.first_layer + k).writes_wgrad) return kNoTask;
  return w.bwdw[cell] != kNoTask ? w.bwdw[cell] : w.bwd[cell];
}

void PlanBuilder::wire_worker(int d, int s, int t) {
  const Stage& st = stage(s);
  int previous = -1;
  for (int j : st.bwd_order) {
    wire_microbatch(d, s, t, j);
    if (previous >= 0) {
      const WorkerId rank = layout_.rank(d, s, t);
      for (int k = 0; k < st.size(); ++k) {
        const TaskIndex now = wgrad_producer(rank, j, k);
        if (now != kNoTask) plan_.add_data_dep(wgrad_producer(rank, previous, k), now);
      }
    }
    previous = j;
  }
  // ZeRO-2 and -3: later microbatches add into the unsharded gradient the first one wrote
  // (its memory: account_gradient_buffers).
  const WorkerId rank = layout_.rank(d, s, t);
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  for (int k = 0; k < st.size(); ++k) {
    const auto ks = static_cast<std::size_t>(k);
    if (b.wgrad_full[ks] == b.wgrad[ks]) continue;
    for (int j : st.bwd_order)
      if (j != st.bwd_order.front())
        plan_.mutable_task(wgrad_producer(rank, j, k)).reads.push_back(b.wgrad_full[ks]);
  }
  wire_optimizer(d, s, t);
}

void PlanBuilder::wire_microbatch(int d, int s, int t, int j) {
  const Stage& st = stage(s);
  const int n = st.size();
  const WorkerId rank = layout_.rank(d, s, t);
  const WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const auto mb = static_cast<std::size_t>(j);
  const bool last_stage = s + 1 == layout_.stage_count();
  for (int k = 0; k < n; ++k) {
    const auto cell = static_cast<std::size_t>(j * n + k);
    const TaskIndex fwd = w.fwd[cell];
    const GroupTasks& g = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)];
    if (g.fwd_ag[cell] != kNoTask) plan_.add_data_dep(g.fwd_ag[cell], fwd);
    if (k > 0) {
      if (g.fwd_ag[cell] == kNoTask) plan_.add_data_dep(output_producer(d, s, t, j, k - 1), fwd);
    } else {
      if (s > 0) plan_.add_data_dep(stage_input(d, s, t, j), fwd);
      if (w.prev_opt != kNoTask) plan_.add_control_dep(w.prev_opt, fwd);
      if (const TaskIndex gate = forward_gate(d, s, t, j); gate != kNoTask) plan_.add_control_dep(gate, fwd);
    }
    const TaskIndex output_grad = gathered_output_grad(d, s, t, j, k);
    const TaskIndex rerun = w.rfwd[cell];
    if (g.wgrad_ag[cell] != kNoTask) plan_.add_data_dep(g.wgrad_ag[cell], w.bwdw[cell]);
    for (TaskIndex task : {w.bwd[cell], w.bwdw[cell]}) {
      if (task == kNoTask) continue;
      plan_.add_data_dep(fwd, task);
      if (rerun != kNoTask) plan_.add_data_dep(rerun, task);
      if (output_grad != kNoTask) {
        plan_.add_data_dep(output_grad, task);
      } else {
        const TaskIndex out =
            rerun != kNoTask ? rerun_output_producer(d, s, t, j, k) : output_producer(d, s, t, j, k);
        if (out != fwd && out != rerun) plan_.add_data_dep(out, task);
      }
    }
  }
  wire_reruns(d, s, t, j);
  // Rank t receives from rank t mod p of a neighbour of degree p, its (t / p)-th send.
  if (!last_stage) {
    for (TaskIndex send : w.send_fwd[mb]) plan_.add_data_dep(output_producer(d, s, t, j, n - 1), send);
    const int p = layout_.tp_of(s + 1);
    const WorkerTasks& next = tasks_[static_cast<std::size_t>(layout_.rank(d, s + 1, t % p))];
    plan_.add_data_dep(next.send_bwd[mb][static_cast<std::size_t>(t / p)], w.recv_bwd[mb]);
  }
  if (s > 0) {
    for (TaskIndex send : w.send_bwd[mb]) plan_.add_data_dep(input_grad_producer(d, s, t, j, 0), send);
    const int p = layout_.tp_of(s - 1);
    const WorkerTasks& prev = tasks_[static_cast<std::size_t>(layout_.rank(d, s - 1, t % p))];
    plan_.add_data_dep(prev.send_fwd[mb][static_cast<std::size_t>(t / p)], w.recv_fwd[mb]);
  }
}

// A re-run segment starts when the gradient of its output arrives (Megatron's CheckpointFunction
// runs in the backward pass), re-reading the input its forward read.
void PlanBuilder::wire_reruns(int d, int s, int t, int j) {
  const Stage& st = stage(s);
  const WorkerTasks& w = tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))];
  const GroupTasks& g = groups_[static_cast<std::size_t>(d * layout_.stage_count() + s)];
  for (const Rerun& rerun : st.reruns) {
    // The first task of the re-run: its SP input gather, or its first forward.
    const auto first = static_cast<std::size_t>(j * st.size() + rerun.first);
    const TaskIndex start = g.rfwd_ag[first] != kNoTask ? g.rfwd_ag[first] : w.rfwd[first];
    plan_.add_data_dep(w.fwd[first], start);
    const TaskIndex output_grad = output_grad_producer(d, s, t, j, rerun.end - 1);
    if (output_grad != kNoTask) plan_.add_control_dep(output_grad, start);
    if (start != w.rfwd[first]) plan_.add_data_dep(start, w.rfwd[first]);
    for (int k = rerun.first + 1; k < rerun.end; ++k) {
      const auto cell = static_cast<std::size_t>(j * st.size() + k);
      const TaskIndex input = rerun_output_producer(d, s, t, j, k - 1);
      if (g.rfwd_ag[cell] != kNoTask) {
        plan_.add_data_dep(input, g.rfwd_ag[cell]);
        plan_.add_data_dep(g.rfwd_ag[cell], w.rfwd[cell]);
      } else {
        plan_.add_data_dep(input, w.rfwd[cell]);
      }
    }
  }
}

void PlanBuilder::wire_bucket_allreduces(int s, int t) {
  const Stage& st = stage(s);
  const int last = st.last_backward_microbatch();
  const auto& tasks = buckets_[layout_.group(s, t)];
  for (std::size_t k = 0; k < tasks.size(); ++k)
    for (int d = 0; d < layout_.replicas; ++d)
      for (int i : st.buckets[k])
        plan_.add_data_dep(wgrad_producer(layout_.rank(d, s, t), last, i - st.first_layer), tasks[k]);
  if (layout_.config->ddp != DdpMode::after_flush || tasks.empty()) return;
  // Megatron's local DDP: the first bucket after every backward task of the last microbatch
  // (the pipeline flush) on every replica, each further bucket after the previous one. When
  // interleaved the flush ends with the rank's first chunk (stage device(s)), and the rank's
  // buckets make one chain over its chunks in issue order (the later chunk's last bucket first).
  const int flush = layout_.device(s);
  const int flush_last = stage(flush).last_backward_microbatch();
  const auto n = static_cast<std::size_t>(stage(flush).size());
  for (int d = 0; d < layout_.replicas; ++d) {
    const WorkerTasks& w = tasks_[static_cast<std::size_t>(layout_.rank(d, flush, t))];
    for (std::size_t cell = static_cast<std::size_t>(flush_last) * n;
         cell < (static_cast<std::size_t>(flush_last) + 1) * n; ++cell)
      for (TaskIndex task : {w.bwd[cell], w.bwdw[cell]})
        if (task != kNoTask) plan_.add_control_dep(task, tasks.front());
  }
  for (int later = s + layout_.pp; later < layout_.stage_count(); later += layout_.pp)
    if (const auto& before = buckets_[layout_.group(later, t)]; !before.empty()) {
      plan_.add_control_dep(before.back(), tasks.front());
      break;
    }
  for (std::size_t k = 1; k < tasks.size(); ++k) plan_.add_control_dep(tasks[k - 1], tasks[k]);
}

void PlanBuilder::wire_optimizer(int d, int s, int t) {
  const Stage& st = stage(s);
  const WorkerId rank = layout_.rank(d, s, t);
  const WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  if (layout_.dp > 1) {
    for (TaskIndex bucket : buckets_[layout_.group(s, t)]) plan_.add_data_dep(bucket, w.opt_first);
  } else {
    const int last = st.last_backward_microbatch();
    for (int k = 0; k < st.size(); ++k) {
      const TaskIndex producer = wgrad_producer(rank, last, k);
      if (producer != kNoTask) plan_.add_data_dep(producer, w.opt_first);
    }
  }
  for (int j = 0; j < layout_.microbatches; ++j) {
    plan_.add_control_dep(w.bwd[static_cast<std::size_t>(j * st.size())], w.opt_first);
    // Weight gradients of tied weights (no parameters here) feed nothing else: end them too.
    for (int k = 0; k < st.size(); ++k) {
      const auto cell = static_cast<std::size_t>(j * st.size() + k);
      if (w.bwdw[cell] != kNoTask && !layer(st.first_layer + k).writes_wgrad)
        plan_.add_control_dep(w.bwdw[cell], w.opt_first);
    }
  }
}

// A parameter all-gather after the optimizer step of every replica; the next iteration's
// forward of a layer after the gather of its bucket (control: it reads the weights again).
void PlanBuilder::wire_param_gathers(int s, int t) {
  const Stage& st = stage(s);
  const std::size_t group = layout_.group(s, t);
  for (TaskIndex gather : gathers_[group])
    for (int d = 0; d < layout_.replicas; ++d)
      plan_.add_data_dep(tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))].opt, gather);
  const std::vector<TaskIndex>& previous = prev_gathers_[group];
  if (previous.empty()) return;
  const int n = st.size();
  for (int d = 0; d < layout_.replicas; ++d) {
    const WorkerTasks& w = tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))];
    for (int j = 0; j < layout_.microbatches; ++j)
      for (int k = 0; k < n; ++k)
        if (const int b = st.bucket_of[static_cast<std::size_t>(k)]; b >= 0)
          plan_.add_control_dep(previous[static_cast<std::size_t>(b)],
                                w.fwd[static_cast<std::size_t>(j * n + k)]);
  }
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
