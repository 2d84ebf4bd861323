// Layer -> Task for one microbatch on one tensor-parallel rank (see layer_tasks.hpp).
#include "strata/models/lowering/layer_tasks.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>

#include "framework_kernels.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::forward:
      return "fwd";
    case Phase::backward_data:
      return "bwd";
    case Phase::backward_weight:
      return "bwdw";
  }
  return "fwd";
}

TaskKind forward_kind(LayerOp op) {
  switch (op) {
    case LayerOp::embedding:
      return TaskKind::embedding_fwd;
    case LayerOp::linear:
      return TaskKind::linear_fwd;
    case LayerOp::conv:
      return TaskKind::conv_fwd;
    case LayerOp::attention:
      return TaskKind::attention_fwd;
    case LayerOp::norm:
      return TaskKind::norm_fwd;
    case LayerOp::activation:
      return TaskKind::activation_fwd;
    case LayerOp::pool:
      return TaskKind::pool_fwd;
    case LayerOp::loss:
      return TaskKind::loss_fwd;
    case LayerOp::elementwise:
      return TaskKind::elementwise;
    case LayerOp::fixed:
      return TaskKind::fixed;
    case LayerOp::aggregate:
      return TaskKind::spmm;
  }
  return TaskKind::fixed;
}

TaskKind backward_data_kind(LayerOp op) {
  switch (op) {
    case LayerOp::embedding:
      return TaskKind::embedding_bwd;
    case LayerOp::linear:
      return TaskKind::linear_bwd_data;
    case LayerOp::conv:
      return TaskKind::conv_bwd_data;
    case LayerOp::attention:
      return TaskKind::attention_bwd;
    case LayerOp::norm:
      return TaskKind::norm_bwd;
    case LayerOp::activation:
      return TaskKind::activation_bwd;
    case LayerOp::pool:
      return TaskKind::pool_bwd;
    case LayerOp::loss:
      return TaskKind::loss_bwd;
    case LayerOp::elementwise:
      return TaskKind::elementwise;
    case LayerOp::fixed:
      return TaskKind::fixed;
    case LayerOp::aggregate:
      return TaskKind::spmm;
  }
  return TaskKind::fixed;
}

std::optional<TaskKind> backward_weight_kind(LayerOp op) {
  if (op == LayerOp::linear) return TaskKind::linear_bwd_weight;
  if (op == LayerOp::conv) return TaskKind::conv_bwd_weight;
  return std::nullopt;
}

bool is_split(const Layer& layer) { return layer.split != TensorSplit::replicated; }

bool has_backward_weight(const Layer& layer) {
  return backward_weight_kind(layer.op).has_value() && (layer.params > 0 || layer.bwd_weight_flops > 0);
}

std::optional<double> shape_real(const Attributes& shape, const std::string& key) {
  auto it = shape.find(key);
  if (it == shape.end()) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  return std::nullopt;
}

namespace {

// Rescales an integer (or real) shape attribute, keeping its type.
void scale_attr(Attributes& attrs, const std::string& key, double factor) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return;
  if (auto* i = std::get_if<std::int64_t>(&it->second))
    *i = std::max<std::int64_t>(1, std::llround(static_cast<double>(*i) * factor));
  else if (auto* d = std::get_if<double>(&it->second))
    *d *= factor;
}

void set_attr(Attributes& attrs, const std::string& key, double value) {
  attrs[key] = std::max<std::int64_t>(1, std::llround(value));
}

// Per-rank element counts of one microbatch.
struct Footprint {
  double input = 0;
  double output = 0;
  double weights = 0;
};

// Megatron's split (Shoeybi et al. 2019, section 3): a column-parallel linear holds W[:, n/tp]
// and the whole X, a row-parallel one W[k/tp, :] and X[:, k/tp] and writes a full-size partial
// sum; a vocab-parallel embedding gathers from its slice of the table into a full-size partial
// sum. Every other split op (attention by heads, GELU and the loss on a column shard) works on
// a shard of everything.
//
// With sequence parallelism a replicated layer (norms, dropout + residual adds) works on seq / tp
// tokens: its input and output are divided, its weights (gamma, beta) are not. FlashAttention's
// one kernel reads Q, K and V (three tensors of its output's size), not the s x s scores.
Footprint footprint(const Layer& layer, double microbatch, int tp, const LayerTaskOptions& options = {}) {
  Footprint f{input_elems(layer) * microbatch, layer.out_elems * microbatch, layer.params};
  if (layer.op == LayerOp::attention && options.flash_attention) f.input = 3 * f.output;
  // An embedding touches the rows it gathers, not its whole table.
  if (layer.op == LayerOp::embedding) f.weights = f.output;
  if (!is_split(layer)) {
    if (options.sequence_parallel && tp > 1) f.input /= tp, f.output /= tp;
    return f;
  }
  const double t = tp;
  const bool matmul = layer.op == LayerOp::linear || layer.op == LayerOp::conv;
  if (layer.op == LayerOp::embedding) {
    f.weights /= t;
  } else if (matmul && layer.split == TensorSplit::column) {
    f.output /= t;
    f.weights /= t;
  } else if (matmul && layer.split == TensorSplit::row) {
    f.input /= t;
    f.weights /= t;
  } else {
    f.input /= t;
    f.output /= t;
    f.weights /= t;
  }
  return f;
}

// FlashAttention's backward recomputes S = QK^T and P from the saved softmax statistics and runs
// five s x s x d matmuls (S, dV, dP, dQ, dK) where the forward runs two: 2.5 x the forward
// FLOPs (Dao et al. 2022, "FlashAttention", section 3.1 and appendix B.2; the FLOP count of
// FlashAttention-2, Dao 2023, section 4.1, "the backward pass ... 2.5 times" the forward).
constexpr double kFlashBackwardPerForward = 2.5;

double phase_flops(const Layer& layer, Phase phase, const LayerTaskOptions& options) {
  switch (phase) {
    case Phase::forward:
      return layer.fwd_flops;
    case Phase::backward_data:
      if (layer.op == LayerOp::attention && options.flash_attention)
        return kFlashBackwardPerForward * layer.fwd_flops;
      return backward_weight_kind(layer.op) ? layer.bwd_data_flops
                                            : layer.bwd_data_flops + layer.bwd_weight_flops;
    case Phase::backward_weight:
      return layer.bwd_weight_flops;
  }
  return 0;
}

Attributes task_attrs(const Layer& layer, Phase phase, double microbatch, int tp,
                      const LayerTaskOptions& options) {
  Attributes attrs = layer.shape;
  if (layer.op == LayerOp::attention && options.flash_attention) attrs["flash"] = std::int64_t{1};
  const double t = is_split(layer) ? tp : 1;
  switch (layer.op) {
    case LayerOp::linear:
      scale_attr(attrs, "m", microbatch);
      if (layer.split == TensorSplit::column) scale_attr(attrs, "n", 1 / t);
      if (layer.split == TensorSplit::row) scale_attr(attrs, "k", 1 / t);
      break;
    case LayerOp::attention:
      set_attr(attrs, "batch", microbatch);
      scale_attr(attrs, "heads", 1 / t);
      break;
    case LayerOp::conv:
      set_attr(attrs, "n", microbatch);
      break;
    case LayerOp::norm:  // batch norm's statistics run over the microbatch's samples
      if (const auto fn = attrs.find("fn"); fn != attrs.end() &&
                                            std::holds_alternative<std::string>(fn->second) &&
                                            std::get<std::string>(fn->second) == "batch")
        set_attr(attrs, "n", microbatch);
      break;
    case LayerOp::fixed:
      attrs["duration_s"] = (phase == Phase::forward ? layer.fixed_fwd_s : layer.fixed_bwd_s) / t;
      break;
    case LayerOp::aggregate:
      set_attr(attrs, "nodes", microbatch);
      set_attr(attrs, "nnz", microbatch * shape_real(layer.shape, "nnz_per_node").value_or(1));
      attrs.erase("nnz_per_node");
      break;
    default:
      break;
  }
  return attrs;
}

// The GEMM shapes a GPU's cost model reads (gpu_kernels.hpp), the values task_attrs gives them,
// built in one pass over the layer's (sorted) shape and appended in key order: the estimate's
// inner loop calls this for every linear and attention layer of every configuration.
void set_gemm_attrs(Task& task, const Layer& layer, double microbatch, int tp,
                    const LayerTaskOptions& options) {
  if (layer.op != LayerOp::linear && layer.op != LayerOp::attention) return;
  const double t = is_split(layer) ? tp : 1;
  const bool attention = layer.op == LayerOp::attention;
  auto append = [&task](const std::string& key, double value) {
    task.attrs.emplace_hint(task.attrs.end(), key, std::max<std::int64_t>(1, std::llround(value)));
  };
  if (attention) append("batch", microbatch);
  if (attention && options.flash_attention) append("flash", 1);
  for (const auto& [key, value] : layer.shape) {
    const auto* i = std::get_if<std::int64_t>(&value);
    if (i == nullptr) continue;
    const auto v = static_cast<double>(*i);
    if (attention) {
      if (key == "head_dim" || key == "seq") append(key, v);
      if (key == "heads") append(key, v / t);
    } else {
      if (key == "k") append(key, layer.split == TensorSplit::row ? v / t : v);
      if (key == "m") append(key, v * microbatch);
      if (key == "n") append(key, layer.split == TensorSplit::column ? v / t : v);
    }
  }
}

void set_layer_spmm_bytes(Task& task, const Layer& layer, double nodes, double elem) {
  set_spmm_bytes(task, nodes, nodes * shape_real(layer.shape, "nnz_per_node").value_or(1), layer.out_elems,
                 elem);
}

}  // namespace

// Â·X (see layer_tasks.hpp): Â's values and int32 column indices, and one row of X gathered per
// nonzero, the traffic with no reuse of X in cache. It bounds the traffic from above, but
// sparse-times-dense products run far below a one-pass roofline on GPUs and CPUs alike; a
// calibration's spmm efficiencies say by how much.
void set_spmm_bytes(Task& task, double rows, double nnz, double width, double elem) {
  task.bytes_read = nnz * (elem + 4) + nnz * width * elem;
  task.bytes_written = rows * width * elem;
}

double input_elems(const Layer& layer) {
  const Attributes& s = layer.shape;
  if (layer.op == LayerOp::linear) {
    auto m = shape_real(s, "m");
    auto k = shape_real(s, "k");
    if (m && k) return *m * *k;
  }
  if (layer.op == LayerOp::conv) {
    auto c_in = shape_real(s, "c_in");
    auto h = shape_real(s, "h_out");
    auto w = shape_real(s, "w_out");
    const double stride = shape_real(s, "stride").value_or(1);
    if (c_in && h && w) return *c_in * (*h * stride) * (*w * stride);
  }
  if (layer.op == LayerOp::embedding) return 0;  // token ids: negligible next to the rows read
  if (layer.op == LayerOp::elementwise) return 2 * layer.out_elems;
  return layer.saved_elems > 0 ? layer.saved_elems : layer.out_elems;
}

GradMatrix grad_matrix(const Layer& layer, int tp) {
  const double params = layer.params / (is_split(layer) ? tp : 1);
  GradMatrix g;
  const Attributes& s = layer.shape;
  if (layer.op == LayerOp::linear) {
    auto k = shape_real(s, "k");
    auto n = shape_real(s, "n");
    if (k && n) {
      g.rows = std::llround(layer.split == TensorSplit::row ? *k / tp : *k);
      g.cols = std::llround(layer.split == TensorSplit::column ? *n / tp : *n);
    }
  } else if (layer.op == LayerOp::conv) {
    auto c_in = shape_real(s, "c_in");
    auto c_out = shape_real(s, "c_out");
    auto kh = shape_real(s, "kh");
    auto kw = shape_real(s, "kw");
    if (c_in && c_out && kh && kw) g.rows = std::llround(*c_out), g.cols = std::llround(*c_in * *kh * *kw);
  }
  const double matrix = static_cast<double>(g.rows) * static_cast<double>(g.cols);
  if (matrix <= 0 || matrix > params) g.rows = g.cols = 0;  // no matrix, or shape attributes that disagree
  g.rest = params - static_cast<double>(g.rows) * static_cast<double>(g.cols);
  return g;
}

KernelSet kernel_set(Framework framework) {
  return framework == Framework::megatron_2021 ? KernelSet::megatron_2021 : KernelSet::megatron_2022;
}

LayerTaskOptions layer_task_options(const StrategyConfig& config, const Model& model) {
  return {config.sequence_parallel, config.flash_attention,
          model.family == "gpt" ? kernel_set(config.framework) : KernelSet::generic};
}

namespace {

// layer_cost_task without the framework's kernels.
Task generic_cost_task(const Layer& layer, Phase phase, double microbatch, int tp, DType dtype,
                       const LayerTaskOptions& options) {
  STRATA_ASSERT(microbatch > 0 && tp >= 1, "layer_task: microbatch > 0 and tp >= 1");
  Task task;
  task.stream = Stream::compute;
  task.dtype = dtype;
  switch (phase) {
    case Phase::forward:
      task.kind = forward_kind(layer.op);
      break;
    case Phase::backward_data:
      task.kind = backward_data_kind(layer.op);
      break;
    case Phase::backward_weight: {
      std::optional<TaskKind> kind = backward_weight_kind(layer.op);
      STRATA_ASSERT(kind.has_value(), "layer " + layer.name + " has no backward-weight task");
      task.kind = *kind;
      break;
    }
  }
  const bool sequence_sharded = options.sequence_parallel && !is_split(layer);
  const double ranks = is_split(layer) || sequence_sharded ? tp : 1;
  task.flops = phase_flops(layer, phase, options) * microbatch / ranks;
  const Footprint f = footprint(layer, microbatch, tp, options);
  const double b = bytes_per_element(dtype);
  const bool writes_dw =
      phase == Phase::backward_weight || (phase == Phase::backward_data && !backward_weight_kind(layer.op));
  switch (phase) {
    case Phase::forward:
      task.bytes_read = (f.input + f.weights) * b;
      task.bytes_written = f.output * b;
      break;
    case Phase::backward_data:
      task.bytes_read = (f.output + f.weights) * b;
      task.bytes_written = (f.input + (writes_dw ? f.weights : 0)) * b;
      break;
    case Phase::backward_weight:
      task.bytes_read = (f.input + f.output) * b;
      task.bytes_written = f.weights * b;
      break;
  }
  if (layer.op == LayerOp::aggregate) set_layer_spmm_bytes(task, layer, microbatch, b);
  if (layer.op == LayerOp::fixed)
    task.attrs["duration_s"] = (phase == Phase::forward ? layer.fixed_fwd_s : layer.fixed_bwd_s) / ranks;
  set_gemm_attrs(task, layer, microbatch, tp, options);
  return task;
}

void apply_kernels(Task& task, const Layer& layer, Phase phase, double microbatch, int tp,
                   const LayerTaskOptions& options) {
  if (options.kernels == KernelSet::generic) return;
  const Footprint f = footprint(layer, microbatch, tp, options);
  apply_framework_kernels(task, layer, phase, {f.input, f.output, f.weights}, tp, options);
}

}  // namespace

Task layer_cost_task(const Layer& layer, Phase phase, double microbatch, int tp, DType dtype,
                     const LayerTaskOptions& options) {
  Task task = generic_cost_task(layer, phase, microbatch, tp, dtype, options);
  apply_kernels(task, layer, phase, microbatch, tp, options);
  return task;
}

Task layer_task(const Layer& layer, Phase phase, double microbatch, int tp, DType dtype,
                const LayerTaskOptions& options) {
  Task task = generic_cost_task(layer, phase, microbatch, tp, dtype, options);
  task.attrs = task_attrs(layer, phase, microbatch, tp, options);
  apply_kernels(task, layer, phase, microbatch, tp, options);
  return task;
}

SplitBackward split_backward_task(const Layer& layer, double microbatch, int tp, DType dtype,
                                  const LayerTaskOptions& options) {
  STRATA_ASSERT(!backward_weight_kind(layer.op), "layer " + layer.name + " has a backward-weight kind");
  SplitBackward out{layer_task(layer, Phase::backward_data, microbatch, tp, dtype, options), {}};
  out.weight = out.data;
  const double ranks = is_split(layer) || (options.sequence_parallel && tp > 1) ? tp : 1;
  const Footprint f = footprint(layer, microbatch, tp, options);
  const double b = bytes_per_element(dtype);
  out.data.flops = layer.bwd_data_flops * microbatch / ranks;
  out.data.bytes_written = f.input * b;
  out.weight.flops = layer.bwd_weight_flops * microbatch / ranks;
  out.weight.bytes_read = (f.input + f.output) * b;
  out.weight.bytes_written = f.weights * b;
  if (layer.op == LayerOp::fixed) out.weight.attrs["duration_s"] = 0.0;
  return out;
}

double saved_elems_per_sample(const Layer& layer, int tp, const LayerTaskOptions& options) {
  STRATA_ASSERT(tp >= 1, "saved_elems_per_sample: tp >= 1");
  double saved = layer.saved_elems;
  if (layer.op == LayerOp::attention && options.flash_attention) {
    const double heads = shape_real(layer.shape, "heads").value_or(0);
    const double seq = shape_real(layer.shape, "seq").value_or(0);
    saved = 3 * layer.out_elems + 2 * heads * seq;  // Q, K, V; fp32 logsumexp per row and head
  }
  if (tp == 1) return saved;
  if (options.sequence_parallel) return saved / tp;
  const bool matmul = layer.op == LayerOp::linear || layer.op == LayerOp::conv;
  const bool sharded =
      matmul ? layer.split == TensorSplit::row : is_split(layer) && layer.op != LayerOp::embedding;
  return sharded ? saved / tp : saved;
}

double flash_statistics_bytes_per_sample(const Layer& layer) {
  if (layer.op != LayerOp::attention) return 0;
  return 4 * shape_real(layer.shape, "heads").value_or(0) * shape_real(layer.shape, "seq").value_or(0);
}

Task optimizer_step_task(const Model& model, double params, Optimizer optimizer, DType dtype,
                         KernelSet kernels) {
  const double elem = bytes_per_element(dtype);
  const double cost_params = model.family == "synthetic" ? 0.0 : params;
  Task task;
  task.kind = TaskKind::optimizer_step;
  task.stream = Stream::compute;
  task.dtype = dtype;
  task.flops = cost_params * (optimizer == Optimizer::adam ? 10.0 : 2.0);
  task.bytes_read = cost_params * (elem + optimizer_state_bytes_per_param(optimizer, dtype));
  task.bytes_written = cost_params * elem;
  task.attrs["params"] = params;
  task.attrs["optimizer"] = std::string(to_string(optimizer));
  if (kernels != KernelSet::generic && optimizer == Optimizer::adam && cost_params > 0) {
    task.bytes_read = 24 * cost_params;
    task.bytes_written = (16 + elem) * cost_params;
    task.attrs["kernels"] = std::int64_t{4};
  }
  return task;
}

std::int64_t residual_span(const Layer& layer) {
  if (layer.op != LayerOp::elementwise) return 0;
  const auto it = layer.shape.find("span");
  const std::int64_t* span = it == layer.shape.end() ? nullptr : std::get_if<std::int64_t>(&it->second);
  return span != nullptr ? *span : 0;
}

void add_skip_read(Task& add_forward, BufferIndex skip) {
  add_forward.reads.push_back(skip);
  add_forward.attrs["skip"] = std::int64_t{1};
}

void add_residual_grad(Task& input_grad, const Attributes& add, BufferIndex add_output_grad) {
  input_grad.reads.push_back(add_output_grad);
  input_grad.attrs["residual_grad"] = std::int64_t{1};
  for (const char* key : {"skip_c", "skip_h", "skip_w", "c", "h", "w"})
    input_grad.attrs[std::string("residual_") + key] = add.at(key);
}

}  // namespace models
}  // namespace strata
