// measure_cuda_peaks: cuBLAS GEMM and axpy rates on one GPU (cuda_calibrate.hpp).
#include "strata/real/cuda_calibrate.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "cuda_error.hpp"
#include "strata/real/cuda_backend.hpp"
#include "strata/real/device_array.hpp"

namespace strata::real {
namespace {

using cuda_detail::check_cublas;
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

// The bits of x as bf16 and as fp16, rounded to nearest even. The inputs here are zero or of
// magnitude in [1e-3, 0.5]: normal in both formats.
std::uint16_t to_bf16(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

std::uint16_t to_fp16(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  if (std::fabs(x) < 6.2e-5f) return sign;  // below fp16's smallest normal: zero
  int exponent = static_cast<int>((bits >> 23) & 0xFFu) - 127 + 15;
  std::uint32_t mantissa = (bits & 0x7FFFFFu) >> 13;
  const std::uint32_t rest = bits & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (mantissa & 1u) != 0)) ++mantissa;
  if (mantissa == 0x400u) {
    mantissa = 0;
    ++exponent;
  }
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent) << 10) | mantissa);
}

// One dtype of the grid: cuBLAS's types for it, and its elements' bytes from a float.
struct GridDtype {
  const char* name;
  cudaDataType_t type;
  std::size_t bytes;
};

constexpr GridDtype kGridDtypes[] = {
    {"bf16", CUDA_R_16BF, 2},
    {"fp16", CUDA_R_16F, 2},
    {"fp32", CUDA_R_32F, 4},
};

// A device buffer of `count` elements of `dtype`, holding the values of gemm_rate's pattern.
struct DeviceBuffer {
  void* data = nullptr;
  DeviceBuffer(const GridDtype& dtype, std::size_t count) {
    std::vector<unsigned char> host(count * dtype.bytes);
    for (std::size_t i = 0; i < count; ++i) {
      const auto x = static_cast<float>((i * 7919 % 1000) * 1e-3 - 0.5);
      if (dtype.bytes == 4) {
        std::memcpy(&host[i * 4], &x, 4);
      } else {
        const std::uint16_t h = dtype.type == CUDA_R_16BF ? to_bf16(x) : to_fp16(x);
        std::memcpy(&host[i * 2], &h, 2);
      }
    }
    check_cuda(cudaMalloc(&data, host.size()), "cudaMalloc");
    check_cuda(cudaMemcpy(data, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { (void)cudaFree(data); }
};

struct DestroyHandle {
  void operator()(cublasContext* handle) const noexcept { (void)cublasDestroy(handle); }
};

}  // namespace

std::map<std::string, GemmGrid> measure_cuda_gemm_grids(int device, const Progress& progress) {
  CudaBackend backend(device);  // its stream times the GEMMs; this handle queues them there
  cublasHandle_t raw = nullptr;
  check_cublas(cublasCreate(&raw), "cublasCreate");
  const std::unique_ptr<cublasContext, DestroyHandle> handle(raw);
  check_cublas(cublasSetStream(raw, backend.activate()), "cublasSetStream");
  std::vector<double> sizes;
  for (double s = kCudaGemmGridMin; s <= kCudaGemmGridMax; s *= 2) sizes.push_back(s);
  const auto largest = static_cast<std::size_t>(kCudaGemmGridMax);
  std::map<std::string, GemmGrid> grids;
  for (const GridDtype& dtype : kGridDtypes) {
    if (progress)
      progress(std::string("GPU GEMM grid ") + dtype.name + " (" +
               std::to_string(sizes.size() * sizes.size() * sizes.size()) + " shapes)");
    // A and B are one buffer: cuBLAS only reads them.
    const DeviceBuffer ab(dtype, largest * largest), c(dtype, largest * largest);
    GemmGrid grid;
    grid.sizes = sizes;
    const float alpha = 1, beta = 0;
    for (double m : sizes)
      for (double n : sizes)
        for (double k : sizes) {
          const auto mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
          const double flops = 2 * m * n * k;
          const int reps = static_cast<int>(std::clamp(2e10 / flops, 1.0, 20.0));
          const double t = time_on_stream(
              backend,
              [&] {
                check_cublas(cublasGemmEx(raw, CUBLAS_OP_N, CUBLAS_OP_N, mi, ni, ki, &alpha, ab.data,
                                          dtype.type, mi, ab.data, dtype.type, ki, &beta, c.data, dtype.type,
                                          mi, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                             "cublasGemmEx");
              },
              reps);
          grid.flop_per_s.push_back(flops / t);
        }
    grids[dtype.name] = std::move(grid);
  }
  return grids;
}

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
