#include "strata/real/cuda_backend.hpp"

#include <cublas_v2.h>

#include <string>

#include "cuda_error.hpp"
#include "matrix_scale.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using cuda_detail::check_cublas;
using cuda_detail::check_cuda;

cublasOperation_t to_cublas(Transpose t) { return t == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N; }

// Row-major: a stored matrix of `cols` columns needs a leading dimension of at least `cols`
// (the same preconditions as CpuBackend, so that a Plan that runs on one runs on the other).
void check_leading_dimension(std::int64_t ld, std::int64_t cols, const char* what) {
  STRATA_ASSERT(ld >= 1 && ld >= cols, std::string(what) + " = " + std::to_string(ld) +
                                           " is below the stored row length " + std::to_string(cols));
}

void check_gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  STRATA_ASSERT(m >= 0 && n >= 0 && k >= 0, "gemm sizes m " + std::to_string(m) + ", n " + std::to_string(n) +
                                                ", k " + std::to_string(k));
  check_leading_dimension(lda, trans_a == Transpose::no ? k : m, "lda");
  check_leading_dimension(ldb, trans_b == Transpose::no ? n : k, "ldb");
  check_leading_dimension(ldc, n, "ldc");
}

void check_length(std::int64_t n) { STRATA_ASSERT(n >= 0, "vector length " + std::to_string(n)); }

}  // namespace

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error for a caller that only asks
    return 0;
  }
  return count;
}

void CudaBackend::DestroyStream::operator()(CUstream_st* stream) const noexcept {
  (void)cudaStreamDestroy(stream);
}

void CudaBackend::DestroyCublas::operator()(cublasContext* handle) const noexcept {
  (void)cublasDestroy(handle);
}

CudaBackend::CudaBackend(int device) : device_(device) {
  const int count = cuda_device_count();
  if (device < 0 || device >= count) {
    throw InputError(input_error_message(
        "CUDA", "device " + std::to_string(device),
        count == 0 ? "no CUDA device is available" : "out of range, there are " + std::to_string(count)));
  }
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  stream_.reset(stream);
  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  cublas_.reset(handle);
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  // The default math mode, stated: FP32 GEMMs stay FP32 (no TF32 tensor cores, which keep 10
  // mantissa bits), so float results agree with the CPU backend to rounding.
  check_cublas(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

cudaStream_t CudaBackend::activate() const {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  return stream_.get();
}

void CudaBackend::synchronize() const {
  activate();
  check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. A row-major matrix read as
// column-major is its transpose, so cuBLAS gets B first, A second, each with its own flag
// unchanged, and the dimensions n x m x k; every leading dimension keeps its value. With k == 0
// or alpha == 0 the product vanishes and BLAS defines C = beta C without reading A and B (an
// empty microbatch's weight gradient is such a GEMM); that is done here, not left to cuBLAS.
void CudaBackend::gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                       float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                       float beta, float* c, std::int64_t ldc) {
  check_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  const cudaStream_t stream = activate();
  if (k == 0 || alpha == float{0}) {
    cuda_detail::scale_matrix(stream, m, n, beta, c, ldc);
    return;
  }
  check_cublas(cublasSgemm_64(cublas_.get(), to_cublas(trans_b), to_cublas(trans_a), n, m, k, &alpha, b, ldb,
                              a, lda, &beta, c, ldc),
               "cublasSgemm_64");
}

void CudaBackend::gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                       double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
                       double beta, double* c, std::int64_t ldc) {
  check_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  const cudaStream_t stream = activate();
  if (k == 0 || alpha == double{0}) {
    cuda_detail::scale_matrix(stream, m, n, beta, c, ldc);
    return;
  }
  check_cublas(cublasDgemm_64(cublas_.get(), to_cublas(trans_b), to_cublas(trans_a), n, m, k, &alpha, b, ldb,
                              a, lda, &beta, c, ldc),
               "cublasDgemm_64");
}

void CudaBackend::axpy(std::int64_t n, float alpha, const float* x, float* y) {
  check_length(n);
  activate();
  check_cublas(cublasSaxpy_64(cublas_.get(), n, &alpha, x, 1, y, 1), "cublasSaxpy_64");
}

void CudaBackend::axpy(std::int64_t n, double alpha, const double* x, double* y) {
  check_length(n);
  activate();
  check_cublas(cublasDaxpy_64(cublas_.get(), n, &alpha, x, 1, y, 1), "cublasDaxpy_64");
}

void CudaBackend::scale(std::int64_t n, float alpha, float* x) {
  check_length(n);
  activate();
  check_cublas(cublasSscal_64(cublas_.get(), n, &alpha, x, 1), "cublasSscal_64");
}

void CudaBackend::scale(std::int64_t n, double alpha, double* x) {
  check_length(n);
  activate();
  check_cublas(cublasDscal_64(cublas_.get(), n, &alpha, x, 1), "cublasDscal_64");
}

}  // namespace strata::real
