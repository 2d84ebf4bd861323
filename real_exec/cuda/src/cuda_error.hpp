// How the CUDA backend reports a failed CUDA runtime call (private to real_exec/cuda).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace strata::real::cuda_detail {

// Throws InputError "CUDA: <call>: <error name> (<error string>)" unless status is cudaSuccess.
// The thread's last-error state is cleared first, so that a later launch check does not report
// this error again under another name.
void check_cuda(cudaError_t status, const std::string& call);

// Throws InputError "CUDA: <call>: <status name> (<status string>)" unless status is success.
void check_cublas(cublasStatus_t status, const char* call);

// Checks that the kernel launch just made was accepted (cudaGetLastError), naming the kernel.
void check_launch(const char* kernel);

}  // namespace strata::real::cuda_detail
