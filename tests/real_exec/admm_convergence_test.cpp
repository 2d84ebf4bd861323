// Convergence of the ADMM solvers (admm.hpp) on Fashion-MNIST, float32, one thread; labelled
// `slow` in CMake.
//
// Setup (all tests): the 5 x 256 MLP 784-256-256-256-256-10, ReLU, full batch on the first
// 10,000 images of a seed-1 permutation of the training set, test accuracy on the 10,000 official
// test images, cold start from seed 0 (W, b ~ N(0, 0.1²), the papers' code).
// Schedule: pdADMM runs ρ = ν = 1e-4 fixed, τ0 = θ0 = 10 (the papers' MLP code). pdADMM-G-Q
// starts from the same values and raises ρ and ν tenfold (up to 1) whenever the training cost
// of the forward pass fell by less than 0.002 in each of the last two iterations (AdaptiveRho:
// the pdADMM-G-Q code's rule, which uses 0.01 on Cora and has 0.001 commented out; 0.002 makes
// it act within the 60 iterations); its p lies on the grid {k/16 : k = −128..127}, sent as int8.
// pdADMM sends p as float32.
// Measured here (Release, one core shared with other jobs): pdADMM test accuracy 70.5 % at 25
// iterations, 73.7 % at 50, 75.5 % at 100, 76.9 % at 200, 77.5 % at 300; 0.45 s of CPU per
// iteration for 5 x 256 on 10,000 images (0.52–0.65 s wall on the shared machine).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "strata/real/kernels/admm.hpp"
#include "strata/real/reference/admm_train.hpp"

namespace strata::real {
namespace {

using T = float;

const std::vector<std::int64_t> kFiveBy256 = {784, 256, 256, 256, 256, 10};

struct Data {
  explicit Data(std::int64_t train_count = 10000)
      : train(admm_columns<T>(load_fashion_mnist(DatasetSplit::train), train_count, 1)),
        test(admm_columns<T>(load_fashion_mnist(DatasetSplit::test), 10000, 0)) {}
  AdmmData<T> train;  // the first train_count images of the seed-1 permutation
  AdmmData<T> test;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(AdmmConvergence, PdadmmReaches70PercentWithin300Iterations) {
  const Data data;
  CpuBackend backend;
  AdmmNetwork<T> net = cold_start(data.train.x, data.train.labels, kFiveBy256, 0, backend);
  const AdmmSettings s;
  double acc = 0;
  int k = 0;
  const auto start = std::chrono::steady_clock::now();
  while (k < 300 && acc < 0.70) {
    for (int i = 0; i < 10; ++i, ++k) iterate_parallel(net, s, backend);
    acc = accuracy(net, data.test.x, data.test.classes, backend);
    std::printf("pdADMM iteration %d: test accuracy %.2f %% (%.2f s per iteration)\n", k, 100 * acc,
                seconds_since(start) / k);
  }
  EXPECT_GE(acc, 0.70);
}

// Both run 60 iterations; the adaptive rule first raises ρ near iteration 45.
TEST(AdmmConvergence, QuantizedPdadmmStaysWithinTwoPointsAndSendsAQuarterOfTheBytes) {
  const Data data;
  CpuBackend backend;
  constexpr int kIterations = 60;
  AdmmNetwork<T> plain = cold_start(data.train.x, data.train.labels, kFiveBy256, 0, backend);
  AdmmNetwork<T> quantized = plain;
  const AdmmSettings s;
  std::int64_t plain_p_bytes = 0, quantized_p_bytes = 0;
  for (int k = 0; k < kIterations; ++k) plain_p_bytes += iterate_parallel(plain, s, backend).p_bytes;

  AdmmSettings sq;
  sq.quantize_p = true;
  AdaptiveRho rule(0.002, 1.0);
  for (int k = 0; k < kIterations; ++k) {
    quantized_p_bytes += iterate_parallel(quantized, sq, backend).p_bytes;
    if (rule.observe(mean_cross_entropy(quantized, data.train.x, data.train.labels, backend), sq))
      std::printf("pdADMM-G-Q iteration %d: rho = nu = %g\n", k + 1, sq.rho);
  }
  const double acc_plain = accuracy(plain, data.test.x, data.test.classes, backend);
  const double acc_quantized = accuracy(quantized, data.test.x, data.test.classes, backend);
  std::printf(
      "after %d iterations: pdADMM %.2f %%, pdADMM-G-Q %.2f %%; p sent %.1f MB (float32) vs %.1f MB (int8)\n",
      kIterations, 100 * acc_plain, 100 * acc_quantized, plain_p_bytes / 1e6, quantized_p_bytes / 1e6);
  EXPECT_GE(acc_quantized, acc_plain - 0.02);
  EXPECT_LE(static_cast<double>(quantized_p_bytes), 0.30 * static_cast<double>(plain_p_bytes));
  EXPECT_GT(sq.rho, s.rho);  // the rule did act
}

// A 3-layer 784-256-256-10 trained 40 iterations, deepened to 5 x 256 by two identity layers;
// on the first 5,000 of the 10,000 images to keep the slow label near two minutes in all.
TEST(AdmmConvergence, WarmStartFromAShallowerNetworkKeepsItsAccuracy) {
  const Data data(5000);
  CpuBackend backend;
  const AdmmSettings s;
  AdmmNetwork<T> shallow = cold_start(data.train.x, data.train.labels, {784, 256, 256, 10}, 0, backend);
  for (int k = 0; k < 40; ++k) iterate_parallel(shallow, s, backend);
  const double shallow_acc = accuracy(shallow, data.test.x, data.test.classes, backend);
  AdmmNetwork<T> deep = warm_start_deeper(shallow, 2, backend);
  const double before = accuracy(deep, data.test.x, data.test.classes, backend);
  for (int k = 0; k < 100; ++k) iterate_parallel(deep, s, backend);
  const double after = accuracy(deep, data.test.x, data.test.classes, backend);
  std::printf("warm start: 3 layers %.2f %%; 5 layers before %.2f %%, after 100 iterations %.2f %%\n",
              100 * shallow_acc, 100 * before, 100 * after);
  EXPECT_DOUBLE_EQ(before, shallow_acc);  // identity layers: the same function
  EXPECT_GE(after, before - 0.005);
}

}  // namespace
}  // namespace strata::real
