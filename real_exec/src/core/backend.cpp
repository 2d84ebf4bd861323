#include "strata/real/core/backend.hpp"

// Debian's libopenblas-dev installs this header through the alternatives system; with the
// pkg-config include path it is OpenBLAS's own, which also declares openblas_set_num_threads.
#include <cblas.h>

#include <limits>
#include <string>

#include "strata/traces/error.hpp"

// blas_threads.cpp (libstrata_blas_threads): OpenBLAS has started with one thread; the
// environment goes back to what the user gave.
extern "C" void strata_forget_blas_thread_setting();

namespace strata::real {
namespace {

[[gnu::constructor]] void forget_blas_thread_setting() { strata_forget_blas_thread_setting(); }

blasint to_blas_int(std::int64_t value, const char* what) {
  STRATA_ASSERT(value >= 0 && value <= std::numeric_limits<blasint>::max(),
                std::string(what) + " = " + std::to_string(value) + " out of the BLAS integer range");
  return static_cast<blasint>(value);
}

CBLAS_TRANSPOSE to_cblas(Transpose t) { return t == Transpose::yes ? CblasTrans : CblasNoTrans; }

// Row-major: a stored matrix of `cols` columns needs a leading dimension of at least `cols`.
void check_leading_dimension(std::int64_t ld, std::int64_t cols, const char* what) {
  STRATA_ASSERT(ld >= 1 && ld >= cols, std::string(what) + " = " + std::to_string(ld) +
                                           " is below the stored row length " + std::to_string(cols));
}

struct BlasGemmDims {
  blasint m, n, k, lda, ldb, ldc;
};

BlasGemmDims check_gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  check_leading_dimension(lda, trans_a == Transpose::no ? k : m, "lda");
  check_leading_dimension(ldb, trans_b == Transpose::no ? n : k, "ldb");
  check_leading_dimension(ldc, n, "ldc");
  return {to_blas_int(m, "m"),     to_blas_int(n, "n"),     to_blas_int(k, "k"),
          to_blas_int(lda, "lda"), to_blas_int(ldb, "ldb"), to_blas_int(ldc, "ldc")};
}

}  // namespace

CpuBackend::CpuBackend() { openblas_set_num_threads(1); }

void CpuBackend::gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                      float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                      float beta, float* c, std::int64_t ldc) {
  const BlasGemmDims d = check_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (d.m == 0 || d.n == 0) return;
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), d.m, d.n, d.k, alpha, a, d.lda, b, d.ldb,
              beta, c, d.ldc);
}

void CpuBackend::gemm(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                      double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
                      double beta, double* c, std::int64_t ldc) {
  const BlasGemmDims d = check_gemm(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (d.m == 0 || d.n == 0) return;
  cblas_dgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), d.m, d.n, d.k, alpha, a, d.lda, b, d.ldb,
              beta, c, d.ldc);
}

void CpuBackend::axpy(std::int64_t n, float alpha, const float* x, float* y) {
  cblas_saxpy(to_blas_int(n, "n"), alpha, x, 1, y, 1);
}

void CpuBackend::axpy(std::int64_t n, double alpha, const double* x, double* y) {
  cblas_daxpy(to_blas_int(n, "n"), alpha, x, 1, y, 1);
}

void CpuBackend::scale(std::int64_t n, float alpha, float* x) {
  cblas_sscal(to_blas_int(n, "n"), alpha, x, 1);
}

void CpuBackend::scale(std::int64_t n, double alpha, double* x) {
  cblas_dscal(to_blas_int(n, "n"), alpha, x, 1);
}

}  // namespace strata::real
