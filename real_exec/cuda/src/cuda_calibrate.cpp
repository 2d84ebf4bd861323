// measure_cuda_peaks: cuBLAS GEMM and axpy rates on one GPU (cuda_calibrate.hpp).
#include "strata/real/cuda_calibrate.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "cuda_error.hpp"
#include "strata/real/cuda_backend.hpp"
#include "strata/real/device_array.hpp"

namespace strata::real {
namespace {

using cuda_detail::check_cuda;

// Median over 7 timings (after one warm-up) of `reps` calls of `work` queued back to back on the
// backend's stream, per call, in seconds.
double time_on_stream(CudaBackend& backend, const std::function<void()>& work, int reps) {
  cudaStream_t stream = backend.activate();
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int t = 0; t < 8; ++t) {
    check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int r = 0; r < reps; ++r) work();
    check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (t > 0) times.push_back(static_cast<double>(ms) * 1e-3 / reps);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <typename T>
double gemm_rate(CudaBackend& backend, std::int64_t n) {
  std::vector<T> host(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<T>((i * 7919 % 1000) * 1e-3 - 0.5);
  DeviceArray<T> a(host), b(host), c(n * n);
  const double t = time_on_stream(
      backend,
      [&] {
        backend.gemm(Transpose::no, Transpose::no, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(),
                     n);
      },
      5);
  return 2.0 * static_cast<double>(n * n * n) / t;
}

double axpy_bandwidth(CudaBackend& backend) {
  constexpr std::int64_t kElems = std::int64_t{64} << 20;
  DeviceArray<float> x(kElems), y(kElems);
  x.zero();
  y.zero();
  const double t = time_on_stream(
      backend, [&] { backend.axpy(kElems, 0.5f, x.data(), y.data()); }, 5);
  return 3.0 * sizeof(float) * static_cast<double>(kElems) / t;
}

}  // namespace

MachinePeaks measure_cuda_peaks(int device, const Progress& progress) {
  CudaBackend backend(device);
  cudaDeviceProp props{};
  check_cuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  MachinePeaks p;
  p.host = props.name;
  p.cores = kCudaWorkerSlots;
  if (progress) progress("GPU GEMM peak (fp32, fp64)");
  for (std::int64_t n : {1024, 2048, 4096}) {
    p.gemm_fp32 = std::max(p.gemm_fp32, gemm_rate<float>(backend, n));
    p.gemm_fp64 = std::max(p.gemm_fp64, gemm_rate<double>(backend, n));
  }
  if (progress) progress("GPU memory bandwidth (axpy)");
  p.triad_bw = axpy_bandwidth(backend);
  return p;
}

}  // namespace strata::real
