// Kernels: forward passes against naive loops, every backward pass against central finite
// differences in float64, accumulation flags, numerically stable loss, optimizer steps
// against hand-computed values, deterministic He initialisation.
#include "strata/real/kernels/kernels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "strata/real/kernels/shapes.hpp"

namespace strata::real {
namespace {

using Vec = std::vector<double>;

Vec random_vec(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vec out(n);
  for (double& v : out) v = dist(rng);
  return out;
}

double dot(const Vec& a, const Vec& b) { return std::inner_product(a.begin(), a.end(), b.begin(), 0.0); }

// df/dx[i] by central differences. With h = 1e-6 in float64 the truncation error is O(h^2)
// and the rounding error about 1e-16 * |f| / h, both far below the 1e-6 bound checked.
Vec numeric_gradient(Vec& x, const std::function<double()>& f) {
  const double h = 1e-6;
  Vec g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = f();
    x[i] = saved - h;
    const double minus = f();
    x[i] = saved;
    g[i] = (plus - minus) / (2 * h);
  }
  return g;
}

void expect_same_gradient(const Vec& analytic, const Vec& numeric, const std::string& what) {
  double diff = 0, max_a = 0, max_n = 0;
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    diff = std::max(diff, std::abs(analytic[i] - numeric[i]));
    max_a = std::max(max_a, std::abs(analytic[i]));
    max_n = std::max(max_n, std::abs(numeric[i]));
  }
  EXPECT_LT(diff / std::max(1e-12, max_a + max_n), 1e-6) << what;
  EXPECT_GT(max_a, 1e-3) << what << ": a vanishing gradient would pass trivially";
}

TEST(Kernels, LinearForwardMatchesNaiveLoopAndGradientsMatchFiniteDifferences) {
  CpuBackend backend;
  const LinearShape s{3, 4, 5};
  Vec x = random_vec(12, 1), w = random_vec(20, 2), b = random_vec(5, 3);
  const Vec r = random_vec(15, 4);  // loss = sum(Y * r), so dY = r
  Vec y(15);
  linear_forward(backend, s, x.data(), w.data(), b.data(), y.data());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      double expected = b[j];
      for (int p = 0; p < 4; ++p) expected += x[i * 4 + p] * w[p * 5 + j];
      EXPECT_NEAR(y[i * 5 + j], expected, 1e-14);
    }
  }
  auto loss = [&] {
    linear_forward(backend, s, x.data(), w.data(), b.data(), y.data());
    return dot(y, r);
  };
  Vec dx(12, 99.0), dw(20, 99.0), db(5, 99.0);  // garbage that accumulate=false must overwrite
  linear_backward_data(backend, s, r.data(), w.data(), dx.data(), false);
  linear_backward_weight(backend, s, x.data(), r.data(), dw.data(), db.data(), false);
  expect_same_gradient(dx, numeric_gradient(x, loss), "dX");
  expect_same_gradient(dw, numeric_gradient(w, loss), "dW");
  expect_same_gradient(db, numeric_gradient(b, loss), "db");
}

TEST(Kernels, LinearBackwardAccumulatesOverMicrobatches) {
  CpuBackend backend;
  const LinearShape s{2, 3, 2};
  const Vec x = random_vec(6, 5), w = random_vec(6, 6), dy = random_vec(4, 7);
  Vec dx(6), dw(6), db(2);
  linear_backward_data(backend, s, dy.data(), w.data(), dx.data(), false);
  linear_backward_weight(backend, s, x.data(), dy.data(), dw.data(), db.data(), false);
  Vec dx2 = dx, dw2 = dw, db2 = db;
  linear_backward_data(backend, s, dy.data(), w.data(), dx2.data(), true);
  linear_backward_weight(backend, s, x.data(), dy.data(), dw2.data(), db2.data(), true);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(dx2[i], 2 * dx[i]);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(dw2[i], 2 * dw[i]);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(db2[i], 2 * db[i]);
}

// y[n, o, r, q] = b[o] + sum_{c,i,j} x[n, c, r*s - p + i, q*s - p + j] w[o, c, i, j]
Vec direct_conv(const Conv2dShape& s, const Vec& x, const Vec& w, const Vec& b) {
  const std::int64_t oh = s.out_height(), ow = s.out_width();
  Vec y(static_cast<std::size_t>(s.output_size()));
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t o = 0; o < s.out_channels; ++o)
      for (std::int64_t r = 0; r < oh; ++r)
        for (std::int64_t q = 0; q < ow; ++q) {
          double sum = b[o];
          for (std::int64_t c = 0; c < s.in_channels; ++c)
            for (std::int64_t i = 0; i < s.kernel_h; ++i)
              for (std::int64_t j = 0; j < s.kernel_w; ++j) {
                const std::int64_t row = r * s.stride - s.padding + i, col = q * s.stride - s.padding + j;
                if (row < 0 || row >= s.height || col < 0 || col >= s.width) continue;
                sum += x[((n * s.in_channels + c) * s.height + row) * s.width + col] *
                       w[((o * s.in_channels + c) * s.kernel_h + i) * s.kernel_w + j];
              }
          y[((n * s.out_channels + o) * oh + r) * ow + q] = sum;
        }
  return y;
}

constexpr Conv2dShape kConvShapes[] = {
    {.batch = 2, .in_channels = 2, .height = 6, .width = 5, .out_channels = 3, .kernel_h = 3, .kernel_w = 3},
    // LeNet-5's first layer: 5x5 kernels with padding 2 keep the image size
    {.batch = 2,
     .in_channels = 1,
     .height = 6,
     .width = 6,
     .out_channels = 2,
     .kernel_h = 5,
     .kernel_w = 5,
     .stride = 1,
     .padding = 2},
    {.batch = 1,
     .in_channels = 2,
     .height = 7,
     .width = 7,
     .out_channels = 2,
     .kernel_h = 3,
     .kernel_w = 3,
     .stride = 2,
     .padding = 1},
};

TEST(Kernels, Conv2dForwardMatchesDirectConvolution) {
  CpuBackend backend;
  for (const Conv2dShape& s : kConvShapes) {
    SCOPED_TRACE(testing::Message() << "padding " << s.padding << " stride " << s.stride);
    const Vec x = random_vec(s.input_size(), 10), w = random_vec(s.weight_size(), 11);
    const Vec b = random_vec(s.out_channels, 12);
    Vec y(s.output_size());
    conv2d_forward(backend, s, x.data(), w.data(), b.data(), y.data());
    const Vec expected = direct_conv(s, x, w, b);
    for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-13) << i;
  }
}

TEST(Kernels, Conv2dGradientsMatchFiniteDifferencesIncludingPadding2) {
  CpuBackend backend;
  for (const Conv2dShape& s : kConvShapes) {
    SCOPED_TRACE(testing::Message() << "padding " << s.padding << " stride " << s.stride);
    Vec x = random_vec(s.input_size(), 20), w = random_vec(s.weight_size(), 21);
    Vec b = random_vec(s.out_channels, 22);
    const Vec r = random_vec(s.output_size(), 23);
    Vec y(s.output_size());
    auto loss = [&] {
      conv2d_forward(backend, s, x.data(), w.data(), b.data(), y.data());
      return dot(y, r);
    };
    Vec dx(x.size(), 99.0), dw(w.size(), 99.0), db(b.size(), 99.0);
    conv2d_backward_data(backend, s, r.data(), w.data(), dx.data(), false);
    conv2d_backward_weight(backend, s, x.data(), r.data(), dw.data(), db.data(), false);
    expect_same_gradient(dx, numeric_gradient(x, loss), "dX");
    expect_same_gradient(dw, numeric_gradient(w, loss), "dW");
    expect_same_gradient(db, numeric_gradient(b, loss), "db");
    // accumulate=true adds a second microbatch's gradient on top
    Vec dx2 = dx, dw2 = dw, db2 = db;
    conv2d_backward_data(backend, s, r.data(), w.data(), dx2.data(), true);
    conv2d_backward_weight(backend, s, x.data(), r.data(), dw2.data(), db2.data(), true);
    for (std::size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx2[i], 2 * dx[i], 1e-13);
    for (std::size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw2[i], 2 * dw[i], 1e-13);
    for (std::size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db2[i], 2 * db[i], 1e-13);
  }
}

TEST(Kernels, ReluAndTanhGradientsMatchFiniteDifferences) {
  Vec x = random_vec(40, 30);
  // Keep every input away from ReLU's kink at 0, where the difference quotient is not the derivative.
  for (double& v : x) v += v >= 0 ? 0.05 : -0.05;
  const Vec r = random_vec(40, 31);
  Vec y(40), dx(40);
  auto relu_loss = [&] {
    relu_forward<double>(40, x.data(), y.data());
    return dot(y, r);
  };
  relu_forward<double>(40, x.data(), y.data());
  EXPECT_EQ(std::count(y.begin(), y.end(), 0.0),
            std::count_if(x.begin(), x.end(), [](double v) { return v < 0; }));
  relu_backward<double>(40, x.data(), r.data(), dx.data());
  expect_same_gradient(dx, numeric_gradient(x, relu_loss), "relu");

  auto tanh_loss = [&] {
    tanh_forward<double>(40, x.data(), y.data());
    return dot(y, r);
  };
  tanh_forward<double>(40, x.data(), y.data());
  EXPECT_DOUBLE_EQ(y[3], std::tanh(x[3]));
  tanh_backward<double>(40, y.data(), r.data(), dx.data());
  expect_same_gradient(dx, numeric_gradient(x, tanh_loss), "tanh");
}

TEST(Kernels, MaxPoolPicksWindowMaximaAndRoutesGradients) {
  const Pool2dShape s{.batch = 2, .channels = 2, .height = 5, .width = 4};  // odd height: last row dropped
  // Distinct values 0.01 apart: a perturbation of 1e-6 never changes which element wins.
  Vec x(s.input_size());
  std::iota(x.begin(), x.end(), 0.0);
  std::mt19937_64 rng(40);
  std::shuffle(x.begin(), x.end(), rng);
  for (double& v : x) v *= 0.01;
  Vec y(s.output_size());
  std::vector<std::int64_t> argmax(y.size());
  maxpool2x2_forward(s, x.data(), y.data(), argmax.data());
  ASSERT_EQ(y.size(), 2u * 2 * 2 * 2);
  for (std::int64_t plane = 0, out = 0; plane < 4; ++plane)
    for (std::int64_t r = 0; r < 2; ++r)
      for (std::int64_t q = 0; q < 2; ++q, ++out) {
        const double* p = x.data() + plane * 20 + 2 * r * 4 + 2 * q;
        EXPECT_EQ(y[out], std::max({p[0], p[1], p[4], p[5]}));
        EXPECT_EQ(x[argmax[out]], y[out]);
      }
  const Vec r = random_vec(y.size(), 41);
  auto loss = [&] {
    maxpool2x2_forward(s, x.data(), y.data(), argmax.data());
    return dot(y, r);
  };
  Vec dx(x.size(), 99.0);
  maxpool2x2_forward(s, x.data(), y.data(), argmax.data());
  maxpool2x2_backward(s, r.data(), argmax.data(), dx.data());
  expect_same_gradient(dx, numeric_gradient(x, loss), "max-pool");
}

TEST(Kernels, SoftmaxCrossEntropyGradientMatchesFiniteDifferences) {
  const std::int64_t batch = 4, classes = 5;
  Vec logits = random_vec(batch * classes, 50);
  for (double& v : logits) v *= 3;
  const std::vector<std::int32_t> labels = {0, 4, 2, 2};
  Vec probs(logits.size()), dlogits(logits.size());
  auto loss = [&] {
    return softmax_cross_entropy_forward(batch, classes, logits.data(), labels.data(), probs.data());
  };
  loss();
  for (std::int64_t i = 0; i < batch; ++i) {
    EXPECT_NEAR(std::accumulate(probs.begin() + i * classes, probs.begin() + (i + 1) * classes, 0.0), 1.0,
                1e-15);
  }
  softmax_cross_entropy_backward(batch, classes, probs.data(), labels.data(), dlogits.data());
  expect_same_gradient(dlogits, numeric_gradient(logits, loss), "dlogits");
}

TEST(Kernels, SoftmaxCrossEntropyIsStableForLargeLogits) {
  // exp(100) overflows float: a naive softmax would return inf or NaN here.
  const std::vector<float> logits = {100.0f, 0.0f, -100.0f, 7.0f, 7.0f, 7.0f};
  const std::vector<std::int32_t> labels = {1, 2};
  std::vector<float> probs(6);
  const float loss = softmax_cross_entropy_forward<float>(2, 3, logits.data(), labels.data(), probs.data());
  // row 0: -log softmax = 100 - 0; row 1: equal logits give log(3); the mean of the two
  EXPECT_FLOAT_EQ(loss, (100.0f + std::log(3.0f)) / 2);
  EXPECT_FLOAT_EQ(probs[0], 1.0f);
  EXPECT_FLOAT_EQ(probs[4], 1.0f / 3);
  const std::vector<double> big = {1000.0, 0.0};
  std::vector<double> p(2);
  const std::int32_t label = 0;
  EXPECT_EQ(softmax_cross_entropy_forward<double>(1, 2, big.data(), &label, p.data()), 0.0);
}

// The shape checks the CPU and CUDA kernels share (shapes.hpp): each accepts the smallest shape
// its kernel runs and refuses one step beyond it, as an invariant (std::logic_error).
TEST(ShapeChecks, AcceptTheSmallestShapeAndRefuseOneBeyond) {
  EXPECT_NO_THROW(check_linear_shape(LinearShape{0, 1, 1}));  // an empty microbatch runs nothing
  EXPECT_THROW(check_linear_shape(LinearShape{1, 0, 1}), std::logic_error);
  Conv2dShape conv{.batch = 1,
                   .in_channels = 1,
                   .height = 3,
                   .width = 3,
                   .out_channels = 1,
                   .kernel_h = 5,
                   .kernel_w = 5,
                   .stride = 1,
                   .padding = 1};  // 5x5 fits the 3x3 input padded to 5x5
  EXPECT_NO_THROW(check_conv_shape(conv));
  conv.padding = 0;
  EXPECT_THROW(check_conv_shape(conv), std::logic_error);
  EXPECT_NO_THROW(check_pool2x2_shape(Pool2dShape{.batch = 0, .channels = 1, .height = 2, .width = 2}));
  EXPECT_THROW(check_pool2x2_shape(Pool2dShape{.batch = 1, .channels = 1, .height = 1, .width = 2}),
               std::logic_error);
  EXPECT_NO_THROW(check_softmax_shape(1, 1));
  EXPECT_THROW(check_softmax_shape(0, 10), std::logic_error);
  EXPECT_NO_THROW(check_length(0, "relu_forward"));
  EXPECT_THROW(check_length(-1, "relu_forward"), std::logic_error);
  EXPECT_NO_THROW(check_adam_step(1));
  EXPECT_THROW(check_adam_step(0), std::logic_error);
}

}  // namespace
}  // namespace strata::real
