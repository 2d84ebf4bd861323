#include "strata/real/core/backend.hpp"

// Debian's libopenblas-dev installs this header through the alternatives system; with the
// pkg-config include path it is OpenBLAS's own, which also declares openblas_set_num_threads.
#include <cblas.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"
#include "strata/traces/json_stream.hpp"

// blas_threads.cpp (libstrata_blas_threads): OpenBLAS has started with one thread; the
// environment goes back to what the user gave.
extern "C" void strata_forget_blas_thread_setting();

// OpenBLAS's buffer pool (driver/others/memory.c) and thread count, exported by libopenblas but
// not in its headers; weak, so that another BLAS links too (prepare_blas_buffers then only
// checks the room).
extern "C" {
void* blas_memory_alloc(int procpos) __attribute__((weak));
void blas_memory_free(void* buffer) __attribute__((weak));
extern int blas_num_threads __attribute__((weak));   // NOLINT(readability-identifier-naming)
extern int blas_server_avail __attribute__((weak));  // NOLINT(readability-identifier-naming)
}

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

void prepare_blas_buffers(int callers) {
  STRATA_ASSERT(callers >= 1, "prepare_blas_buffers: " + std::to_string(callers) + " callers");
  // One work buffer per concurrent caller: BUFFER_SIZE (32 << 22 B, common_x86_64.h) plus the
  // page alloc_malloc adds; and room left to report and unwind.
  constexpr double kBufferBytes = (std::uint64_t{32} << 22) + 4096;
  constexpr std::uint64_t kHeadroom = std::uint64_t{16} << 20;
  rlimit limit{};
  const bool limited = ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  const int own_threads =
      &blas_num_threads != nullptr && &blas_server_avail != nullptr && blas_server_avail != 0
          ? blas_num_threads
          : 1;
  const std::string limit_text =
      limited ? std::to_string(static_cast<unsigned long long>(limit.rlim_cur / 1024)) : std::string();
  if (limited && own_threads > 1)
    throw InputError("OpenBLAS started " + std::to_string(own_threads) +
                     " threads of its own (OPENBLAS_NUM_THREADS); under an address-space limit (ulimit -v " +
                     limit_text + ") run with OPENBLAS_NUM_THREADS=1");
  const auto need = static_cast<std::size_t>(callers * kBufferBytes) + kHeadroom;
  // A reservation counts against the limit as the buffers will, and touches nothing.
  void* room = ::mmap(nullptr, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (room == MAP_FAILED) {
    char text[64];
    std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(need) / (1 << 20));
    throw InputError(
        "out of memory: OpenBLAS needs " + std::string(text) + " of address space for " +
        std::to_string(callers) + " worker stream(s) (128 MiB each)" +
        (limited ? " under ulimit -v " + limit_text + " (" + address_space_in_use() + ")" : std::string()));
  }
  ::munmap(room, need);
  if (blas_memory_alloc == nullptr || blas_memory_free == nullptr) return;
  std::vector<void*> buffers;
  buffers.reserve(static_cast<std::size_t>(callers));
  for (int i = 0; i < callers; ++i) buffers.push_back(blas_memory_alloc(0));
  for (void* b : buffers) blas_memory_free(b);
}

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
