// CudaBackend: the Backend on one NVIDIA GPU, cuBLAS on device pointers.
//
// It implements the row-major Backend interface (backend.hpp) on cuBLAS, which is column-major:
// a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so the operands are
// swapped and no data is transposed. Leading dimensions keep their row-major meaning and the
// same preconditions as CpuBackend (checked with STRATA_ASSERT), and beta == 0 never reads C.
//
// Every pointer handed to a CudaBackend — and to the kernels of cuda_kernels.hpp, which take it
// for its stream — is a device pointer of device(): a DeviceArray's data() or a slice of it.
// Scalars (alpha, beta) are host values.
//
// Ordering: calls are asynchronous. Each one is queued on the backend's own stream and returns
// before the GPU has run it; the work of one backend runs in call order. synchronize() waits for
// all of it and is where an error of a queued kernel surfaces. The stream is a blocking one, so
// the synchronous copies of DeviceArray (on CUDA's legacy default stream) wait for it too.
// Errors: a failing CUDA or cuBLAS call throws InputError "CUDA: <call>: <error name> (<error
// string>)"; a broken precondition (a size, a leading dimension) trips STRATA_ASSERT.
// Ownership: the backend owns its stream and cuBLAS handle and no tensors: pointers are borrowed
// for the duration of a call (until synchronize() for the GPU's use of them).
// Thread safety: the methods may be called from any host thread (each one makes device() the
// thread's current device first) and concurrently: cuBLAS allows a handle shared by threads as
// long as its configuration does not change, which it never does after construction. Concurrent
// callers still share one stream, so their work runs one after the other; a worker that wants its
// own queue owns its own CudaBackend.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "strata/real/core/backend.hpp"

struct cublasContext;  // cublas_api.h's handle type; cuBLAS stays out of this header

namespace strata::real {

// Number of CUDA devices this process can use; 0 when there is no GPU, no driver, or a driver
// older than the runtime. Never throws; it is the test to run before constructing a CudaBackend.
int cuda_device_count() noexcept;

class CudaBackend final : public Backend {
 public:
  // Makes `device` the calling thread's current device and creates a stream and a cuBLAS handle
  // on it. Throws InputError when there is no such device (0 <= device < cuda_device_count()) or
  // when CUDA or cuBLAS fails to initialise.
  explicit CudaBackend(int device = 0);

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda-cublas"; }

  void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
            const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
            std::int64_t ldc) override;
  void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
            double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
            double* c, std::int64_t ldc) override;

  void axpy(std::int64_t n, float alpha, const float* x, float* y) override;
  void axpy(std::int64_t n, double alpha, const double* x, double* y) override;

  void scale(std::int64_t n, float alpha, float* x) override;
  void scale(std::int64_t n, double alpha, double* x) override;

  int device() const { return device_; }

  // Makes device() the calling thread's current device and returns the stream that every call of
  // this backend is queued on; kernels launched on it run in order with the backend's own work.
  cudaStream_t activate() const;

  // Blocks until everything queued so far has run. Throws InputError if any of it failed (an
  // illegal address in a kernel, say): CUDA reports such errors here, not at the launch.
  void synchronize() const;

 private:
  struct DestroyStream {
    void operator()(CUstream_st* stream) const noexcept;
  };
  struct DestroyCublas {
    void operator()(cublasContext* handle) const noexcept;
  };

  int device_;
  // Declared in this order so that the handle, which uses the stream, is destroyed first.
  std::unique_ptr<CUstream_st, DestroyStream> stream_;
  std::unique_ptr<cublasContext, DestroyCublas> cublas_;
};

}  // namespace strata::real
