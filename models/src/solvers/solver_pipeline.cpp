// LayerPipeline: layers on stages, instances of them, their buffers and tasks (solver_pipeline.hpp).
#include "solver_pipeline.hpp"

#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace solvers {

std::string coord(const char* name, std::int64_t value) {
  return std::string(name).append(std::to_string(value));
}

LayerPipeline::LayerPipeline(const Model& model, const StrategyConfig& config, std::int64_t batch,
                             int instances, Plan& plan)
    : model_(model), config_(config), batch_(batch), instances_(instances), plan_(plan) {
  STRATA_ASSERT(batch > 0 && instances > 0, "a layer pipeline needs samples and instances");
}

std::string LayerPipeline::prefix(int stage) const { return "dp0/" + coord("pp", stage) + "/tp0/"; }

int LayerPipeline::add_layer(const Layer& layer, int stage, int input, std::int64_t mean_over,
                             bool own_weight_grad) {
  const auto b = static_cast<double>(batch_);
  const double elem = bytes_per_element(config_.dtype);
  PipeLayer l;
  l.name = layer.name;
  l.is_loss = layer.op == LayerOp::loss;
  l.stage = stage;
  l.input = input;
  l.fwd = layer_task(layer, Phase::forward, b, 1, config_.dtype);
  l.bwd = layer_task(layer, Phase::backward_data, b, 1, config_.dtype);
  l.has_bwdw = backward_weight_kind(layer.op).has_value() && layer.params > 0;
  if (l.has_bwdw) {
    l.bwdw = layer_task(layer, Phase::backward_weight, b, 1, config_.dtype);
  } else if (own_weight_grad && layer.params > 0) {
    SplitBackward split = split_backward_task(layer, b, 1, config_.dtype);
    l.bwd = std::move(split.data);
    l.bwdw = std::move(split.weight);
    l.has_bwdw = true;
  }
  l.has_params = layer.params > 0;
  l.params = layer.params;
  l.out_bytes = layer.out_elems * b * elem;
  // Saved activations live from the forward to the backward data, as in lowering_layout.cpp.
  l.fwd.mem_alloc = layer.saved_elems * b * elem;
  l.bwd.mem_free = l.fwd.mem_alloc;
  if (l.is_loss) l.bwd.attrs["mean_over"] = mean_over;
  const auto index = static_cast<int>(layers_.size());
  if (const std::int64_t span = residual_span(layer); span > 0) {
    int first = input;
    for (std::int64_t step = 1; step < span && first != kModelInput; ++step)
      first = layers_[static_cast<std::size_t>(first)].input;
    STRATA_ASSERT(first != kModelInput && layers_[static_cast<std::size_t>(first)].stage == stage,
                  "residual add " + layer.name + ": its block does not lie on one stage");
    l.skip = first;
    layers_[static_cast<std::size_t>(first)].residual_add = index;
  }
  layers_.push_back(std::move(l));
  return index;
}

bool LayerPipeline::crosses(std::size_t i) const {
  const int in = layers_[i].input;
  return in != kModelInput && layers_[static_cast<std::size_t>(in)].stage != layers_[i].stage;
}

void LayerPipeline::add_buffers() {
  const DType dtype = config_.dtype;
  const double elem = bytes_per_element(dtype);
  const double state = optimizer_state_bytes_per_param(config_.optimizer, dtype);
  for (PipeLayer& l : layers_) {
    if (!l.has_params) continue;
    l.weight = plan_.add_buffer({prefix(l.stage) + "w/" + l.name, l.stage, l.params * elem, dtype, true});
    l.wgrad = plan_.add_buffer({prefix(l.stage) + "wgrad/" + l.name, l.stage, l.params * elem, dtype, true});
    l.opt =
        plan_.add_buffer({prefix(l.stage) + "opt/" + l.name, l.stage, l.params * state, DType::fp32, true});
  }
  const std::size_t cells = static_cast<std::size_t>(instances_) * layers_.size();
  for (auto* table : {&act_, &grad_, &act_copy_, &grad_copy_}) table->assign(cells, 0);
  for (int k = 0; k < instances_; ++k)
    for (const char* kind : {"act/", "grad/"}) {
      const bool act = kind[0] == 'a';
      for (std::size_t i = 0; i < layers_.size(); ++i) {
        const PipeLayer& l = layers_[i];
        const std::string mb = prefix(l.stage) + coord("mb", k) + "/" + kind;
        if (l.input == kModelInput) {
          (act ? act_copy_ : grad_copy_)[idx(k, i)] = plan_.add_buffer(
              {mb + "input", l.stage, model_.input_elems * static_cast<double>(batch_) * elem, dtype, false});
        } else if (crosses(i)) {
          const PipeLayer& from = layers_[static_cast<std::size_t>(l.input)];
          (act ? act_copy_ : grad_copy_)[idx(k, i)] =
              plan_.add_buffer({mb + from.name, l.stage, from.out_bytes, dtype, false});
        }
        (act ? act_ : grad_)[idx(k, i)] = plan_.add_buffer({mb + l.name, l.stage, l.out_bytes, dtype, false});
      }
    }
  fwd_.assign(cells, kNone);
}

BufferIndex LayerPipeline::in_act(int k, std::size_t i) const {
  const int in = layers_[i].input;
  return in == kModelInput || crosses(i) ? act_copy_[idx(k, i)] : act_[idx(k, static_cast<std::size_t>(in))];
}

BufferIndex LayerPipeline::in_grad(int k, std::size_t i) const {
  const int in = layers_[i].input;
  return in == kModelInput || crosses(i) ? grad_copy_[idx(k, i)]
                                         : grad_[idx(k, static_cast<std::size_t>(in))];
}

TaskIndex LayerPipeline::add_task(Task task, const std::string& id, int stage, std::int64_t priority) {
  task.id = "it0/" + prefix(stage) + id;
  task.worker = stage;
  task.iteration = 0;
  task.priority = priority;
  return plan_.add_task(std::move(task));
}

TaskIndex LayerPipeline::add_p2p(TaskKind kind, const std::string& id, int stage, int peer,
                                 std::int64_t priority, double bytes) {
  Task t;
  t.kind = kind;
  t.stream = Stream::comm;
  t.peer = peer;
  t.dtype = config_.dtype;
  t.comm_bytes = kind == TaskKind::send ? bytes : 0.0;  // the recv only marks the arrival
  return add_task(std::move(t), id, stage, priority);
}

TaskIndex LayerPipeline::add_forward(int k, std::size_t i, TaskIndex producer, std::int64_t priority,
                                     bool transfer) {
  const PipeLayer& l = layers_[i];
  const std::string mb = coord("mb", k) + "/" + step_;
  if (crosses(i) && transfer) {
    const PipeLayer& from = layers_[static_cast<std::size_t>(l.input)];
    const TaskIndex send =
        add_p2p(TaskKind::send, mb + "send/fwd/" + l.name, from.stage, l.stage, priority, from.out_bytes);
    plan_.mutable_task(send).reads = {act_[idx(k, static_cast<std::size_t>(l.input))]};
    plan_.add_data_dep(producer, send);
    const TaskIndex recv =
        add_p2p(TaskKind::recv, mb + "recv/fwd/" + l.name, l.stage, from.stage, priority, 0);
    plan_.mutable_task(recv).writes = {in_act(k, i)};
    plan_.add_data_dep(send, recv);
    producer = recv;
  }
  Task t = l.fwd;
  t.reads = {in_act(k, i)};
  if (l.has_params) t.reads.push_back(l.weight);
  t.writes = {out_act(k, i)};
  if (l.skip >= 0) add_skip_read(t, in_act(k, static_cast<std::size_t>(l.skip)));
  const TaskIndex f = add_task(std::move(t), mb + "fwd/" + l.name, l.stage, priority);
  if (producer != kNone) plan_.add_data_dep(producer, f);
  fwd_[idx(k, i)] = f;
  return f;
}

LayerPipeline::Backward LayerPipeline::add_backward(int k, std::size_t i, TaskIndex grad_producer,
                                                    std::int64_t priority, bool input_grad,
                                                    std::optional<BufferIndex> dx_into) {
  const PipeLayer& l = layers_[i];
  const std::string mb = coord("mb", k) + "/" + step_;
  STRATA_ASSERT(input_grad || l.has_bwdw, "layer " + l.name + ": only a bwdw kind computes dW without dX");
  Backward out;
  if (input_grad) {
    Task b = l.bwd;
    if (!l.is_loss) b.reads.push_back(out_grad(k, i));
    b.reads.push_back(in_act(k, i));
    if (l.has_params) b.reads.push_back(l.weight);
    b.writes = {dx_into.value_or(in_grad(k, i))};
    if (l.has_params && !l.has_bwdw) b.writes.push_back(l.wgrad);
    if (l.residual_add >= 0) {
      const auto add = static_cast<std::size_t>(l.residual_add);
      add_residual_grad(b, layers_[add].fwd.attrs, out_grad(k, add));
    }
    out.bwd = add_task(std::move(b), mb + "bwd/" + l.name, l.stage, priority);
    if (grad_producer != kNone) plan_.add_data_dep(grad_producer, out.bwd);
    plan_.add_data_dep(fwd_[idx(k, i)], out.bwd);
  }
  if (l.has_bwdw) {
    Task w = l.bwdw;
    if (!l.is_loss) w.reads.push_back(out_grad(k, i));
    w.reads.push_back(in_act(k, i));
    w.writes = {l.wgrad};
    if (!input_grad) w.mem_free = l.bwd.mem_free;  // it is the last reader of the saved input
    out.bwdw = add_task(std::move(w), mb + "bwdw/" + l.name, l.stage, priority);
    if (grad_producer != kNone) plan_.add_data_dep(grad_producer, out.bwdw);
    plan_.add_data_dep(fwd_[idx(k, i)], out.bwdw);
  }
  return out;
}

TaskIndex LayerPipeline::add_grad_transfer(int k, std::size_t i, TaskIndex producer, std::int64_t priority) {
  STRATA_ASSERT(crosses(i), "layer " + layers_[i].name + ": its input does not cross stages");
  return add_grad_transfer(k, i, producer, priority, out_grad(k, static_cast<std::size_t>(layers_[i].input)));
}

TaskIndex LayerPipeline::add_grad_transfer(int k, std::size_t i, TaskIndex producer, std::int64_t priority,
                                           BufferIndex into) {
  STRATA_ASSERT(crosses(i), "layer " + layers_[i].name + ": its input does not cross stages");
  const PipeLayer& l = layers_[i];
  const auto in = static_cast<std::size_t>(l.input);
  const std::string mb = coord("mb", k) + "/" + step_;
  const TaskIndex send = add_p2p(TaskKind::send, mb + "send/bwd/" + l.name, l.stage, layers_[in].stage,
                                 priority, layers_[in].out_bytes);
  plan_.mutable_task(send).reads = {in_grad(k, i)};
  plan_.add_data_dep(producer, send);
  const TaskIndex recv =
      add_p2p(TaskKind::recv, mb + "recv/bwd/" + l.name, layers_[in].stage, l.stage, priority, 0);
  plan_.mutable_task(recv).writes = {into};
  plan_.add_data_dep(send, recv);
  return recv;
}

TaskIndex LayerPipeline::add_step(int k, std::size_t i, const Backward& b, TaskIndex previous,
                                  std::int64_t priority) {
  const PipeLayer& l = layers_[i];
  STRATA_ASSERT(l.has_params, "layer " + l.name + ": a step of a layer without parameters");
  if (previous != kNone) plan_.add_control_dep(previous, b.grad_writer());
  Task u = optimizer_step_task(model_, l.params, config_.optimizer, config_.dtype);
  u.reads = {l.wgrad, l.opt};
  u.writes = {l.weight, l.opt};
  const TaskIndex step =
      add_task(std::move(u), coord("mb", k) + "/" + step_ + "opt/" + l.name, l.stage, priority);
  plan_.add_data_dep(b.grad_writer(), step);
  if (b.bwd != kNone && b.bwd != b.grad_writer()) plan_.add_control_dep(b.bwd, step);
  return step;
}

BufferIndex LayerPipeline::instance_buffer(int k, int stage, const std::string& name, double bytes) {
  return plan_.add_buffer({prefix(stage) + coord("mb", k) + "/" + name, stage, bytes, config_.dtype, false});
}

SampleStores add_sample_stores(Plan& plan, int worker, std::size_t boundary, double row_bytes, int rows,
                               DType dtype, bool with_lambda) {
  const std::string at =
      "dp0/" + coord("pp", worker) + "/tp0/admm/" + coord("b", static_cast<std::int64_t>(boundary)) + "/";
  const auto n = static_cast<double>(rows);
  SampleStores st;
  st.z = plan.add_buffer({at + "z_store", worker, n * row_bytes, dtype, true});
  if (with_lambda) st.lambda = plan.add_buffer({at + "lambda_store", worker, n * row_bytes, dtype, true});
  st.seen = plan.add_buffer({at + "seen", worker, n * bytes_per_element(dtype), dtype, true});
  return st;
}

std::vector<int> stage_of_layers(const Model& model, int stages) {
  const std::vector<int> bounds = partition_blocks(model, stages);
  std::vector<int> out;
  for (const Layer& layer : model.layers) {
    int s = 0;
    while (s + 1 < stages && layer.block >= bounds[static_cast<std::size_t>(s) + 1]) ++s;
    out.push_back(s);
  }
  return out;
}

std::int64_t instance_batch(const Model& model, const StrategyConfig& config) {
  StrategyConfig one = config;
  one.dp = one.tp = one.pp = 1;
  one.microbatches = 1;
  return config.global_batch > 0 ? config.global_batch : default_global_batch(model, one);
}

PlanSolver plan_solver(Solver solver) {
  const std::optional<PlanSolver> named = parse_plan_solver(to_string(solver));
  STRATA_ASSERT(named.has_value(), "a solver the Plan format does not name");
  return *named;
}

SolverParameters plan_parameters(const SolverConfig& solver) {
  SolverParameters p;
  switch (solver.solver) {
    case Solver::backprop:
      break;
    case Solver::ampnet:
      p.instances = solver.instances;
      p.max_active_keys = solver.max_active_keys;
      p.min_update_frequency = solver.min_update_frequency;
      break;
    case Solver::local:
      p.instances = solver.instances;
      p.chunks = solver.chunks;
      p.local_variant = *parse_local_variant(to_string(solver.local_variant));
      break;
    case Solver::dladmm:
    case Solver::pdadmm:
    case Solver::pdadmm_g_q:
      p.admm_iterations = solver.admm_iterations;
      p.rho = solver.rho;
      p.nu = solver.nu;
      if (solver.solver == Solver::pdadmm_g_q) p.quant_bits = solver.quant_bits;
      break;
    case Solver::gist:
      p.subnets = solver.subnets;
      p.local_steps = solver.local_steps;
      break;
    case Solver::block_admm:
      p.blocks = solver.blocks;
      p.inner_steps = solver.inner_steps;
      p.rho = solver.block_rho;
      p.z_lr = solver.z_lr;
      p.stored_samples = solver.batch_setting ? solver.train_samples : 0;
      break;
    case Solver::serial_parallel:
      p.instances = solver.instances;
      p.rho = solver.block_rho;
      p.z_lr = solver.z_lr;
      p.stored_samples = solver.train_samples;
      p.correction_period = solver.correction_period;
      p.downsample = solver.downsample;
      p.warmup_epochs = solver.warmup_epochs;
      p.method = solver.augmented_lagrangian ? "al" : "penalty";
      break;
  }
  return p;
}

void finish_plan(Plan& plan, const Model& model, const StrategyConfig& config, const std::string& strategy,
                 const SolverConfig& solver, std::int64_t samples, std::int64_t instances) {
  plan.info.model = model.name;
  plan.info.strategy = strategy;
  plan.info.solver = plan_solver(solver.solver);
  plan.info.schedule = PlanSchedule::none;
  plan.info.parameters = plan_parameters(solver);
  plan.info.input_elements = static_cast<std::int64_t>(model.input_elems);
  plan.info.graph_nodes = model.family == "gcn" ? model.graph_nodes : 0;
  plan.info.optimizer = std::string(to_string(config.optimizer));
  plan.info.dtype = config.dtype;
  plan.info.microbatches = instances;
  plan.info.global_batch = samples;
  plan.info.tokens_per_sample = model.seq;
  plan.info.model_flops_per_iteration =
      model.model_flops_per_token() * static_cast<double>(model.seq) * static_cast<double>(samples);
  plan.info.seed = config.seed;
  plan.validate();
}

}  // namespace solvers
}  // namespace models
}  // namespace strata
