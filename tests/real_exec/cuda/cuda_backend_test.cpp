// CudaBackend and DeviceArray: device discovery without a GPU, host/device copies, and cuBLAS
// GEMM/AXPY/SCAL against CpuBackend — all four transpose combinations, non-square, leading
// dimensions wider than the rows, padding left untouched, beta == 0 never reading C.
#include "strata/real/cuda_backend.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"
#include "strata/real/device_array.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using cuda_test::expect_close;
using cuda_test::random_values;
using cuda_test::result_of;

// Runs without a GPU too: that is the case it is for.
TEST(CudaDevice, CountReturnsWithoutThrowing) {
  int count = -1;
  EXPECT_NO_THROW(count = cuda_device_count());
  EXPECT_GE(count, 0);
  if (count == 0) {
    try {
      CudaBackend backend;
      ADD_FAILURE() << "a CudaBackend was constructed without a device";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaDevice, BackendIsNamedAndOnTheRequestedDevice) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend backend;
  EXPECT_EQ(backend.name(), "cuda-cublas");
  EXPECT_EQ(backend.device(), 0);
  EXPECT_THROW(CudaBackend{cuda_device_count()}, InputError);
}

TEST(DeviceArray, RoundTripsMovesAndZeroes) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend backend;
  const std::vector<double> values = random_values<double>(1000, 1);
  DeviceArray<double> array(values);
  EXPECT_EQ(array.size(), 1000);
  EXPECT_EQ(array.download(), values);
  DeviceArray<double> moved(std::move(array));
  EXPECT_EQ(array.size(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(array.data(), nullptr);
  EXPECT_EQ(moved.download(), values);
  moved.zero();
  EXPECT_EQ(moved.download(), std::vector<double>(1000, 0.0));
  const std::vector<std::int32_t> labels = {3, 1, 4, 1, 5};
  EXPECT_EQ(DeviceArray<std::int32_t>(labels).download(), labels);
  EXPECT_EQ(DeviceArray<float>(0).download(), std::vector<float>{});
}

TEST(DeviceArray, FailedAllocationNamesTheCall) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend backend;
  try {
    DeviceArray<double> huge(std::int64_t{1} << 52);  // 32 PiB
    FAIL() << "a 32 PiB allocation succeeded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA: cudaMalloc("), std::string::npos) << e.what();
  }
  // The failure left no error behind for the next call to report.
  DeviceArray<float> small(16);
  small.zero();
  EXPECT_EQ(small.download(), std::vector<float>(16, 0.0F));
}

template <typename T>
class CudaGemm : public ::testing::Test {};
TYPED_TEST_SUITE(CudaGemm, cuda_test::Precisions);

// op(A)[m,k] op(B)[k,n] with every stored matrix wider than it needs to be (ld = row length + pad),
// C prefilled so that beta matters, and the padding columns of C checked to be left alone.
TYPED_TEST(CudaGemm, MatchesCpuForAllTransposesAndLeadingDimensions) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  CpuBackend cpu;
  const std::int64_t m = 37, n = 29, k = 23;
  for (const Transpose ta : {Transpose::no, Transpose::yes}) {
    for (const Transpose tb : {Transpose::no, Transpose::yes}) {
      const std::int64_t a_rows = ta == Transpose::no ? m : k, a_cols = ta == Transpose::no ? k : m;
      const std::int64_t b_rows = tb == Transpose::no ? k : n, b_cols = tb == Transpose::no ? n : k;
      const std::int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = n + 7;
      const std::vector<T> a = random_values<T>(a_rows * lda, 11);
      const std::vector<T> b = random_values<T>(b_rows * ldb, 12);
      std::vector<T> c = random_values<T>(m * ldc, 13);
      const std::vector<T> c_before = c;
      DeviceArray<T> a_dev(a), b_dev(b), c_dev(c);
      gpu.gemm(ta, tb, m, n, k, T(0.75), a_dev.data(), lda, b_dev.data(), ldb, T(-0.5), c_dev.data(), ldc);
      cpu.gemm(ta, tb, m, n, k, T(0.75), a.data(), lda, b.data(), ldb, T(-0.5), c.data(), ldc);
      const std::vector<T> c_gpu = result_of(gpu, c_dev);
      const std::string what = std::string("trans_a ") + (ta == Transpose::yes ? "T" : "N") + ", trans_b " +
                               (tb == Transpose::yes ? "T" : "N");
      expect_close(c_gpu, c, what.c_str());
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = n; j < ldc; ++j) {
          ASSERT_EQ(c_gpu[i * ldc + j], c_before[i * ldc + j]) << what << ": padding of C written";
        }
      }
    }
  }
}

TYPED_TEST(CudaGemm, BetaZeroOverwritesWithoutReadingAndEmptyInnerDimensionScales) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  CpuBackend cpu;
  const std::int64_t m = 8, n = 5, k = 6;
  const std::vector<T> a = random_values<T>(m * k, 21), b = random_values<T>(k * n, 22);
  DeviceArray<T> a_dev(a), b_dev(b);
  DeviceArray<T> c_dev(std::vector<T>(m * n, std::numeric_limits<T>::quiet_NaN()));
  std::vector<T> c(m * n);
  gpu.gemm(Transpose::no, Transpose::no, m, n, k, T{1}, a_dev.data(), k, b_dev.data(), n, T{0}, c_dev.data(),
           n);
  cpu.gemm(Transpose::no, Transpose::no, m, n, k, T{1}, a.data(), k, b.data(), n, T{0}, c.data(), n);
  expect_close(result_of(gpu, c_dev), c, "beta = 0 over NaN");

  // k = 0: op(A) op(B) is empty, so C = beta C.
  std::vector<T> scaled = random_values<T>(m * n, 23);
  DeviceArray<T> scaled_dev(scaled);
  gpu.gemm(Transpose::no, Transpose::no, m, n, 0, T{1}, a_dev.data(), 1, b_dev.data(), n, T(0.5),
           scaled_dev.data(), n);
  for (T& v : scaled) v *= T(0.5);
  expect_close(result_of(gpu, scaled_dev), scaled, "k = 0");
}

TYPED_TEST(CudaGemm, RejectsLeadingDimensionsBelowTheRowLength) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  DeviceArray<T> a(64), b(64), c(64);
  EXPECT_THROW(
      gpu.gemm(Transpose::no, Transpose::no, 4, 4, 4, T{1}, a.data(), 3, b.data(), 4, T{0}, c.data(), 4),
      std::logic_error);
  EXPECT_THROW(
      gpu.gemm(Transpose::no, Transpose::yes, 4, 4, 2, T{1}, a.data(), 2, b.data(), 1, T{0}, c.data(), 4),
      std::logic_error);
}

TYPED_TEST(CudaGemm, AxpyAndScaleMatchCpu) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  CpuBackend cpu;
  const std::int64_t n = 100003;
  const std::vector<T> x = random_values<T>(n, 31);
  std::vector<T> y = random_values<T>(n, 32);
  DeviceArray<T> x_dev(x), y_dev(y);
  gpu.axpy(n, T(-1.25), x_dev.data(), y_dev.data());
  cpu.axpy(n, T(-1.25), x.data(), y.data());
  expect_close(result_of(gpu, y_dev), y, "axpy");
  gpu.scale(n, T(0.3), y_dev.data());
  cpu.scale(n, T(0.3), y.data());
  expect_close(result_of(gpu, y_dev), y, "scale");
}

}  // namespace
}  // namespace strata::real
