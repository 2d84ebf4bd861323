#include "strata/real/exec/cuda_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// STRATA_CUDA_MODULE: the module's file name and its path in the build tree, set by
// real_exec/cuda/CMakeLists.txt when the backend is built.
#ifdef STRATA_CUDA_MODULE
constexpr const char* kModuleName = STRATA_CUDA_MODULE_NAME;
constexpr const char* kModuleBuildPath = STRATA_CUDA_MODULE;
#endif

using Entry = const CudaModule* (*)();

#ifdef STRATA_CUDA_MODULE
const CudaModule* open_module() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  std::string tried;
  std::string why;
  for (const std::string& file :
       {error ? std::string() : (exe.parent_path() / kModuleName).string(), std::string(kModuleBuildPath)}) {
    if (file.empty() || !std::filesystem::exists(file, error)) continue;
    tried = file;
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* text = ::dlerror();
      why = text != nullptr ? text : "dlopen failed";
      continue;
    }
    // POSIX: a function pointer and void* convert through dlsym's result.
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, kCudaModuleEntry));
    if (entry == nullptr) {
      why = "no entry point " + std::string(kCudaModuleEntry);
      continue;
    }
    return entry();
  }
  if (tried.empty()) tried = kModuleName, why = "not found beside the executable nor in the build tree";
  throw InputError("--device cuda: cannot load the CUDA backend " + tried + ": " + why);
}
#endif

}  // namespace

bool cuda_module_built() {
#ifdef STRATA_CUDA_MODULE
  return true;
#else
  return false;
#endif
}

const CudaModule& load_cuda_module() {
#ifdef STRATA_CUDA_MODULE
  static std::mutex mutex;
  static const CudaModule* module = nullptr;
  const std::lock_guard lock(mutex);
  if (module == nullptr) module = open_module();
  return *module;
#else
  throw InputError(
      "--device cuda: this build of strata has no CUDA backend (install the CUDA toolkit and rebuild)");
#endif
}

}  // namespace strata::real
