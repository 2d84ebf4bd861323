// GPU profiles and kernel times (see gpu_kernels.hpp; the model is described in
// docs/cost-model.md).
#include "strata/models/cost/gpu_kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>

#include "gemm_table.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

// Sources of the figures below:
// - sms: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), 108 SMs on A100 (40 GB and
//   80 GB alike); NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), 132 SMs on H100 SXM5.
// - tile 256 x 128: NVIDIA, "Matrix Multiplication Background User's Guide" (DU-09799-001,
//   2023), section 2.3: cuBLAS's 256x128 and 128x256 tiles are the most efficient (largest
//   data reuse) and are the ones large GEMMs use; section 3.2 (wave quantisation) counts waves
//   of such tiles over the SMs.
// - gemm_efficiency: maximum achievable matmul FLOP/s (MAMF) measured with bf16 inputs by
//   S. Bekman, "Machine Learning Engineering Open Book", compute/accelerator/README.md, table
//   "Maximum Achievable Matmul FLOPS comparison": A100 SXM 267.9 of 312 TFLOP/s (85.9 %,
//   CUDA 12.1), H100 SXM 792.1 of 989 TFLOP/s (80.1 %, CUDA 12.1). The A100 40 GB SXM has the
//   A100 80 GB's SMs and clocks: same figure. A GEMM never runs faster than this fraction.
// - flash_*_efficiency: T. Dao, "FlashAttention-2: Faster Attention with Better Parallelism and
//   Work Partitioning" (2023, arXiv:2307.08691), section 4.1: on A100 up to 73 % of the
//   theoretical maximum in the forward pass and up to 63 % in the backward pass; on H100 up to
//   335 TFLOP/s forward (33.9 % of 989; the backward is taken at the same 63/73 ratio as on
//   A100: 29.2 %).
// - launch_s: the fixed cost of one kernel launched back to back into a stream, fitted as
//   T = a + V / b to a streaming kernel's time over sizes by D. Ernst, te42kyfo/gpu-benches
//   `gpu-small-kernels` (repeated-stream.svg, commit 1c36d509): a = 2555 ns on an A100 80 GB,
//   2433 ns on an H200 (taken for the H100: the same Hopper launch path).
//   validation/sources/streaming-kernel-bandwidth.json.
// - stream_efficiency: the DRAM plateau of the same streaming kernel (A[i] = 0.25 B[i], one read
//   and one write) over the datasheet bandwidth: 1742 GB/s at 986 MB on an A100 80 GB, of
//   2039 GB/s (gpu-benches gpu-small-kernels/a100_80.txt, commit 11f5daa3; BabelStream Triad on
//   Azure ND A100 v4 gives 1.70 TB/s); the A100 40 GB is taken at the same fraction (same memory
//   system, HBM2 for HBM2e). H100 SXM: BabelStream Mul (one read, one write) 2.90 TB/s of
//   3.35 TB/s on Azure ND H100 v5 (Azure/AI-benchmarking-guide, ND_H100_v5_results.md). With a,
//   the time of a kernel of V bytes is a + V / (bw x stream_efficiency): 1587 GB/s at 45 MB and
//   1666 GB/s at 98 MB on the A100 80 GB, against 1585 and 1655 GB/s measured.
constexpr double kA100Gemm = 267.9 / 312;
constexpr double kH100Gemm = 792.1 / 989;
constexpr double kA100FlashFwd = 0.73;
constexpr double kA100FlashBwd = 0.63;
constexpr double kH100FlashFwd = 335.0 / 989;
constexpr double kH100FlashBwd = kH100FlashFwd * 0.63 / 0.73;
constexpr double kA100LaunchS = 2.555e-6;
constexpr double kHopperLaunchS = 2.433e-6;
constexpr double kA100Stream = 1742.0 / 2039;
constexpr double kH100Stream = 2.90 / 3.35;

constexpr std::array<GpuProfile, 3> kProfiles = {{
    {GpuType::a100_40gb, 108, 256, 128, kA100Gemm, kA100FlashFwd, kA100FlashBwd, kA100LaunchS, kA100Stream},
    {GpuType::a100_80gb, 108, 256, 128, kA100Gemm, kA100FlashFwd, kA100FlashBwd, kA100LaunchS, kA100Stream},
    {GpuType::h100_sxm, 132, 256, 128, kH100Gemm, kH100FlashFwd, kH100FlashBwd, kHopperLaunchS, kH100Stream,
     &h100_sxm_gemm_efficiency},
}};

double utilization(double tiles, int sms) {
  const double waves = std::ceil(tiles / sms);
  return tiles / (waves * sms);
}

}  // namespace

std::string_view to_string(GpuType type) {
  switch (type) {
    case GpuType::none:
      return "none";
    case GpuType::a100_40gb:
      return "a100-40gb";
    case GpuType::a100_80gb:
      return "a100-80gb";
    case GpuType::h100_sxm:
      return "h100-sxm";
  }
  return "none";
}

const GpuProfile& gpu_profile(GpuType type) {
  for (const GpuProfile& p : kProfiles)
    if (p.type == type) return p;
  STRATA_ASSERT(false, "no GPU profile for GPU type " + std::string(to_string(type)));
  return kProfiles.front();
}

const GemmGrid* shipped_gemm_grid(GpuType type) {
  return type == GpuType::h100_sxm ? &h100_sxm_gemm_grid() : nullptr;
}

double wave_utilization(const GpuProfile& gpu, double m, double n, double batch) {
  STRATA_ASSERT(m >= 1 && n >= 1 && batch >= 1, "wave_utilization: m, n, batch >= 1");
  const double a = std::ceil(m / gpu.tile_m) * std::ceil(n / gpu.tile_n) * batch;
  const double b = std::ceil(m / gpu.tile_n) * std::ceil(n / gpu.tile_m) * batch;
  return std::max(utilization(a, gpu.sms), utilization(b, gpu.sms));
}

double gemm_shape_efficiency(const GpuProfile& gpu, double m, double n, double batch) {
  return gpu.gemm_efficiency * wave_utilization(gpu, m, n, batch);
}

double linear_gemm_efficiency(const GpuProfile& gpu, double m, double n, double k, const GemmGrid* measured,
                              double peak) {
  STRATA_ASSERT(m >= 1 && n >= 1 && k >= 1, "linear_gemm_efficiency: m, n, k >= 1");
  // An output beyond the grid keeps the grid edge's rate, scaled by how much better (or worse)
  // its tiles fill the last wave than the clamped shape's.
  auto beyond = [&](double edge) {
    return wave_utilization(gpu, m, n) / wave_utilization(gpu, std::min(m, edge), std::min(n, edge));
  };
  if (measured != nullptr) {
    STRATA_ASSERT(peak > 0, "linear_gemm_efficiency: a measured grid needs the dtype's peak");
    return std::min(1.0, gemm_grid_rate(*measured, m, n, k) / peak * beyond(measured->sizes.back()));
  }
  if (gpu.measured_gemm == nullptr) return gemm_shape_efficiency(gpu, m, n);
  return std::min(1.0, gpu.measured_gemm(m, n, k) * beyond(kGemmTableMax));
}

double memory_kernel_efficiency(const GpuProfile& gpu, double bytes, double bw) {
  STRATA_ASSERT(bytes > 0 && bw > 0, "memory_kernel_efficiency: bytes and bw > 0");
  return bytes / (bw * (gpu.launch_s + bytes / (bw * gpu.stream_efficiency)));
}

double kernel_time(const GpuProfile& gpu, double flops, double peak, double efficiency, double bytes,
                   double bw, double mem_efficiency) {
  const double compute = flops > 0 && peak > 0 ? flops / (peak * efficiency) : 0;
  const double memory = bytes > 0 && bw > 0 ? bytes / (bw * mem_efficiency) : 0;
  return gpu.launch_s + std::max(compute, memory);
}

namespace {

// A shape attribute >= 1, else nullopt (a hand-written Plan may lack it or hold nonsense).
std::optional<double> dim(const Task& task, const char* key) {
  const std::optional<double> v = task.attr_real(key);
  if (v && *v >= 1 && std::isfinite(*v)) return v;
  return std::nullopt;
}

struct GpuContext {
  const GpuProfile& gpu;
  double peak;           // dense peak of the task's dtype (FLOP/s)
  double bw;             // B/s
  double mem_eff;        // achieved fraction of bw
  double elem;           // B per element
  const GemmGrid* grid;  // the calibration's GEMM rates of the task's dtype, or nullptr
  double flops_eff;      // memory-bound kinds' fraction of the fp32 peak
};

// One GEMM producing rows x cols per batch.
double gemm(const GpuContext& c, double flops, double bytes, double rows, double cols, double batch) {
  return kernel_time(c.gpu, flops, c.peak, gemm_shape_efficiency(c.gpu, rows, cols, batch), bytes, c.bw,
                     c.mem_eff);
}

// One unbatched GEMM producing rows x cols with inner dimension `inner` (a linear layer's).
double linear_gemm(const GpuContext& c, double flops, double bytes, double rows, double cols, double inner) {
  return kernel_time(c.gpu, flops, c.peak, linear_gemm_efficiency(c.gpu, rows, cols, inner, c.grid, c.peak),
                     bytes, c.bw, c.mem_eff);
}

double memory_kernel(const GpuContext& c, double bytes) {
  return kernel_time(c.gpu, 0, 0, 1, bytes, c.bw, c.mem_eff);
}

double linear_time(const GpuContext& c, const Task& task) {
  const auto m = dim(task, "m"), n = dim(task, "n"), k = dim(task, "k");
  const double bytes = task.bytes_read + task.bytes_written;
  if (!m || !n || !k)
    return kernel_time(c.gpu, task.flops, c.peak, c.gpu.gemm_efficiency, bytes, c.bw, c.mem_eff);
  switch (task.kind) {
    case TaskKind::linear_bwd_data:
      return linear_gemm(c, task.flops, bytes, *m, *k, *n);  // dX = dY W^T
    case TaskKind::linear_bwd_weight:
      return linear_gemm(c, task.flops, bytes, *k, *n, *m);  // dW = X^T dY
    default:
      return linear_gemm(c, task.flops, bytes, *m, *n, *k);  // Y = X W
  }
}

// The attention core of `batch` x `heads` independent heads of seq x head_dim (Megatron-LM as
// of Narayanan et al. 2021: batched GEMMs around its fused scale-mask-softmax kernel and a
// dropout kernel that writes a 1-byte mask), or FlashAttention's one fused kernel. The task's
// FLOPs are shared equally by its GEMMs (2 forward, 4 backward: each 2·s²·d per head).
double attention_time(const GpuContext& c, const Task& task) {
  const auto batch = dim(task, "batch"), heads = dim(task, "heads"), seq = dim(task, "seq"),
             head_dim = dim(task, "head_dim");
  const bool forward = task.kind == TaskKind::attention_fwd;
  const bool flash = task.attr_int("flash").value_or(0) != 0;
  if (!batch || !heads || !seq || !head_dim)
    return kernel_time(c.gpu, task.flops, c.peak, c.gpu.gemm_efficiency, task.bytes_read + task.bytes_written,
                       c.bw, c.mem_eff);
  const double b = *batch * *heads, s = *seq, d = *head_dim, e = c.elem;
  if (flash) {  // reads Q, K, V (and O, dO backward), writes O (dQ, dK, dV backward)
    const double eff = forward ? c.gpu.flash_fwd_efficiency : c.gpu.flash_bwd_efficiency;
    return kernel_time(c.gpu, task.flops, c.peak, eff, (forward ? 4 : 8) * e * b * s * d, c.bw, c.mem_eff);
  }
  const double scores = e * b * s * s;  // one s x s tensor of every head (B)
  const double rows = e * b * s * d;    // one s x d tensor of every head (B)
  const double mask = b * s * s;        // the dropout mask, 1 B per element
  // A causal softmax (attr causal = 1: Megatron-LM's scaled_upper_triang_masked_softmax) reads
  // only the lower triangle of each row and writes whole rows, zeros above the diagonal.
  const double read = task.attr_int("causal").value_or(0) != 0 ? 0.5 : 1;
  if (forward) {
    const double f = task.flops / 2;
    return gemm(c, f, 2 * rows + scores, s, s, b)     // S = Q K^T
           + memory_kernel(c, (1 + read) * scores)    // P = softmax(scale·S + mask)
           + memory_kernel(c, 2 * scores + mask)      // dropout(P), writing its mask
           + gemm(c, f, scores + 2 * rows, s, d, b);  // O = dropout(P) V
  }
  const double f = task.flops / 4;
  return gemm(c, f, scores + 2 * rows, s, d, b)       // dV = P^T dO
         + gemm(c, f, 2 * rows + scores, s, s, b)     // dP = dO V^T
         + memory_kernel(c, 2 * scores + mask)        // dropout backward
         + memory_kernel(c, (1 + 2 * read) * scores)  // softmax backward: y, dy -> dx
         + gemm(c, f, scores + 2 * rows, s, d, b)     // dQ = dS K
         + gemm(c, f, scores + 2 * rows, s, d, b);    // dK = dS^T Q
}

// The bytes a memory-bound kernel moves. A layer task's backward counts dY read and dX written;
// the backward kernels of a layer norm (mean and variance from x), of GeLU (its derivative at x)
// and of the softmax cross-entropy (the saved probabilities) also read the saved forward tensor,
// the size of dX: once more the bytes written. A task with a `kernels` attribute counts every
// byte its kernels move already.
double memory_kernel_bytes(const Task& task) {
  const double bytes = task.bytes_read + task.bytes_written;
  if (task.attrs.contains("kernels")) return bytes;
  switch (task.kind) {
    case TaskKind::norm_bwd:
    case TaskKind::activation_bwd:
    case TaskKind::loss_bwd:
      return bytes + task.bytes_written;
    default:
      return bytes;
  }
}

double own_kernels_time(const GpuContext& c, const Task& task, const HostSpec& host) {
  switch (task.kind) {
    case TaskKind::linear_fwd:
    case TaskKind::linear_bwd_data:
    case TaskKind::linear_bwd_weight:
      return linear_time(c, task);
    case TaskKind::attention_fwd:
    case TaskKind::attention_bwd:
      return attention_time(c, task);
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
      return kernel_time(c.gpu, task.flops, c.peak, c.gpu.gemm_efficiency,
                         task.bytes_read + task.bytes_written, c.bw, c.mem_eff);
    default: {
      // Elementwise work runs on the CUDA cores, at the fp32 (non-tensor) rate; `kernels`
      // kernels launch, sharing the task's bytes and FLOPs.
      const double kernels =
          static_cast<double>(std::max<std::int64_t>(1, task.attr_int("kernels").value_or(1)));
      return (kernels - 1) * c.gpu.launch_s +
             kernel_time(c.gpu, task.flops, host.flops_fp32 > 0 ? host.flops_fp32 : c.peak, c.flops_eff,
                         memory_kernel_bytes(task), c.bw, c.mem_eff);
    }
  }
}

double passes_time(const GpuContext& c, const Task& task) {
  const std::int64_t passes = std::max<std::int64_t>(0, task.attr_int("passes").value_or(0));
  const double bytes = std::max(0.0, task.attr_real("pass_bytes").value_or(0));
  const double memory = bytes > 0 && c.bw > 0 ? bytes / (c.bw * c.mem_eff) : 0;
  return static_cast<double>(passes) * c.gpu.launch_s + memory;
}

}  // namespace

double gpu_task_time(const Task& task, const HostSpec& host, double mem_efficiency, double flops_efficiency,
                     const GemmGrid* gemm) {
  STRATA_ASSERT(host.gpu != GpuType::none, "gpu_task_time on a host without a GPU type: " + host.name);
  const GpuProfile& gpu = gpu_profile(host.gpu);
  const GpuContext c{gpu,
                     host.peak_flops(task.dtype),
                     host.mem_bw,
                     mem_efficiency > 0 ? mem_efficiency : gpu.stream_efficiency,
                     static_cast<double>(bytes_per_element(task.dtype)),
                     gemm,
                     flops_efficiency};
  STRATA_ASSERT(c.peak > 0, "host '" + host.name + "' has no FLOP/s for task " + task.id);
  // A task without work launches nothing (a synthetic model's optimizer step, layer_tasks.hpp).
  if (task.flops <= 0 && task.bytes_read + task.bytes_written <= 0) return 0;
  return own_kernels_time(c, task, host) + passes_time(c, task);
}

}  // namespace models
}  // namespace strata
