// Backend: the dense linear algebra the real kernels need, behind one interface so that the
// same kernels run on the CPU (BLAS) and, later, on a GPU (cuBLAS) backend.
//
// Every operation exists for float and double as overloads, so kernels templated on the
// element type call `backend.gemm(...)` and get the right precision. Matrices are row-major;
// a leading dimension is the distance in elements between consecutive rows of the matrix *as
// stored* (before the transpose flag is applied), as in CBLAS with CblasRowMajor.
//
// Preconditions (checked with STRATA_ASSERT, a violation is a bug in the caller): sizes >= 0,
// leading dimensions at least the stored row length and >= 1, sizes that fit the BLAS integer.
// With beta == 0 the output is overwritten and its previous contents are never read (BLAS
// semantics), so outputs need no zeroing beforehand.
// Ownership: a backend owns no tensors; pointers are borrowed for the duration of a call.
// Thread safety: CpuBackend has no state; one instance may be shared by worker threads.
#pragma once

#include <cstdint>
#include <string>

namespace strata::real {

enum class Transpose : std::uint8_t { no, yes };

class Backend {
 public:
  virtual ~Backend() = default;

  // Short identifier recorded in traces and calibration files, e.g. "cpu-openblas".
  virtual std::string name() const = 0;

  // C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n].
  virtual void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                    float beta, float* c, std::int64_t ldc) = 0;
  virtual void gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
                    double beta, double* c, std::int64_t ldc) = 0;

  // y[0..n) += alpha * x[0..n)
  virtual void axpy(std::int64_t n, float alpha, const float* x, float* y) = 0;
  virtual void axpy(std::int64_t n, double alpha, const double* x, double* y) = 0;

  // x[0..n) *= alpha
  virtual void scale(std::int64_t n, float alpha, float* x) = 0;
  virtual void scale(std::int64_t n, double alpha, double* x) = 0;
};

// Makes OpenBLAS's work buffers for `callers` threads that may be inside BLAS at once, before
// they start (call it from the thread that starts them, while no other thread runs BLAS). Debian's
// OpenBLAS 0.3.21 maps one 128 MiB buffer per concurrent caller on first use and, when the
// address space is exhausted (ulimit -v), retries the mapping for ever (driver/others/memory.c,
// blas_memory_alloc; fixed upstream in 0.3.30): a run hung instead of failing. Made here, the
// buffers are reused by every later call, so BLAS never maps again. Throws InputError, one line,
// when the address space left cannot hold them, or when OpenBLAS runs threads of its own (a
// user's OPENBLAS_NUM_THREADS) under an address-space limit. Without OpenBLAS (another BLAS) it
// only checks the room.
void prepare_blas_buffers(int callers);

// Backend on OpenBLAS's CBLAS. Its constructor sets OpenBLAS to one thread, process-wide:
// strata parallelises across workers (one pinned thread each), and a multi-threaded BLAS
// under every worker would oversubscribe the cores and blur the per-task timings that
// calibration measures.
class CpuBackend final : public Backend {
 public:
  CpuBackend();

  std::string name() const override { return "cpu-openblas"; }

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
};

}  // namespace strata::real
