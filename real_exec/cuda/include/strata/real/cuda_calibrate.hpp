// The GPU's side of `strata calibrate --device cuda`: its peaks, as calibrate.hpp's
// measure_peaks measures a CPU core's, so that fit_calibration and the simulator treat the GPU
// as one more machine.
//
// - GEMM: cuBLAS on device arrays at 1024, 2048 and 4096 (fp32 and fp64), the best rate; each
//   product queued 5 times and timed with CUDA events, the median of 7 such timings.
// - Memory bandwidth: cuBLAS axpy over two 64 Mi-element fp32 arrays (it reads two and writes
//   one array: 3·4·n bytes), timed as above.
// - cores: kCudaWorkerSlots, the number of workers (each a compute and a comm stream) the
//   emitted platform lets run at once. The model treats the GPU as that many slots each at the
//   full measured rate: right while kernels are small enough to share the SMs without slowing
//   each other (the zoo's, at batch 64), optimistic for kernels that fill the GPU alone.
// - host: the GPU's name from cudaGetDeviceProperties ("NVIDIA H100 80GB HBM3").
// Throws InputError when the device cannot be used.
//
// measure_cuda_gemm_grids: one cuBLAS GEMM (cublasGemmEx, no transposes, fp32 accumulation) of
// every m x n x k with m, n, k in 256, 512, ..., 16384, in bf16, fp16 and fp32 (fp32 is plain
// fp32, not TF32: cuBLAS's default math mode, as PyTorch's since 1.12); each timed as above, with
// 20e9 / (2·m·n·k) calls per timing (1 to 20), and the rate 2·m·n·k over the time per call
// written to the calibration's "gemm" table (gemm_grid.hpp). A call's time includes the gap
// between back-to-back calls on one stream, as a training step's kernels have it.
#pragma once

#include <map>
#include <string>

#include "strata/models/cost/gemm_grid.hpp"
#include "strata/real/calibrate/calibrate.hpp"

namespace strata::real {

inline constexpr int kCudaWorkerSlots = 8;

inline constexpr double kCudaGemmGridMin = 256;
inline constexpr double kCudaGemmGridMax = 16384;

MachinePeaks measure_cuda_peaks(int device, const Progress& progress = {});

std::map<std::string, GemmGrid> measure_cuda_gemm_grids(int device, const Progress& progress = {});

}  // namespace strata::real
