// The serverless model (models/cost/serverless.hpp) against the figures AWS documents and the
// issue's known answers: GB-seconds as AWS bills them, invocations under the 900 s cap, the
// CPU share that grows with memory, seeded cold starts, and one line for each bad figure.
#include "strata/models/cost/serverless.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

// AWS Lambda (x86, us-east-1) as platforms/hybrid-serverless.xml declares it.
FunctionPool lambda() {
  return function_pool_from_properties("fn-0",
                                       {{"function_memory_mb", "128-10240"},
                                        {"function_mb_per_vcpu", "1769"},
                                        {"function_max_vcpus", "6"},
                                        {"function_cold_start_median_s", "0.25"},
                                        {"function_cold_start_sigma", "0.5"},
                                        {"function_max_duration_s", "900"},
                                        {"function_price_per_gb_s", "0.0000166667"},
                                        {"function_price_per_request", "0.0000002"}},
                                       48e9);
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(Serverless, BillsGigabyteSecondsAsAwsDoes) {
  const FunctionPool pool = lambda();
  // 100 functions x 3,008 MB x 60 s = 100 x 2.9375 GB x 60 s (1 GB = 1,024 MB).
  EXPECT_DOUBLE_EQ(gb_seconds(pool, 100, 3008, 60), 17625);
  // At 0.0000166667 USD per GB-s and 0.0000002 USD per request: 0.29375 + 0.00002 USD.
  const double usd = function_cost_usd(pool, 100, 3008, 60);
  EXPECT_NEAR(usd, 17625 * 0.0000166667 + 100 * 0.0000002, 1e-12);
  EXPECT_EQ(std::lround(usd * 100), 29);  // to the cent
  // A duration is billed up to the next millisecond.
  EXPECT_DOUBLE_EQ(gb_seconds(pool, 1, 1024, 0.0101), 0.011);
}

TEST(Serverless, ALongRunIsCutIntoInvocationsAtTheCap) {
  const FunctionPool pool = lambda();
  const Invocations plain = split_into_invocations(pool, 2000, 0, 0);
  EXPECT_EQ(plain.invocations, 3);
  EXPECT_EQ(plain.checkpoints, 2);
  EXPECT_DOUBLE_EQ(plain.billed_s, 2000);
  // 20 s to checkpoint and 10 s to restore: 880 s of work in the first, 870 in the second, the
  // last restores and does the remaining 250 s.
  const Invocations paid = split_into_invocations(pool, 2000, 20, 10);
  EXPECT_EQ(paid.durations_s, (std::vector<double>{900, 900, 260}));
  EXPECT_EQ(paid.checkpoints, 2);
  EXPECT_EQ(error_of([&] { split_into_invocations(pool, 2000, 500, 500); }),
            "a 900 s cap leaves no work after 500 s to restore and 500 s to checkpoint");
}

TEST(Serverless, MemoryBuysCpuOnlyForThreadsThatUseIt) {
  const FunctionPool pool = lambda();
  const double flops = 1e12;
  EXPECT_DOUBLE_EQ(function_compute_time(pool, 1769, flops, 2) / function_compute_time(pool, 3538, flops, 2),
                   2);
  EXPECT_DOUBLE_EQ(function_compute_time(pool, 1769, flops, 1), function_compute_time(pool, 3538, flops, 1));
  EXPECT_DOUBLE_EQ(vcpus(pool, 10240), 10240.0 / 1769);  // 5.79: below the 6-vCPU cap
  EXPECT_DOUBLE_EQ(function_compute_time(pool, 884.5, flops, 1),
                   2 * function_compute_time(pool, 1769, flops, 1));
}

// A 2,000 s job under the 900 s cap makes 3 invocations, each issued as the previous one returns:
// only the first starts cold while the pool keeps an idle instance warm for 600 s; all three do
// when it keeps none, or when the gap reaches the keep-alive.
TEST(Serverless, ReinvocationsStartWarmWithinTheKeepAlive) {
  FunctionPool pool = lambda();
  EXPECT_DOUBLE_EQ(pool.keep_alive_s, 600);
  EXPECT_EQ(cold_invocations(pool, 3, 0), 1);
  EXPECT_EQ(cold_invocations(pool, 3, 599.9), 1);
  EXPECT_EQ(cold_invocations(pool, 3, 600), 3);
  EXPECT_EQ(cold_invocations(pool, 0, 0), 0);
  pool.keep_alive_s = 0;
  EXPECT_EQ(cold_invocations(pool, 3, 0), 3);
}

TEST(Serverless, ColdStartsAreSeededAndLogNormal) {
  const FunctionPool pool = lambda();
  EXPECT_EQ(cold_start_s(pool, 7, 3), cold_start_s(pool, 7, 3));
  EXPECT_NE(cold_start_s(pool, 7, 3), cold_start_s(pool, 8, 3));
  // The median of many draws is the configured median, the log's spread its sigma.
  std::vector<double> draws;
  double sum = 0, sum2 = 0;
  for (std::uint64_t k = 0; k < 20000; ++k) {
    const double d = cold_start_s(pool, 42, k);
    draws.push_back(d);
    sum += std::log(d), sum2 += std::log(d) * std::log(d);
  }
  std::nth_element(draws.begin(), draws.begin() + 10000, draws.end());
  EXPECT_NEAR(draws[10000], 0.25, 0.01);
  const double mean = sum / 20000, sd = std::sqrt(sum2 / 20000 - mean * mean);
  EXPECT_NEAR(sd, 0.5, 0.01);
}

TEST(Serverless, BadFiguresAreOneLine) {
  const FunctionPool pool = lambda();
  EXPECT_EQ(error_of([&] { check_memory_offered(pool, 100, "--memory"); }),
            "--memory: 100 MB is not offered (128 to 10240 MB, whole MB)");
  EXPECT_EQ(error_of([&] {
              function_pool_from_properties("fn-3", {{"function_memory_mb", "128-x"}}, 1e9);
            }),
            "host 'fn-3': property 'function_memory_mb': 'x' is not a number");
  EXPECT_EQ(error_of([&] {
              function_pool_from_properties("fn-3", {{"function_memory_mb", "1024-128"}}, 1e9);
            }),
            "host 'fn-3': property 'function_memory_mb': range 1024-128 ends below its start");
  EXPECT_EQ(error_of([&] {
              function_pool_from_properties(
                  "fn-3", {{"function_memory_mb", "128,1024"}, {"function_price_per_gb_s", "-1"}}, 1e9);
            }),
            "host 'fn-3': property 'function_price_per_gb_s': -1 is outside [0, 1]");
  const FunctionPool listed =
      function_pool_from_properties("fn-3", {{"function_memory_mb", "1024,128,3008"}}, 1e9);
  EXPECT_EQ(listed.memory_mb, (std::vector<double>{128, 1024, 3008}));
  EXPECT_EQ(error_of([&] { check_memory_offered(listed, 2048, "--memory"); }),
            "--memory: 2048 MB is not offered (128, 1024, 3008 MB)");
}

}  // namespace
}  // namespace strata
