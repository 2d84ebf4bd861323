// What the CUDA tests share: random host data, the comparison against the CPU results, and the
// per-precision tolerance (float: relative error < 1e-5, double: < 1e-12).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "strata/real/cuda_backend.hpp"
#include "strata/real/device_array.hpp"

namespace strata::real::cuda_test {

template <typename T>
constexpr double kTolerance = sizeof(T) == sizeof(float) ? 1e-5 : 1e-12;

// Uniform in [lo, hi), drawn in double and rounded to T, reproducible from the seed.
template <typename T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> out(static_cast<std::size_t>(n));
  for (T& v : out) v = static_cast<T>(dist(rng));
  return out;
}

// max |actual - expected| / max |expected|: the error relative to the size of the result, so that
// entries that cancel to near zero do not dominate.
template <typename T>
double relative_error(const std::vector<T>& actual, const std::vector<T>& expected) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(actual[i]) - static_cast<double>(expected[i])));
    scale = std::max(scale, std::abs(static_cast<double>(expected[i])));
  }
  return diff / std::max(scale, 1e-300);
}

// Checks a GPU result against the CPU's within the precision's tolerance.
template <typename T>
void expect_close(const std::vector<T>& gpu, const std::vector<T>& cpu, const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  EXPECT_LT(relative_error(gpu, cpu), kTolerance<T>) << what;
}

// The GPU result of a device array, after the backend's queued work has run.
template <typename T>
std::vector<T> result_of(const CudaBackend& backend, const DeviceArray<T>& array) {
  backend.synchronize();
  return array.download();
}

using Precisions = ::testing::Types<float, double>;

}  // namespace strata::real::cuda_test
