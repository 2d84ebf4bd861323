// Task creation of one iteration: every task with its id, worker, stream, priority, sizes and
// buffers, recorded in PlanBuilder's tables. Dependencies are added in lowering_deps.cpp.
#include <string>

#include "lowering_builder.hpp"
#include "strata/models/lowering/layer_tasks.hpp"

namespace strata {
inline namespace models {
namespace lowering {
TaskIndex PlanBuilder::add_compute(const Task& model_task, std::string id, WorkerId rank, int it,
                                   std::int64_t priority) {
  Task task = model_task;
  task.id = std::move(id);
  task.worker = layout_.worker(rank);
  task.iteration = it;
  task.priority = priority;
  return plan_.add_task(std::move(task));
}

TaskIndex PlanBuilder::add_p2p(TaskKind kind, std::string id, WorkerId rank, WorkerId peer, int it,
                               std::int64_t priority, double bytes) {
  Task task;
  task.id = std::move(id);
  task.kind = kind;
  // Blocking p2p (Megatron-LM before Megatron-Core): the compute stream waits for the transfer.
  task.stream = layout_.config->p2p == P2pMode::blocking ? Stream::compute : Stream::comm;
  task.worker = layout_.worker(rank);
  task.peer = layout_.worker(peer);
  task.dtype = layout_.config->dtype;
  task.iteration = it;
  task.priority = priority;
  // The send carries the payload; the recv only marks its arrival (task.hpp).
  task.comm_bytes = kind == TaskKind::send ? bytes : 0.0;
  return plan_.add_task(std::move(task));
}

TaskIndex PlanBuilder::add_collective(std::string id, std::vector<WorkerId> group, CollectiveAlgo algo,
                                      DType dtype, int it, std::int64_t priority, double bytes) {
  Task task;
  task.id = std::move(id);
  task.kind = TaskKind::allreduce;
  task.stream = Stream::comm;
  for (WorkerId& member : group) member = layout_.worker(member);
  task.group = std::move(group);
  task.algo = algo;
  task.dtype = dtype;
  task.iteration = it;
  task.priority = priority;
  task.comm_bytes = bytes;
  return plan_.add_task(std::move(task));
}

void PlanBuilder::create_worker_tasks(int it, int d, int s, int t) {
  const Stage& st = stage(s);
  const auto cells = static_cast<std::size_t>(layout_.microbatches * st.size());
  const auto m = static_cast<std::size_t>(layout_.microbatches);
  WorkerTasks& w = tasks_[static_cast<std::size_t>(layout_.rank(d, s, t))];
  w.fwd.assign(cells, kNoTask);
  w.bwd.assign(cells, kNoTask);
  w.bwdw.assign(cells, kNoTask);
  w.rfwd.assign(cells, kNoTask);
  for (auto* table : {&w.recv_fwd, &w.recv_bwd}) table->assign(m, kNoTask);
  for (auto* table : {&w.send_fwd, &w.send_bwd}) table->assign(m, {});
  for (std::size_t k = 0; k < st.slots.size(); ++k) {
    const Slot& slot = st.slots[k];
    if (slot.weight) continue;  // W(j): created with B(j)
    if (slot.forward)
      create_forward(it, d, s, t, st.positions[k], slot.microbatch);
    else
      create_backward(it, d, s, t, st.positions[k], slot.microbatch);
  }
  create_optimizer(it, d, s, t);
}

void PlanBuilder::create_forward(int it, int d, int s, int t, int slot_index, int j) {
  const Stage& st = stage(s);
  const int n = st.size();
  const WorkerId rank = layout_.rank(d, s, t);
  WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  const std::string prefix = worker_prefix(it, d, layout_.device(s), t) + coord("mb", j) + "/";
  const auto mb = static_cast<std::size_t>(j);
  if (s > 0) {
    const double bytes = layer(st.first_layer - 1).out_bytes;
    w.recv_fwd[mb] = add_p2p(TaskKind::recv, prefix + "recv/fwd" + chunk_suffix(s), rank,
                             layout_.rank(d, s - 1, t % layout_.tp_of(s - 1)), it,
                             layout_.priority(it, slot_index, 0), bytes);
    plan_.mutable_task(w.recv_fwd[mb]).writes = {act(rank, j, 0)};
  }
  for (int k = 0; k < n; ++k) {
    const int i = st.first_layer + k;
    const TaskIndex task = add_compute(layer(i).fwd, prefix + "fwd/" + layer_name(i), rank, it,
                                       layout_.priority(it, slot_index, 2 + 3 * k));
    Task& task_ref = plan_.mutable_task(task);
    const LayerMemory& memory = st.memory[static_cast<std::size_t>(k)];
    task_ref.mem_alloc = memory.fwd_alloc;
    task_ref.mem_free = memory.fwd_free;
    task_ref.reads = {act(rank, j, k)};
    if (b.weight_full[static_cast<std::size_t>(k)] != kNoBuffer)
      task_ref.reads.push_back(b.weight_full[static_cast<std::size_t>(k)]);
    task_ref.writes = {act(rank, j, k + 1)};
    add_skip(task_ref, rank, j, s, k);
    w.fwd[static_cast<std::size_t>(j * n + k)] = task;
  }
  // The stage's input, when its first layer keeps it (as a linear, conv, norm or embedding keeps
  // its input), is held from when it is there: its recv, or, on the first stage, the start of
  // the iteration, when the host binds every microbatch's input (strata's Trainer does, as a
  // data loader that hands over the whole batch).
  const LayerOp first_op = layout_.model->layers[static_cast<std::size_t>(st.first_layer)].op;
  const bool first_keeps_input = keeps_input(first_op);
  const double input = input_bytes(*layout_.model, layout_, st, 0);
  Task& first = plan_.mutable_task(w.fwd[static_cast<std::size_t>(j * n)]);
  if (first_keeps_input && first.mem_alloc >= input) {
    if (s > 0) {
      first.mem_alloc -= input;
      plan_.mutable_task(w.recv_fwd[mb]).mem_alloc = input;
    } else if (st.first_layer == 0 && j > 0) {
      first.mem_alloc -= input;
      plan_.mutable_task(w.fwd[0]).mem_alloc += input;  // microbatch 0's, the worker's first forward
    }
  }
  if (s + 1 < layout_.stage_count())
    add_sends(w.send_fwd[mb], prefix + "send/fwd" + chunk_suffix(s), d, s, t, s + 1, it,
              layout_.priority(it, slot_index, 3 * n + 1), layer(st.end_layer - 1).out_bytes,
              act(rank, j, n));
}

bool PlanBuilder::scatter_gathered(int from, int to) const {
  const StrategyConfig& c = *layout_.config;
  return c.p2p_scatter_gather && !c.sequence_parallel && layout_.tp_of(from) > 1 &&
         layout_.tp_of(from) == layout_.tp_of(to);
}

void PlanBuilder::add_sends(std::vector<TaskIndex>& out, const std::string& id, int d, int s, int t, int r,
                            int it, std::int64_t priority, double bytes, BufferIndex buffer) {
  // Scatter-gather: each rank sends its 1/t of the tensor; the receivers all-gather it.
  if (scatter_gathered(s, r)) bytes /= layout_.tp_of(s);
  for (int u = t; u < layout_.tp_of(r); u += layout_.tp_of(s)) {
    out.push_back(add_p2p(TaskKind::send, id + receiver_suffix(s, r, u), layout_.rank(d, s, t),
                          layout_.rank(d, r, u), it, priority, bytes));
    plan_.mutable_task(out.back()).reads = {buffer};
  }
}

void PlanBuilder::create_backward(int it, int d, int s, int t, int slot_index, int j) {
  const Stage& st = stage(s);
  const int n = st.size();
  const WorkerId rank = layout_.rank(d, s, t);
  WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  const std::string prefix = worker_prefix(it, d, layout_.device(s), t) + coord("mb", j) + "/";
  const auto mb = static_cast<std::size_t>(j);
  const bool last_stage = s + 1 == layout_.stage_count();
  if (!last_stage) {
    w.recv_bwd[mb] = add_p2p(TaskKind::recv, prefix + "recv/bwd" + chunk_suffix(s), rank,
                             layout_.rank(d, s + 1, t % layout_.tp_of(s + 1)), it,
                             layout_.priority(it, slot_index, 0), layer(st.end_layer - 1).out_bytes);
    plan_.mutable_task(w.recv_bwd[mb]).writes = {grad(rank, j, n)};
  }
  for (int r = 0; r < n; ++r) {
    const int k = n - 1 - r;
    const int i = st.first_layer + k;
    const auto ks = static_cast<std::size_t>(k);
    const auto cell = static_cast<std::size_t>(j * n + k);
    const LayerPlan& l = layer(i);
    const BackwardPositions& pos = st.bwd_pos[ks];
    const int rerun = st.rerun_of[ks];
    if (rerun >= 0 && st.reruns[static_cast<std::size_t>(rerun)].end == k + 1)
      create_rerun(it, d, s, t, slot_index, j, st.reruns[static_cast<std::size_t>(rerun)]);
    // The model's last layer (the loss) starts the backward: no output gradient to read.
    const bool has_output_grad = k + 1 < n || !last_stage;
    const TaskIndex bwd = add_compute(l.bwd, prefix + "bwd/" + layer_name(i), rank, it,
                                      layout_.priority(it, slot_index, pos.bwd));
    Task& bwd_ref = plan_.mutable_task(bwd);
    bwd_ref.mem_free = st.memory[ks].bwd_free;
    if (has_output_grad) bwd_ref.reads.push_back(grad(rank, j, k + 1));
    // ReLU's and tanh's backward read their output, which they keep (as PyTorch's do): the
    // layer before need not keep its own (GELU's needs its input).
    const std::string fn = bwd_ref.attr_string("fn").value_or("");
    const bool from_output = bwd_ref.kind == TaskKind::activation_bwd && (fn == "relu" || fn == "tanh");
    if (from_output) bwd_ref.attrs["saved"] = std::string("output");
    bwd_ref.reads.push_back(act(rank, j, from_output ? k + 1 : k));
    if (b.weight_full[ks] != kNoBuffer) bwd_ref.reads.push_back(b.weight_full[ks]);
    bwd_ref.writes = {grad(rank, j, k)};
    if (l.writes_wgrad && !l.has_bwdw) bwd_ref.writes.push_back(b.wgrad_full[ks]);
    // The first layer of a residual block: its input gradient gains the shortcut's share.
    for (int a = k + 1; a < n && a <= k + kMaxResidualSpan; ++a) {
      const Layer& add = layout_.model->layers[static_cast<std::size_t>(st.first_layer + a)];
      if (residual_span(add) == a - k) add_residual_grad(bwd_ref, add.shape, grad(rank, j, a + 1));
    }
    w.bwd[cell] = bwd;
    if (!l.has_bwdw) continue;
    const TaskIndex bwdw = add_compute(l.bwdw, prefix + "bwdw/" + layer_name(i), rank, it,
                                       layout_.priority(it, st.wgt_slot[mb], pos.bwdw));
    Task& bwdw_ref = plan_.mutable_task(bwdw);
    bwdw_ref.mem_free = st.memory[ks].wgrad_free;
    if (has_output_grad) bwdw_ref.reads.push_back(grad(rank, j, k + 1));
    bwdw_ref.reads.push_back(act(rank, j, k));
    if (b.wgrad_full[ks] != kNoBuffer) bwdw_ref.writes = {b.wgrad_full[ks]};
    w.bwdw[cell] = bwdw;
  }
  if (s > 0)
    add_sends(w.send_bwd[mb], prefix + "send/bwd" + chunk_suffix(s), d, s, t, s - 1, it,
              layout_.priority(it, slot_index, st.send_bwd_pos), layer(st.first_layer - 1).out_bytes,
              grad(rank, j, 0));
}

void PlanBuilder::add_skip(Task& forward, WorkerId rank, int j, int s, int k) const {
  const Layer& layer = layout_.model->layers[static_cast<std::size_t>(stage(s).first_layer + k)];
  const std::int64_t span = residual_span(layer);
  if (span == 0) return;
  STRATA_ASSERT(span <= k && span <= kMaxResidualSpan,
                "residual add " + layer.name + ": its block starts on another pipeline stage");
  add_skip_read(forward, act(rank, j, k - static_cast<int>(span)));
}

// The forwards of a re-run segment, in forward order, reading and writing the activations the
// forward did (the backward of each layer reads them again).
void PlanBuilder::create_rerun(int it, int d, int s, int t, int slot_index, int j, const Rerun& rerun) {
  const Stage& st = stage(s);
  const WorkerId rank = layout_.rank(d, s, t);
  WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  const std::string prefix = worker_prefix(it, d, layout_.device(s), t) + coord("mb", j) + "/rfwd/";
  for (int k = rerun.first; k < rerun.end; ++k) {
    const int i = st.first_layer + k;
    const auto ks = static_cast<std::size_t>(k);
    const TaskIndex task = add_compute(layer(i).fwd, prefix + layer_name(i), rank, it,
                                       layout_.priority(it, slot_index, st.bwd_pos[ks].rerun));
    Task& ref = plan_.mutable_task(task);
    ref.mem_alloc = st.memory[ks].rerun_alloc;
    ref.mem_free = 0;
    ref.reads = {act(rank, j, k)};
    if (b.weight_full[ks] != kNoBuffer) ref.reads.push_back(b.weight_full[ks]);
    ref.writes = {act(rank, j, k + 1)};
    add_skip(ref, rank, j, s, k);
    w.rfwd[static_cast<std::size_t>(j * st.size() + k)] = task;
  }
}

// One pass over the worker's ZeRO footprint (weights + gradients + optimizer state, 16 B/param
// for mixed-precision Adam): reads gradients and state, writes weights. ~10 FLOP/param for Adam
// (moments, bias correction, sqrt, divide, update), 2 for SGD.
void PlanBuilder::create_optimizer(int it, int d, int s, int t) {
  const StrategyConfig& config = *layout_.config;
  const Stage& st = stage(s);
  const WorkerId rank = layout_.rank(d, s, t);
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  if (config.offload)
    return create_offloaded_optimizer(it, d, s, t,
                                      worker_prefix(it, d, layout_.device(s), t) + "opt" + chunk_suffix(s));
  Task task = optimizer_step_task(*layout_.model, st.params / shards(1), config.optimizer, config.dtype,
                                  layer_task_options(config, *layout_.model).kernels);
  task.id = worker_prefix(it, d, layout_.device(s), t) + "opt" + chunk_suffix(s);
  task.worker = layout_.worker(rank);
  task.iteration = it;
  task.priority = layout_.optimizer_priority(it);
  for (std::size_t k = 0; k < b.wgrad.size(); ++k)
    if (b.wgrad[k] != kNoBuffer) {
      task.reads.push_back(b.wgrad[k]);
      task.writes.push_back(b.weight[k]);
    }
  task.reads.push_back(b.opt);
  task.writes.push_back(b.opt);
  tasks_[static_cast<std::size_t>(rank)].opt = tasks_[static_cast<std::size_t>(rank)].opt_first =
      plan_.add_task(std::move(task));
}

void PlanBuilder::create_bucket_allreduces(int it, int s, int t) {
  const Stage& st = stage(s);
  std::vector<TaskIndex>& out = buckets_[layout_.group(s, t)];
  out.clear();
  std::vector<WorkerId> group;
  for (int d = 0; d < layout_.group_replicas; ++d) group.push_back(layout_.rank(d, s, t));
  // ZeRO (any stage) and Megatron's distributed optimizer reduce-scatter each bucket: every rank
  // keeps the reduced gradient of its 1/dp shard (Rajbhandari et al. 2020, section 5).
  const bool sharded = layout_.config->zero >= 1;
  // Top-k compression all-gathers each rank's selection instead (lowering_compression.cpp).
  const bool gathered = layout_.config->compression == Compression::topk;
  const std::string prefix = coord("it", it) + "/" + coord("pp", layout_.device(s)) + "/" + coord("tp", t) +
                             (sharded    ? "/rs/"
                              : gathered ? "/ag/"
                                         : "/ar/");
  for (std::size_t k = 0; k < st.buckets.size(); ++k) {
    const int bucket = st.bucket_offset + static_cast<int>(k);  // on the rank
    const TaskIndex task =
        add_collective(prefix + coord("b", bucket), group, layout_.config->dp_algo, layout_.config->dtype, it,
                       layout_.bucket_priority(it, bucket), st.bucket_bytes[k]);
    Task& ref = plan_.mutable_task(task);
    mark_dp_group(ref);
    if (sharded) ref.kind = TaskKind::reduce_scatter;
    // ZeRO-2 and -3: each layer's unsharded gradient is reduce-scattered into the rank's shard
    // of it (one ring per layer), and given back (account_gradient_buffers).
    const bool into_shards = shards(2) > 1;
    if (into_shards) ref.attrs["per_buffer"] = std::int64_t{1};
    for (WorkerId rank : group)
      for (int i : st.buckets[k]) {
        const auto k_in_stage = static_cast<std::size_t>(i - st.first_layer);
        const WorkerBuffers& wb = buffers_[static_cast<std::size_t>(rank)];
        ref.reads.push_back(wb.wgrad_full[k_in_stage]);
        ref.writes.push_back(wb.wgrad[k_in_stage]);
      }
    out.push_back(task);
  }
}

// ZeRO-1/2 and the distributed optimizer: after the step on its shard, each rank's updated
// parameters are all-gathered, bucket by bucket, so every replica holds whole weights again
// (the same bytes as the reduce-scatter: the two make one allreduce's traffic).
void PlanBuilder::create_param_gathers(int it, int s, int t) {
  std::vector<TaskIndex>& out = gathers_[layout_.group(s, t)];
  out.clear();
  const int zero = layout_.config->zero;
  if (zero < 1 || zero > 2) return;
  const Stage& st = stage(s);
  std::vector<WorkerId> group;
  for (int d = 0; d < layout_.group_replicas; ++d) group.push_back(layout_.rank(d, s, t));
  const std::string prefix =
      coord("it", it) + "/" + coord("pp", layout_.device(s)) + "/" + coord("tp", t) + "/ag/";
  for (std::size_t k = 0; k < st.buckets.size(); ++k) {
    const int bucket = st.bucket_offset + static_cast<int>(k);  // on the rank
    const TaskIndex task =
        add_collective(prefix + coord("b", bucket), group, layout_.config->dp_algo, layout_.config->dtype, it,
                       layout_.param_gather_priority(it, bucket), st.bucket_bytes[k]);
    Task& ref = plan_.mutable_task(task);
    mark_dp_group(ref);
    ref.kind = TaskKind::allgather;
    if (zero == 2) ref.attrs["per_buffer"] = std::int64_t{1};  // the step updated each layer's chunk
    for (WorkerId rank : group)
      for (int i : st.buckets[k]) {
        const BufferIndex buf =
            buffers_[static_cast<std::size_t>(rank)].weight[static_cast<std::size_t>(i - st.first_layer)];
        ref.reads.push_back(buf);
        ref.writes.push_back(buf);
      }
    out.push_back(task);
  }
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
