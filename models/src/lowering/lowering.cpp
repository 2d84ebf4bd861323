// lower(): a model and a DP x TP x PP configuration to a Plan.
//
// Task ids (coordinates it, dp, pp, tp, mb always present on per-worker tasks, so ids are
// uniform; <layer> is the zoo's layer name, e.g. "l7/qkv"):
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/fwd/<layer>     forward of a layer
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/bwd/<layer>     backward data (and the weight gradient of ops
//                                                  without a backward-weight kind)
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/bwdw/<layer>    backward weight (linear and conv layers)
//   it<i>/dp<d>/pp<s>/mb<m>/fwd/<layer>/ar        Megatron allreduce after a forward (group: the
//   it<i>/dp<d>/pp<s>/mb<m>/bwd/<layer>/ar        tp ranks) or after a backward data; with
//                                                  sequence parallelism .../rs and .../ag
//                                                  (lowering_tensor_parallel.cpp)
//   it<i>/pp<s>/tp<t>/ar/b<k>                     DP gradient bucket k in issue order (group:
//                                                  the dp ranks of stage s, tp rank t)
//   it<i>/pp<s>/tp<t>/rs/b<k>                     its reduce-scatter instead (zero >= 1)
//   it<i>/pp<s>/tp<t>/ag/b<k>                     all-gather of bucket k's updated parameters
//                                                  after the optimizer step (zero = 1, 2)
//   it<i>/pp<s>/tp<t>/mb<m>/{fwd,bwd}/b<b>/ag     ZeRO-3: all-gather of block b's parameters
//                                                  before their use (lowering_zero3.cpp)
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/send/fwd        activation to stage s+1 (peer: same dp, tp)
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/recv/fwd        its arrival at stage s (peer: stage s-1)
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/send/bwd        input gradient to stage s-1
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/recv/bwd        its arrival at stage s (peer: stage s+1)
//   it<i>/dp<d>/pp<s>/tp<t>/opt                   optimizer step of the worker's shard
//   it<i>/dp<d>/pp<s>/tp<t>/opt/d2h               offload: its gradient shard to the host before
//   it<i>/dp<d>/pp<s>/tp<t>/opt/h2d               the step (on the host CPU), its updated
//                                                  parameter shard back after it
//                                                  (lowering_offload.cpp)
//   it<i>/dp<d>/pp<s>/tp<t>/mb<m>/rfwd/<layer>    re-run of a forward before its backward
//                                                  (activation recomputation; the forward's
//                                                  kind; lowering_recompute.cpp)
//   it<i>/dp<d>/pp<s>/mb<m>/rfwd/<layer>/ar       the TP allreduce a re-run forward repeats
// With interleaving (interleave = v > 1, lowering_layout.hpp) pp<s> is the pipeline rank, which
// runs the model chunks s, s + pp, ... (the layer names tell them apart); the ids of the pipeline
// transfers and of the optimizer step, and the "opt/state" buffer, end in "/c<k>" (chunk k of
// pp x v), e.g. it0/dp0/pp3/tp0/mb1/send/fwd/c3 (to rank 0's chunk 4); a rank's buckets b<k>
// are numbered over its chunks in issue order. Without interleaving no id has that segment.
// Buffers: "dp<d>/pp<s>/tp<t>/mb<m>/act/<layer>" (output of a layer; "input" for the model's
// input), ".../mb<m>/grad/<layer>" (gradient w.r.t. it), persistent "dp<d>/pp<s>/tp<t>/w/<layer>",
// ".../wgrad/<layer>" and ".../opt/state" (ZeRO: the optimizer state of ceil(params/dp)
// parameters from stage 1 (the largest ring chunk a rank owns), the
// gradients from stage 2, the weights from stage 3; the state in host memory with offload).
// ZeRO-2 and -3 shard each layer on its own: "wgrad/<layer>" (from stage 2) and "w/<layer>"
// (stage 3) hold ceil(elements/dp) elements, the rank's ring chunk of the layer
// (owned_chunk), and the layer's tasks use unsharded buffers that are not persistent:
// ".../wgrad/<layer>/full", which the backward accumulates and the bucket's reduce-scatter
// consumes, and ".../w/<layer>/full", which a ZeRO-3 gather fills before each use. Those
// collectives carry attrs per_buffer = 1 (one ring per layer, not over the bucket).
// Buffers are shared by all iterations; a re-run writes again the activation buffers its forward
// wrote. Memory is Task::mem_alloc / mem_free:
// a forward allocates what it keeps for the backward, the backward data frees it (with
// recomputation: lowering_recompute.cpp).
// Dependencies, priorities and memory: lowering_deps.cpp and lowering_layout.hpp.
#include <algorithm>
#include <cmath>
#include <string>

#include "lowering_builder.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace lowering {

PlanBuilder::PlanBuilder(const Layout& layout, Plan& plan)
    : layout_(layout),
      plan_(plan),
      buffers_(static_cast<std::size_t>(layout.ranks())),
      tasks_(buffers_.size()),
      groups_(static_cast<std::size_t>(layout.dp * layout.stage_count())),
      buckets_(static_cast<std::size_t>(layout.replica_ranks())),
      gathers_(buckets_.size()),
      prev_gathers_(buckets_.size()),
      unit_gathers_(buckets_.size()),
      codec_buffers_(tasks_.size()),
      codecs_(buckets_.size()) {}

int PlanBuilder::shards(int from_stage) const { return layout_.config->zero >= from_stage ? layout_.dp : 1; }

const std::string& PlanBuilder::layer_name(int i) const {
  return layout_.model->layers[static_cast<std::size_t>(i)].name;
}

std::string PlanBuilder::chunk_suffix(int s) const {
  return layout_.interleave > 1 ? "/c" + std::to_string(s) : std::string();
}

std::string PlanBuilder::receiver_suffix(int s, int r, int u) const {
  return layout_.tp_of(s) == layout_.tp_of(r) ? std::string() : "/" + coord("tp", u);
}

std::string PlanBuilder::input_name(int s) const {
  const int first = stage(s).first_layer;
  return first == 0 ? std::string("input") : layer_name(first - 1);
}

BufferIndex PlanBuilder::act(WorkerId rank, int j, int slot) const {
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  const int n = stage(layout_.stage_of(rank)).size();
  return b.act_base + static_cast<BufferIndex>(j * (n + 1) + slot);
}

BufferIndex PlanBuilder::grad(WorkerId rank, int j, int slot) const {
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  const int n = stage(layout_.stage_of(rank)).size();
  return b.grad_base + static_cast<BufferIndex>(j * (n + 1) + slot);
}

void PlanBuilder::add_buffers() {
  const DType dtype = layout_.config->dtype;
  const double elem = bytes_per_element(dtype);
  const double opt_per_param = optimizer_state_bytes_per_param(layout_.config->optimizer, dtype);
  for (int d = 0; d < layout_.group_replicas; ++d)
    for (int s = 0; s < layout_.stage_count(); ++s)
      for (int t = 0; t < layout_.lowered_tp(s); ++t) {
        const WorkerId rank = layout_.rank(d, s, t);
        const WorkerId worker = layout_.worker(rank);
        const Stage& st = stage(s);
        const std::string prefix = std::string("dp").append(std::to_string(d)) + "/pp" +
                                   std::to_string(layout_.device(s)) + "/tp" + std::to_string(t) + "/";
        WorkerBuffers& wb = buffers_[static_cast<std::size_t>(rank)];
        for (int i = st.first_layer; i < st.end_layer; ++i) {
          const LayerPlan& l = layer(i);
          const bool has = l.writes_wgrad;
          // A shard holds ceil(elements / dp) elements, the last rank's padded (FSDP's flat
          // parameter and DeepSpeed's partitions pad the same way).
          const double shard_bytes = std::ceil(l.weight_bytes / elem / layout_.dp) * elem;
          auto add = [&](const std::string& id, double bytes, bool persistent) {
            return has ? plan_.add_buffer({prefix + id, worker, bytes, dtype, persistent}) : kNoBuffer;
          };
          const bool sharded_weights = shards(3) > 1, sharded_grads = shards(2) > 1;
          wb.weight.push_back(
              add("w/" + layer_name(i), sharded_weights ? shard_bytes : l.weight_bytes, true));
          wb.wgrad.push_back(
              add("wgrad/" + layer_name(i), sharded_grads ? shard_bytes : l.weight_bytes, true));
          wb.weight_full.push_back(sharded_weights
                                       ? add("w/" + layer_name(i) + "/full", l.weight_bytes, false)
                                       : wb.weight.back());
          wb.wgrad_full.push_back(sharded_grads
                                      ? add("wgrad/" + layer_name(i) + "/full", l.weight_bytes, false)
                                      : wb.wgrad.back());
        }
        wb.opt = plan_.add_buffer({prefix + "opt/state" + chunk_suffix(s), worker,
                                   std::ceil(st.params / shards(1)) * opt_per_param, DType::fp32, true,
                                   layout_.config->offload});
        add_codec_buffers(rank, s, prefix);
        const double input = input_bytes(*layout_.model, layout_, st, 0);
        for (const char* kind : {"act/", "grad/"}) {
          BufferIndex base = 0;
          for (int j = 0; j < layout_.microbatches; ++j) {
            const std::string mb = prefix + "mb" + std::to_string(j) + "/" + kind;
            const BufferIndex first = plan_.add_buffer({mb + input_name(s), worker, input, dtype, false});
            if (j == 0) base = first;
            for (int i = st.first_layer; i < st.end_layer; ++i)
              plan_.add_buffer({mb + layer_name(i), worker, layer(i).out_bytes, dtype, false});
          }
          (kind[0] == 'a' ? wb.act_base : wb.grad_base) = base;
        }
      }
}

void PlanBuilder::add_iteration(int iteration) {
  const TaskIndex first = static_cast<TaskIndex>(plan_.size());
  for (WorkerTasks& w : tasks_) w.prev_opt = w.opt;
  std::swap(prev_gathers_, gathers_);
  for (int d = 0; d < layout_.replicas; ++d)
    for (int s = 0; s < layout_.stage_count(); ++s) {
      for (int t = 0; t < layout_.lowered_tp(s); ++t) create_worker_tasks(iteration, d, s, t);
      create_tp_allreduces(iteration, d, s);
    }
  if (layout_.dp > 1)
    for (int s = 0; s < layout_.stage_count(); ++s)
      for (int t = 0; t < layout_.lowered_tp(s); ++t) {
        create_bucket_allreduces(iteration, s, t);
        create_param_gathers(iteration, s, t);
        create_codec_tasks(iteration, s, t);
        if (layout_.config->zero == 3) create_unit_gathers(iteration, s, t);
      }
  for (int d = 0; d < layout_.replicas; ++d)
    for (int s = 0; s < layout_.stage_count(); ++s) {
      wire_tp_allreduces(d, s);
      for (int t = 0; t < layout_.lowered_tp(s); ++t) wire_worker(d, s, t);
    }
  if (layout_.dp > 1)
    for (int s = 0; s < layout_.stage_count(); ++s)
      for (int t = 0; t < layout_.lowered_tp(s); ++t) {
        wire_bucket_allreduces(s, t);
        wire_param_gathers(s, t);
        wire_codec_tasks(s, t);
        if (layout_.config->zero == 3) wire_unit_gathers(s, t);
      }
  account_gradient_buffers(first);
}

// Gradient tensors (".../mb<m>/grad/<layer>", the gradient w.r.t. a layer's output, and with
// ZeRO-2/3 ".../wgrad/<layer>/full", a layer's unsharded weight gradient): a framework holds one
// from the task that first writes it (the backward data of the layer after it, a recv/bwd; the
// first microbatch's weight gradient) to the last task that reads it (this layer's backward
// data and weight gradient, a TP collective, a send/bwd; the bucket's reduce-scatter), in the
// worker's dispatch order (priority, then plan order): the first writer allocates it, the last
// reader frees it, or the writer itself when nothing reads it (the model input's gradient). A
// collective's allocation counts once for each member, so it is charged the size of one
// member's buffer.
void PlanBuilder::account_gradient_buffers(TaskIndex first) {
  std::vector<char> is_grad(plan_.buffers().size(), 0);
  // The ranks that hold buffers: the first group_replicas replicas' (all but in a symmetry reduction).
  const auto holders = std::min(buffers_.size(), static_cast<std::size_t>(layout_.group_replicas) *
                                                     static_cast<std::size_t>(layout_.replica_ranks()));
  for (std::size_t rank = 0; rank < holders; ++rank) {
    const int s = layout_.stage_of(static_cast<WorkerId>(rank));
    // A tensor-parallel symmetry reduction's ranks left out hold no buffers.
    const auto t = static_cast<int>(rank % static_cast<std::size_t>(layout_.replica_ranks())) -
                   layout_.stage_first[static_cast<std::size_t>(s)];
    if (t >= layout_.lowered_tp(s)) continue;
    const int n = stage(s).size();
    for (int j = 0; j < layout_.microbatches; ++j)
      for (int slot = 0; slot <= n; ++slot) is_grad[grad(static_cast<WorkerId>(rank), j, slot)] = 1;
    const WorkerBuffers& b = buffers_[rank];
    for (std::size_t k = 0; k < b.wgrad.size(); ++k)
      if (b.wgrad_full[k] != b.wgrad[k]) is_grad[b.wgrad_full[k]] = 1;
  }
  struct Use {
    TaskIndex writer = kNoTask, reader = kNoTask;
  };
  std::vector<Use> uses(plan_.buffers().size());
  auto earlier = [this](TaskIndex a, TaskIndex b) {
    const std::int64_t pa = plan_.task(a).priority, pb = plan_.task(b).priority;
    return pa != pb ? pa < pb : a < b;
  };
  for (TaskIndex t = first; t < plan_.size(); ++t) {
    const Task& task = plan_.task(t);
    for (BufferIndex b : task.writes)
      if (is_grad[b] != 0 && (uses[b].writer == kNoTask || earlier(t, uses[b].writer))) uses[b].writer = t;
    for (BufferIndex b : task.reads)
      if (is_grad[b] != 0 && (uses[b].reader == kNoTask || earlier(uses[b].reader, t))) uses[b].reader = t;
  }
  for (BufferIndex b = 0; b < uses.size(); ++b) {
    const Use& use = uses[b];
    if (use.writer == kNoTask) continue;
    const Buffer& buffer = plan_.buffer(b);
    const TaskIndex last = use.reader != kNoTask ? use.reader : use.writer;
    // A collective touches every member's buffer: charge it for its first member's only.
    auto charged = [&](TaskIndex t) {
      const Task& task = plan_.task(t);
      return task.group.empty() || task.group.front() == buffer.worker;
    };
    if (charged(use.writer)) plan_.mutable_task(use.writer).mem_alloc += buffer.bytes;
    if (charged(last)) plan_.mutable_task(last).mem_free += buffer.bytes;
  }
}

namespace {

// The memory options this lowering does not build yet: refused in one line rather than lowered
// as if they were not set.
void check_lowered(const StrategyConfig& config) {
  StrategyConfig rest = config;  // the options lowered here set back to their defaults
  const StrategyConfig defaults;
  rest.recompute = defaults.recompute;
  rest.recompute_method = defaults.recompute_method;
  rest.recompute_blocks = defaults.recompute_blocks;
  rest.ddp = defaults.ddp;
  rest.zero = defaults.zero;
  rest.sequence_parallel = defaults.sequence_parallel;
  rest.flash_attention = defaults.flash_attention;
  rest.interleave = defaults.interleave;
  rest.offload = defaults.offload;
  rest.compression = defaults.compression;
  rest.tp_comm = defaults.tp_comm;
  rest.p2p = defaults.p2p;
  rest.p2p_scatter_gather = defaults.p2p_scatter_gather;
  if (rest.schedule == PipelineSchedule::zb_h1) rest.schedule = defaults.schedule;
  if (const std::string option = memory_option_set(rest); !option.empty())
    throw InputError(option + ": not lowered to a Plan by this version of strata");
}

}  // namespace
}  // namespace lowering

Plan lower(const Model& model, const StrategyConfig& config) {
  check_strategy(model, config);
  lowering::check_lowered(config);
  // A Plan too large for the memory left is refused before anything is built (the layout holds
  // per-microbatch schedules too): each worker has at least a forward task per layer it holds and
  // microbatch, one more per microbatch (a backward or a transfer), iterations over.
  const double layers_per_worker =
      std::max(1.0, std::floor(static_cast<double>(model.layers.size()) /
                               static_cast<double>(config.pp * std::max(1, config.interleave))));
  check_plan_fits_memory(
      static_cast<double>(config.iterations) *
      static_cast<double>(config.workers() / config.dp * lowering::lowered_replica_count(config)) *
      static_cast<double>(microbatch_count(config)) * (layers_per_worker + 1));
  const lowering::Layout layout = lowering::make_layout(model, config);
  Plan plan(config.workers());
  plan.info.model = model.name;
  plan.info.strategy = config.to_string();
  plan.info.solver = PlanSolver::backprop;
  plan.info.schedule = config.pp == 1                                     ? PlanSchedule::none
                       : config.schedule == PipelineSchedule::one_f_one_b ? PlanSchedule::one_f_one_b
                       : config.schedule == PipelineSchedule::zb_h1       ? PlanSchedule::zb_h1
                                                                          : PlanSchedule::gpipe;
  // Megatron-LM launches a worker's kernels and NCCL calls in program order, which the tasks'
  // priorities are (their schedule positions): each stream runs them in that order.
  plan.info.stream_order = StreamOrder::issue;
  plan.info.input_elements = static_cast<std::int64_t>(model.input_elems);
  plan.info.graph_nodes = model.family == "gcn" ? model.graph_nodes : 0;
  plan.info.optimizer = std::string(to_string(config.optimizer));
  plan.info.dtype = config.dtype;
  plan.info.global_batch = layout.global_batch;
  plan.info.microbatches = layout.microbatches;
  plan.info.tokens_per_sample = model.seq;
  plan.info.model_flops_per_iteration = model.model_flops_per_token() * static_cast<double>(model.seq) *
                                        static_cast<double>(layout.global_batch);
  plan.info.seed = config.seed;
  if (config.symmetric_replicas > 0) {
    plan.info.symmetric_replicas = config.symmetric_replicas;
    plan.info.dp_replicas = config.dp;
  }
  if (config.symmetric_tp > 0) {
    plan.info.symmetric_tp = config.symmetric_tp;
    plan.info.tp_ranks = config.tp;
  }

  // Upper bound of the task count: per worker, microbatch and layer a forward, a backward, a
  // weight-gradient task, a re-run and two allreduces, plus per-iteration optimizer and bucket
  // tasks.
  std::size_t widest_stage = 0;
  for (const auto& stage : layout.stages) widest_stage = std::max<std::size_t>(widest_stage, stage.size());
  widest_stage *= static_cast<std::size_t>(layout.interleave);  // a worker's chunks together
  plan.reserve(static_cast<std::size_t>(config.iterations) *
                   static_cast<std::size_t>(config.workers() / config.dp * layout.replicas) *
                   (static_cast<std::size_t>(layout.microbatches) * (widest_stage * 6 + 4) + 2 +
                    static_cast<std::size_t>(layout.max_buckets)),
               static_cast<std::size_t>(config.workers()) *
                   (static_cast<std::size_t>(layout.microbatches) + 3) * (widest_stage + 1));
  lowering::PlanBuilder builder(layout, plan);
  builder.add_buffers();
  for (int it = 0; it < config.iterations; ++it) builder.add_iteration(it);
  add_temporaries(plan);
  plan.validate();
  return plan;
}

}  // namespace models
}  // namespace strata
