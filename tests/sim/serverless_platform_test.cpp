// platforms/hybrid-serverless.xml as strata reads it: 8 VMs of 8 worker slots, a pool of 128
// Lambda instances and one object store, with the figures its header cites; the function and
// storage hosts are no worker slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/platform.hpp"
#include "strata/traces/error.hpp"

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
  EXPECT_FALSE(r.store->cache);
  ASSERT_TRUE(r.cache.has_value());  // cache-0 sorts before s3-0 and is still not the store
  EXPECT_EQ(r.cache_host, "cache-0");
  EXPECT_TRUE(r.cache->cache);
  EXPECT_DOUBLE_EQ(r.cache->request_latency_s, 0.0005);
  EXPECT_DOUBLE_EQ(r.cache->price_per_hour, 0.156);
  const PlatformSummary summary = load_platform_summary_apart(kPlatform);
  ASSERT_EQ(summary.hosts.size(), 8u);
  EXPECT_EQ(summary.hosts.front().name, "vm-0");
  EXPECT_EQ(summary.total_slots(), 64);
  EXPECT_DOUBLE_EQ(summary.hosts.front().price_per_hour, 0.68);
}

// The MLP's Plan, data-parallel over n functions of 3,538 MB, a global batch of 256, exchanging by
// `algo`.
Plan mlp_in_functions(int n, CollectiveAlgo algo) {
  StrategyConfig c;
  c.dp = n;
  c.global_batch = 256;
  c.dp_algo = algo;
  Plan plan = lower(make_model("mlp", {}), c);
  plan.function_memory_mb = 3538;
  return plan;
}

// Data parallelism through the object store, the workers in functions of 3,538 MB (2 vCPUs):
// every PUT and GET pays the store's 150 ms request latency and moves its bytes at the 87.5 MB/s
// of a connection, one request after another per worker. Allreduce over n workers of S bytes:
// the merger's PUT, n - 1 GETs and the sum's PUT, then the others' GET: (n + 2)(0.15 + S/B).
// Scatter-reduce: n - 1 shard PUTs, n - 1 GETs, one PUT, n - 1 GETs of S/n: (3n - 2)(0.15 + S/nB).
// Before its PUT of the sum, a merger adds n - 1 buffers (3 bytes moved per byte added) at its
// two vCPUs' 2 x 7.1 GB/s, at no less than half of it.
TEST(ServerlessPlatform, CollectivesThroughTheStoreTakeLambdaMlsRequests) {
  const int n = 4;
  for (CollectiveAlgo algo : {CollectiveAlgo::storage_allreduce, CollectiveAlgo::storage_scatter_reduce}) {
    SCOPED_TRACE(std::string(to_string(algo)));
    const Plan plan = mlp_in_functions(n, algo);
    double bytes = 0;
    for (const Task& t : plan.tasks())
      if (is_collective(t.kind)) bytes += t.comm_bytes;
    ASSERT_GT(bytes, 0);
    const Report r = replay_report_apart(plan, kPlatform, ReplayOptions());
    const double request = 0.15 + (algo == CollectiveAlgo::storage_allreduce ? bytes : bytes / n) / 87.5e6;
    const double requests = (algo == CollectiveAlgo::storage_allreduce ? n + 2 : 3 * n - 2) * request;
    const double merge =
        3.0 * (n - 1) * (algo == CollectiveAlgo::storage_allreduce ? bytes : bytes / n) / (2 * 7.1e9);
    EXPECT_GE(r.exposed_comm_s, (requests + merge) * (1 - 1e-9));
    EXPECT_LE(r.exposed_comm_s, requests + 2 * merge);
    // Each worker in a function instance of 3,538 MB, billed by the GB-second while it runs.
    EXPECT_EQ(r.workers, n);
    EXPECT_DOUBLE_EQ(r.gpu_memory_bytes, 3538.0 * 1048576);
    EXPECT_NEAR(r.cost_usd, n * 3538.0 / 1024 * 0.0000166667 * r.iteration_time_s, 1e-12);
  }
}

// The same exchanges through the cache VM (cache-0: 0.5 ms a request, a function's link at
// 87.5 MB/s the narrowest), and LambdaML's parameter server on the first VM (vm-0, 25 us): four
// pushes at once, vm-0 sums them (3 (n - 1) S bytes at 0.8 of one core's 7.1 GB/s), four pulls at
// once.
TEST(ServerlessPlatform, CacheAndParameterServerTakeTheirRequests) {
  const int n = 4;
  for (CollectiveAlgo algo : {CollectiveAlgo::cache_allreduce, CollectiveAlgo::cache_scatter_reduce,
                              CollectiveAlgo::parameter_server}) {
    SCOPED_TRACE(std::string(to_string(algo)));
    const Plan plan = mlp_in_functions(n, algo);
    double bytes = 0;
    int collectives = 0;
    for (const Task& t : plan.tasks())
      if (is_collective(t.kind)) bytes += t.comm_bytes, ++collectives;
    ASSERT_EQ(collectives, 1);
    const Report r = replay_report_apart(plan, kPlatform, ReplayOptions());
    double requests = 0, merge = 0;
    if (algo == CollectiveAlgo::parameter_server) {
      requests = 2 * (25e-6 + bytes / 87.5e6);
      merge = 3.0 * (n - 1) * bytes / (0.8 * 7.1e9);  // the cost model's memory efficiency, 0.8
      EXPECT_NEAR(r.exposed_comm_s, requests + merge, 1e-6);
    } else {
      const bool whole = algo == CollectiveAlgo::cache_allreduce;
      requests = (whole ? n + 2 : 3 * n - 2) * (0.0005 + (whole ? bytes : bytes / n) / 87.5e6);
      merge = 3.0 * (n - 1) * (whole ? bytes : bytes / n) / (2 * 7.1e9);
      EXPECT_GE(r.exposed_comm_s, (requests + merge) * (1 - 1e-9));
      EXPECT_LE(r.exposed_comm_s, requests + 2 * merge);
    }
    std::printf("%s over %d functions of 3,538 MB: exposed %.3f ms, requests %.3f ms, merge %.3f ms\n",
                std::string(to_string(algo)).c_str(), n, r.exposed_comm_s * 1e3, requests * 1e3, merge * 1e3);
  }
}

// Without the host an exchange goes through: one line naming the platform and what it lacks.
TEST(ServerlessPlatform, ACacheOrServerExchangeNeedsItsHost) {
  StrategyConfig c;
  c.dp = 4;
  c.global_batch = 256;
  c.dp_algo = CollectiveAlgo::cache_allreduce;
  const std::string flat = std::string(STRATA_SOURCE_DIR) + "/platforms/test-flat-4.xml";
  auto message = [](const Plan& plan, const std::string& platform) {
    try {
      replay_report_apart(plan, platform, ReplayOptions());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message(lower(make_model("mlp", {}), c), flat)
                .find("goes through cache_allreduce and the platform has no cache VM (a store host with "
                      "storage_kind=cache"),
            std::string::npos);
  // Every host of flat-4 runs a worker: no VM is left for the server.
  c.dp_algo = CollectiveAlgo::parameter_server;
  EXPECT_NE(message(lower(make_model("mlp", {}), c), flat)
                .find("goes through parameter_server and the platform has no host for the parameter server "
                      "(a VM that "
                      "runs no worker)"),
            std::string::npos);
}

// --cold-starts: each function's first task waits its seeded cold start (draw w for worker w), and
// the first iteration counts from 0. One function: the draw plus the warm iteration, exactly; four
// exchanging through the store: between the smallest and the largest draw more than warm.
TEST(ServerlessPlatform, ColdStartsDelayEachFunctionsFirstTask) {
  const FunctionPool pool = *serverless_resources(kPlatform).pool;
  for (int n : {1, 4}) {
    SCOPED_TRACE("functions: " + std::to_string(n));
    StrategyConfig c;
    c.dp = n;
    c.global_batch = 32;
    c.dp_algo = CollectiveAlgo::storage_allreduce;
    Plan plan = lower(make_model("mlp", {}), c);
    plan.function_memory_mb = 3538;
    ReplayOptions warm, cold;
    cold.cold_starts = true;
    const double warm_s = replay_report_apart(plan, kPlatform, warm).iteration_time_s;
    const double cold_s = replay_report_apart(plan, kPlatform, cold).iteration_time_s;
    double least = 1e300, most = 0;
    for (int w = 0; w < n; ++w) {
      const double draw =
          cold_start_s(pool, static_cast<std::uint64_t>(plan.info.seed), static_cast<std::uint64_t>(w));
      least = std::min(least, draw), most = std::max(most, draw);
    }
    ASSERT_GT(least, 0);
    if (n == 1) {
      EXPECT_NEAR(cold_s, warm_s + least, 1e-9);
    } else {
      EXPECT_GE(cold_s, warm_s + least - 1e-9);
      EXPECT_LE(cold_s, warm_s + most + 1e-9);
    }
  }
}

// The store's routes are checked before anything runs: a function instance with no route to the
// store is one line naming both hosts (SimGrid would abort on the first PUT).
TEST(ServerlessPlatform, AFunctionWithoutARouteToTheStoreIsOneLine) {
  const std::string path = testing::TempDir() + "strata-no-store-route.xml";
  {
    std::ofstream xml(path);
    xml << R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
  <host id="vm-0" speed="1Gf"/>
  <host id="fn-0" speed="1Gf"><prop id="function_memory_mb" value="128-10240"/></host>
  <host id="s3-0" speed="1Gf"><prop id="storage_connection_bw" value="1e8"/></host>
  <link id="l" bandwidth="1GBps" latency="1us"/>
  <route src="vm-0" dst="vm-0"><link_ctn id="l"/></route>
  <route src="vm-0" dst="s3-0"><link_ctn id="l"/></route>
</zone></platform>
)";
  }
  try {
    load_platform_summary_apart(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no route from host 'fn-0' to host 's3-0'"), std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

TEST(ServerlessPlatform, StorageCollectivesNeedAStoreAndFunctionsAnOfferedSize) {
  StrategyConfig c;
  c.dp = 2;
  c.global_batch = 64;
  c.dp_algo = CollectiveAlgo::storage_allreduce;
  Plan plan = lower(make_model("mlp", {}), c);
  const std::string vms = std::string(STRATA_SOURCE_DIR) + "/platforms/cpu-cluster-4.xml";
  try {
    replay_report_apart(plan, vms, ReplayOptions());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("goes through storage_allreduce and the platform has no object store"),
        std::string::npos)
        << e.what();
  }
  plan.function_memory_mb = 20000;
  try {
    replay_report_apart(plan, kPlatform, ReplayOptions());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--function-memory: 20000 MB is not offered"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace strata
