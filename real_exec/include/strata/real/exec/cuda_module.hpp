// The CUDA backend as a module loaded when a command needs a GPU.
//
// cuBLAS and the CUDA runtime map about 600 MB of address space when they are loaded: linked into
// strata, every process paid for them before doing anything (`strata --help` used 247 MiB), and
// under an address-space limit they left no room for the work. So real_exec/cuda builds a
// shared module, libstrata_cuda.so, beside the strata executable, and strata loads it (dlopen)
// the first time `--device cuda` needs it. The module takes everything but CUDA itself from the
// executable, which exports its symbols for it (cli/CMakeLists.txt).
//
// In a build without the CUDA toolkit there is no module: cuda_module_built() is false and
// load_cuda_module() says so in one line.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <type_traits>

#include "strata/models/cost/calibration_fit.hpp"
#include "strata/models/cost/gemm_grid.hpp"
#include "strata/real/exec/task_runner.hpp"

namespace strata::real {

// What the module provides: the functions of cuda_backend.hpp, cuda_task_runner.hpp and
// cuda_calibrate.hpp that the CLI calls.
struct CudaModule {
  int (*device_count)() noexcept;
  ExecutorFactory<float> (*executor_float)(int device);
  ExecutorFactory<double> (*executor_double)(int device);
  MachinePeaks (*measure_peaks)(int device, const std::function<void(const std::string&)>& progress);
  std::map<std::string, GemmGrid> (*measure_gemm_grids)(
      int device, const std::function<void(const std::string&)>& progress);

  template <typename T>
  ExecutorFactory<T> executor(int device) const {
    if constexpr (std::is_same_v<T, float>)
      return executor_float(device);
    else
      return executor_double(device);
  }
};

// The name of the C function the module exports, returning `const CudaModule*`.
inline constexpr const char* kCudaModuleEntry = "strata_cuda_module";

// Whether this build has the CUDA backend.
bool cuda_module_built();

// The module, loaded on the first call: from the executable's directory, else from where the
// build put it. Throws InputError "--device cuda: cannot load the CUDA backend <file>: <why>".
const CudaModule& load_cuda_module();

}  // namespace strata::real
