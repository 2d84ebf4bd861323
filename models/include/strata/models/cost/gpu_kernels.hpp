// GPU kernels: what the cost model knows of one GPU type, and the time of the kernels a compute
// task runs on it.
//
// A GPU host (a host with a `gpus` property) has a GpuType, inferred from its properties
// (hardware.cpp: infer_gpu_type). Its GpuProfile holds the few measured figures the kernel times
// need; every figure's source is written next to it in gpu_kernels.cpp and docs/cost-model.md:
//   - GEMMs (cuBLAS): the maximum achievable fraction of the dense tensor-core peak, reduced by
//     the wave quantisation of the output tiles over the streaming multiprocessors (NVIDIA,
//     "Matrix Multiplication Background User's Guide", sections 2.3 and 3.2), and bounded below
//     by the bytes the GEMM moves over the achieved HBM bandwidth;
//   - memory-bound kernels: a fixed cost per kernel plus the bytes read and written over the
//     bandwidth a streaming kernel sustains, so a small kernel reaches a smaller fraction of HBM
//     bandwidth than a large one (memory_kernel_efficiency);
//   - the same fixed cost for every kernel; a task made of several kernels (the unfused
//     attention core: GEMM, softmax, dropout, GEMM; a framework's passes around a GEMM, the
//     `passes` and `pass_bytes` attributes) costs the sum of its kernels.
// Hosts without a GPU type (CPU hosts, HostSpecs built in code) keep the roofline of
// cost_model.hpp unchanged.
#pragma once

#include "strata/models/cost/gemm_grid.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

struct GpuProfile {
  GpuType type = GpuType::none;
  int sms = 0;                      // streaming multiprocessors (datasheet)
  int tile_m = 0, tile_n = 0;       // the largest cuBLAS output tile (MMB guide, section 2.3)
  double gemm_efficiency = 0;       // achievable fraction of dense peak, large aligned GEMMs
  double flash_fwd_efficiency = 0;  // fused attention forward, fraction of dense peak
  double flash_bwd_efficiency = 0;  // fused attention backward
  double launch_s = 0;              // fixed cost per kernel (s)
  double stream_efficiency = 0;     // a large streaming kernel's fraction of HBM bandwidth
  // A measured table of one GEMM's efficiency by shape (m x n output, inner k), where the GPU
  // type has one (H100 SXM: gemm_table.cpp), else nullptr.
  double (*measured_gemm)(double m, double n, double k) = nullptr;
};

// REQUIRES: type != GpuType::none.
const GpuProfile& gpu_profile(GpuType type);

// The measured GEMM table shipped for a GPU type, as FLOP/s (H100 SXM: gemm_table.cpp), or nullptr.
const GemmGrid* shipped_gemm_grid(GpuType type);

// One GEMM (or `batch` independent GEMMs of one shape, a strided-batched call) producing an
// m x n output per batch: the fraction of the tile slots of its last wave that hold work,
// tiles / (waves x sms), with the tile orientation (tile_m x tile_n or tile_n x tile_m) that
// wastes less. 1 when the tiles fill whole waves. REQUIRES: m, n, batch >= 1.
double wave_utilization(const GpuProfile& gpu, double m, double n, double batch = 1);

// The GEMM efficiency of that shape: gemm_efficiency x wave_utilization.
double gemm_shape_efficiency(const GpuProfile& gpu, double m, double n, double batch = 1);

// The efficiency of one (unbatched) GEMM of an m x n output and inner dimension k, from the first
// of: `measured` (a calibration's grid of FLOP/s, over `peak`, the dtype's dense peak), the GPU
// type's shipped table (256 .. 4096 each way), gemm_shape_efficiency(m, n). A table is
// interpolated within its grid and, for an output beyond it, scaled by the wave utilisation of
// the shape over that of the output clamped to the grid; never above 1 (a grid measured on a
// faster GPU than the host's says nothing of it beyond the host's peak).
// REQUIRES: m, n, k >= 1; peak > 0 when measured is given.
double linear_gemm_efficiency(const GpuProfile& gpu, double m, double n, double k,
                              const GemmGrid* measured = nullptr, double peak = 0);

// Seconds of one kernel: launch + max(flops / (peak x efficiency), bytes / (bw x mem_eff)).
// peak or bw of 0 drop their term.
double kernel_time(const GpuProfile& gpu, double flops, double peak, double efficiency, double bytes,
                   double bw, double mem_efficiency);

// The fraction of `bw` a memory-bound kernel moving `bytes` reaches, its fixed cost included:
// bytes / (bw x (launch_s + bytes / (bw x stream_efficiency))). Small kernels do not reach
// streaming bandwidth: on an A100 80 GB (2.039 TB/s) 1 MB reaches 0.16, 100 MB 0.82, 1 GB 0.85.
// REQUIRES: bytes > 0, bw > 0.
double memory_kernel_efficiency(const GpuProfile& gpu, double bytes, double bw);

// Seconds of a compute task on a GPU host, as the sum of the kernels it runs (docs/cost-model.md):
//   linear_*           one GEMM of the phase's shape (attrs m, n, k; forward m x n, inner k;
//                      backward data m x k, inner n; backward weight k x n, inner m);
//   attention_fwd      QK^T, fused scale-mask-softmax, dropout, attention x V (attrs batch,
//                      heads, seq, head_dim), or one fused kernel when attr flash = 1;
//   attention_bwd      four GEMMs (dV, dP, dQ, dK), dropout and softmax backward, or one fused
//                      kernel when flash = 1;
//   conv_*             one GEMM-like kernel at gemm_efficiency;
//   every other kind   one memory-bound kernel (attr `kernels`: that many, the task's bytes
//                      being every kernel's traffic): its bytes over mem_bw x mem_efficiency
//                      (its FLOPs at `flops_efficiency` of the fp32 peak, never binding in
//                      practice); without `kernels`, norm_bwd, activation_bwd and loss_bwd
//                      also read their saved forward tensor (the size of what they write).
// Attributes `passes` and `pass_bytes` on any task: the memory-bound kernels a framework runs
// beside the task's own (layer_tasks.hpp, framework kernels), `passes` launches and
// `pass_bytes` at mem_efficiency; passes = 0 is traffic in the epilogue of the task's kernel
// (the fp32 gradient accumulation of a weight-gradient GEMM), which does not overlap it.
// `mem_efficiency`: the calibration's figure, or 0 for the GPU type's stream_efficiency.
// A task without its shape attributes is priced as one kernel at gemm_efficiency; a task without
// FLOPs or bytes launches nothing and takes 0 s. `gemm`, where given, is the calibration's
// measured grid of the task's dtype: the linear GEMMs' efficiency comes from it.
// REQUIRES: host.gpu != GpuType::none; task is a compute kind other than fixed.
double gpu_task_time(const Task& task, const HostSpec& host, double mem_efficiency, double flops_efficiency,
                     const GemmGrid* gemm = nullptr);

}  // namespace models
}  // namespace strata
