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
#pragma once

#include "strata/real/calibrate/calibrate.hpp"

namespace strata::real {

inline constexpr int kCudaWorkerSlots = 8;

MachinePeaks measure_cuda_peaks(int device, const Progress& progress = {});

}  // namespace strata::real
