// The GPU linear and conv2d layers against the CPU layers: forward with and without bias, both
// backward passes overwriting and accumulating, and an empty batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda_test_support.hpp"
#include "strata/real/cuda_kernels.hpp"
#include "strata/real/device_array.hpp"
#include "strata/real/kernels/kernels.hpp"

namespace strata::real {
namespace {

using cuda_test::expect_close;
using cuda_test::random_values;
using cuda_test::result_of;

template <typename T>
class CudaLayers : public ::testing::Test {};
TYPED_TEST_SUITE(CudaLayers, cuda_test::Precisions);

TYPED_TEST(CudaLayers, LinearMatchesCpu) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  CpuBackend cpu;
  const LinearShape s{19, 33, 12};
  const std::int64_t m = s.batch, k = s.in_features, n = s.out_features;
  const std::vector<T> x = random_values<T>(m * k, 1), w = random_values<T>(k * n, 2);
  const std::vector<T> b = random_values<T>(n, 3), dy = random_values<T>(m * n, 4);
  DeviceArray<T> x_dev(x), w_dev(w), b_dev(b), dy_dev(dy), y_dev(m * n);
  std::vector<T> y(m * n);
  for (const bool with_bias : {true, false}) {
    const T* b_cpu = with_bias ? b.data() : nullptr;
    const T* b_gpu = with_bias ? b_dev.data() : nullptr;
    linear_forward(cpu, s, x.data(), w.data(), b_cpu, y.data());
    gpu::linear_forward(gpu, s, x_dev.data(), w_dev.data(), b_gpu, y_dev.data());
    expect_close(result_of(gpu, y_dev), y, with_bias ? "Y with bias" : "Y without bias");
  }
  // Start from the same non-zero gradients, then overwrite and accumulate in turn.
  std::vector<T> dx = random_values<T>(m * k, 5), dw = random_values<T>(k * n, 6),
                 db = random_values<T>(n, 7);
  DeviceArray<T> dx_dev(dx), dw_dev(dw), db_dev(db);
  for (const bool accumulate : {false, true}) {
    linear_backward_data(cpu, s, dy.data(), w.data(), dx.data(), accumulate);
    gpu::linear_backward_data(gpu, s, dy_dev.data(), w_dev.data(), dx_dev.data(), accumulate);
    linear_backward_weight(cpu, s, x.data(), dy.data(), dw.data(), db.data(), accumulate);
    gpu::linear_backward_weight(gpu, s, x_dev.data(), dy_dev.data(), dw_dev.data(), db_dev.data(),
                                accumulate);
    expect_close(result_of(gpu, dx_dev), dx, accumulate ? "dX accumulated" : "dX");
    expect_close(dw_dev.download(), dw, accumulate ? "dW accumulated" : "dW");
    expect_close(db_dev.download(), db, accumulate ? "db accumulated" : "db");
  }
}

TYPED_TEST(CudaLayers, LinearWeightGradientOfAnEmptyBatchIsZero) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  const LinearShape s{0, 4, 3};
  DeviceArray<T> x(1), dy(1), dw(random_values<T>(12, 8)), db(random_values<T>(3, 9));
  gpu::linear_backward_weight(gpu, s, x.data(), dy.data(), dw.data(), db.data(), false);
  EXPECT_EQ(result_of(gpu, dw), std::vector<T>(12, T{0}));
  EXPECT_EQ(db.download(), std::vector<T>(3, T{0}));
}

TYPED_TEST(CudaLayers, Conv2dMatchesCpu) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  CpuBackend cpu;
  // Non-square input and kernel, stride 2 with padding: out 5x6 from 10x11.
  const Conv2dShape s{3, 2, 10, 11, 5, 3, 2, 2, 1};
  const std::vector<T> x = random_values<T>(s.input_size(), 11), w = random_values<T>(s.weight_size(), 12);
  const std::vector<T> b = random_values<T>(s.out_channels, 13), dy = random_values<T>(s.output_size(), 14);
  DeviceArray<T> x_dev(x), w_dev(w), b_dev(b), dy_dev(dy), y_dev(s.output_size());
  std::vector<T> y(s.output_size());
  for (const bool with_bias : {true, false}) {
    conv2d_forward(cpu, s, x.data(), w.data(), with_bias ? b.data() : nullptr, y.data());
    gpu::conv2d_forward(gpu, s, x_dev.data(), w_dev.data(), with_bias ? b_dev.data() : nullptr, y_dev.data());
    expect_close(result_of(gpu, y_dev), y, with_bias ? "Y with bias" : "Y without bias");
  }
  std::vector<T> dx = random_values<T>(s.input_size(), 15), dw = random_values<T>(s.weight_size(), 16);
  std::vector<T> db = random_values<T>(s.out_channels, 17);
  DeviceArray<T> dx_dev(dx), dw_dev(dw), db_dev(db);
  for (const bool accumulate : {false, true}) {
    conv2d_backward_data(cpu, s, dy.data(), w.data(), dx.data(), accumulate);
    gpu::conv2d_backward_data(gpu, s, dy_dev.data(), w_dev.data(), dx_dev.data(), accumulate);
    conv2d_backward_weight(cpu, s, x.data(), dy.data(), dw.data(), db.data(), accumulate);
    gpu::conv2d_backward_weight(gpu, s, x_dev.data(), dy_dev.data(), dw_dev.data(), db_dev.data(),
                                accumulate);
    expect_close(result_of(gpu, dx_dev), dx, accumulate ? "dX accumulated" : "dX");
    expect_close(dw_dev.download(), dw, accumulate ? "dW accumulated" : "dW");
    expect_close(db_dev.download(), db, accumulate ? "db accumulated" : "db");
  }
}

}  // namespace
}  // namespace strata::real
