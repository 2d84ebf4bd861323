// CostModel: the predicted duration of a compute task on a host.
//
// On a GPU host (HostSpec::gpu set, inferred from the platform's host properties) a task is
// priced as the kernels it runs: shape-dependent GEMM efficiency, memory-bound kernels at an
// achieved fraction of HBM bandwidth, a launch overhead per kernel (gpu_kernels.hpp,
// docs/cost-model.md). Precedence there: a calibration read from a file (`source` other than
// "defaults") that names the task's kind in any of its tables prices that kind by the roofline
// below; the kernels' bytes stream at the GPU type's measured efficiency (gpu_kernels.hpp), or at
// the calibration's default memory efficiency where it sets one other than 0.8. On
// every other host (CPU hosts, a HostSpec without a GPU type) the roofline below prices every
// task, as it always has:
//
// time = overhead(kind) + max(flops / (peak(dtype) * eff_flops(kind, dtype, class)),
//                             (bytes_read + bytes_written) / (mem_bw * eff_mem(kind, dtype, class)))
// a roofline on the host's dense peak for the task's dtype and its memory bandwidth.
// `fixed` tasks take their `duration_s` attribute. A Calibration overrides efficiencies and adds
// per-task overheads; `strata calibrate` (real_exec) measures one.
//
// Shape class: a task's work is its FLOPs (bytes moved for a task without FLOPs). Two kinds of
// class: a decade, "1e7", for tasks of [1e7, 1e8) FLOP; and a shape, "1.51e7", for tasks whose
// work rounds to that value at three significant digits — what `strata calibrate` records for
// each layer shape it measured (LeNet-5's two convolutions fall in one decade and reach 14 % and
// 29 % of peak). Table keys are "kind", "kind/dtype", "kind/class" or "kind/dtype/class"; a
// lookup tries kind/dtype/shape, kind/shape, kind/dtype/decade, kind/decade, kind/dtype, kind,
// then the default.
#pragma once

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "strata/models/cost/gemm_grid.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

// α–β of one way of moving tensors between workers (a real_exec transport: "threads", "mpi"):
// a message of n bytes takes alpha_s + n * beta_s_per_byte.
struct TransportCalibration {
  double p2p_alpha_s = 0;                // s, send + receive of an empty message
  double p2p_beta_s_per_byte = 0;        // s/B
  double allreduce_alpha_s = 0;          // s, ring allreduce of `allreduce_ranks` ranks
  double allreduce_beta_s_per_byte = 0;  // s per byte of the reduced buffer
  int allreduce_ranks = 2;
};

// The machine a calibration was measured on, as a one-host platform needs it.
struct HostCalibration {
  std::string name;       // host name (informational)
  int cores = 0;          // worker slots
  double flops_fp32 = 0;  // FLOP/s per core, the peak efficiencies are relative to
  double flops_fp64 = 0;  // FLOP/s per core
  double mem_bw = 0;      // B/s per core
};

struct Calibration {
  static constexpr int kSchemaVersion = 2;
  std::string source;                     // file it came from, or "defaults"
  double default_flops_efficiency = 0.5;  // fraction of peak FLOP/s
  double default_mem_efficiency = 0.8;    // fraction of peak memory bandwidth
  // keys "kind[/dtype][/class]", e.g. "linear_fwd/bf16", "linear_fwd/fp32/1e7"
  std::map<std::string, double> flops_efficiency;
  std::map<std::string, double> mem_efficiency;
  std::map<std::string, double> overhead_s;                // per task of that kind (s)
  std::map<std::string, TransportCalibration> transports;  // by transport name
  HostCalibration host;                                    // cores == 0: not measured
  // Measured GEMM rates by shape, by dtype name ("bf16", "fp16", "fp32", "fp64"): on a GPU host
  // they price the linear layers' GEMMs of that dtype (gpu_kernels.hpp), whatever the tables
  // above say of the linear kinds. `strata calibrate --device cuda` measures bf16, fp16, fp32.
  std::map<std::string, GemmGrid> gemm;

  // Built-in defaults: GEMM-like kinds 0.7 of peak, attention 0.5, memory-bound kinds at
  // 0.8 of bandwidth (see cost_model.cpp for the sources of these figures).
  static Calibration defaults();
};

// Reads a calibration JSON file (schema in traces/schema/calibration.schema.json). Missing keys
// keep the defaults. Throws InputError naming file, JSON pointer and problem, including a
// schema_version other than kSchemaVersion.
Calibration load_calibration(const std::string& path);

// The JSON load_calibration reads, with every table and the informational `device` and
// `created` fields; keys in sorted order, so equal calibrations give equal text.
std::string calibration_to_json(const Calibration& calibration, const std::string& device,
                                const std::string& created);

// Throws InputError naming the calibration's file and GEMM grid when a grid measured faster than
// the dense peak of a GPU host of the platform (its dtype's FLOP/s): such a grid was measured on
// another, faster GPU and says nothing of this one. Hosts without a GPU type are not checked
// (their tasks never use a grid). Each grid's best rate is found once, and hosts of one GPU
// type and peak are checked once: O(grid points + hosts x grids).
void check_calibration_for_hosts(const Calibration& calibration, const std::vector<HostSpec>& hosts);

// The decade class of a task's work (FLOPs, or bytes when it has none): "1e7" for [1e7, 1e8).
std::string decade_class(double work);
// The shape class: the work at three significant digits, "1.51e7". REQUIRES: work > 0.
std::string exact_shape_class(double work);
bool is_exact_shape_class(const std::string& text);

class CostModel {
 public:
  explicit CostModel(Calibration calibration = Calibration::defaults());

  // Seconds. REQUIRES: task is a compute kind.
  double compute_time(const Task& task, const HostSpec& host) const;
  // `work` picks the shape class (0: the class-less entries).
  double flops_efficiency(TaskKind kind, DType dtype, double work = 0) const;
  double mem_efficiency(TaskKind kind, DType dtype, double work = 0) const;
  double overhead(TaskKind kind, DType dtype, double work = 0) const;
  const Calibration& calibration() const { return calibration_; }

 private:
  static constexpr std::size_t kDTypes = 4;
  // Class 0 is "no class" (work 0); class c >= 1 is the decade 1e(c-1).
  static constexpr std::size_t kClasses = 18;
  static std::size_t work_class(double work);
  static std::size_t slot(TaskKind kind, DType dtype, std::size_t cls) {
    return (static_cast<std::size_t>(kind) * kDTypes + static_cast<std::size_t>(dtype)) * kClasses + cls;
  }
  static constexpr std::size_t kSlots = kTaskKindCount * kDTypes * kClasses;

  // Entries of shape classes, by (kind, dtype, work at three digits as mantissa·100 and
  // exponent), resolved for each dtype; empty unless the calibration has such keys.
  struct ShapeEntry {
    double flops_efficiency = 0, mem_efficiency = 0, overhead = 0;
  };
  using ShapeKey = std::tuple<int, int, int, int>;
  static ShapeKey shape_key(TaskKind kind, DType dtype, double work);
  std::map<ShapeKey, ShapeEntry> shapes_;

  Calibration calibration_;
  // (kind, dtype) pairs a measured calibration (source other than "defaults") names, indexed
  // kind x kDTypes + dtype: the roofline prices them on GPU hosts too. A key naming a dtype
  // names that dtype only; one without names every dtype.
  std::array<bool, kTaskKindCount * kDTypes> measured_kind_{};
  // Whether the calibration's default memory efficiency (not the built-in 0.8) prices GPU
  // kernels; false: each GPU type's measured streaming efficiency does.
  bool gpu_mem_efficiency_ = false;
  // The calibration resolved per (kind, dtype, class) once: a replay asks for every task.
  std::vector<double> flops_efficiency_ = std::vector<double>(kSlots);
  std::vector<double> mem_efficiency_ = std::vector<double>(kSlots);
  std::vector<double> overhead_ = std::vector<double>(kSlots);
  // calibration_.gemm by DType (empty grid: none).
  std::array<GemmGrid, kDTypes> gemm_;
};

}  // namespace models
}  // namespace strata
