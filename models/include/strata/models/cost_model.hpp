// CostModel: the predicted duration of a compute task on a host.
//
// time = overhead(kind) + max(flops / (peak(dtype) * eff_flops(kind, dtype)),
//                             (bytes_read + bytes_written) / (mem_bw * eff_mem(kind, dtype)))
// a roofline on the host's dense peak for the task's dtype and its memory bandwidth, with
// efficiencies looked up per (kind, dtype), falling back to per-kind, then to the defaults.
// `fixed` tasks take their `duration_s` attribute. Calibration (calibration.hpp) overrides
// efficiencies and adds per-task overheads; `strata calibrate` (real_exec) will produce it.
#pragma once

#include <array>
#include <map>
#include <string>

#include "strata/models/hardware.hpp"
#include "strata/traces/task.hpp"

namespace strata {

struct Calibration {
  static constexpr int kSchemaVersion = 1;
  std::string source;                       // file it came from, or "defaults"
  double default_flops_efficiency = 0.5;    // fraction of peak FLOP/s
  double default_mem_efficiency = 0.8;      // fraction of peak memory bandwidth
  // keys "kind" or "kind/dtype", e.g. "linear_fwd/bf16"
  std::map<std::string, double> flops_efficiency;
  std::map<std::string, double> mem_efficiency;
  std::map<std::string, double> overhead_s;  // per task of that kind (s)

  // Built-in defaults: GEMM-like kinds 0.7 of peak, attention 0.5, memory-bound kinds at
  // 0.8 of bandwidth (see cost_model.cpp for the sources of these figures).
  static Calibration defaults();
};

// Reads a calibration JSON file (schema in traces/schema/calibration.schema.json). Missing keys
// keep the defaults. Throws InputError naming file, JSON pointer and problem, including a
// schema_version other than kSchemaVersion.
Calibration load_calibration(const std::string& path);

class CostModel {
 public:
  explicit CostModel(Calibration calibration = Calibration::defaults());

  // Seconds. REQUIRES: task is a compute kind.
  double compute_time(const Task& task, const HostSpec& host) const;
  double flops_efficiency(TaskKind kind, DType dtype) const;
  double mem_efficiency(TaskKind kind, DType dtype) const;
  double overhead(TaskKind kind, DType dtype) const;
  const Calibration& calibration() const { return calibration_; }

 private:
  static std::size_t slot(TaskKind kind, DType dtype) {
    return static_cast<std::size_t>(kind) * kDTypes + static_cast<std::size_t>(dtype);
  }
  static constexpr std::size_t kDTypes = 4;

  Calibration calibration_;
  // The calibration resolved per (kind, dtype) once: a replay asks for every task.
  std::array<double, kTaskKindCount * kDTypes> flops_efficiency_{};
  std::array<double, kTaskKindCount * kDTypes> mem_efficiency_{};
  std::array<double, kTaskKindCount * kDTypes> overhead_{};
};

}  // namespace strata
