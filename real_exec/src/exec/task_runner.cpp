// TaskRunner<T>: the kernel behind each task kind (the table is in task_runner.hpp).
//
// `fixed` (synthetic workloads such as anchor-96, and the interpreter benchmarks) has no data:
// it reads and writes no buffer and busy-waits its attribute duration_s (seconds, a finite
// number >= 0; an integer is taken as seconds too) on std::chrono::steady_clock. duration_s = 0
// returns at once: an empty task, whose measured time is the interpreter's own per-task cost.
// A missing, non-numeric, negative or non-finite duration_s is refused by check_kernels, like
// every other attribute a kernel cannot run without. It spins rather than sleeps: a sleep wakes
// tens of microseconds late on Linux, which would stretch short tasks, and the core stays busy
// as it would with the work the task stands for.
#include "strata/real/exec/task_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

std::string attr_string(const Task& t, const std::string& key) { return t.attr_string(key).value_or(""); }

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::int64_t attr(const Task& t, const std::string& key) {
  auto v = t.attr_int(key);
  STRATA_ASSERT(v.has_value(), "task " + t.id + " lacks integer attribute '" + key + "'");
  return *v;
}

// Why a fixed task cannot run, or "" when its duration_s is usable.
std::string bad_duration(const Task& t) {
  const auto duration = t.attr_real("duration_s");
  if (!duration) return "fixed task lacks a numeric attribute duration_s (seconds, >= 0)";
  if (!std::isfinite(*duration) || *duration < 0) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", *duration);
    return "fixed task has duration_s = " + std::string(value) + ", not a finite number of seconds >= 0";
  }
  return "";
}

}  // namespace

std::string gist_copy_name(const Task& t) {
  if (const std::optional<std::string> copy = t.attr_string("copy"))
    return *copy == "extract" || *copy == "write_back" || *copy == "average" ? *copy : "";
  // A GIST Plan of plan schema version 1 has no "copy" attribute: its ids' last segment names it.
  for (const char* name : {"/extract", "/write_back", "/average"})
    if (ends_with(t.id, name)) return name + 1;
  return "";
}

// Busy-waits the task's duration_s on the steady clock; 0 returns at once.
void run_fixed_task(const Task& t) {
  const auto duration = t.attr_real("duration_s");
  STRATA_ASSERT(duration && std::isfinite(*duration) && *duration >= 0,
                "task " + t.id + ": " + bad_duration(t));
  const double seconds = *duration;
  if (seconds == 0) return;
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::ceil<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
  }
}

namespace {

// Why `t` has no kernel, or "" when it has one.
std::string missing_kernel(const Task& t) {
  switch (t.kind) {
    case TaskKind::linear_fwd:
    case TaskKind::linear_bwd_data:
    case TaskKind::linear_bwd_weight:
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
    case TaskKind::loss_fwd:
    case TaskKind::loss_bwd:
    case TaskKind::grad_accumulate:
    case TaskKind::recv:
    case TaskKind::allreduce:
    case TaskKind::spmm:
      return "";
    case TaskKind::elementwise:
      return gist_copy_name(t).empty() ? "elementwise task is none of GIST's extract, write_back, average"
                                       : "";
    case TaskKind::send: {
      const auto encoding = t.attr_string("encoding");
      if (!encoding) return "";
      const double step = t.attr_real("quant_step").value_or(0);
      return *encoding == "int8" && std::isfinite(step) && step > 0
                 ? ""
                 : "send encoding '" + *encoding + "' is not int8 with a quant_step > 0";
    }
    case TaskKind::admm_backward:
    case TaskKind::admm_forward:
      for (const char* key : {"layer", "n_in", "n_out", "samples"})
        if (!t.attr_int(key)) return "ADMM task lacks integer attribute '" + std::string(key) + "'";
      if (!(t.attr_real("rho").value_or(0) > 0) || !(t.attr_real("nu").value_or(0) > 0))
        return "ADMM task needs rho > 0 and nu > 0";
      return "";
    case TaskKind::activation_fwd:
    case TaskKind::activation_bwd: {
      const std::string fn = attr_string(t, "fn");
      return fn == "relu" || fn == "tanh" ? "" : "activation fn '" + fn + "' has no kernel (relu, tanh)";
    }
    case TaskKind::pool_fwd:
    case TaskKind::pool_bwd:
      if (attr_string(t, "fn") != "max" || t.attr_int("kh").value_or(0) != 2 ||
          t.attr_int("kw").value_or(0) != 2 || t.attr_int("stride").value_or(0) != 2)
        return "only 2x2 max pooling with stride 2 has a kernel";
      return "";
    case TaskKind::optimizer_step: {
      const std::string opt = attr_string(t, "optimizer");
      return opt == "sgd" || opt == "adam" ? "" : "optimizer '" + opt + "' has no kernel (sgd, adam)";
    }
    case TaskKind::fixed:
      return bad_duration(t);
    case TaskKind::host_copy:  // offloaded optimizer (docs/memory.md): simulated only
      return "task kind host_copy: not run by the real executor of this version";
    default:
      return "kind '" + std::string(to_string(t.kind)) + "' has no real kernel";
  }
}

}  // namespace

double int8_encoding(const Task& send) {
  if (send.attr_string("encoding").value_or("") != "int8") return 0;
  return send.attr_real("quant_step").value_or(0);
}

void check_kernels(const Plan& plan, const std::string& source) {
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const std::string why = missing_kernel(plan.task(i));
    if (!why.empty())
      throw InputError(input_error_message(source, "/tasks/" + std::to_string(i),
                                           "task " + plan.task(i).id + ": " + why +
                                               "; the real executor runs linear, conv, relu/tanh, "
                                               "2x2 max pool, softmax cross-entropy, sgd/adam, "
                                               "grad_accumulate, ADMM layer updates, GCN spmm, "
                                               "GIST's extract/write_back/average, send/recv, "
                                               "allreduce and fixed (busy-waits duration_s)"));
  }
}

template <typename T>
TaskRunner<T>::TaskRunner(const Plan& plan, Backend& backend, Workspace<T>& ws, Transport<T>& transport,
                          OptimizerSettings optimizer)
    : plan_(plan), backend_(backend), ws_(ws), transport_(transport), optimizer_(optimizer) {}

template <typename T>
void TaskRunner<T>::run(TaskIndex index) {
  const Task& t = plan_.task(index);
  switch (t.kind) {
    case TaskKind::linear_fwd:
    case TaskKind::linear_bwd_data:
    case TaskKind::linear_bwd_weight:
      return run_linear(index);
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
      return run_conv(t);
    case TaskKind::activation_fwd:
    case TaskKind::activation_bwd:
      return run_activation(t);
    case TaskKind::pool_fwd:
    case TaskKind::pool_bwd:
      return run_pool(t);
    case TaskKind::loss_fwd:
    case TaskKind::loss_bwd:
      return graph_ != nullptr ? run_graph_loss(t) : run_loss(t);
    case TaskKind::spmm:
      return run_spmm(index);
    case TaskKind::elementwise:
      return run_gist_copy(t);
    case TaskKind::grad_accumulate:
      return accumulate(backend_, elems(t.writes[0]), buf(t.reads[0]), buf(t.writes[0]));
    case TaskKind::optimizer_step:
      return run_optimizer(t);
    case TaskKind::admm_backward:
    case TaskKind::admm_forward:
      return run_admm(t);
    case TaskKind::fixed:
      return run_fixed_task(t);
    case TaskKind::send:
      return transport_.send(plan_, index, ws_);
    case TaskKind::recv:
      return transport_.recv(plan_, index, ws_);
    case TaskKind::allreduce:
      return transport_.allreduce(plan_, index, ws_);
    default:
      STRATA_ASSERT(false, "task " + t.id + ": no kernel (check_kernels was not called)");
  }
}

template <typename T>
void TaskRunner<T>::run_linear(TaskIndex index) {
  const Task& t = plan_.task(index);
  const LinearShape s{attr(t, "m"), attr(t, "k"), attr(t, "n")};
  const std::int64_t weights = s.in_features * s.out_features;
  const BufferIndex* route = bias_route(index);  // a GCN layer's bias, added after Â
  if (t.kind == TaskKind::linear_fwd) {
    const T* w = buf(t.reads[1]);
    linear_forward(backend_, s, buf(t.reads[0]), w, route != nullptr ? nullptr : w + weights,
                   buf(t.writes[0]));
  } else if (t.kind == TaskKind::linear_bwd_data) {
    linear_backward_data(backend_, s, buf(t.reads[0]), buf(t.reads[2]), buf(t.writes[0]), false);
  } else if (route == nullptr) {
    T* dw = buf(t.writes[0]);
    linear_backward_weight(backend_, s, buf(t.reads[1]), buf(t.reads[0]), dw, dw + weights, true);
  } else {  // db = column sums of dZ, the aggregation's output gradient, in gcn.cpp's order
    T* dw = buf(t.writes[0]);
    linear_backward_weight<T>(backend_, s, buf(t.reads[1]), buf(t.reads[0]), dw, nullptr, true);
    const T* dz = buf(*route);
    T* db = dw + weights;
    for (std::int64_t i = 0; i < s.batch; ++i)
      for (std::int64_t j = 0; j < s.out_features; ++j) db[j] += dz[i * s.out_features + j];
  }
}

template <typename T>
void TaskRunner<T>::run_conv(const Task& t) {
  const Conv2dShape s = conv_shape(t);
  if (t.kind == TaskKind::conv_fwd) {
    const T* w = buf(t.reads[1]);
    conv2d_forward(backend_, s, buf(t.reads[0]), w, w + s.weight_size(), buf(t.writes[0]));
  } else if (t.kind == TaskKind::conv_bwd_data) {
    conv2d_backward_data(backend_, s, buf(t.reads[0]), buf(t.reads[2]), buf(t.writes[0]), false);
  } else {
    T* dw = buf(t.writes[0]);
    conv2d_backward_weight(backend_, s, buf(t.reads[1]), buf(t.reads[0]), dw, dw + s.weight_size(), true);
  }
}

template <typename T>
void TaskRunner<T>::run_activation(const Task& t) {
  const bool relu = attr_string(t, "fn") == "relu";
  const std::int64_t n = elems(t.writes[0]);
  if (t.kind == TaskKind::activation_fwd) {
    if (relu)
      relu_forward(n, buf(t.reads[0]), buf(t.writes[0]));
    else
      tanh_forward(n, buf(t.reads[0]), buf(t.writes[0]));
    return;
  }
  if (relu) {
    relu_backward(n, buf(t.reads[1]), buf(t.reads[0]), buf(t.writes[0]));
  } else {
    std::vector<T> y(static_cast<std::size_t>(n));  // the Plan keeps X; tanh' needs Y
    tanh_forward(n, buf(t.reads[1]), y.data());
    tanh_backward(n, y.data(), buf(t.reads[0]), buf(t.writes[0]));
  }
}

template <typename T>
void TaskRunner<T>::run_pool(const Task& t) {
  const BufferIndex x = t.kind == TaskKind::pool_fwd ? t.reads[0] : t.reads[1];
  const Pool2dShape s = pool_shape(t, elems(x));
  std::vector<std::int64_t> argmax(static_cast<std::size_t>(s.output_size()));
  if (t.kind == TaskKind::pool_fwd) {
    maxpool2x2_forward(s, buf(x), buf(t.writes[0]), argmax.data());
    return;
  }
  std::vector<T> y(static_cast<std::size_t>(s.output_size()));  // recompute the argmax
  maxpool2x2_forward(s, buf(x), y.data(), argmax.data());
  maxpool2x2_backward(s, buf(t.reads[0]), argmax.data(), buf(t.writes[0]));
}

template <typename T>
void TaskRunner<T>::run_loss(const Task& t) {
  const std::int64_t classes = attr(t, "classes");
  const BufferIndex logits = t.reads[0];
  const std::int64_t batch = elems(logits) / classes;
  const auto& labels = ws_.labels(t.coords.dp, std::max<std::int64_t>(0, t.coords.mb));
  STRATA_ASSERT(static_cast<std::int64_t>(labels.size()) == batch,
                "task " + t.id + ": labels do not match the batch");
  std::vector<T> probs(static_cast<std::size_t>(batch * classes));
  const T loss = softmax_cross_entropy_forward(batch, classes, buf(logits), labels.data(), probs.data());
  if (t.kind == TaskKind::loss_fwd) {
    buf(t.writes[0])[0] = loss;
    return;
  }
  T* dlogits = buf(t.writes[0]);
  softmax_cross_entropy_backward(batch, classes, probs.data(), labels.data(), dlogits);
  backend_.scale(batch * classes, static_cast<T>(batch) / static_cast<T>(loss_divisor(plan_, t, batch)),
                 dlogits);
}

Pool2dShape pool_shape(const Task& t, std::int64_t input_elements) {
  Pool2dShape s;
  s.channels = attr(t, "channels");
  s.height = 2 * attr(t, "h_out");
  s.width = 2 * attr(t, "w_out");
  s.batch = input_elements / (s.channels * s.height * s.width);
  STRATA_ASSERT(s.input_size() == input_elements, "task " + t.id + ": pool input is not 2x its output");
  return s;
}

std::int64_t loss_divisor(const Plan& plan, const Task& t, std::int64_t batch) {
  return t.attr_int("mean_over").value_or(plan.info.global_batch > 0 ? plan.info.global_batch : batch);
}

Conv2dShape conv_shape(const Task& t) {
  Conv2dShape s;
  s.batch = attr(t, "n");
  s.in_channels = attr(t, "c_in");
  s.height = attr(t, "h_in");
  s.width = attr(t, "w_in");
  s.out_channels = attr(t, "c_out");
  s.kernel_h = attr(t, "kh");
  s.kernel_w = attr(t, "kw");
  s.stride = attr(t, "stride");
  s.padding = attr(t, "pad");
  return s;
}

template <typename T>
OptimizerWork optimizer_work(const Task& t, Workspace<T>& ws, const OptimizerSettings& settings) {
  OptimizerWork w;
  w.adam = attr_string(t, "optimizer") == "adam";
  w.state = t.reads.back();
  const std::size_t pairs = t.reads.size() - 1;
  STRATA_ASSERT(t.writes.size() == pairs + 1, "task " + t.id + ": one weight per gradient, then the state");
  std::int64_t params = 0;
  for (std::size_t i = 0; i < pairs; ++i) params += ws.size(t.reads[i]);
  STRATA_ASSERT(ws.size(w.state) >= (w.adam ? 2 : 1) * params,
                "task " + t.id + ": optimizer state too small");
  w.fresh_state = t.attr_int("fresh_state").value_or(0) != 0;  // GIST: a new optimizer each round
  if (w.fresh_state) ws.optimizer_steps(w.state) = 0;
  w.step = ++ws.optimizer_steps(w.state);
  w.adam_config = settings.adam;
  w.adam_config.learning_rate = settings.learning_rate;
  w.sgd_config = SgdConfig{settings.learning_rate, settings.momentum};
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < pairs; ++i) {
    const std::int64_t n = ws.size(t.reads[i]);
    w.slices.push_back(OptimizerSlice{t.reads[i], t.writes[i], n, offset, params + offset});
    offset += n;
  }
  return w;
}
template OptimizerWork optimizer_work<float>(const Task&, Workspace<float>&, const OptimizerSettings&);
template OptimizerWork optimizer_work<double>(const Task&, Workspace<double>&, const OptimizerSettings&);

template <typename T>
void TaskRunner<T>::run_optimizer(const Task& t) {
  const OptimizerWork w = optimizer_work(t, ws_, optimizer_);
  T* state = buf(w.state);
  if (w.fresh_state) std::fill(state, state + elems(w.state), T{0});
  for (const OptimizerSlice& s : w.slices) {
    T* grad = buf(s.grad);
    const std::int64_t n = s.elements;
    if (w.adam)
      adam_step(w.adam_config, w.step, n, grad, state + s.first, state + s.second, buf(s.weight));
    else
      sgd_momentum_step(w.sgd_config, n, grad, state + s.first, buf(s.weight));
    zero(n, grad);
  }
}

template class TaskRunner<float>;
template class TaskRunner<double>;

}  // namespace strata::real
