// lower_ampnet(): asynchronous model parallelism (Gaunt et al. 2017, "AMPNet") as a Plan.
//
// The model's layer groups (pipeline stages, partition_blocks) are pinned to workers 0..S-1 and
// K instances (minibatches of B samples) stream through them. Per instance k and layer n:
//   F(k,n)  it0/dp0/pp<s>/tp0/mb<k>/fwd/<layer>     after F(k, pred n) (a recv across workers)
//   B(k,n)  it0/dp0/pp<s>/tp0/mb<k>/bwd/<layer>     after B(k, succ n) and F(k,n); bwdw beside it
//   U(n,j)  it0/dp0/pp<s>/tp0/opt/<layer>/u<j>      the node's own optimizer step j, after the
//                                                    min_update_frequency gradients of instances
//                                                    [j*f, (j+1)*f) have accumulated
// and instance k is injected (F(k, first layer) starts) only after B(k - mak, first layer), so
// at most max_active_keys instances are in flight.
//
// Which parameter version an instance reads. In the original, a node reads whatever version it
// holds when the message arrives: it depends on timing. A Plan must give both executors the same
// computation, so the version is fixed: instance k reads version v(k) = floor((k - mak + 1) / f)
// (clipped at 0) of every node, the newest version whose gradients all come from instances that
// finished their backward before k could be injected. Control edges enforce it: F(k,n) after
// U(n, v(k) - 1), and U(n, v) after the backward of every instance that reads version v. Each
// F and B task records its version in attrs["param_version"], so staleness, k - f*v(k), is visible
// in the trace. With mak = 1 and f = 1, v(k) = k: serial backprop with per-layer steps.
//
// Gradients: the loss of each instance is its mean over B samples divided by f (attr
// "mean_over" = B*f), so a step applies the mean gradient of its f instances.
#include <algorithm>
#include <string>

#include "strata/models/layer_tasks.hpp"
#include "strata/models/solver.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

std::string coord(const char* name, std::int64_t value) { return std::string(name).append(std::to_string(value)); }

struct LayerInfo {
  Task fwd, bwd, bwdw;
  bool has_bwdw = false;
  bool has_params = false;
  double out_bytes = 0;
  double params = 0;
  BufferIndex weight = 0, wgrad = 0, opt = 0;  // when has_params
};

class AmpnetBuilder {
 public:
  AmpnetBuilder(const Model& model, const StrategyConfig& config, const SolverConfig& solver, Plan& plan)
      : model_(model), config_(config), solver_(solver), plan_(plan) {}

  void build();
  std::int64_t batch() const { return batch_; }

 private:
  static constexpr TaskIndex kNone = static_cast<TaskIndex>(-1);
  int stage_of(std::size_t layer) const { return stage_of_[layer]; }
  BufferIndex in_act(int k, std::size_t i) const;   // input of layer i for instance k
  BufferIndex in_grad(int k, std::size_t i) const;  // gradient with respect to that input
  std::string worker_prefix(int s) const { return "dp0/" + coord("pp", s) + "/tp0/"; }
  std::string input_name(std::size_t layer) const { return layer == 0 ? "input" : model_.layers[layer - 1].name; }
  int version(int k) const {
    const int v = (k - solver_.max_active_keys + 1) / solver_.min_update_frequency;
    return k - solver_.max_active_keys + 1 < 0 ? 0 : v;
  }
  int group(int k) const { return k / solver_.min_update_frequency; }
  int groups() const { return (solver_.instances + solver_.min_update_frequency - 1) / solver_.min_update_frequency; }

  void plan_layers();
  void add_buffers();
  void add_instance(int k);
  void add_updates();
  TaskIndex add_task(Task task, std::string id, int s, std::int64_t priority);
  TaskIndex add_p2p(TaskKind kind, std::string id, int s, int peer, std::int64_t priority, double bytes);

  const Model& model_;
  const StrategyConfig& config_;
  const SolverConfig& solver_;
  Plan& plan_;
  std::int64_t batch_ = 0;
  int stages_ = 0;
  std::vector<int> stage_of_;                   // per layer
  std::vector<LayerInfo> layers_;               // per layer
  std::vector<std::vector<BufferIndex>> act_, grad_;  // [k][layer]: output of the layer (input: act_in_)
  std::vector<BufferIndex> act_in_, grad_in_;   // [k * stages + s]: the stage's input
  std::vector<std::vector<TaskIndex>> fwd_, bwd_, bwdw_;  // [k][layer]
  std::vector<std::vector<TaskIndex>> upd_;     // [layer][j]
};

TaskIndex AmpnetBuilder::add_task(Task task, std::string id, int s, std::int64_t priority) {
  task.id = "it0/" + worker_prefix(s) + std::move(id);
  task.worker = s;
  task.iteration = 0;
  task.priority = priority;
  return plan_.add_task(std::move(task));
}

TaskIndex AmpnetBuilder::add_p2p(TaskKind kind, std::string id, int s, int peer, std::int64_t priority, double bytes) {
  Task t;
  t.kind = kind;
  t.stream = Stream::comm;
  t.peer = peer;
  t.dtype = config_.dtype;
  t.comm_bytes = kind == TaskKind::send ? bytes : 0.0;  // the recv only marks the arrival
  return add_task(std::move(t), std::move(id), s, priority);
}

void AmpnetBuilder::plan_layers() {
  const std::vector<int> bounds = partition_blocks(model_, stages_);
  const double elem = bytes_per_element(config_.dtype);
  const auto b = static_cast<double>(batch_);
  for (std::size_t i = 0; i < model_.layers.size(); ++i) {
    const Layer& layer = model_.layers[i];
    int s = 0;
    while (s + 1 < stages_ && layer.block >= bounds[static_cast<std::size_t>(s) + 1]) ++s;
    stage_of_.push_back(s);
    LayerInfo l;
    l.fwd = layer_task(layer, Phase::forward, b, 1, config_.dtype);
    l.bwd = layer_task(layer, Phase::backward_data, b, 1, config_.dtype);
    l.has_bwdw = backward_weight_kind(layer.op).has_value() && layer.params > 0;
    if (l.has_bwdw) l.bwdw = layer_task(layer, Phase::backward_weight, b, 1, config_.dtype);
    l.has_params = layer.params > 0;
    l.params = layer.params;
    l.out_bytes = layer.out_elems * b * elem;
    l.fwd.mem_alloc = layer.saved_elems * b * elem;
    l.bwd.mem_free = l.fwd.mem_alloc;
    if (layer.op == LayerOp::loss) l.bwd.attrs["mean_over"] = batch_ * solver_.min_update_frequency;
    layers_.push_back(std::move(l));
  }
}

void AmpnetBuilder::add_buffers() {
  const DType dtype = config_.dtype;
  const double elem = bytes_per_element(dtype);
  const double state = optimizer_state_bytes_per_param(config_.optimizer, dtype);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    LayerInfo& l = layers_[i];
    if (!l.has_params) continue;
    const int s = stage_of(i);
    const std::string& name = model_.layers[i].name;
    l.weight = plan_.add_buffer({worker_prefix(s) + "w/" + name, s, l.params * elem, dtype, true});
    l.wgrad = plan_.add_buffer({worker_prefix(s) + "wgrad/" + name, s, l.params * elem, dtype, true});
    l.opt = plan_.add_buffer({worker_prefix(s) + "opt/" + name, s, l.params * state, DType::fp32, true});
  }
  const int k_count = solver_.instances;
  act_.assign(static_cast<std::size_t>(k_count), {});
  grad_ = act_;
  for (int k = 0; k < k_count; ++k)
    for (const char* kind : {"act/", "grad/"}) {
      auto& outs = kind[0] == 'a' ? act_[static_cast<std::size_t>(k)] : grad_[static_cast<std::size_t>(k)];
      auto& ins = kind[0] == 'a' ? act_in_ : grad_in_;
      for (std::size_t i = 0; i < layers_.size(); ++i) {
        const int s = stage_of(i);
        const std::string prefix = worker_prefix(s) + coord("mb", k) + "/" + kind;
        if (i == 0 || stage_of(i - 1) != s) {
          const double bytes = i == 0 ? model_.input_elems * static_cast<double>(batch_) * elem : layers_[i - 1].out_bytes;
          ins.push_back(plan_.add_buffer({prefix + input_name(i), s, bytes, dtype, false}));
        }
        outs.push_back(plan_.add_buffer({prefix + model_.layers[i].name, s, layers_[i].out_bytes, dtype, false}));
      }
    }
}

BufferIndex AmpnetBuilder::in_act(int k, std::size_t i) const {
  const bool first = i == 0 || stage_of(i - 1) != stage_of(i);
  return first ? act_in_[static_cast<std::size_t>(k * stages_ + stage_of(i))] : act_[static_cast<std::size_t>(k)][i - 1];
}

BufferIndex AmpnetBuilder::in_grad(int k, std::size_t i) const {
  const bool first = i == 0 || stage_of(i - 1) != stage_of(i);
  return first ? grad_in_[static_cast<std::size_t>(k * stages_ + stage_of(i))] : grad_[static_cast<std::size_t>(k)][i - 1];
}

// Priorities: on a worker, older instances first and, within one, backward before the node
// updates it enables before forward: B(k) 4k, U after B(k) 4k+1, F(k) 4k+2.
void AmpnetBuilder::add_instance(int k) {
  const std::string mb = coord("mb", k) + "/";
  const auto ks = static_cast<std::size_t>(k);
  const std::size_t n = layers_.size();
  fwd_[ks].assign(n, kNone);
  bwd_[ks].assign(n, kNone);
  bwdw_[ks].assign(n, kNone);
  const std::int64_t pf = 4LL * k + 2;
  const std::int64_t pb = 4LL * k;
  TaskIndex prev = kNone;
  for (std::size_t i = 0; i < n; ++i) {
    const int s = stage_of(i);
    const LayerInfo& l = layers_[i];
    if (i > 0 && stage_of(i - 1) != s) {
      const TaskIndex send = add_p2p(TaskKind::send, mb + "send/fwd", s - 1, s, pf, layers_[i - 1].out_bytes);
      plan_.mutable_task(send).reads = {act_[ks][i - 1]};
      plan_.add_data_dep(prev, send);
      const TaskIndex recv = add_p2p(TaskKind::recv, mb + "recv/fwd", s, s - 1, pf, 0);
      plan_.mutable_task(recv).writes = {in_act(k, i)};
      plan_.add_data_dep(send, recv);
      prev = recv;
    }
    Task t = l.fwd;
    t.reads = {in_act(k, i)};
    if (l.has_params) {
      t.reads.push_back(l.weight);
      t.attrs["param_version"] = static_cast<std::int64_t>(version(k));
    }
    t.writes = {act_[ks][i]};
    const TaskIndex f = add_task(std::move(t), mb + "fwd/" + model_.layers[i].name, s, pf);
    if (prev != kNone) plan_.add_data_dep(prev, f);
    fwd_[ks][i] = prev = f;
  }
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t i = n - 1 - r;
    const int s = stage_of(i);
    const LayerInfo& l = layers_[i];
    const bool has_output_grad = i + 1 < n;  // the loss starts the backward
    if (has_output_grad && stage_of(i + 1) != s) {
      const TaskIndex send = add_p2p(TaskKind::send, mb + "send/bwd", s + 1, s, pb, l.out_bytes);
      plan_.mutable_task(send).reads = {in_grad(k, i + 1)};
      plan_.add_data_dep(prev, send);
      const TaskIndex recv = add_p2p(TaskKind::recv, mb + "recv/bwd", s, s + 1, pb, 0);
      plan_.mutable_task(recv).writes = {grad_[ks][i]};
      plan_.add_data_dep(send, recv);
      prev = recv;
    }
    const TaskIndex grad_producer = has_output_grad ? prev : kNone;
    Task b = l.bwd;
    if (has_output_grad) b.reads.push_back(grad_[ks][i]);
    b.reads.push_back(in_act(k, i));
    if (l.has_params) {
      b.reads.push_back(l.weight);
      b.attrs["param_version"] = static_cast<std::int64_t>(version(k));
    }
    b.writes = {in_grad(k, i)};
    if (l.has_params && !l.has_bwdw) b.writes.push_back(l.wgrad);
    const TaskIndex bt = add_task(std::move(b), mb + "bwd/" + model_.layers[i].name, s, pb);
    if (grad_producer != kNone) plan_.add_data_dep(grad_producer, bt);
    plan_.add_data_dep(fwd_[ks][i], bt);
    bwd_[ks][i] = bt;
    if (l.has_bwdw) {
      Task w = l.bwdw;
      if (has_output_grad) w.reads.push_back(grad_[ks][i]);
      w.reads.push_back(in_act(k, i));
      w.writes = {l.wgrad};
      w.attrs["param_version"] = static_cast<std::int64_t>(version(k));
      const TaskIndex wt = add_task(std::move(w), mb + "bwdw/" + model_.layers[i].name, s, pb);
      if (grad_producer != kNone) plan_.add_data_dep(grad_producer, wt);
      plan_.add_data_dep(fwd_[ks][i], wt);
      bwdw_[ks][i] = wt;
    }
    prev = bt;
  }
}

// U(n, j) for every node with parameters, then the edges that fix versions and in-flight limits.
void AmpnetBuilder::add_updates() {
  const int f = solver_.min_update_frequency;
  const int k_count = solver_.instances;
  upd_.assign(layers_.size(), {});
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const LayerInfo& l = layers_[i];
    if (!l.has_params) continue;
    const int s = stage_of(i);
    for (int j = 0; j < groups(); ++j) {
      // The last instance it waits for: its group's, or the last reader of version j.
      int last = std::min(k_count, (j + 1) * f) - 1;
      for (int k = last + 1; k < k_count && version(k) <= j; ++k) last = k;
      Task u = optimizer_step_task(model_, l.params, config_.optimizer, config_.dtype);
      u.reads = {l.wgrad, l.opt};
      u.writes = {l.weight, l.opt};
      u.attrs["param_version"] = static_cast<std::int64_t>(j + 1);  // the version it writes
      const TaskIndex ut = add_task(std::move(u), "opt/" + model_.layers[i].name + "/" + coord("u", j), s, 4LL * last + 1);
      for (int k = j * f; k < std::min(k_count, (j + 1) * f); ++k) {
        const auto ks = static_cast<std::size_t>(k);
        plan_.add_data_dep(l.has_bwdw ? bwdw_[ks][i] : bwd_[ks][i], ut);
      }
      upd_[i].push_back(ut);
    }
  }
  for (int k = 0; k < k_count; ++k) {
    const auto ks = static_cast<std::size_t>(k);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const LayerInfo& l = layers_[i];
      if (!l.has_params) continue;
      const auto& u = upd_[i];
      const TaskIndex grad_writer = l.has_bwdw ? bwdw_[ks][i] : bwd_[ks][i];
      if (group(k) >= 1) plan_.add_control_dep(u[static_cast<std::size_t>(group(k) - 1)], grad_writer);
      const int v = version(k);
      if (v >= 1) plan_.add_control_dep(u[static_cast<std::size_t>(v - 1)], fwd_[ks][i]);
      // U(n, v) overwrites what B(k,n) reads; a bwd that writes the gradient is a data dependency already.
      if (v < groups() && (l.has_bwdw || group(k) != v)) plan_.add_control_dep(bwd_[ks][i], u[static_cast<std::size_t>(v)]);
    }
    if (k >= solver_.max_active_keys)
      plan_.add_control_dep(bwd_[static_cast<std::size_t>(k - solver_.max_active_keys)][0], fwd_[ks][0]);
  }
}

void AmpnetBuilder::build() {
  StrategyConfig one = config_;
  one.dp = one.tp = one.pp = 1;
  one.microbatches = 1;
  batch_ = config_.global_batch > 0 ? config_.global_batch : default_global_batch(model_, one);
  stages_ = solver_stages(config_);
  plan_layers();
  add_buffers();
  const auto k_count = static_cast<std::size_t>(solver_.instances);
  fwd_.resize(k_count);
  bwd_.resize(k_count);
  bwdw_.resize(k_count);
  for (int k = 0; k < solver_.instances; ++k) add_instance(k);
  add_updates();
}

}  // namespace

Plan lower_ampnet(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  Plan plan(solver_stages(config));
  AmpnetBuilder builder(model, config, solver, plan);
  builder.build();
  plan.info.model = model.name;
  plan.info.strategy = "pp=" + std::to_string(solver_stages(config)) + ",max_active_keys=" +
                       std::to_string(solver.max_active_keys) + ",min_update_frequency=" +
                       std::to_string(solver.min_update_frequency) + ",instances=" + std::to_string(solver.instances);
  plan.info.schedule = "ampnet";
  plan.info.optimizer = std::string(to_string(config.optimizer));
  plan.info.dtype = config.dtype;
  plan.info.microbatches = solver.instances;
  plan.info.global_batch = builder.batch() * solver.instances;
  plan.info.tokens_per_sample = model.seq;
  plan.info.model_flops_per_iteration =
      model.model_flops_per_token() * static_cast<double>(model.seq) * static_cast<double>(plan.info.global_batch);
  plan.info.seed = config.seed;
  plan.validate();
  return plan;
}

}  // namespace strata
