// CostModel roofline, calibration files and host properties, against hand-derived numbers.
#include "strata/models/cost/cost_model.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "strata/models/cost/hardware.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

HostSpec test_host() {
  HostSpec host;
  host.name = "gpu-0";
  host.flops_fp32 = 10e12;
  host.flops_bf16 = 100e12;
  host.mem_bw = 1e12;
  return host;
}

Task compute_task(TaskKind kind, DType dtype, double flops, double bytes) {
  Task task;
  task.id = "t";
  task.kind = kind;
  task.dtype = dtype;
  task.flops = flops;
  task.bytes_read = bytes * 3 / 4;
  task.bytes_written = bytes / 4;
  return task;
}

TEST(CostModel, ComputeBoundLinearTakesFlopsOverPeakTimesEfficiency) {
  // 7e12 FLOP / (100e12 FLOP/s x 0.7) = 0.1 s; its 1e9 B take 1e9 / (1e12 x 0.8) = 1.25 ms.
  const CostModel cost;
  Task task = compute_task(TaskKind::linear_fwd, DType::bf16, 7e12, 1e9);
  EXPECT_DOUBLE_EQ(cost.compute_time(task, test_host()), 0.1);
}

TEST(CostModel, MemoryBoundTaskTakesBytesOverBandwidthTimesEfficiency) {
  // 8e9 B / (1e12 B/s x 0.8) = 10 ms; its 1e9 FLOP take 1e9 / (10e12 x 0.5) = 0.2 ms.
  const CostModel cost;
  Task task = compute_task(TaskKind::norm_fwd, DType::fp32, 1e9, 8e9);
  EXPECT_DOUBLE_EQ(cost.compute_time(task, test_host()), 0.01);
}

TEST(CostModel, DefaultEfficiencies) {
  const CostModel cost;
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::conv_bwd_weight, DType::fp16), 0.7);
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::attention_bwd, DType::bf16), 0.5);
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::norm_fwd, DType::fp32), 0.5);
  EXPECT_DOUBLE_EQ(cost.mem_efficiency(TaskKind::elementwise, DType::bf16), 0.8);
  EXPECT_DOUBLE_EQ(cost.overhead(TaskKind::linear_fwd, DType::bf16), 0.0);
}

TEST(CostModel, CalibrationOverridesByKindAndDtypeAndAddsOverhead) {
  Calibration calibration = Calibration::defaults();
  calibration.flops_efficiency["linear_fwd/bf16"] = 0.5;
  calibration.flops_efficiency["linear_fwd"] = 0.25;
  calibration.overhead_s["linear_fwd"] = 1e-3;
  const CostModel cost(calibration);
  // bf16 uses the kind/dtype entry: 1e-3 + 7e12 / (100e12 x 0.5) = 0.141 s.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::linear_fwd, DType::bf16, 7e12, 0), test_host()),
                   0.141);
  // fp32 falls back to the kind entry: 1e-3 + 1e12 / (10e12 x 0.25) = 0.401 s.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::linear_fwd, DType::fp32, 1e12, 0), test_host()),
                   0.401);
  // Other kinds keep the defaults.
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::linear_bwd_data, DType::bf16), 0.7);
}

TEST(CostModel, FixedTaskTakesItsDuration) {
  Calibration calibration = Calibration::defaults();
  calibration.overhead_s["fixed"] = 1.0;  // not applied: the duration is the whole time
  const CostModel cost(calibration);
  Task task = compute_task(TaskKind::fixed, DType::bf16, 1e15, 1e15);
  task.attrs["duration_s"] = 0.25;
  EXPECT_DOUBLE_EQ(cost.compute_time(task, test_host()), 0.25);
  task.attrs.erase("duration_s");
  EXPECT_THROW(cost.compute_time(task, test_host()), InputError);
}

TEST(CostModel, HostWithoutMemoryBandwidthHasNoMemoryRoof) {
  HostSpec host = test_host();
  host.mem_bw = 0;
  // 1e9 FLOP / (10e12 x 0.5) = 0.2 ms, however many bytes.
  EXPECT_DOUBLE_EQ(CostModel().compute_time(compute_task(TaskKind::norm_fwd, DType::fp32, 1e9, 8e9), host),
                   2e-4);
}

// --- calibration files ---------------------------------------------------------------------

class CalibrationFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
    std::ofstream(path) << text;
    return path.string();
  }

  static std::string error_of(const std::string& path) {
    try {
      load_calibration(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(CalibrationFile, LoadsOverridesAndKeepsDefaults) {
  const std::string path = write("good.json", R"({
    "schema_version": 2, "format": "strata-calibration",
    "default_flops_efficiency": 0.4, "default_mem_efficiency": 0.9,
    "flops_efficiency": {"linear_fwd/bf16": 0.72},
    "mem_efficiency": {"norm_fwd": 0.85},
    "overhead_s": {"linear_fwd": 4e-6}})");
  const Calibration c = load_calibration(path);
  EXPECT_EQ(c.source, path);
  EXPECT_DOUBLE_EQ(c.default_flops_efficiency, 0.4);
  const CostModel cost(c);
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::linear_fwd, DType::bf16), 0.72);
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::linear_fwd, DType::fp32), 0.7);  // built in
  EXPECT_DOUBLE_EQ(cost.flops_efficiency(TaskKind::norm_fwd, DType::fp32), 0.4);
  EXPECT_DOUBLE_EQ(cost.mem_efficiency(TaskKind::norm_fwd, DType::fp32), 0.85);
  EXPECT_DOUBLE_EQ(cost.mem_efficiency(TaskKind::pool_fwd, DType::fp32), 0.9);
  EXPECT_DOUBLE_EQ(cost.overhead(TaskKind::linear_fwd, DType::fp16), 4e-6);
}

TEST_F(CalibrationFile, RejectsOtherSchemaVersion) {
  // A file of the first format (no shape classes, transports or host) is refused, not misread.
  const std::string path = write("v1.json", R"({"schema_version": 1, "flops_efficiency": {}})");
  EXPECT_EQ(error_of(path), path + ": /schema_version: unsupported version 1 (expected 2)");
}

TEST_F(CalibrationFile, RejectsEfficiencyAboveOne) {
  const std::string path =
      write("c.json", R"({"schema_version": 2, "flops_efficiency": {"linear_fwd": 1.7}})");
  EXPECT_EQ(error_of(path), path + ": /flops_efficiency/linear_fwd: efficiency 1.7 outside (0, 1]");
}

TEST_F(CalibrationFile, RejectsUnknownKind) {
  const std::string path =
      write("kind.json", R"({"schema_version": 2, "mem_efficiency": {"lnear_fwd": 0.5}})");
  EXPECT_EQ(error_of(path), path + ": /mem_efficiency/lnear_fwd: unknown task kind 'lnear_fwd'");
}

TEST_F(CalibrationFile, RejectsCommunicationKindAndUnknownDtype) {
  std::string path = write("comm.json", R"({"schema_version": 2, "overhead_s": {"allreduce": 1e-6}})");
  EXPECT_EQ(error_of(path), path + ": /overhead_s/allreduce: task kind 'allreduce' is not a compute kind");
  // '/' in a key is escaped as ~1 in the JSON pointer (RFC 6901).
  path = write("dtype.json", R"({"schema_version": 2, "flops_efficiency": {"linear_fwd/bf32": 0.5}})");
  EXPECT_EQ(error_of(path), path + ": /flops_efficiency/linear_fwd~1bf32: unknown dtype 'bf32'");
}

TEST_F(CalibrationFile, RejectsMissingFileUnknownKeyAndBadJson) {
  const std::string missing = (std::filesystem::path(::testing::TempDir()) / "none.json").string();
  EXPECT_EQ(error_of(missing), missing + ": cannot open file");
  std::string path = write("key.json", R"({"schema_version": 2, "default_flops_eff": 0.5})");
  EXPECT_EQ(error_of(path), path + ": /default_flops_eff: unknown key");
  path = write("bad.json", R"({"schema_version": 2,)");
  const std::string error = error_of(path);
  EXPECT_EQ(error.rfind(path + ": invalid JSON: ", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  path = write("noversion.json", R"({"format": "strata-calibration"})");
  EXPECT_EQ(error_of(path), path + ": /schema_version: missing");
}

TEST(CostModel, ShapeClassEntriesWinOverClasslessOnesForTheirDecadeOnly) {
  Calibration calibration = Calibration::defaults();
  calibration.flops_efficiency["linear_fwd/fp32"] = 0.5;
  calibration.flops_efficiency["linear_fwd/1e9"] = 0.25;         // any dtype, [1e9, 1e10) FLOP
  calibration.flops_efficiency["linear_fwd/fp32/1e10"] = 0.125;  // fp32, [1e10, 1e11) FLOP
  calibration.mem_efficiency["activation_fwd/1e6"] = 0.5;        // no FLOPs: class of the bytes
  const CostModel cost(calibration);
  // 1e9 FLOP / (10e12 x 0.25) = 0.4 ms; 5e10 / (10e12 x 0.125) = 40 ms; 1e12 / (10e12 x 0.5) = 0.2 s.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::linear_fwd, DType::fp32, 1e9, 0), test_host()),
                   4e-4);
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::linear_fwd, DType::fp32, 5e10, 0), test_host()),
                   0.04);
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::linear_fwd, DType::fp32, 1e12, 0), test_host()),
                   0.1 * 2);
  // 9.99e9 is still in 1e9's decade: 9.99e9 / (100e12 x 0.25) for bf16.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::linear_fwd, DType::bf16, 9.99e9, 0), test_host()),
                   9.99e9 / 25e12);
  // 4e6 B / (1e12 B/s x 0.5) = 8 µs.
  EXPECT_DOUBLE_EQ(
      cost.compute_time(compute_task(TaskKind::activation_fwd, DType::fp32, 0, 4e6), test_host()), 8e-6);
  EXPECT_EQ(decade_class(1), "1e0");
  EXPECT_EQ(decade_class(99999), "1e4");
}

TEST(CostModel, ShapeClassEntriesWinOverTheirDecadeForThatShapeOnly) {
  Calibration calibration = Calibration::defaults();
  calibration.flops_efficiency["conv_fwd/fp32/1e7"] = 0.5;
  calibration.flops_efficiency["conv_fwd/fp32/1.51e7"] = 0.125;  // 1.505e7 .. 1.515e7 FLOP
  calibration.overhead_s["conv_fwd/1.51e7"] = 1e-6;              // any dtype
  const CostModel cost(calibration);
  // 1.5053e7 FLOP rounds to 1.51e7: 1.5053e7 / (10e12 x 0.125) + 1 µs.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::conv_fwd, DType::fp32, 1.5053e7, 0), test_host()),
                   1.5053e7 / 1.25e12 + 1e-6);
  // 3.07e7 is in the same decade, another shape: the decade's 0.5 and no overhead.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::conv_fwd, DType::fp32, 3.07e7, 0), test_host()),
                   3.07e7 / 5e12);
  // bf16 has no entry of its own for the shape: the flops efficiency falls back to the decade
  // (none for bf16, so conv's built-in 0.7), the dtype-free overhead still applies.
  EXPECT_DOUBLE_EQ(cost.compute_time(compute_task(TaskKind::conv_fwd, DType::bf16, 1.5053e7, 0), test_host()),
                   1.5053e7 / 70e12 + 1e-6);
  EXPECT_EQ(exact_shape_class(1.5053e7), "1.51e7");
  EXPECT_EQ(exact_shape_class(9.996e5), "1.00e6");
  EXPECT_EQ(exact_shape_class(42), "4.20e1");
}

TEST_F(CalibrationFile, WrittenCalibrationReadsBackTheSame) {
  Calibration c = Calibration::defaults();
  c.flops_efficiency["linear_fwd/fp32/1e7"] = 0.61;
  c.flops_efficiency["linear_fwd/fp32/2.57e7"] = 0.71;
  c.mem_efficiency["activation_bwd/1e5"] = 0.33;
  c.overhead_s["loss_fwd"] = 2.5e-6;
  c.transports["threads"] = TransportCalibration{1.5e-6, 2e-10, 3e-6, 4e-10, 2};
  c.host = HostCalibration{"box", 2, 9.6e10, 4.8e10, 1.2e10};
  const std::string text = calibration_to_json(c, "cpu", "2026-11-22T00:00:00Z");
  const Calibration back = load_calibration(write("round.json", text));
  EXPECT_EQ(back.flops_efficiency, c.flops_efficiency);
  EXPECT_EQ(back.mem_efficiency, c.mem_efficiency);
  EXPECT_EQ(back.overhead_s, c.overhead_s);
  ASSERT_EQ(back.transports.count("threads"), 1u);
  EXPECT_DOUBLE_EQ(back.transports.at("threads").p2p_beta_s_per_byte, 2e-10);
  EXPECT_DOUBLE_EQ(back.transports.at("threads").allreduce_alpha_s, 3e-6);
  EXPECT_EQ(back.host.name, "box");
  EXPECT_EQ(back.host.cores, 2);
  EXPECT_DOUBLE_EQ(back.host.mem_bw, 1.2e10);
  EXPECT_EQ(calibration_to_json(back, "cpu", "2026-11-22T00:00:00Z"), text);
}

TEST_F(CalibrationFile, RejectsBadShapeClassTransportAndHost) {
  std::string path =
      write("cls.json", R"({"schema_version": 2, "flops_efficiency": {"linear_fwd/fp32/1e99": 0.5}})");
  EXPECT_EQ(error_of(path), path +
                                ": /flops_efficiency/linear_fwd~1fp32~11e99: unknown shape class '1e99' "
                                "(expected a decade 1e0 ... 1e16 or a shape like 1.51e7)");
  path = write("tr.json", R"({"schema_version": 2, "transports": {"mpi": {"p2p_alpha_s": -1}}})");
  EXPECT_EQ(error_of(path), path + ": /transports/mpi/p2p_alpha_s: negative overhead -1 s");
  path = write(
      "host.json",
      R"({"schema_version": 2, "host": {"name": "h", "cores": 0, "flops_fp32": 1, "flops_fp64": 1, "mem_bw": 1}})");
  EXPECT_EQ(error_of(path), path + ": /host/cores: expected an integer >= 1, got 0");
}

// --- host properties -----------------------------------------------------------------------

TEST(HostSpec, ParsesSimGridUnits) {
  const HostSpec h = host_spec_from_properties("gpu-0",
                                               {{"gpus", "8"},
                                                {"flops_fp32", "19.5e12"},
                                                {"flops_bf16", "312Tf"},
                                                {"mem_bw", "2TBps"},
                                                {"gpu_memory", "80GiB"},
                                                {"price_per_hour", "32.77"},
                                                {"wattage_per_state", "100:400"}},
                                               1e9, 64);
  EXPECT_EQ(h.name, "gpu-0");
  EXPECT_EQ(h.slots, 8);
  EXPECT_DOUBLE_EQ(h.flops_fp32, 19.5e12);
  EXPECT_DOUBLE_EQ(h.flops_bf16, 312e12);
  EXPECT_DOUBLE_EQ(h.mem_bw, 2e12);
  EXPECT_DOUBLE_EQ(h.gpu_memory, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(h.price_per_hour, 32.77);
  EXPECT_DOUBLE_EQ(h.watts_idle, 100);
  EXPECT_DOUBLE_EQ(h.watts_busy, 400);
  // fp16 falls back to bf16, fp64 to half of fp32.
  EXPECT_DOUBLE_EQ(h.peak_flops(DType::fp16), 312e12);
  EXPECT_DOUBLE_EQ(h.peak_flops(DType::fp64), 9.75e12);
}

TEST(HostSpec, MoreUnitsAndPlainNumbers) {
  const HostSpec h = host_spec_from_properties("h",
                                               {{"mem_bw", "2039GBps"},
                                                {"gpu_memory", "80e9"},
                                                {"flops_fp16", "1.5Pflops"},
                                                {"wattage_per_state", "95:120:200, 90:100:150"}},
                                               1e9, 4);
  EXPECT_EQ(h.slots, 4);  // no gpus: cores
  EXPECT_DOUBLE_EQ(h.mem_bw, 2.039e12);
  EXPECT_DOUBLE_EQ(h.gpu_memory, 80e9);
  EXPECT_DOUBLE_EQ(h.peak_flops(DType::bf16), 1.5e15);  // bf16 falls back to fp16
  EXPECT_DOUBLE_EQ(h.flops_fp32, 1e9);                  // speed
  EXPECT_DOUBLE_EQ(h.watts_idle, 95);                   // pstate 0: idle:one_core:all_cores
  EXPECT_DOUBLE_EQ(h.watts_busy, 200);
  EXPECT_DOUBLE_EQ(host_spec_from_properties("h", {{"mem_bw", "8Gbps"}}, 1, 1).mem_bw, 1e9);
}

TEST(HostSpec, PlainSimGridHostRunsEveryDtypeAtSpeed) {
  const HostSpec h = host_spec_from_properties("cpu", {}, 2e9, 16);
  EXPECT_EQ(h.slots, 16);
  for (DType dtype : {DType::fp32, DType::bf16, DType::fp16, DType::fp64})
    EXPECT_DOUBLE_EQ(h.peak_flops(dtype), 2e9);
  EXPECT_DOUBLE_EQ(h.mem_bw, 0);
  EXPECT_DOUBLE_EQ(h.gpu_memory, 0);
}

TEST(HostSpec, RejectsMalformedValues) {
  auto error_of = [](const std::map<std::string, std::string>& properties) -> std::string {
    try {
      host_spec_from_properties("x", properties, 1e9, 1);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of({{"mem_bw", "abc"}}), "host 'x': property 'mem_bw': malformed value 'abc'");
  EXPECT_EQ(error_of({{"mem_bw", "80GiB"}}),
            "host 'x': property 'mem_bw': malformed value '80GiB'");  // a size, not a bandwidth
  EXPECT_EQ(error_of({{"flops_bf16", "-3Tf"}}), "host 'x': property 'flops_bf16': negative value '-3Tf'");
  EXPECT_EQ(error_of({{"gpus", "2.5"}}), "host 'x': property 'gpus': expected a positive integer, got '2.5'");
  EXPECT_EQ(error_of({{"wattage_per_state", "100"}}),
            "host 'x': property 'wattage_per_state': malformed value '100'");
}

}  // namespace
}  // namespace strata
