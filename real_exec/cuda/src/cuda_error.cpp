#include "cuda_error.hpp"

#include "strata/traces/error.hpp"

namespace strata::real::cuda_detail {

void check_cuda(cudaError_t status, const std::string& call) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // reset the non-sticky error state
  throw InputError(input_error_message(
      "CUDA", call, std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")"));
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw InputError(input_error_message(
      "CUDA", call, std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")"));
}

void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), std::string("launch of ") + kernel); }

}  // namespace strata::real::cuda_detail
