// Optimizer steps against hand-computed values, gradient accumulation, He initialisation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "strata/real/kernels/kernels.hpp"

namespace strata::real {
namespace {

TEST(Kernels, SgdMomentumFollowsPyTorchForThreeSteps) {
  // v = 0.9 v + g; w -= 0.1 v, from w = 1 with g = 0.5, 0.5, -1:
  // v = 0.5, 0.95, -0.145 and w = 0.95, 0.855, 0.8695
  const SgdConfig config{.learning_rate = 0.1, .momentum = 0.9};
  double w = 1.0, v = 0.0;
  const double grads[] = {0.5, 0.5, -1.0};
  const double expected_v[] = {0.5, 0.95, -0.145};
  const double expected_w[] = {0.95, 0.855, 0.8695};
  for (int step = 0; step < 3; ++step) {
    sgd_momentum_step(config, 1, &grads[step], &v, &w);
    EXPECT_NEAR(v, expected_v[step], 1e-15) << "step " << step + 1;
    EXPECT_NEAR(w, expected_w[step], 1e-15) << "step " << step + 1;
  }
}

TEST(Kernels, AdamFollowsKingmaAndBaForThreeSteps) {
  // lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8, from w = 1 with g = 0.5, -1, 0.25. By hand:
  // step 1: m = 0.05, v = 0.00025, m_hat = 0.5, v_hat = 0.25, w = 1 - 0.1 * 0.5 / (0.5 + 1e-8)
  // step 2: m = -0.055, v = 0.00124975, m_hat = -0.055 / 0.19, v_hat = 0.00124975 / 0.001999
  // step 3: m = -0.0245, v = 0.00131100025, corrections 0.271 and 0.002997001
  const AdamConfig config{.learning_rate = 0.1};
  const double grads[] = {0.5, -1.0, 0.25};
  const double expected_m[] = {0.05, -0.055, -0.0245};
  const double expected_v[] = {0.00025, 0.00124975, 0.00131100025};
  const double expected_w[] = {0.900000002, 0.9366103542405654, 0.9502794203389762};
  double w = 1.0, m = 0.0, v = 0.0;
  for (int step = 0; step < 3; ++step) {
    adam_step(config, step + 1, 1, &grads[step], &m, &v, &w);
    EXPECT_NEAR(m, expected_m[step], 1e-15) << "step " << step + 1;
    EXPECT_NEAR(v, expected_v[step], 1e-15) << "step " << step + 1;
    EXPECT_NEAR(w, expected_w[step], 1e-13) << "step " << step + 1;
  }
  // The same in float, as training runs it
  float wf = 1.0f, mf = 0.0f, vf = 0.0f;
  for (int step = 0; step < 3; ++step) {
    const auto g = static_cast<float>(grads[step]);
    adam_step(config, step + 1, 1, &g, &mf, &vf, &wf);
  }
  EXPECT_NEAR(wf, expected_w[2], 1e-6);
}

TEST(Kernels, AccumulateAddsAndZeroClears) {
  CpuBackend backend;
  std::vector<float> dst = {1, 2, 3}, src = {0.5f, -2, 10};
  accumulate(backend, 3, src.data(), dst.data());
  EXPECT_EQ(dst, (std::vector<float>{1.5f, 0, 13}));
  zero(3, dst.data());
  EXPECT_EQ(dst, (std::vector<float>{0, 0, 0}));
}

TEST(Kernels, HeNormalInitHasTheKaimingStandardDeviation) {
  const std::int64_t n = 200001, fan_in = 50;  // odd n: the last Box-Muller pair is half used
  std::vector<double> w(n);
  std::mt19937_64 rng(7);
  he_normal_init(rng, fan_in, n, w.data());
  double sum = 0, sum_sq = 0;
  std::int64_t within_one_sigma = 0;
  const double sigma = std::sqrt(2.0 / fan_in);  // 0.2
  for (double v : w) {
    sum += v;
    sum_sq += v * v;
    within_one_sigma += std::abs(v) < sigma ? 1 : 0;
  }
  const double mean = sum / n, stddev = std::sqrt(sum_sq / n - mean * mean);
  // Standard errors: mean 0.2 / sqrt(n) = 4.5e-4, std 0.2 / sqrt(2n) = 3.2e-4; bounds ~5 of them.
  EXPECT_NEAR(mean, 0.0, 2.5e-3);
  EXPECT_NEAR(stddev, sigma, 1.6e-3);
  // A normal puts 68.27% within one sigma (a uniform of that std would put 57.7%).
  EXPECT_NEAR(static_cast<double>(within_one_sigma) / n, 0.6827, 0.005);
  EXPECT_NE(w[n - 1], 0.0);
}

TEST(Kernels, HeNormalInitIsDeterministicPerSeed) {
  std::vector<double> a(1000), b(1000), c(1000);
  std::vector<float> f(1000);
  std::mt19937_64 rng_a(42), rng_b(42), rng_c(43), rng_f(42);
  he_normal_init(rng_a, 25, 1000, a.data());
  he_normal_init(rng_b, 25, 1000, b.data());
  he_normal_init(rng_c, 25, 1000, c.data());
  he_normal_init(rng_f, 25, 1000, f.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(f[i], static_cast<float>(a[i]));
}

}  // namespace
}  // namespace strata::real
