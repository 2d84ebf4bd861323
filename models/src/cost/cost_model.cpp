// CostModel: roofline time of a compute task, with efficiencies from a Calibration.
#include "strata/models/cost/cost_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "strata/models/cost/gpu_kernels.hpp"
#include "strata/models/cost/host_offload.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

// Built-in efficiencies, used until `strata calibrate` measures the machine at hand. They are
// typical figures for NVIDIA A100-class GPUs at the large shapes of LLM training:
// - GEMM-like kinds (linear_*, conv_*) at 0.7 of dense peak. cuBLAS reaches 70-80 % of the
//   312 TFLOP/s bf16 peak on large GEMMs (NVIDIA, "Matrix Multiplication Background User's
//   Guide"), and Megatron-LM sustains 52 % of peak end to end over whole iterations including
//   communication and the memory-bound kernels (Narayanan et al., SC'21, "Efficient Large-Scale
//   Language Model Training on GPU Clusters Using Megatron-LM"), which puts its GEMMs well above
//   that. MLPerf Training's A100 GPT-3 and BERT submissions report MFU in the same 0.4-0.6 band.
// - attention core at 0.5: FlashAttention-2 reaches 50-73 % of peak in forward on A100 (Dao,
//   2023), unfused implementations much less; 0.5 sits at the low end of the fused figures.
// - every other kind is memory-bound on a GPU (norms, activations, residual adds, embeddings,
//   the optimizer step): they keep the default 0.5 of peak FLOP/s, which is never binding, and
//   0.8 of the datasheet memory bandwidth, what streaming kernels such as BabelStream sustain on
//   HBM2/HBM3 parts (roughly 80-90 %).
// No per-task overhead by default: launch latency (a few µs) is left to calibration.
Calibration Calibration::defaults() {
  Calibration c;
  c.source = "defaults";
  c.default_flops_efficiency = 0.5;
  c.default_mem_efficiency = 0.8;
  for (TaskKind kind :
       {TaskKind::linear_fwd, TaskKind::linear_bwd_data, TaskKind::linear_bwd_weight, TaskKind::conv_fwd,
        TaskKind::conv_bwd_data, TaskKind::conv_bwd_weight, TaskKind::admm_backward})
    c.flops_efficiency[std::string(to_string(kind))] = 0.7;
  for (TaskKind kind : {TaskKind::attention_fwd, TaskKind::attention_bwd})
    c.flops_efficiency[std::string(to_string(kind))] = 0.5;
  return c;
}

namespace {

// The entry of the class itself: "kind/dtype/class", then "kind/class".
std::optional<double> lookup_class(const std::map<std::string, double>& table, TaskKind kind, DType dtype,
                                   const std::string& cls) {
  const std::string k(to_string(kind));
  if (auto it = table.find(k + "/" + std::string(to_string(dtype)) + "/" + cls); it != table.end())
    return it->second;
  if (auto it = table.find(k + "/" + cls); it != table.end()) return it->second;
  return std::nullopt;
}

// The class's entry, then "kind/dtype", "kind", then the fallback; `cls` empty: the class-less
// keys only.
double lookup(const std::map<std::string, double>& table, TaskKind kind, DType dtype, const std::string& cls,
              double fallback) {
  if (!cls.empty())
    if (const std::optional<double> v = lookup_class(table, kind, dtype, cls)) return *v;
  const std::string k(to_string(kind));
  if (auto it = table.find(k + "/" + std::string(to_string(dtype))); it != table.end()) return it->second;
  if (auto it = table.find(k); it != table.end()) return it->second;
  return fallback;
}

bool valid_efficiency(double e) { return e > 0 && e <= 1; }

int decade(double work) { return std::clamp(static_cast<int>(std::floor(std::log10(work))), 0, 16); }

// Mantissa in [100, 999] and exponent of `work` at three significant digits.
std::pair<int, int> three_digits(double work) {
  int e = static_cast<int>(std::floor(std::log10(work)));
  int m = static_cast<int>(std::lround(work / std::pow(10.0, e - 2)));
  if (m >= 1000) m = static_cast<int>(std::lround(m / 10.0)), ++e;
  if (m < 100) m *= 10, --e;
  return {m, e};
}

// Parses "d.dde<exp>" (a shape class); nullopt for anything else.
std::optional<std::pair<int, int>> parse_shape(const std::string& text) {
  if (text.size() < 6 || text[1] != '.' || text[4] != 'e') return std::nullopt;
  for (std::size_t i : {0, 2, 3})
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  for (std::size_t i = 5; i < text.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  if (text[0] == '0' || text.size() > 7) return std::nullopt;
  return std::pair{(text[0] - '0') * 100 + (text[2] - '0') * 10 + (text[3] - '0'), std::stoi(text.substr(5))};
}

}  // namespace

std::string exact_shape_class(double work) {
  STRATA_ASSERT(work > 0, "shape class of no work");
  const auto [m, e] = three_digits(work);
  return std::to_string(m / 100) + "." + std::to_string(m / 10 % 10) + std::to_string(m % 10) + "e" +
         std::to_string(e);
}

bool is_exact_shape_class(const std::string& text) { return parse_shape(text).has_value(); }

CostModel::ShapeKey CostModel::shape_key(TaskKind kind, DType dtype, double work) {
  const auto [m, e] = three_digits(work);
  return {static_cast<int>(kind), static_cast<int>(dtype), m, e};
}

std::string decade_class(double work) {
  STRATA_ASSERT(work > 0, "shape class of no work");
  return "1e" + std::to_string(decade(work));
}

std::size_t CostModel::work_class(double work) {
  return work > 0 ? static_cast<std::size_t>(decade(work)) + 1 : 0;
}

// load_calibration() checks files; a Calibration built in code is checked here.
CostModel::CostModel(Calibration calibration) : calibration_(std::move(calibration)) {
  const Calibration& c = calibration_;
  STRATA_ASSERT(valid_efficiency(c.default_flops_efficiency) && valid_efficiency(c.default_mem_efficiency),
                "default efficiency outside (0, 1]");
  for (const auto* table : {&c.flops_efficiency, &c.mem_efficiency})
    for (const auto& [key, value] : *table)
      STRATA_ASSERT(valid_efficiency(value), "efficiency of " + key + " outside (0, 1]");
  for (const auto& [key, value] : c.overhead_s) STRATA_ASSERT(value >= 0, "negative overhead for " + key);
  for (const auto& [name, grid] : c.gemm) {
    const std::optional<DType> dtype = parse_dtype(name);
    STRATA_ASSERT(dtype.has_value(), "GEMM grid of unknown dtype " + name);
    STRATA_ASSERT(gemm_grid_problem(grid).empty(), "GEMM grid " + name + ": " + gemm_grid_problem(grid));
    gemm_[static_cast<std::size_t>(*dtype)] = grid;
  }
  // A measured calibration (not the built-in defaults) that names a kind prices that kind on
  // every host, GPU hosts included (precedence: docs/cost-model.md). load_calibration starts
  // from the defaults, so an entry equal to the built-in one is no measurement.
  if (c.source != "defaults") {
    const Calibration builtin = Calibration::defaults();
    for (const auto& [table, base] : {std::pair{&c.flops_efficiency, &builtin.flops_efficiency},
                                      std::pair{&c.mem_efficiency, &builtin.mem_efficiency},
                                      std::pair{&c.overhead_s, &builtin.overhead_s}})
      for (const auto& [key, value] : *table) {
        const auto same = base->find(key);
        if (same != base->end() && same->second == value) continue;
        const std::size_t slash = key.find('/');
        const auto kind = parse_task_kind(key.substr(0, slash));
        if (!kind) continue;
        // "kind/dtype[/class]" names that dtype only; "kind[/class]" every dtype.
        const std::optional<DType> dtype =
            slash == std::string::npos
                ? std::nullopt
                : parse_dtype(key.substr(slash + 1, key.find('/', slash + 1) - slash - 1));
        for (std::size_t d = 0; d < kDTypes; ++d)
          if (!dtype || static_cast<std::size_t>(*dtype) == d)
            measured_kind_[static_cast<std::size_t>(*kind) * kDTypes + d] = true;
      }
  }
  // GPU kernels stream at their GPU type's measured efficiency (gpu_kernels.hpp) unless the
  // calibration sets a memory efficiency of its own.
  gpu_mem_efficiency_ = c.default_mem_efficiency != Calibration::defaults().default_mem_efficiency;
  for (int k = 0; k < kTaskKindCount; ++k)
    for (DType d : {DType::fp32, DType::bf16, DType::fp16, DType::fp64})
      for (std::size_t cls = 0; cls < kClasses; ++cls) {
        const auto kind = static_cast<TaskKind>(k);
        const std::string name = cls == 0 ? "" : "1e" + std::to_string(cls - 1);
        const std::size_t s = slot(kind, d, cls);
        flops_efficiency_[s] = lookup(c.flops_efficiency, kind, d, name, c.default_flops_efficiency);
        mem_efficiency_[s] = lookup(c.mem_efficiency, kind, d, name, c.default_mem_efficiency);
        overhead_[s] = lookup(c.overhead_s, kind, d, name, 0.0);
      }
  // Shape classes: every (kind, shape) named in a table, resolved per dtype: kind/dtype/shape,
  // kind/shape, then what the shape's decade resolved to.
  std::map<std::tuple<int, int, int>, std::string> named;  // (kind, m, e) -> class text
  for (const auto* table : {&c.flops_efficiency, &c.mem_efficiency, &c.overhead_s})
    for (const auto& entry : *table) {
      const std::string& key = entry.first;
      const std::size_t slash = key.rfind('/');
      if (slash == std::string::npos) continue;
      const auto shape = parse_shape(key.substr(slash + 1));
      const auto kind = parse_task_kind(key.substr(0, key.find('/')));
      if (shape && kind)
        named[{static_cast<int>(*kind), shape->first, shape->second}] = key.substr(slash + 1);
    }
  for (const auto& [k, cls] : named)
    for (DType d : {DType::fp32, DType::bf16, DType::fp16, DType::fp64}) {
      const auto kind = static_cast<TaskKind>(std::get<0>(k));
      const double work = std::get<1>(k) * std::pow(10.0, std::get<2>(k) - 2);
      const std::size_t decade = slot(kind, d, work_class(work));
      ShapeEntry& entry = shapes_[{std::get<0>(k), static_cast<int>(d), std::get<1>(k), std::get<2>(k)}];
      entry.flops_efficiency =
          lookup_class(c.flops_efficiency, kind, d, cls).value_or(flops_efficiency_[decade]);
      entry.mem_efficiency = lookup_class(c.mem_efficiency, kind, d, cls).value_or(mem_efficiency_[decade]);
      entry.overhead = lookup_class(c.overhead_s, kind, d, cls).value_or(overhead_[decade]);
    }
}

double CostModel::flops_efficiency(TaskKind kind, DType dtype, double work) const {
  return flops_efficiency_[slot(kind, dtype, work_class(work))];
}

double CostModel::mem_efficiency(TaskKind kind, DType dtype, double work) const {
  return mem_efficiency_[slot(kind, dtype, work_class(work))];
}

double CostModel::overhead(TaskKind kind, DType dtype, double work) const {
  return overhead_[slot(kind, dtype, work_class(work))];
}

// A host without a memory bandwidth (mem_bw = 0: a plain SimGrid host) has no memory roof:
// its tasks are timed on FLOPs alone, as SimGrid itself would time them. A GPU host (a GPU
// type) has its tasks priced as kernels (gpu_kernels.hpp) unless a measured calibration names
// the task's kind; a linear task of a dtype the calibration has a GEMM grid of stays a kernel,
// its GEMM priced from the grid.
double CostModel::compute_time(const Task& task, const HostSpec& host) const {
  STRATA_ASSERT(!is_communication(task.kind), "compute_time of a communication task " + task.id);
  if (task.kind == TaskKind::fixed) {
    std::optional<double> duration = task.attr_real("duration_s");
    if (!duration || *duration < 0)
      throw InputError(input_error_message("task '" + task.id + "'", "attrs/duration_s",
                                           "fixed task needs a non-negative duration_s"));
    return *duration;
  }
  // Offloaded work runs on the host link and the host CPU, whatever the device (host_offload.hpp).
  if (task.kind == TaskKind::host_copy) return host_copy_time(task, host);
  if (runs_on_host(task)) return host_optimizer_time(task);
  const double bytes = task.bytes_read + task.bytes_written;
  const double work = task.flops > 0 ? task.flops : bytes;
  const std::size_t s = slot(task.kind, task.dtype, work_class(work));
  double flops_eff = flops_efficiency_[s], mem_eff = mem_efficiency_[s], overhead = overhead_[s];
  if (!shapes_.empty() && work > 0)
    if (auto it = shapes_.find(shape_key(task.kind, task.dtype, work)); it != shapes_.end()) {
      flops_eff = it->second.flops_efficiency;
      mem_eff = it->second.mem_efficiency;
      overhead = it->second.overhead;
    }
  if (host.gpu != GpuType::none) {
    const GemmGrid& grid = gemm_[static_cast<std::size_t>(task.dtype)];
    const bool gridded = !grid.empty() && is_linear(task.kind);
    if (gridded ||
        !measured_kind_[static_cast<std::size_t>(task.kind) * kDTypes + static_cast<std::size_t>(task.dtype)])
      return gpu_task_time(task, host, gpu_mem_efficiency_ ? mem_eff : 0, flops_eff,
                           gridded ? &grid : nullptr);
  }
  double compute = 0;
  if (task.flops > 0) {
    const double peak = host.peak_flops(task.dtype);
    STRATA_ASSERT(peak > 0, "host '" + host.name + "' has no FLOP/s for task " + task.id);
    compute = task.flops / (peak * flops_eff);
  }
  double memory = 0;
  if (bytes > 0 && host.mem_bw > 0) memory = bytes / (host.mem_bw * mem_eff);
  // A framework's memory-bound passes beside the task (gpu_kernels.hpp) stream after it.
  double passes = 0;
  if (host.mem_bw > 0)
    if (const std::optional<double> pass_bytes = task.attr_real("pass_bytes"); pass_bytes && *pass_bytes > 0)
      passes = *pass_bytes / (host.mem_bw * mem_eff);
  return overhead + std::max(compute, memory) + passes;
}

}  // namespace models
}  // namespace strata
