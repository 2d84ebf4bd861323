// calibration_fit.hpp: the least-squares and roofline fits of measured samples.
#include "strata/models/cost/calibration_fit.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"
#include "strata/traces/stats.hpp"

namespace strata {
inline namespace models {
namespace {

bool gemm_like(TaskKind kind) {
  switch (kind) {
    case TaskKind::linear_fwd:
    case TaskKind::linear_bwd_data:
    case TaskKind::linear_bwd_weight:
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
    case TaskKind::attention_fwd:
    case TaskKind::attention_bwd:
    case TaskKind::admm_backward:  // four GEMMs per layer, then elementwise work
      return true;
    default:
      return false;
  }
}

}  // namespace

TransportCalibration fit_transport(const std::vector<TransportSample>& samples) {
  // Weighted least squares on relative error (weights 1/t²): sizes span four decades, and a
  // plain fit lets the largest messages decide α, which is the small messages' time.
  auto fit = [&](const std::string& op, double& alpha, double& beta) {
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    std::size_t n = 0;
    for (const TransportSample& s : samples)
      if (s.op == op && s.seconds > 0) {
        const double w = 1 / (s.seconds * s.seconds);
        ++n;
        sw += w;
        sx += w * s.bytes;
        sy += w * s.seconds;
        sxx += w * s.bytes * s.bytes;
        sxy += w * s.bytes * s.seconds;
      }
    STRATA_ASSERT(n >= 2, "α–β fit of " + op + " needs two sizes");
    beta = std::max(0.0, (sw * sxy - sx * sy) / (sw * sxx - sx * sx));
    alpha = std::max(0.0, (sy - beta * sx) / sw);
  };
  TransportCalibration t;
  fit("p2p", t.p2p_alpha_s, t.p2p_beta_s_per_byte);
  fit("allreduce", t.allreduce_alpha_s, t.allreduce_beta_s_per_byte);
  t.allreduce_ranks = 2;
  return t;
}

Calibration fit_calibration(const MachinePeaks& peaks, const std::vector<TaskSample>& tasks,
                            const DispatchOverhead& dispatch) {
  STRATA_ASSERT(!tasks.empty(), "calibration without task samples");
  Calibration c = Calibration::defaults();
  c.source = "strata calibrate";
  c.host.name = peaks.host;
  c.host.cores = peaks.cores;
  c.host.flops_fp32 = peaks.gemm_fp32;
  c.host.flops_fp64 = peaks.gemm_fp64;
  c.host.mem_bw = peaks.triad_bw;
  // Every task pays the interpreter's dispatch and the executor's floor (a GPU's launch and
  // completion); what is left of its time is work on a roof. The 0.05 keeps a task timed at or
  // under the floor (noise) from an efficiency of infinity.
  const double o = dispatch.same_thread_s + dispatch.task_floor_s;
  auto busy = [&](const TaskSample& s) { return std::max(s.seconds - o, s.seconds * 0.05); };
  for (const TaskSample& s : tasks) {  // raise the roofs to what any kernel reached
    double& peak = s.dtype == DType::fp64 ? c.host.flops_fp64 : c.host.flops_fp32;
    if (gemm_like(s.kind) && s.flops > 0) peak = std::max(peak, s.flops / busy(s));
    if (!gemm_like(s.kind) && s.bytes > 0) c.host.mem_bw = std::max(c.host.mem_bw, s.bytes / busy(s));
  }
  // Efficiency of each task on its binding roof, grouped by key.
  std::map<std::string, std::vector<double>> flops_eff, mem_eff;
  std::map<std::string, bool> kinds;
  for (const TaskSample& s : tasks) {
    const std::string kind(to_string(s.kind));
    const std::string dtype(to_string(s.dtype));
    kinds[kind] = true;
    const bool compute = gemm_like(s.kind) && s.flops > 0;
    const double work = compute ? s.flops : s.bytes;
    if (!(work > 0)) continue;
    const double peak =
        compute ? (s.dtype == DType::fp64 ? c.host.flops_fp64 : c.host.flops_fp32) : c.host.mem_bw;
    const double e = std::clamp(work / (peak * busy(s)), 1e-6, 1.0);
    auto& table = compute ? flops_eff : mem_eff;
    // Keyed as the cost model looks tasks up (CostModel::compute_time): by FLOPs when the task
    // has any, by bytes otherwise, whichever roof binds. (A ReLU is memory-bound but has FLOPs.)
    const double key = s.flops > 0 ? s.flops : s.bytes;
    table[kind + "/" + dtype + "/" + exact_shape_class(key)].push_back(e);
    table[kind + "/" + dtype + "/" + decade_class(key)].push_back(e);
    table[kind + "/" + dtype].push_back(e);
    // The other roof never binds: efficiency 1 there (the roofs were raised above).
    (compute ? c.mem_efficiency : c.flops_efficiency)[kind + "/" + dtype] = 1.0;
  }
  for (auto& [key, e] : flops_eff) c.flops_efficiency[key] = median(e);
  for (auto& [key, e] : mem_eff) c.mem_efficiency[key] = median(e);
  for (const auto& [kind, unused] : kinds) c.overhead_s[kind] = o;
  return c;
}

}  // namespace models
}  // namespace strata
