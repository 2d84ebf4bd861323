// Bus-bandwidth curves: interpolation, the shipped fabrics against the published rows they come
// from, the platform properties and their errors, and the closed form's use of a curve.
#include "strata/models/cost/bus_bandwidth.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "estimate_fixtures.hpp"
#include "strata/models/cost/analytical.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using namespace estimate_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

std::string error_of(const std::map<std::string, std::string>& properties, bool inter) {
  try {
    fabric_from_properties("node-0", properties, GpuType::none, inter);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BusCurve, TimePerBusByteIsLinearBetweenMeasuredSizes) {
  // 1 MB at 10 GB/s (100 µs per bus byte... i.e. 1e6 / 1e10 = 100 µs) and 2 MB at 40 GB/s
  // (50 µs): at 1.5 MB the time is halfway, 75 µs, so 1.5e6 / 75e-6 = 20 GB/s.
  BusCurve curve;
  curve.bytes = {1e6, 2e6};
  curve.busbw = {10e9, 40e9};
  EXPECT_DOUBLE_EQ(curve.at(1.5e6), 20e9);
  // Outside the measured sizes the nearest figure holds.
  EXPECT_DOUBLE_EQ(curve.at(1e3), 10e9);
  EXPECT_DOUBLE_EQ(curve.at(1e9), 40e9);
}

TEST(BusCurve, ShippedA100NvswitchGivesThePublishedBusBandwidth) {
  // The source's 64 MiB row: 589.5 µs, printed busbw 199.23 GB/s (8 ranks: S / t x 7 / 4);
  // NVLink 3 is 300 GB/s per direction, so the efficiency is 199.23 / 300 = 0.664.
  const Fabric* a100 = shipped_fabric("a100-nvswitch");
  ASSERT_NE(a100, nullptr);
  EXPECT_NEAR(bus_efficiency(a100, TaskKind::allreduce, 67108864) * 300e9, 199.23e9, 0.01e9);
  // 8 GiB: 63,929 µs, printed 235.14 GB/s.
  EXPECT_NEAR(bus_efficiency(a100, TaskKind::allreduce, 8589934592.0) * 300e9, 235.14e9, 0.01e9);
  // An allgather without its own curve takes the allreduce's; a send, without one, the peak.
  EXPECT_DOUBLE_EQ(bus_efficiency(a100, TaskKind::allgather, 67108864),
                   bus_efficiency(a100, TaskKind::allreduce, 67108864));
  EXPECT_DOUBLE_EQ(bus_efficiency(a100, TaskKind::send, 67108864), 1);
  EXPECT_DOUBLE_EQ(bus_efficiency(a100, TaskKind::broadcast, 67108864), 1);
  EXPECT_DOUBLE_EQ(bus_efficiency(nullptr, TaskKind::allreduce, 67108864), 1);
  // Small messages are latency-bound: 1 KiB in 32.03 µs is 0.06 GB/s of bus bandwidth.
  EXPECT_LT(bus_efficiency(a100, TaskKind::allreduce, 1024), 1e-3);
}

TEST(BusCurve, EfficiencyNeverExceedsOne) {
  // The H100 run's busbw passes NVLink 4's 450 GB/s above 64 MB (NVLink SHARP): capped at 1.
  const Fabric* h100 = shipped_fabric("h100-nvswitch");
  ASSERT_NE(h100, nullptr);
  EXPECT_DOUBLE_EQ(bus_efficiency(h100, TaskKind::allreduce, 8589934592.0), 1);
  // The NDR fabric has its own allgather curve.
  const Fabric* ndr = shipped_fabric("ib-ndr");
  ASSERT_NE(ndr, nullptr);
  EXPECT_NE(bus_efficiency(ndr, TaskKind::allgather, 67108864),
            bus_efficiency(ndr, TaskKind::allreduce, 67108864));
}

TEST(BusCurve, GpuHostsGetTheirTypesFabricsAndCpuHostsNone) {
  const HostSpec a100 = host_spec_from_properties(
      "node-0", {{"gpus", "8"}, {"flops_bf16", "312Tf"}, {"gpu_memory", "80GB"}}, 19.5e12, 8);
  ASSERT_NE(a100.fabric_intra, nullptr);
  ASSERT_NE(a100.fabric_inter, nullptr);
  EXPECT_EQ(a100.fabric_intra->name, "a100-nvswitch");
  EXPECT_EQ(a100.fabric_inter->name, "ib-hdr");
  const HostSpec h100 =
      host_spec_from_properties("node-0", {{"gpus", "8"}, {"flops_bf16", "989Tf"}}, 67e12, 8);
  EXPECT_EQ(h100.fabric_intra->name, "h100-nvswitch");
  EXPECT_EQ(h100.fabric_inter->name, "ib-ndr");
  const HostSpec cpu = host_spec_from_properties("cpu-0", {}, 1e10, 4);
  EXPECT_EQ(cpu.fabric_intra, nullptr);
  EXPECT_EQ(cpu.fabric_inter, nullptr);
  // "ideal" turns a side off; a name picks a shipped fabric.
  const HostSpec ideal = host_spec_from_properties(
      "node-0",
      {{"gpus", "8"}, {"flops_bf16", "312Tf"}, {"fabric_intra", "ideal"}, {"fabric_inter", "ib-ndr"}},
      19.5e12, 8);
  EXPECT_EQ(ideal.fabric_intra, nullptr);
  EXPECT_EQ(ideal.fabric_inter->name, "ib-ndr");
}

TEST(BusCurve, PlatformCurvesAreCheckedAgainstTheirLink) {
  auto given = fabric_from_properties("node-0", {{"busbw_allreduce_inter", "1MiB:20GBps 64MiB:150GBps"}},
                                      GpuType::a100_80gb, true);
  ASSERT_NE(given, nullptr);
  EXPECT_EQ(given->name, "platform");
  EXPECT_DOUBLE_EQ(bus_efficiency(given.get(), TaskKind::allreduce, 1 << 20), 1);  // unresolved
  std::string problem;
  auto resolved = resolve_platform_fabric(given, true, 200e9, problem);
  EXPECT_EQ(problem, "");
  EXPECT_DOUBLE_EQ(bus_efficiency(resolved.get(), TaskKind::allreduce, 64 << 20), 0.75);
  resolve_platform_fabric(given, true, 100e9, problem);
  EXPECT_EQ(problem,
            "property 'busbw_allreduce_inter': 150.00 GB/s at 64.00 MiB is above the link's 100.00 GB/s "
            "(between hosts)");
}

TEST(BusCurve, BadPropertiesAreOneLineEach) {
  EXPECT_EQ(error_of({{"busbw_allreduce_intra", "64MiB:100GBps 1MiB:20GBps"}}, false),
            "host 'node-0': property 'busbw_allreduce_intra': '1MiB:20GBps': sizes must increase (1.00 MiB "
            "after 64.00 MiB)");
  EXPECT_EQ(error_of({{"busbw_allreduce_intra", "1MiB"}}, false),
            "host 'node-0': property 'busbw_allreduce_intra': '1MiB' is not size:bandwidth (e.g. "
            "64MiB:180GBps)");
  EXPECT_EQ(error_of({{"busbw_sendrecv_inter", "1MiB:-3GBps"}}, true),
            "host 'node-0': property 'busbw_sendrecv_inter': '1MiB:-3GBps': the bus bandwidth is not a "
            "positive bandwidth (GBps, Gbps, ...)");
  EXPECT_EQ(error_of({{"fabric_inter", "ib-xdr"}}, true),
            "host 'node-0': property 'fabric_inter': unknown fabric 'ib-xdr' (known: ideal, a100-nvswitch, "
            "h100-nvswitch, ib-hdr, ib-ndr)");
  EXPECT_EQ(
      error_of({{"fabric_intra", "ideal"}, {"busbw_allreduce_intra", "1MiB:2GBps"}}, false),
      "host 'node-0': property 'fabric_intra': give either a fabric name or busbw_allreduce_intra, not both");
}

TEST(BusCurve, TheClosedFormRunsCollectivesAtTheFabricsEfficiency) {
  // As Analytical.DataParallelRingIsFullyExposedWithoutBackward: dp = 4 on one host at 1 GB/s,
  // 10 µs, S = 4 MB. A platform curve of 0.5 GB/s at every size halves the bandwidth:
  // 6 (10 µs + 4 MB / (4 x 0.5 GB/s)) = 12.06 ms instead of 6.06 ms.
  auto [model, cluster] = dp_ring_case();
  std::string problem;
  cluster.host.fabric_intra = resolve_platform_fabric(
      fabric_from_properties("h", {{"busbw_allreduce_intra", "1MB:0.5GBps"}}, GpuType::none, false), false,
      1e9, problem);
  ASSERT_EQ(problem, "");
  EXPECT_DOUBLE_EQ(estimate(model, config_with(4, 1, 1, 0, 4), cluster, CostModel()).dp_comm_s, 12.06e-3);
}

}  // namespace
}  // namespace strata
