// The entry point of libstrata_cuda.so (strata/real/exec/cuda_module.hpp).
#include "strata/real/exec/cuda_module.hpp"

#include "strata/real/cuda_backend.hpp"
#include "strata/real/cuda_calibrate.hpp"
#include "strata/real/cuda_task_runner.hpp"

namespace {

strata::real::MachinePeaks measure_peaks(int device,
                                         const std::function<void(const std::string&)>& progress) {
  return strata::real::measure_cuda_peaks(device, progress);
}

std::map<std::string, strata::GemmGrid> measure_gemm_grids(
    int device, const std::function<void(const std::string&)>& progress) {
  return strata::real::measure_cuda_gemm_grids(device, progress);
}

strata::real::ExecutorFactory<float> executor_float(int device) {
  return strata::real::cuda_executor<float>(device);
}

strata::real::ExecutorFactory<double> executor_double(int device) {
  return strata::real::cuda_executor<double>(device);
}

}  // namespace

extern "C" [[gnu::visibility("default")]] const strata::real::CudaModule* strata_cuda_module() {
  static const strata::real::CudaModule module{&strata::real::cuda_device_count, &executor_float,
                                               &executor_double, &measure_peaks, &measure_gemm_grids};
  return &module;
}
