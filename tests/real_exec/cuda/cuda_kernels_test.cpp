// The CUDA kernels against the CPU kernels on random data: exact equality where the header
// promises bit-for-bit results, the precision's tolerance elsewhere.
#include "strata/real/cuda_kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuda_test_support.hpp"
#include "strata/real/device_array.hpp"
#include "strata/real/kernels/kernels.hpp"

namespace strata::real {
namespace {

using cuda_test::expect_close;
using cuda_test::random_values;
using cuda_test::result_of;

template <typename T>
class CudaKernels : public ::testing::Test {};
TYPED_TEST_SUITE(CudaKernels, cuda_test::Precisions);

TYPED_TEST(CudaKernels, ReluIsExactAndTanhIsWithinTolerance) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  const std::int64_t n = 70001;
  std::vector<T> x = random_values<T>(n, 1, -3.0, 3.0);
  x[0] = T{0};  // the subgradient at 0 is 0
  const std::vector<T> dy = random_values<T>(n, 2);
  std::vector<T> y(n), dx(n);
  DeviceArray<T> x_dev(x), dy_dev(dy), y_dev(n), dx_dev(n);

  relu_forward(n, x.data(), y.data());
  gpu::relu_forward(gpu, n, x_dev.data(), y_dev.data());
  EXPECT_EQ(result_of(gpu, y_dev), y);
  relu_backward(n, x.data(), dy.data(), dx.data());
  gpu::relu_backward(gpu, n, x_dev.data(), dy_dev.data(), dx_dev.data());
  EXPECT_EQ(result_of(gpu, dx_dev), dx);

  tanh_forward(n, x.data(), y.data());
  gpu::tanh_forward(gpu, n, x_dev.data(), y_dev.data());
  expect_close(result_of(gpu, y_dev), y, "tanh forward");
  // Backward from the CPU's forward output, so only the backward formula is compared.
  y_dev.upload(y);
  tanh_backward(n, y.data(), dy.data(), dx.data());
  gpu::tanh_backward(gpu, n, y_dev.data(), dy_dev.data(), dx_dev.data());
  expect_close(result_of(gpu, dx_dev), dx, "tanh backward");

  // In place, as the header allows.
  relu_forward(n, x.data(), x.data());
  gpu::relu_forward(gpu, n, x_dev.data(), x_dev.data());
  EXPECT_EQ(result_of(gpu, x_dev), x);
}

TYPED_TEST(CudaKernels, BiasBroadcastIsExactAndBiasGradientSumsEveryRow) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  const std::int64_t outer = 5, channels = 7, inner = 300, total = outer * channels * inner;
  const std::vector<T> b = random_values<T>(channels, 3), dy = random_values<T>(total, 4);
  std::vector<T> y = random_values<T>(total, 5);
  DeviceArray<T> b_dev(b), dy_dev(dy), y_dev(y);

  gpu::bias_broadcast(gpu, outer, channels, inner, b_dev.data(), y_dev.data(), true);
  for (std::int64_t e = 0; e < total; ++e) y[e] += b[(e / inner) % channels];
  EXPECT_EQ(result_of(gpu, y_dev), y);
  gpu::bias_broadcast(gpu, outer, channels, inner, b_dev.data(), y_dev.data(), false);
  for (std::int64_t e = 0; e < total; ++e) y[e] = b[(e / inner) % channels];
  EXPECT_EQ(result_of(gpu, y_dev), y);

  std::vector<T> db(channels, T{0});
  for (std::int64_t e = 0; e < total; ++e) db[(e / inner) % channels] += dy[e];
  DeviceArray<T> db_dev(std::vector<T>(channels, T(99)));  // garbage that overwriting must replace
  gpu::bias_gradient(gpu, outer, channels, inner, dy_dev.data(), db_dev.data(), false);
  expect_close(result_of(gpu, db_dev), db, "bias gradient");
  gpu::bias_gradient(gpu, outer, channels, inner, dy_dev.data(), db_dev.data(), true);
  for (T& v : db) v *= T{2};
  expect_close(result_of(gpu, db_dev), db, "bias gradient, accumulated");
}

TYPED_TEST(CudaKernels, MaxPoolMatchesCpuExactlyIncludingTiesAndOddEdges) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  const Pool2dShape shape{3, 4, 7, 9};  // odd height and width: the last row and column drop out
  // Small integers make ties, which the first maximum must win on both sides.
  std::vector<T> x = random_values<T>(shape.input_size(), 6, 0.0, 4.0);
  for (T& v : x) v = std::floor(v);
  const std::vector<T> dy = random_values<T>(shape.output_size(), 7);
  std::vector<T> y(shape.output_size()), dx(shape.input_size());
  std::vector<std::int64_t> argmax(shape.output_size());
  DeviceArray<T> x_dev(x), y_dev(shape.output_size()), dy_dev(dy);
  DeviceArray<T> dx_dev(random_values<T>(shape.input_size(), 8));  // overwritten, not added to
  DeviceArray<std::int64_t> argmax_dev(shape.output_size());

  maxpool2x2_forward(shape, x.data(), y.data(), argmax.data());
  gpu::maxpool2x2_forward(gpu, shape, x_dev.data(), y_dev.data(), argmax_dev.data());
  EXPECT_EQ(result_of(gpu, y_dev), y);
  EXPECT_EQ(argmax_dev.download(), argmax);
  maxpool2x2_backward(shape, dy.data(), argmax.data(), dx.data());
  gpu::maxpool2x2_backward(gpu, shape, dy_dev.data(), argmax_dev.data(), dx_dev.data());
  EXPECT_EQ(result_of(gpu, dx_dev), dx);
}

TYPED_TEST(CudaKernels, SoftmaxCrossEntropyMatchesCpu) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  // More rows than the block has warps and more classes than a warp has lanes, large logits
  // that would overflow exp() without the row maximum subtracted.
  const std::int64_t batch = 45, classes = 77, global_batch = 4 * batch;
  std::vector<T> logits = random_values<T>(batch * classes, 9, -5.0, 5.0);
  logits[3] = T(80);
  std::vector<std::int32_t> labels(batch);
  for (std::int64_t i = 0; i < batch; ++i) labels[i] = static_cast<std::int32_t>((i * 31) % classes);
  std::vector<T> probs(batch * classes), dlogits(batch * classes);
  DeviceArray<T> logits_dev(logits), probs_dev(batch * classes), dlogits_dev(batch * classes), loss_dev(1);
  DeviceArray<std::int32_t> labels_dev(labels);

  const T loss = softmax_cross_entropy_forward(batch, classes, logits.data(), labels.data(), probs.data());
  gpu::softmax_cross_entropy_forward(gpu, batch, classes, logits_dev.data(), labels_dev.data(),
                                     probs_dev.data(), loss_dev.data());
  expect_close(result_of(gpu, loss_dev), std::vector<T>{loss}, "mean loss");
  expect_close(probs_dev.download(), probs, "probabilities");

  // From the CPU's probabilities, so only the backward formula is compared.
  probs_dev.upload(probs);
  softmax_cross_entropy_backward(batch, classes, probs.data(), labels.data(), dlogits.data());
  gpu::softmax_cross_entropy_backward(gpu, batch, classes, probs_dev.data(), labels_dev.data(), batch,
                                      dlogits_dev.data());
  expect_close(result_of(gpu, dlogits_dev), dlogits, "dlogits / batch");
  // The task runner's loss_bwd: the CPU kernel's result rescaled from the batch to the global batch.
  for (T& v : dlogits) v *= static_cast<T>(batch) / static_cast<T>(global_batch);
  gpu::softmax_cross_entropy_backward(gpu, batch, classes, probs_dev.data(), labels_dev.data(), global_batch,
                                      dlogits_dev.data());
  expect_close(result_of(gpu, dlogits_dev), dlogits, "dlogits / global batch");
}

TYPED_TEST(CudaKernels, SoftmaxLossIsNanForALabelOutOfRange) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  DeviceArray<T> logits(random_values<T>(6, 10)), probs(6), loss(1);
  DeviceArray<std::int32_t> labels(std::vector<std::int32_t>{1, 3});  // 3 is outside [0, 3)
  gpu::softmax_cross_entropy_forward(gpu, 2, 3, logits.data(), labels.data(), probs.data(), loss.data());
  EXPECT_TRUE(std::isnan(result_of(gpu, loss)[0]));
}

TYPED_TEST(CudaKernels, OptimizerStepsMatchCpuOverSeveralSteps) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  const std::int64_t n = 10007;
  const SgdConfig sgd{0.05, 0.9};
  const AdamConfig adam{1e-2, 0.9, 0.999, 1e-8};
  std::vector<T> weight_sgd = random_values<T>(n, 11), velocity(n, T{0});
  std::vector<T> weight_adam = weight_sgd, m(n, T{0}), v(n, T{0});
  DeviceArray<T> weight_sgd_dev(weight_sgd), velocity_dev(velocity);
  DeviceArray<T> weight_adam_dev(weight_adam), m_dev(m), v_dev(v), grad_dev(n);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const std::vector<T> grad = random_values<T>(n, 100 + static_cast<std::uint64_t>(step));
    grad_dev.upload(grad);
    sgd_momentum_step(sgd, n, grad.data(), velocity.data(), weight_sgd.data());
    gpu::sgd_momentum_step(gpu, sgd, n, grad_dev.data(), velocity_dev.data(), weight_sgd_dev.data());
    adam_step(adam, step, n, grad.data(), m.data(), v.data(), weight_adam.data());
    gpu::adam_step(gpu, adam, step, n, grad_dev.data(), m_dev.data(), v_dev.data(), weight_adam_dev.data());
    gpu.synchronize();  // before the next upload overwrites the gradient
  }
  expect_close(velocity_dev.download(), velocity, "SGD velocity");
  expect_close(weight_sgd_dev.download(), weight_sgd, "SGD weights");
  expect_close(m_dev.download(), m, "Adam m");
  expect_close(v_dev.download(), v, "Adam v");
  expect_close(weight_adam_dev.download(), weight_adam, "Adam weights");
}

TYPED_TEST(CudaKernels, AccumulateIsExactAndZeroClears) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  CpuBackend cpu;
  const std::int64_t n = 4099;
  const std::vector<T> src = random_values<T>(n, 12);
  std::vector<T> dst = random_values<T>(n, 13);
  DeviceArray<T> src_dev(src), dst_dev(dst), via_backend_dev(dst);
  accumulate(cpu, n, src.data(), dst.data());
  gpu::accumulate(gpu, n, src_dev.data(), dst_dev.data());
  EXPECT_EQ(result_of(gpu, dst_dev), dst);
  // The CPU kernel goes through Backend::axpy, so it runs on device pointers with a CudaBackend.
  accumulate(gpu, n, src_dev.data(), via_backend_dev.data());
  EXPECT_EQ(result_of(gpu, via_backend_dev), dst);
  gpu::zero(gpu, n, dst_dev.data());
  EXPECT_EQ(result_of(gpu, dst_dev), std::vector<T>(n, T{0}));
}

// kernels_conv.cpp's im2col and col2im_add are internal to it; these are the same loops, the
// layout they define.
template <typename T>
std::vector<T> reference_im2col(const Conv2dShape& s, const std::vector<T>& image) {
  std::vector<T> cols;
  for (std::int64_t c = 0; c < s.in_channels; ++c) {
    for (std::int64_t i = 0; i < s.kernel_h; ++i) {
      for (std::int64_t j = 0; j < s.kernel_w; ++j) {
        for (std::int64_t r = 0; r < s.out_height(); ++r) {
          for (std::int64_t q = 0; q < s.out_width(); ++q) {
            const std::int64_t row = r * s.stride - s.padding + i, col = q * s.stride - s.padding + j;
            const bool inside = row >= 0 && row < s.height && col >= 0 && col < s.width;
            cols.push_back(inside ? image[(c * s.height + row) * s.width + col] : T{0});
          }
        }
      }
    }
  }
  return cols;
}

template <typename T>
void reference_col2im_add(const Conv2dShape& s, const std::vector<T>& cols, std::vector<T>& image) {
  auto in = cols.begin();
  for (std::int64_t c = 0; c < s.in_channels; ++c) {
    for (std::int64_t i = 0; i < s.kernel_h; ++i) {
      for (std::int64_t j = 0; j < s.kernel_w; ++j) {
        for (std::int64_t r = 0; r < s.out_height(); ++r) {
          for (std::int64_t q = 0; q < s.out_width(); ++q, ++in) {
            const std::int64_t row = r * s.stride - s.padding + i, col = q * s.stride - s.padding + j;
            if (row >= 0 && row < s.height && col >= 0 && col < s.width) {
              image[(c * s.height + row) * s.width + col] += *in;
            }
          }
        }
      }
    }
  }
}

TYPED_TEST(CudaKernels, Im2colAndCol2imMatchTheCpuLayoutExactly) {
  using T = TypeParam;
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend gpu;
  // Non-square image and kernel; stride 1 with padding makes windows overlap (several terms per
  // pixel in col2im), stride 2 leaves some pixels out of every window.
  const std::pair<std::int64_t, std::int64_t> cases[] = {{1, 1}, {2, 1}, {2, 0}};  // stride, padding
  for (const auto& [stride, padding] : cases) {
    const Conv2dShape s{1, 3, 9, 11, 4, 3, 2, stride, padding};
    const std::int64_t col_count = s.in_channels * s.kernel_h * s.kernel_w * s.out_height() * s.out_width();
    const std::vector<T> image = random_values<T>(s.in_channels * s.height * s.width, 14);
    DeviceArray<T> image_dev(image), cols_dev(col_count);
    gpu::im2col(gpu, s, image_dev.data(), cols_dev.data());
    EXPECT_EQ(result_of(gpu, cols_dev), reference_im2col(s, image)) << "stride " << stride;

    const std::vector<T> cols = random_values<T>(col_count, 15);
    std::vector<T> target = random_values<T>(s.in_channels * s.height * s.width, 16);
    DeviceArray<T> target_dev(target);
    cols_dev.upload(cols);
    reference_col2im_add(s, cols, target);
    gpu::col2im_add(gpu, s, cols_dev.data(), target_dev.data());
    EXPECT_EQ(result_of(gpu, target_dev), target) << "stride " << stride;
  }
}

}  // namespace
}  // namespace strata::real
