// Platforms as strata reads them: natural host order, worker placement, placement files, and the
// shipped platform files (each loaded in its own process: one SimGrid engine per process).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim_fixtures.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

PlatformSummary hosts_with_slots(const std::vector<int>& slots) {
  PlatformSummary p;
  p.path = "p.xml";
  for (std::size_t i = 0; i < slots.size(); ++i) {
    HostSpec h;
    h.name = "node-" + std::to_string(i);
    h.slots = slots[i];
    p.hosts.push_back(h);
  }
  return p;
}

TEST(Platform, NaturalOrderComparesDigitRunsAsNumbers) {
  std::vector<std::string> names = {"node-10", "node-2", "node-1", "gpu-02", "gpu-1", "node-10a", "node-9"};
  std::sort(names.begin(), names.end(), natural_less);
  EXPECT_EQ(names, (std::vector<std::string>{"gpu-1", "gpu-02", "node-1", "node-2", "node-9", "node-10",
                                             "node-10a"}));
}

TEST(Platform, NaturalPlacementFillsHostsInOrder) {
  // Slots 2, 3, 1: workers 0-1 on host 0, 2-4 on host 1, 5 on host 2.
  EXPECT_EQ(place_workers(hosts_with_slots({2, 3, 1}), 6), (std::vector<int>{0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(place_workers(hosts_with_slots({2, 3, 1}), 3), (std::vector<int>{0, 0, 1}));
}

TEST(Platform, ExplicitPlacementAndItsErrors) {
  const PlatformSummary p = hosts_with_slots({1, 2});
  EXPECT_EQ(place_workers(p, 3, {"node-1", "node-0", "node-1"}), (std::vector<int>{1, 0, 1}));
  try {
    place_workers(p, 2, {"node-0", "node-0"});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "placement: worker 1: host 'node-0' has only 1 worker slots");
  }
  try {
    place_workers(p, 3, {"node-0"});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "placement: names 1 workers, the plan has 3");
  }
  try {
    place_workers(p, 4);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "p.xml: 4 workers need 4 worker slots, the platform has 3");
  }
}

TEST(Platform, PlacementFilesAsJsonOrLines) {
  const std::string json = test::write_temp("place.json", R"({"workers": ["node-1", "node-0"]})");
  EXPECT_EQ(read_placement(json), (std::vector<std::string>{"node-1", "node-0"}));
  const std::string lines = test::write_temp("place.txt", "# one host per worker\nnode-3\n  node-2  \n\n");
  EXPECT_EQ(read_placement(lines), (std::vector<std::string>{"node-3", "node-2"}));
  const std::string bad = test::write_temp("bad.json", R"({"workers": ["node-1", 7]})");
  try {
    read_placement(bad);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ": /workers/1: not a host name");
  }
  EXPECT_THROW(read_placement(test::write_temp("nope/../missing.txt", "")), InputError);
}

nlohmann::json summary_of(const std::string& file) {
  return nlohmann::json::parse(run_in_child([file] {
    const PlatformSummary s = load_platform_summary(test::platforms_dir() + file);
    const HostSpec& h = s.hosts.front();
    return nlohmann::json{{"hosts", s.hosts.size()},
                          {"slots", s.total_slots()},
                          {"first", h.name},
                          {"last", s.hosts.back().name},
                          {"bf16", h.flops_bf16},
                          {"mem_bw", h.mem_bw},
                          {"gpu_memory", h.gpu_memory},
                          {"pcie_bw", h.pcie_bw},
                          {"intra_bw", s.network.intra_bw},
                          {"intra_latency", s.network.intra_latency},
                          {"inter_bw", s.network.inter_bw},
                          {"inter_latency", s.network.inter_latency},
                          {"intra_shared", s.network.intra_shared}}
        .dump();
  }));
}

TEST(Platform, ShippedA100ClusterHasItsDataSheetFigures) {
  const auto s = summary_of("a100-cluster-64.xml");
  EXPECT_EQ(s["hosts"], 8);
  EXPECT_EQ(s["slots"], 64);
  EXPECT_EQ(s["first"], "node-0");
  EXPECT_EQ(s["last"], "node-7");
  EXPECT_DOUBLE_EQ(s["bf16"].get<double>(), 312e12);
  EXPECT_DOUBLE_EQ(s["mem_bw"].get<double>(), 2.039e12);
  EXPECT_DOUBLE_EQ(s["gpu_memory"].get<double>(), 80e9);
  EXPECT_DOUBLE_EQ(s["intra_bw"].get<double>(), 300e9);  // NVLink3, per direction, FATPIPE
  EXPECT_FALSE(s["intra_shared"].get<bool>());
  EXPECT_DOUBLE_EQ(s["inter_bw"].get<double>(), 200e9);  // 8 x 200 Gb/s HDR
  EXPECT_NEAR(s["inter_latency"].get<double>(), 1.4e-6, 1e-12);
}

// The Selene-like files (tools/selene_platform.py): DGX A100 80 GB nodes, 8 x 200 Gb/s HDR per
// node, NVLink3 inside; figures from the A100 datasheet, the DGX A100 white paper and the PCIe 4.0
// specification (x16: 16 lanes x 16 GT/s x 128/130 / 8 bits = 31.5 GB/s per direction).
TEST(Platform, ShippedSelenePlatformsHaveTheirDataSheetFigures) {
  for (const int gpus : {32, 64, 128, 256, 512, 3072}) {
    const std::string file = "selene-" + std::to_string(gpus) + ".xml";
    const auto s = summary_of(file);
    EXPECT_EQ(s["slots"], gpus) << file;
    EXPECT_EQ(s["hosts"], gpus / 8) << file;
    EXPECT_EQ(s["last"], "node-" + std::to_string(gpus / 8 - 1)) << file;
    EXPECT_DOUBLE_EQ(s["bf16"].get<double>(), 312e12) << file;
    EXPECT_DOUBLE_EQ(s["mem_bw"].get<double>(), 2.039e12) << file;
    EXPECT_DOUBLE_EQ(s["gpu_memory"].get<double>(), 80e9) << file;
    EXPECT_NEAR(s["pcie_bw"].get<double>(), 16 * 16e9 * 128 / 130 / 8, 0.01e9) << file;  // 31.5e9 B/s
    EXPECT_DOUBLE_EQ(s["intra_bw"].get<double>(), 300e9) << file;          // NVLink3 600 GB/s / 2
    EXPECT_DOUBLE_EQ(s["inter_bw"].get<double>(), 200e9) << file;          // 8 x 200 Gb/s HDR
    EXPECT_NEAR(s["inter_latency"].get<double>(), 1.4e-6, 1e-12) << file;  // node-0 -> node-1: one leaf
  }
}

TEST(Platform, EveryShippedPlatformLoadsWithNaturallyOrderedHosts) {
  for (const auto& [file, slots] :
       std::vector<std::pair<std::string, int>>{{"cpu-cluster-4.xml", 64},
                                                {"a100-node-8.xml", 8},
                                                {"a100-cluster-64.xml", 64},
                                                {"h100-cluster-1024.xml", 1024},
                                                {"anchor-1024.xml", 1024},
                                                {"anchor-16.xml", 16},
                                                {"test-flat-4.xml", 4},
                                                {"test-fattree-2to1.xml", 8},
                                                {"h100-16384.xml", 16384},
                                                {"h100-fattree-16384.xml", 16384},
                                                {"h100-65536.xml", 65536},
                                                {"h100-fattree-65536.xml", 65536}}) {
    const auto s = summary_of(file);
    EXPECT_EQ(s["slots"], slots) << file;
    EXPECT_EQ(s["first"], "node-0") << file;
    EXPECT_EQ(s["last"], "node-" + std::to_string(s["hosts"].get<int>() - 1)) << file;
  }
}

TEST(Platform, AnchorLatenciesAreExact) {
  const auto s = summary_of("anchor-1024.xml");
  EXPECT_NEAR(s["intra_latency"].get<double>(), 0.94e-6, 1e-12);
  EXPECT_NEAR(s["inter_latency"].get<double>(), 2e-6, 1e-12);
  EXPECT_DOUBLE_EQ(s["intra_bw"].get<double>(), 400e9);
  EXPECT_DOUBLE_EQ(s["inter_bw"].get<double>(), 400e9);  // 8 GPUs x 50 GB/s
}

}  // namespace
}  // namespace strata
