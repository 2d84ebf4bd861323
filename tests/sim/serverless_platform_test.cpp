// platforms/hybrid-serverless.xml as strata reads it: 8 VMs of 8 worker slots, a pool of 128
// Lambda instances and one object store, with the figures its header cites; the function and
// storage hosts are no worker slots.
#include <gtest/gtest.h>

#include <string>

#include "strata/sim/explore.hpp"
#include "strata/sim/platform.hpp"

namespace strata {
namespace {

const std::string kPlatform = std::string(STRATA_SOURCE_DIR) + "/platforms/hybrid-serverless.xml";

TEST(ServerlessPlatform, ShippedPlatformHasVmsFunctionsAndAStore) {
  const ServerlessResources r = serverless_resources(kPlatform);
  ASSERT_TRUE(r.pool.has_value());
  ASSERT_TRUE(r.store.has_value());
  EXPECT_EQ(r.instances, 128);
  EXPECT_EQ(r.store_host, "s3-0");
  const FunctionPool& pool = *r.pool;
  EXPECT_EQ(pool.memory_mb, (std::vector<double>{128, 10240}));
  EXPECT_DOUBLE_EQ(pool.mb_per_vcpu, 1769);
  EXPECT_DOUBLE_EQ(pool.max_duration_s, 900);
  EXPECT_DOUBLE_EQ(pool.price_per_gb_s, 0.0000166667);
  EXPECT_DOUBLE_EQ(pool.price_per_request, 0.2e-6);
  EXPECT_DOUBLE_EQ(pool.vcpu_flops, 96e9);
  EXPECT_EQ(pool.concurrency, 1000);
  EXPECT_DOUBLE_EQ(r.store->connection_bandwidth, 87.5e6);
  EXPECT_DOUBLE_EQ(r.store->price_per_put, 0.005 / 1000);
  EXPECT_DOUBLE_EQ(r.store->price_per_get, 0.0004 / 1000);
  const PlatformSummary summary = load_platform_summary_apart(kPlatform);
  ASSERT_EQ(summary.hosts.size(), 8u);
  EXPECT_EQ(summary.hosts.front().name, "vm-0");
  EXPECT_EQ(summary.total_slots(), 64);
  EXPECT_DOUBLE_EQ(summary.hosts.front().price_per_hour, 0.68);
}

}  // namespace
}  // namespace strata
