// CpuBackend against naive loops: every transpose combination, padded leading dimensions,
// alpha and beta, both precisions; axpy and scale; argument checks.
#include "strata/real/core/backend.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace strata::real {
namespace {

template <typename T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> out(n);
  for (T& v : out) v = static_cast<T>(dist(rng));
  return out;
}

// Element (r, c) of op(M) where M is stored row-major with leading dimension ld.
template <typename T>
T at(const std::vector<T>& m, std::int64_t ld, Transpose t, std::int64_t r, std::int64_t c) {
  return t == Transpose::no ? m[r * ld + c] : m[c * ld + r];
}

template <typename T>
void check_gemm(Transpose ta, Transpose tb, double tolerance) {
  const std::int64_t m = 5, n = 7, k = 3;
  // Leading dimensions wider than the rows, so a backend that assumes packed rows fails.
  const std::int64_t lda = (ta == Transpose::no ? k : m) + 2;
  const std::int64_t ldb = (tb == Transpose::no ? n : k) + 3;
  const std::int64_t ldc = n + 1;
  const std::vector<T> a = random_values<T>(static_cast<std::size_t>((ta == Transpose::no ? m : k) * lda), 1);
  const std::vector<T> b = random_values<T>(static_cast<std::size_t>((tb == Transpose::no ? k : n) * ldb), 2);
  std::vector<T> c = random_values<T>(static_cast<std::size_t>(m * ldc), 3);
  std::vector<T> expected = c;
  const T alpha = T(1.5), beta = T(0.5);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) sum += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      expected[i * ldc + j] = static_cast<T>(alpha * sum + beta * c[i * ldc + j]);
    }
  }
  CpuBackend backend;
  backend.gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  for (std::size_t i = 0; i < c.size(); ++i) {
    // Padding columns (j >= n) must stay untouched: they equal the original values.
    EXPECT_NEAR(c[i], expected[i], tolerance) << "element " << i;
  }
}

TEST(Backend, GemmMatchesNaiveLoopsForEveryTransposeCombination) {
  for (Transpose ta : {Transpose::no, Transpose::yes}) {
    for (Transpose tb : {Transpose::no, Transpose::yes}) {
      SCOPED_TRACE(testing::Message()
                   << "trans_a " << (ta == Transpose::yes) << " trans_b " << (tb == Transpose::yes));
      check_gemm<double>(ta, tb, 1e-14);
      check_gemm<float>(ta, tb, 1e-5);
    }
  }
}

TEST(Backend, GemmWithBetaZeroIgnoresWhatTheOutputHeld) {
  CpuBackend backend;
  const std::vector<double> a = {1, 2, 3, 4};  // 2x2
  const std::vector<double> b = {5, 6, 7, 8};  // 2x2
  std::vector<double> c(4, std::numeric_limits<double>::quiet_NaN());
  backend.gemm(Transpose::no, Transpose::no, 2, 2, 2, 1.0, a.data(), 2, b.data(), 2, 0.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{19, 22, 43, 50}));
}

TEST(Backend, AxpyAndScale) {
  CpuBackend backend;
  std::vector<float> y = {1, 2, 3};
  const std::vector<float> x = {10, 20, 30};
  backend.axpy(3, 0.5f, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{6, 12, 18}));
  std::vector<double> z = {1, -2, 4};
  backend.scale(3, -0.25, z.data());
  EXPECT_EQ(z, (std::vector<double>{-0.25, 0.5, -1}));
  EXPECT_EQ(backend.name(), "cpu-openblas");
}

TEST(Backend, RejectsLeadingDimensionBelowTheStoredRowLength) {
  CpuBackend backend;
  std::vector<double> a(6), b(6), c(9);
  // A is 3x2 not transposed: lda must be >= 2; as transposed (stored 2x3) it must be >= 3.
  EXPECT_THROW(
      backend.gemm(Transpose::no, Transpose::no, 3, 3, 2, 1.0, a.data(), 1, b.data(), 3, 0.0, c.data(), 3),
      std::logic_error);
  EXPECT_THROW(
      backend.gemm(Transpose::yes, Transpose::no, 3, 3, 2, 1.0, a.data(), 2, b.data(), 3, 0.0, c.data(), 3),
      std::logic_error);
  EXPECT_NO_THROW(
      backend.gemm(Transpose::yes, Transpose::no, 3, 3, 2, 1.0, a.data(), 3, b.data(), 3, 0.0, c.data(), 3));
}

}  // namespace
}  // namespace strata::real
