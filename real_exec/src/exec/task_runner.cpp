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
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/real/core/grad_codec.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

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

// A linear or conv task's weight buffer (forward: reads[1]; backward data: reads[2]) or
// gradient buffer (backward weight: writes[0]) must hold the layer's weights (and its bias, if any). ZeRO-2
// shards the gradient buffers and ZeRO-3 the weight buffers (1/dp each): the simulator prices
// such Plans, the kernels here need whole layers. "" when it does.
std::string short_parameter_buffer(const Plan& plan, const Task& t) {
  const bool conv = is_conv(t.kind);
  std::int64_t needed = 0;
  if (conv) {
    const auto c_in = t.attr_int("c_in"), c_out = t.attr_int("c_out"), kh = t.attr_int("kh"),
               kw = t.attr_int("kw");
    if (!c_in || !c_out || !kh || !kw) return "";
    needed = *c_out * *c_in * *kh * *kw;  // its bias, if it has one, follows (a conv may have none)
  } else {
    const auto k = t.attr_int("k"), n = t.attr_int("n");
    if (!k || !n) return "";
    needed = *k * *n + *n;
  }
  const bool backward_weight = t.kind == TaskKind::linear_bwd_weight || t.kind == TaskKind::conv_bwd_weight;
  const bool backward_data = t.kind == TaskKind::linear_bwd_data || t.kind == TaskKind::conv_bwd_data;
  const std::vector<BufferIndex>& list = backward_weight ? t.writes : t.reads;
  const std::size_t at = backward_weight ? 0 : backward_data ? 2 : 1;
  if (list.size() <= at) return "";
  const Buffer& b = plan.buffer(list[at]);
  const double elements = b.bytes / bytes_per_element(b.dtype);
  if (elements + 0.5 >= static_cast<double>(needed)) return "";
  return std::string(backward_weight ? "gradient" : "weight") + " buffer " + b.id + " holds " +
         format_number(elements) + " elements, the layer " + std::to_string(needed) +
         " (a ZeRO-2 or -3 shard: the layer's tasks use the unsharded \"/full\" buffers)";
}

// Why a per_buffer collective (ZeRO-2, -3) cannot run, or "": each read pairs with a write of
// the same worker; a shard (a reduce_scatter's write, a gathering allgather's read) is
// persistent and holds ceil(elements / n) elements of its unsharded partner; no compression.
std::string per_buffer_problem(const Plan& plan, const Task& t) {
  if (t.attr_string("compression").has_value()) return "per_buffer collective with compression";
  if (t.reads.size() != t.writes.size()) return "per_buffer collective needs one write per read";
  const auto n = static_cast<std::int64_t>(t.group.size());
  const bool gather = t.kind == TaskKind::allgather;
  auto elements = [&plan](BufferIndex b) {
    const Buffer& buffer = plan.buffer(b);
    return static_cast<std::int64_t>(std::llround(buffer.bytes / bytes_per_element(buffer.dtype)));
  };
  for (std::size_t i = 0; i < t.reads.size(); ++i) {
    const Buffer &read = plan.buffer(t.reads[i]), &write = plan.buffer(t.writes[i]);
    if (read.worker != write.worker)
      return "per_buffer pair " + read.id + ", " + write.id + " on two workers";
    if (std::find(t.group.begin(), t.group.end(), read.worker) == t.group.end())
      return "per_buffer buffer " + read.id + " outside the group";
    if (gather && t.reads[i] == t.writes[i]) continue;  // ZeRO-2: whole weights, gathered in place
    const Buffer& shard = gather ? read : write;
    const std::int64_t whole = elements(gather ? t.writes[i] : t.reads[i]);
    if (!shard.persistent || elements(gather ? t.reads[i] : t.writes[i]) != (whole + n - 1) / n)
      return "per_buffer shard " + shard.id + " is not a persistent buffer of ceil(" + std::to_string(whole) +
             " / " + std::to_string(n) + ") elements";
  }
  return "";
}

// Why a compress task cannot run, or "": its codec and step, their attributes, its operands'
// sizes (lowering_compression.cpp writes them; a Plan file may not).
std::string codec_problem(const Plan& plan, const Task& t) {
  const std::string codec = attr_string(t, "codec"), step = attr_string(t, "step");
  ByteCodec unused{};
  const bool byte = parse_byte_codec(codec, unused);
  if (!byte && codec != "topk" && codec != "powersgd")
    return "compress codec '" + codec + "' has no kernel (int8, fp8, topk, powersgd)";
  const bool known =
      step == "encode" || (step == "decode" && !byte) || (step == "project" && codec == "powersgd");
  if (!known) return "compress step '" + step + "' is not one of codec " + codec + "'s steps";
  auto elements = [&plan](BufferIndex b) {
    const Buffer& buffer = plan.buffer(b);
    return static_cast<std::int64_t>(std::llround(buffer.bytes / bytes_per_element(buffer.dtype)));
  };
  const std::int64_t members = t.attr_int("members").value_or(0);
  if (step != "project" && members < 1) return "compress task needs an integer attribute members >= 1";
  if (step == "encode" &&
      (t.attr_int("member").value_or(-1) < 0 || t.attr_int("member").value_or(0) >= members))
    return "compress encode needs an integer attribute member in [0, members)";
  const std::size_t fixed = step == "encode" ? (codec == "powersgd" ? 2 : 1) : step == "project" ? 2 : 0;
  const std::size_t min_reads = step == "encode" ? fixed + 1 : step == "project" ? 2 : 1;
  if (t.reads.size() < min_reads || t.writes.empty())
    return "compress " + step + " reads or writes too few buffers";
  std::int64_t gradient = 0;
  if (step == "encode")
    for (std::size_t i = 0; i + fixed < t.reads.size(); ++i) gradient += elements(t.reads[i]);
  if (codec == "topk") {
    const std::int64_t k = t.attr_int("k").value_or(0);
    const BufferIndex wire = step == "encode" ? t.writes.back() : t.reads[0];
    if (k < 1 || (step == "encode" && k > gradient))
      return "compress topk needs 1 <= k <= the gradient's values";
    if (elements(wire) != 2 * k * members) return "compress topk wire holds other than members x 2k values";
    if (gradient >= (std::int64_t{1} << 24))
      return "compress topk bucket of 2^24 values or more (indices travel as floats)";
  }
  if (codec == "powersgd") {
    const std::vector<CodecMatrix> mats = parse_codec_matrices(attr_string(t, "matrices"));
    if (mats.empty() || t.attr_int("rank").value_or(0) < 1)
      return "compress powersgd needs attributes rank >= 1 and matrices '<rows>x<cols>+<rest>;...'";
    const std::int64_t r = *t.attr_int("rank");
    std::int64_t m = 0, p = 0;
    for (const CodecMatrix& c : mats) m += c.rows * c.cols + c.rest, p += c.rows * r + c.rest;
    const BufferIndex wire = step == "encode" ? t.writes.back() : step == "project" ? t.reads[1] : t.reads[0];
    if (elements(wire) != p || (step == "encode" && gradient != m))
      return "compress powersgd matrices '" + attr_string(t, "matrices") + "' do not fit its buffers";
  }
  return "";
}

// Why `t` has no kernel, or "" when it has one.
std::string missing_kernel(const Plan& plan, const Task& t) {
  if (t.attr_int("residual_grad").value_or(0) != 0)
    if (std::string problem = resnet_kernel_problem(plan, t); !problem.empty()) return problem;
  if (t.kind == TaskKind::optimizer_step && t.attr_int("on_host").value_or(0) != 0 &&
      !offload_copies(plan, t).has_value())
    return "offloaded optimizer step without its '" + t.id + "/d2h' (a data dependency) and '" + t.id +
           "/h2d' copies";
  switch (t.kind) {
    case TaskKind::linear_fwd:
    case TaskKind::linear_bwd_data:
    case TaskKind::linear_bwd_weight:
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
      return short_parameter_buffer(plan, t);
    case TaskKind::loss_fwd:
    case TaskKind::loss_bwd:
    case TaskKind::grad_accumulate:
    case TaskKind::recv:
    case TaskKind::spmm:
      return "";
    case TaskKind::allreduce: {
      const std::string codec = t.attr_string("compression").value_or("none");
      ByteCodec unused{};
      return codec == "none" || parse_byte_codec(codec, unused) || codec == "powersgd"
                 ? ""
                 : "allreduce compression '" + codec + "' has no kernel (int8, fp8, powersgd)";
    }
    case TaskKind::compress:
      return codec_problem(plan, t);
    case TaskKind::elementwise:
      if (t.attr_string("block_admm")) return block_admm_problem(plan, t);
      if (t.attr_int("span").value_or(0) > 0) return resnet_kernel_problem(plan, t);
      return gist_copy_name(t).empty()
                 ? "elementwise task is none of GIST's extract, write_back, average, Block-ADMM's "
                   "penalty, update and a CIFAR ResNet's residual add"
                 : "";
    case TaskKind::norm_fwd:
    case TaskKind::norm_bwd:
      return resnet_kernel_problem(plan, t);
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
      if (attr_string(t, "fn") == "avg")
        return t.attr_int("h_out").value_or(0) == 1 && t.attr_int("w_out").value_or(0) == 1 &&
                       t.attr_int("pad").value_or(1) == 0
                   ? ""
                   : "only global average pooling (to 1 x 1) and 2x2 max pooling have kernels";
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
    case TaskKind::reduce_scatter:
      if (per_buffer(t)) return per_buffer_problem(plan, t);
      for (BufferIndex b : t.reads)
        if (!plan.buffer(b).persistent)
          return "reduce_scatter of activations (sequence parallelism) has no real kernel; ZeRO's "
                 "reduce-scatter "
                 "of gradients has";
      return "";
    case TaskKind::allgather:
      if (t.attr_string("compression").value_or("") == "topk") return "";
      if (per_buffer(t)) return per_buffer_problem(plan, t);
      for (TaskIndex d : t.data_deps)  // the step, or offload's copy of its weights back
        if (plan.task(d).kind != TaskKind::optimizer_step &&
            !(plan.task(d).kind == TaskKind::host_copy && plan.task(d).attr_int("to_host").value_or(1) == 0))
          return "allgather before a use (ZeRO-3's parameter gathers, sequence parallelism) has no real "
                 "kernel; "
                 "ZeRO-1's gather after the optimizer step has";
      return t.data_deps.empty() ? "allgather that follows no optimizer step has no real kernel" : "";
    case TaskKind::host_copy:  // offload's copies around the host step (offload_copies)
      return "";
    default:
      return "kind '" + std::string(to_string(t.kind)) + "' has no real kernel";
  }
}

}  // namespace

std::vector<CodecMatrix> parse_codec_matrices(const std::string& text) {
  std::vector<CodecMatrix> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(';', at);
    if (end == std::string::npos) end = text.size();
    CodecMatrix m;
    char x = 0, plus = 0;
    std::istringstream item(text.substr(at, end - at));
    if (!(item >> m.rows >> x >> m.cols >> plus >> m.rest) || x != 'x' || plus != '+' || !item.eof() ||
        m.rows < 0 || m.cols < 0 || m.rest < 0 || (m.rows == 0) != (m.cols == 0))
      return {};
    out.push_back(m);
    at = end + 1;
  }
  return out;
}

double int8_encoding(const Task& send) {
  if (send.attr_string("encoding").value_or("") != "int8") return 0;
  return send.attr_real("quant_step").value_or(0);
}

std::vector<std::vector<BufferIndex>> buffers_by_rank(const Plan& plan, const Task& t) {
  const std::size_t n = t.group.size();
  std::vector<std::vector<BufferIndex>> parts(n);
  for (BufferIndex b : t.reads) {
    const auto rank = static_cast<std::size_t>(
        std::find(t.group.begin(), t.group.end(), plan.buffer(b).worker) - t.group.begin());
    STRATA_ASSERT(rank < n,
                  std::string(to_string(t.kind)) + " " + t.id + " reads a buffer outside its group");
    parts[rank].push_back(b);
  }
  for (std::size_t r = 1; r < n; ++r) {
    bool same = parts[r].size() == parts[0].size();
    for (std::size_t j = 0; same && j < parts[r].size(); ++j) {
      const Buffer &a = plan.buffer(parts[0][j]), &b = plan.buffer(parts[r][j]);
      same = a.bytes == b.bytes && a.dtype == b.dtype;
    }
    STRATA_ASSERT(same, std::string(to_string(t.kind)) + " " + t.id + ": ranks hold different sizes");
  }
  return parts;
}

bool reads_activation_output(const Task& task) { return task.attr_string("saved").value_or("") == "output"; }

bool per_buffer(const Task& collective) { return collective.attr_int("per_buffer").value_or(0) != 0; }

std::vector<std::vector<BufferPair>> buffer_pairs_by_rank(const Plan& plan, const Task& t) {
  STRATA_ASSERT(t.reads.size() == t.writes.size(),
                std::string(to_string(t.kind)) + " " + t.id + ": per_buffer pairs each read with a write");
  const std::size_t n = t.group.size();
  std::vector<std::vector<BufferPair>> pairs(n);
  for (std::size_t i = 0; i < t.reads.size(); ++i) {
    const WorkerId owner = plan.buffer(t.reads[i]).worker;
    const auto rank =
        static_cast<std::size_t>(std::find(t.group.begin(), t.group.end(), owner) - t.group.begin());
    STRATA_ASSERT(rank < n && plan.buffer(t.writes[i]).worker == owner,
                  std::string(to_string(t.kind)) + " " + t.id + " pairs buffers of different workers");
    pairs[rank].push_back({t.reads[i], t.writes[i]});
  }
  for (std::size_t r = 1; r < n; ++r) {
    bool same = pairs[r].size() == pairs[0].size();
    for (std::size_t j = 0; same && j < pairs[r].size(); ++j)
      same = plan.buffer(pairs[r][j].read).bytes == plan.buffer(pairs[0][j].read).bytes &&
             plan.buffer(pairs[r][j].write).bytes == plan.buffer(pairs[0][j].write).bytes;
    STRATA_ASSERT(same, std::string(to_string(t.kind)) + " " + t.id + ": ranks hold different sizes");
  }
  return pairs;
}

template <typename T>
RingPieces<T> per_buffer_ring_prepare(TaskKind kind, BufferPair pair, std::size_t position, std::size_t n,
                                      Workspace<T>& ws) {
  if (kind == TaskKind::reduce_scatter || pair.read == pair.write)
    return {{ws.data(pair.read), static_cast<std::size_t>(ws.size(pair.read))}};
  T* full = ws.data(pair.write);
  const auto size = static_cast<std::size_t>(ws.size(pair.write));
  const RingChunk c = shard_chunk(position, size, n);
  const T* shard = ws.data(pair.read);
  std::copy(shard, shard + (c.end - c.begin), full + c.begin);
  return {{full, size}};
}

template <typename T>
void per_buffer_ring_finish(TaskKind kind, BufferPair pair, std::size_t position, std::size_t n,
                            Workspace<T>& ws) {
  if (kind != TaskKind::reduce_scatter) return;
  T* consumed = ws.data(pair.read);
  const auto size = static_cast<std::size_t>(ws.size(pair.read));
  const RingChunk c = shard_chunk(position, size, n);
  T* shard = ws.data(pair.write);
  for (std::size_t i = c.begin; i < c.end; ++i) shard[i - c.begin] += consumed[i];
  std::fill(consumed, consumed + size, T{0});
}

#define STRATA_PER_BUFFER(T)                                                                        \
  template RingPieces<T> per_buffer_ring_prepare<T>(TaskKind, BufferPair, std::size_t, std::size_t, \
                                                    Workspace<T>&);                                 \
  template void per_buffer_ring_finish<T>(TaskKind, BufferPair, std::size_t, std::size_t, Workspace<T>&);
STRATA_PER_BUFFER(float)
STRATA_PER_BUFFER(double)
#undef STRATA_PER_BUFFER

std::optional<OffloadCopies> offload_copies(const Plan& plan, const Task& step) {
  OffloadCopies copies;
  const auto d2h = std::find_if(step.data_deps.begin(), step.data_deps.end(), [&](TaskIndex d) {
    return plan.task(d).kind == TaskKind::host_copy && plan.task(d).id == step.id + "/d2h";
  });
  const long h2d = plan.find(step.id + "/h2d");
  if (d2h == step.data_deps.end() || h2d < 0 ||
      plan.task(static_cast<TaskIndex>(h2d)).kind != TaskKind::host_copy)
    return std::nullopt;
  copies.d2h = *d2h;
  copies.h2d = static_cast<TaskIndex>(h2d);
  if (plan.task(copies.d2h).reads.size() != plan.task(copies.h2d).writes.size()) return std::nullopt;
  return copies;
}

void check_cuda_kernels(const Plan& plan, const std::string& source) {
  for (const Task& t : plan.tasks()) {
    switch (t.kind) {
      case TaskKind::admm_backward:
      case TaskKind::admm_forward:
      case TaskKind::spmm:
      case TaskKind::elementwise:
      case TaskKind::compress:
        break;
      default:
        if (!t.attr_string("compression").has_value() && !t.attr_string("encoding").has_value() &&
            !per_buffer(t) && !is_hub_algo(t.algo))
          continue;
    }
    throw InputError(source + ": task " + t.id + " (" + std::string(to_string(t.kind)) +
                     (t.attr_string("compression") ? ", compression " + *t.attr_string("compression") : "") +
                     (per_buffer(t) ? ", ZeRO-2/3 shards" : "") +
                     (is_hub_algo(t.algo) ? ", through " + std::string(to_string(t.algo)) : "") +
                     ") has no CUDA kernel; run it with --device cpu");
  }
}

void check_kernels(const Plan& plan, const std::string& source) {
  if (!plan.info.parameters.fanout.empty())
    throw InputError(source + ": its GCN trains on sampled minibatches (fanout " +
                     plan.info.parameters.fanout +
                     "); the real trainer runs full-graph GCN Plans only (simulate it)");
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const std::string why = missing_kernel(plan, plan.task(i));
    if (!why.empty())
      throw InputError(input_error_message(
          source, "/tasks/" + std::to_string(i),
          "task " + plan.task(i).id + ": " + why +
              "; the real executor runs linear, conv, relu/tanh, "
              "2x2 max pool, softmax cross-entropy, sgd/adam, "
              "grad_accumulate, ADMM layer updates, GCN spmm, "
              "GIST's extract/write_back/average, Block-ADMM's penalty/update, send/recv, "
              "allreduce, ZeRO's reduce_scatter and allgather and "
              "fixed (busy-waits duration_s)"));
  }
}

template <typename T>
TaskRunner<T>::TaskRunner(const Plan& plan, Backend& backend, Workspace<T>& ws, Transport<T>& transport,
                          OptimizerSettings optimizer)
    : plan_(plan), backend_(backend), ws_(ws), transport_(transport), optimizer_(optimizer) {}

template <typename T>
void TaskRunner<T>::run(TaskIndex index) {
  const Task& t = plan_.task(index);
  const MeterScope scope(ws_.meter(), t.worker);  // the task's temporaries are its worker's
  run_kernel(index);
  if (t.attr_int("residual_grad").value_or(0) != 0) add_shortcut_grad(t);
}

template <typename T>
void TaskRunner<T>::run_kernel(TaskIndex index) {
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
      return attr_string(t, "fn") == "avg" ? run_global_avg_pool(t) : run_pool(t);
    case TaskKind::norm_fwd:
    case TaskKind::norm_bwd:
      return run_norm(t);
    case TaskKind::loss_fwd:
    case TaskKind::loss_bwd:
      return graph_ != nullptr ? run_graph_loss(t) : run_loss(t);
    case TaskKind::spmm:
      return run_spmm(index);
    case TaskKind::elementwise:
      if (t.attr_int("span").value_or(0) > 0) return run_residual(t);
      return t.attr_string("block_admm") ? run_block_admm(t) : run_gist_copy(t);
    case TaskKind::grad_accumulate:
      return accumulate(backend_, elems(t.writes[0]), buf(t.reads[0]), buf(t.writes[0]));
    case TaskKind::optimizer_step:
      return run_optimizer(t);
    case TaskKind::host_copy:  // host and device memory are one here: nothing to move
      return;
    case TaskKind::compress:
      return run_codec(t);
    case TaskKind::admm_backward:
    case TaskKind::admm_forward:
      return run_admm(t);
    case TaskKind::fixed:
      return run_fixed_task(t);
    case TaskKind::send:
      if (halo_peers_.count(index) != 0) return run_halo_send(index);
      return transport_.send(plan_, index, ws_);
    case TaskKind::recv:
      if (halo_peers_.count(index) != 0) return run_halo_recv(index);
      return transport_.recv(plan_, index, ws_);
    case TaskKind::allreduce:
    case TaskKind::reduce_scatter:
    case TaskKind::allgather:
      return transport_.collective(plan_, index, ws_);
    default:
      STRATA_ASSERT(false, "task " + t.id + ": no kernel (check_kernels was not called)");
  }
}

template <typename T>
template <typename V>
void TaskRunner<T>::keep_saved(std::unordered_map<BufferIndex, Saved<V>>& saved, BufferIndex key,
                               Saved<V> value) {
  const std::lock_guard<std::mutex> lock(saved_mutex_);
  saved[key] = std::move(value);
}

template <typename T>
template <typename V>
auto TaskRunner<T>::take_saved(std::unordered_map<BufferIndex, Saved<V>>& saved, BufferIndex key)
    -> Saved<V> {
  const std::lock_guard<std::mutex> lock(saved_mutex_);
  const auto it = saved.find(key);
  if (it == saved.end()) return {};
  Saved<V> value = std::move(it->second);
  saved.erase(it);
  return value;
}

template <typename T>
void TaskRunner<T>::discard_saved() {
  const std::lock_guard<std::mutex> lock(saved_mutex_);
  saved_argmax_.clear();
  saved_probs_.clear();
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
  // A conv without bias (the ResNets') has a weight buffer of the kernel alone.
  const auto has_bias = [&](BufferIndex w) { return elems(w) > s.weight_size(); };
  if (t.kind == TaskKind::conv_fwd) {
    const T* w = buf(t.reads[1]);
    conv2d_forward(backend_, s, buf(t.reads[0]), w, has_bias(t.reads[1]) ? w + s.weight_size() : nullptr,
                   buf(t.writes[0]));
  } else if (t.kind == TaskKind::conv_bwd_data) {
    conv2d_backward_data(backend_, s, buf(t.reads[0]), buf(t.reads[2]), buf(t.writes[0]), false);
  } else {
    T* dw = buf(t.writes[0]);
    conv2d_backward_weight(backend_, s, buf(t.reads[1]), buf(t.reads[0]), dw,
                           has_bias(t.writes[0]) ? dw + s.weight_size() : nullptr, true);
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
  // Y > 0 exactly where X > 0, so ReLU's backward reads either; tanh' needs Y.
  if (relu) {
    relu_backward(n, buf(t.reads[1]), buf(t.reads[0]), buf(t.writes[0]));
  } else if (reads_activation_output(t)) {
    tanh_backward(n, buf(t.reads[1]), buf(t.reads[0]), buf(t.writes[0]));
  } else {
    std::vector<T> y(static_cast<std::size_t>(n));  // the Plan keeps X
    const Held y_held = Held::here(allocated_bytes(y));
    tanh_forward(n, buf(t.reads[1]), y.data());
    tanh_backward(n, y.data(), buf(t.reads[0]), buf(t.writes[0]));
  }
}

template <typename T>
void TaskRunner<T>::run_pool(const Task& t) {
  const BufferIndex x = t.kind == TaskKind::pool_fwd ? t.reads[0] : t.reads[1];
  const Pool2dShape s = pool_shape(t, elems(x));
  STRATA_ASSERT(s.input_size() <= std::numeric_limits<std::int32_t>::max(),
                "task " + t.id + ": pool input too large for 32-bit argmax indices");
  std::vector<std::int64_t> argmax(static_cast<std::size_t>(s.output_size()));  // the kernels' indices
  const Held argmax_held = Held::here(allocated_bytes(argmax));
  if (t.kind == TaskKind::pool_fwd) {
    maxpool2x2_forward(s, buf(x), buf(t.writes[0]), argmax.data());
    Saved<std::vector<std::int32_t>> saved{std::vector<std::int32_t>(argmax.begin(), argmax.end()), Held{}};
    saved.held = Held::here(allocated_bytes(saved.values));
    keep_saved(saved_argmax_, x, std::move(saved));
    return;
  }
  const Saved<std::vector<std::int32_t>> saved = take_saved(saved_argmax_, x);
  if (static_cast<std::int64_t>(saved.values.size()) == s.output_size()) {
    std::copy(saved.values.begin(), saved.values.end(), argmax.begin());
  } else {  // no forward saved it (a Plan run from its backward): the forward again
    std::vector<T> y(static_cast<std::size_t>(s.output_size()));
    const Held y_held = Held::here(allocated_bytes(y));
    maxpool2x2_forward(s, buf(x), y.data(), argmax.data());
  }
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
  const auto n = static_cast<std::size_t>(batch * classes);
  if (t.kind == TaskKind::loss_fwd) {
    Saved<std::vector<T>> saved{std::vector<T>(n), Held{}};
    saved.held = Held::here(allocated_bytes(saved.values));
    buf(t.writes[0])[0] =
        softmax_cross_entropy_forward(batch, classes, buf(logits), labels.data(), saved.values.data());
    keep_saved(saved_probs_, logits, std::move(saved));
    return;
  }
  Saved<std::vector<T>> saved = take_saved(saved_probs_, logits);
  if (saved.values.size() != n) {  // no forward saved them: the forward again
    saved.values.assign(n, T{0});
    saved.held = Held::here(allocated_bytes(saved.values));
    softmax_cross_entropy_forward(batch, classes, buf(logits), labels.data(), saved.values.data());
  }
  T* dlogits = buf(t.writes[0]);
  softmax_cross_entropy_backward(batch, classes, saved.values.data(), labels.data(), dlogits);
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

namespace {

// The elements of each gradient buffer of `rank` that a reduce_scatter `rs` leaves reduced on
// it: its owned chunk of the concatenation of its buffers among rs's reads, in order, cut back
// into per-buffer ranges [begin, end).
void owned_ranges(const Plan& plan, const Task& rs, WorkerId rank,
                  const std::function<std::int64_t(BufferIndex)>& size,
                  std::unordered_map<BufferIndex, std::pair<std::int64_t, std::int64_t>>& out) {
  const std::size_t n = rs.group.size();
  const auto me =
      static_cast<std::size_t>(std::find(rs.group.begin(), rs.group.end(), rank) - rs.group.begin());
  STRATA_ASSERT(me < n, "reduce_scatter " + rs.id + " does not include worker " + std::to_string(rank));
  std::int64_t total = 0;
  for (BufferIndex b : rs.reads)
    if (plan.buffer(b).worker == rank) total += size(b);
  const RingChunk chunk = ring_chunk(owned_chunk(me, n), static_cast<std::size_t>(total), n);
  std::int64_t offset = 0;
  for (BufferIndex b : rs.reads) {
    if (plan.buffer(b).worker != rank) continue;
    const std::int64_t lo = std::max(offset, static_cast<std::int64_t>(chunk.begin));
    const std::int64_t hi = std::min(offset + size(b), static_cast<std::int64_t>(chunk.end));
    out[b] = hi > lo ? std::pair{lo - offset, hi - offset} : std::pair<std::int64_t, std::int64_t>{0, 0};
    offset += size(b);
  }
}

}  // namespace

template <typename T>
OptimizerWork optimizer_work(const Plan& plan, const Task& t, Workspace<T>& ws,
                             const OptimizerSettings& settings) {
  OptimizerWork w;
  w.adam = attr_string(t, "optimizer") == "adam";
  w.state = t.reads.back();
  // The (gradient, weight) pairs: the task's own reads and writes, or, offloaded (on_host), the
  // gradients its d2h copy moves and the weights its h2d copy writes back.
  std::vector<BufferIndex> grads(t.reads.begin(), t.reads.end() - 1),
      weights(t.writes.begin(), t.writes.end() - 1);
  std::vector<TaskIndex> producers = t.data_deps;
  if (t.attr_int("on_host").value_or(0) != 0) {
    const std::optional<OffloadCopies> copies = offload_copies(plan, t);
    STRATA_ASSERT(copies.has_value(), "task " + t.id + ": offloaded step without its copies");
    w.on_host = true;
    grads = plan.task(copies->d2h).reads;
    weights = plan.task(copies->h2d).writes;
    producers = plan.task(copies->d2h).data_deps;
  }
  STRATA_ASSERT(grads.size() == weights.size() && t.writes.size() == t.reads.size(),
                "task " + t.id + ": one weight per gradient, then the state");
  std::unordered_map<BufferIndex, std::pair<std::int64_t, std::int64_t>> sharded;  // ZeRO-1: owned ranges
  std::unordered_map<BufferIndex, RingChunk> shards;  // ZeRO-2, -3: a shard's chunk of its layer
  for (TaskIndex d : producers) {
    const Task& rs = plan.task(d);
    if (rs.kind != TaskKind::reduce_scatter) continue;
    if (!per_buffer(rs)) {
      owned_ranges(
          plan, rs, t.worker, [&](BufferIndex b) { return ws.size(b); }, sharded);
      continue;
    }
    const auto me =
        static_cast<std::size_t>(std::find(rs.group.begin(), rs.group.end(), t.worker) - rs.group.begin());
    const std::vector<std::vector<BufferPair>> pairs = buffer_pairs_by_rank(plan, rs);
    for (const BufferPair& pair : pairs[me])
      shards[pair.write] = shard_chunk(me, static_cast<std::size_t>(ws.size(pair.read)), rs.group.size());
  }
  std::int64_t params = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const BufferIndex grad = grads[i];
    w.grads.push_back(grad);
    std::int64_t begin = 0, end = ws.size(grad), weight_begin = 0;
    if (const auto it = sharded.find(grad); it != sharded.end()) {
      begin = weight_begin = it->second.first;
      end = it->second.second;
    } else if (const auto shard = shards.find(grad); shard != shards.end()) {
      end = static_cast<std::int64_t>(shard->second.end - shard->second.begin);
      // ZeRO-2 steps the chunk of the whole weights, ZeRO-3 the weight shard itself.
      if (ws.size(weights[i]) > ws.size(grad)) weight_begin = static_cast<std::int64_t>(shard->second.begin);
    }
    if (end > begin)
      w.slices.push_back(OptimizerSlice{grad, weights[i], begin, weight_begin, end - begin, params, 0});
    params += std::max<std::int64_t>(0, end - begin);
  }
  for (OptimizerSlice& slice : w.slices) slice.second = params + slice.first;
  STRATA_ASSERT(ws.size(w.state) >= (w.adam ? 2 : 1) * params,
                "task " + t.id + ": optimizer state too small");
  w.fresh_state = t.attr_int("fresh_state").value_or(0) != 0;  // GIST: a new optimizer each round
  if (w.fresh_state) ws.optimizer_steps(w.state) = 0;
  w.step = ++ws.optimizer_steps(w.state);
  w.adam_config = settings.adam;
  w.adam_config.learning_rate = settings.learning_rate;
  w.sgd_config = SgdConfig{settings.learning_rate, settings.momentum};
  return w;
}
template OptimizerWork optimizer_work<float>(const Plan&, const Task&, Workspace<float>&,
                                             const OptimizerSettings&);
template OptimizerWork optimizer_work<double>(const Plan&, const Task&, Workspace<double>&,
                                              const OptimizerSettings&);

template <typename T>
void TaskRunner<T>::run_optimizer(const Task& t) {
  const OptimizerWork w = optimizer_work(plan_, t, ws_, optimizer_);
  T* state = buf(w.state);
  if (w.fresh_state) std::fill(state, state + elems(w.state), T{0});
  for (const OptimizerSlice& s : w.slices) {
    T* grad = buf(s.grad) + s.begin;
    T* weight = buf(s.weight) + s.weight_begin;
    const std::int64_t n = s.elements;
    if (w.adam)
      adam_step(w.adam_config, w.step, n, grad, state + s.first, state + s.second, weight);
    else
      sgd_momentum_step(w.sgd_config, n, grad, state + s.first, weight);
  }
  for (BufferIndex g : w.grads) zero(elems(g), buf(g));
}

template class TaskRunner<float>;
template class TaskRunner<double>;

}  // namespace strata::real
