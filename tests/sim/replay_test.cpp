// Replay against hand-derived times. Platforms set SimGrid's factors to 1 and cross traffic off
// (strata's default), so α–β formulas hold exactly. Each TEST runs in its own process
// (gtest_discover_tests); tests needing two replays run them in children (process.hpp).
#include <gtest/gtest.h>

#include <array>

#include <nlohmann/json.hpp>

#include "sim_fixtures.hpp"
#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using test::add_transfer;
using test::comm_task;
using test::fixed_task;

constexpr double kAlpha = 2e-6;  // test-flat-4: two 1 µs private links
constexpr double kBeta = 1e11;   // 100 GB/s

// A named default: GCC 12 warns (-Wmaybe-uninitialized) on a braced temporary here.
const ReplayOptions& default_options() {
  static const ReplayOptions options;
  return options;
}

std::string flat4() { return test::platforms_dir() + "test-flat-4.xml"; }

TEST(Replay, OneTransferIsLatencyPlusSizeOverBandwidth) {
  Plan plan(2);
  add_transfer(plan, 0, 1, 1e9);
  plan.validate();
  ReplayResult result = replay(plan, flat4(), default_options());
  EXPECT_NEAR(result.report.iteration_time_s, kAlpha + 1e9 / kBeta, 1e-12);
  EXPECT_DOUBLE_EQ(result.report.bytes_inter_host, 1e9);
}

// A stream in issue order (PlanInfo::stream_order) runs its tasks as the framework issued them:
// worker 0's compute stream issues a (waits for worker 1's x, 3 s, and its transfer) before b
// (independent, 1 s). As a dataflow b runs during the wait: 3 + T + 1 s; in issue order it waits
// behind a: 3 + T + 1 + 1 s.
TEST(Replay, AStreamInIssueOrderRunsItsTasksInThatOrder) {
  Plan plan(2);
  const TaskIndex x = plan.add_task(fixed_task("x", 1, 3.0));
  const auto [s, r] = add_transfer(plan, 1, 0, 1e9);
  Task a = fixed_task("a", 0, 1.0);
  a.priority = 0;
  const TaskIndex ai = plan.add_task(a);
  Task b = fixed_task("b", 0, 1.0);
  b.priority = 1;
  plan.add_task(b);
  plan.add_data_dep(x, s);
  plan.add_data_dep(r, ai);
  plan.validate();
  const double transfer = kAlpha + 1e9 / kBeta;
  const auto iteration = [&plan](StreamOrder order) {  // one replay per process
    plan.info.stream_order = order;
    char text[64];
    return std::stod(run_in_child([&] {
      std::snprintf(text, sizeof text, "%.17g",
                    replay(plan, flat4(), default_options()).report.iteration_time_s);
      return std::string(text);
    }));
  };
  EXPECT_NEAR(iteration(StreamOrder::ready), 3 + transfer + 1, 1e-9);
  EXPECT_NEAR(iteration(StreamOrder::issue), 3 + transfer + 2, 1e-9);
}

double ring_allreduce_time(CollectiveMode mode, int n, double bytes) {
  Plan plan(n);
  Task ar = comm_task("ar", TaskKind::allreduce, bytes);
  ar.algo = CollectiveAlgo::ring;
  for (int w = 0; w < n; ++w) ar.group.push_back(w);
  plan.add_task(ar);
  plan.validate();
  ReplayOptions options;
  options.collectives = mode;
  return replay(plan, flat4(), options).report.iteration_time_s;
}

TEST(Replay, RingAllreduceStepMatchesAlphaBeta) {
  const double s = 1e9;
  const int n = 4;
  // 2(n-1)·(α + S/(n·B)) = 6 · (2 µs + 2.5 ms) = 15.012 ms
  EXPECT_NEAR(ring_allreduce_time(CollectiveMode::step, n, s), 2.0 * (n - 1) * (kAlpha + s / (n * kBeta)),
              1e-12);
}

// A platform's bus-bandwidth curve (models/cost/bus_bandwidth.hpp) slows the wire to the busbw it
// gives for the buffer's size: 50 GB/s on 100 GB/s links is half the bandwidth, so the ring of
// Replay.RingAllreduceStepMatchesAlphaBeta takes 6 (2 µs + 1 GB / (4 x 50 GB/s)) = 30.012 ms, and
// the bytes counted are still the buffer's.
TEST(Replay, ACollectiveRunsAtThePlatformsBusBandwidth) {
  const std::string platform = test::flat_cluster(
      4, 1, 1e11, 1e-6, 1e18, 0, "<prop id=\"busbw_allreduce_inter\" value=\"1MB:50GBps\"/>");
  Plan plan(4);
  Task ar = comm_task("ar", TaskKind::allreduce, 1e9);
  ar.algo = CollectiveAlgo::ring;
  ar.group = {0, 1, 2, 3};
  plan.add_task(ar);
  plan.validate();
  ReplayOptions options;
  options.collectives = CollectiveMode::step;
  const ReplayResult result = replay(plan, platform, options);
  EXPECT_NEAR(result.report.iteration_time_s, 6 * (kAlpha + 1e9 / (4 * 5e10)), 1e-12);
  EXPECT_DOUBLE_EQ(result.report.bytes_inter_host, 6 * 4 * 1e9 / 4);
}

TEST(Replay, ACurveAboveItsLinkIsRefused) {
  const std::string platform = test::flat_cluster(
      4, 1, 1e11, 1e-6, 1e18, 0, "<prop id=\"busbw_allreduce_inter\" value=\"1MiB:150GBps\"/>");
  Plan plan(4);
  add_transfer(plan, 0, 1, 1e9);
  plan.validate();
  try {
    replay(plan, platform, default_options());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              platform +
                  ": host 'node-0': property 'busbw_allreduce_inter': 150.00 GB/s at 1.00 MiB "
                  "is above the link's 100.00 GB/s (between hosts)");
  }
}

// The report's breakdown and MFU are what the trace says: a small GPT with dp 2, tp 2 on
// test-flat-4 (one GPU per host: the TP all-reduces cross hosts too; the DP all-reduce after the
// flush), its compute records summed
// by kind per worker and averaged, and its model FLOPs over the iteration times the peak.
TEST(Replay, TheReportsBreakdownAndMfuAreTheTracesSums) {
  StrategyConfig config;
  config.dp = 2;
  config.tp = 2;
  config.microbatches = 2;
  config.global_batch = 4;
  config.dtype = DType::bf16;
  config.ddp = DdpMode::after_flush;  // the gradients' all-reduce after the flush: exposed
  Plan plan = lower(
      make_model("gpt3-175b",
                 {{"layers", "2"}, {"hidden", "256"}, {"heads", "4"}, {"seq", "128"}, {"vocab", "1000"}}),
      config);
  plan.validate();
  const ReplayResult result = replay(plan, flat4(), default_options());
  const Report& r = result.report;
  std::array<double, 4> parts{};  // GEMM, attention core, memory-bound, optimizer
  for (const TraceRecord& record : result.trace.records) {
    if (is_communication(record.kind)) continue;
    const std::size_t part =
        is_linear(record.kind)                                                             ? 0
        : record.kind == TaskKind::attention_fwd || record.kind == TaskKind::attention_bwd ? 1
        : record.kind == TaskKind::optimizer_step                                          ? 3
                                                                                           : 2;
    parts[part] += (record.end - record.start) / 4;  // every worker computes
  }
  EXPECT_GT(parts[0], 0);
  EXPECT_GT(parts[1], 0);
  EXPECT_GT(parts[2], 0);
  EXPECT_GT(parts[3], 0);
  EXPECT_NEAR(r.breakdown.gemm_s, parts[0], 1e-12);
  EXPECT_NEAR(r.breakdown.attention_s, parts[1], 1e-12);
  EXPECT_NEAR(r.breakdown.memory_bound_s, parts[2], 1e-12);
  EXPECT_NEAR(r.breakdown.optimizer_s, parts[3], 1e-12);
  EXPECT_NEAR(r.compute_s, parts[0] + parts[1] + parts[2] + parts[3], 1e-12);
  EXPECT_GT(r.breakdown.exposed_tp_s, 0);
  EXPECT_GT(r.breakdown.exposed_dp_s, 0);
  EXPECT_DOUBLE_EQ(r.breakdown.exposed_pp_s, 0);
  EXPECT_NEAR(r.mfu, plan.info.model_flops_per_iteration / (r.iteration_time_s * 4 * 312e12), 1e-12);
}

TEST(Replay, RingAllreduceAggregatedMatchesStepExactlyWithoutContention) {
  auto step = std::stod(
      run_in_child([] { return std::to_string(ring_allreduce_time(CollectiveMode::step, 4, 1e9)); }));
  auto agg = std::stod(
      run_in_child([] { return std::to_string(ring_allreduce_time(CollectiveMode::aggregated, 4, 1e9)); }));
  EXPECT_NEAR(agg, step, 1e-9 * step);
}

TEST(Replay, ComputeStreamRunsOneTaskAtATimeCommOverlaps) {
  Plan plan(2);
  plan.add_task(fixed_task("a", 0, 1.0));
  plan.add_task(fixed_task("b", 0, 2.0));
  Task send = comm_task("send", TaskKind::send, 1e11);  // 1 s + α on the comm stream
  send.worker = 0;
  send.peer = 1;
  plan.add_task(send);
  plan.validate_graph();  // a send with no receiver: a scheduling fixture, not an executable Plan
  ReplayResult result = replay(plan, flat4(), default_options());
  EXPECT_NEAR(result.report.iteration_time_s, 3.0, 1e-9);
  EXPECT_NEAR(result.report.per_worker[0].compute_s, 3.0, 1e-9);
  EXPECT_NEAR(result.report.per_worker[0].exposed_comm_s, 0.0, 1e-9);
}

// One host of 1 TFLOP/s and `cores` cores holding `gpus` worker slots, with a loopback route;
// `extra` is added to the <host> element (a profile attribute).
std::string one_host(const std::string& name, int cores, int gpus, const std::string& extra = "") {
  return test::write_temp(
      name,
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
      "<host id=\"h0\" speed=\"1e12f\" core=\"" +
          std::to_string(cores) + "\" " + extra +
          ">"
          "<prop id=\"gpus\" value=\"" +
          std::to_string(gpus) +
          "\"/></host>\n"
          "<link id=\"loop\" bandwidth=\"1e12Bps\" latency=\"0s\" sharing_policy=\"FATPIPE\"/>\n"
          "<route src=\"h0\" dst=\"h0\"><link_ctn id=\"loop\"/></route>\n"
          "</zone></platform>\n");
}

// A worker alone on its host runs its kernels as engine timers; workers sharing a host run
// Execs that share its speed, as SimGrid says: two 1 s tasks on one core end together at 2 s.
TEST(Replay, WorkersSharingOneCoreShareItsSpeed) {
  Plan plan(2);
  plan.add_task(fixed_task("a", 0, 1.0));
  plan.add_task(fixed_task("b", 1, 1.0));
  plan.validate();
  ReplayResult result = replay(plan, one_host("shared-core.xml", 1, 2), default_options());
  EXPECT_NEAR(result.report.iteration_time_s, 2.0, 1e-9);
  for (const TraceRecord& r : result.trace.records) EXPECT_NEAR(r.end, 2.0, 1e-9) << r.id;
}

TEST(Replay, WorkersOnTwoCoresOfOneHostRunAtFullSpeed) {
  Plan plan(2);
  plan.add_task(fixed_task("a", 0, 1.0));
  plan.add_task(fixed_task("b", 1, 1.0));
  plan.validate();
  ReplayResult result = replay(plan, one_host("two-cores.xml", 2, 2), default_options());
  EXPECT_NEAR(result.report.iteration_time_s, 1.0, 1e-9);
}

// A speed profile (SimGrid's speed_file: half speed from t = 0) makes the replay keep an Exec
// even for a worker alone on its host: 1 s of work takes 2 s.
TEST(Replay, SpeedProfileSlowsComputeOfAWorkerAloneOnItsHost) {
  test::write_temp("half-speed.profile", "0 0.5\n");  // next to the platform, where SimGrid looks
  Plan plan(1);
  plan.add_task(fixed_task("a", 0, 1.0));
  plan.add_task(fixed_task("b", 0, 0.5));
  plan.validate();
  ReplayResult result =
      replay(plan, one_host("profiled.xml", 1, 1, "speed_file=\"half-speed.profile\""), default_options());
  EXPECT_NEAR(result.report.iteration_time_s, 3.0, 1e-9);
}

// (m + p − 1)(t_f + t_b) for p uniform stages and no communication cost.
Report pipeline_report(PipelineSchedule schedule, int p, int m) {
  const std::string platform = test::flat_cluster(p, 1, 1e18, 0);
  Model model = test::fixed_model(p, 1e-3, 2e-3, 0, 1000);
  StrategyConfig c;
  c.pp = p;
  c.microbatches = m;
  c.global_batch = m;
  c.schedule = schedule;
  c.dtype = DType::fp32;
  return replay(lower(model, c), platform, default_options()).report;
}

TEST(Replay, GPipeIterationIsMPlusPMinusOneSlots) {
  const int p = 4;
  const int m = 8;
  Report r = pipeline_report(PipelineSchedule::gpipe, p, m);
  EXPECT_NEAR(r.iteration_time_s, (m + p - 1) * 3e-3, 1e-9);
  EXPECT_NEAR(r.bubble_fraction, static_cast<double>(p - 1) / (m + p - 1), 1e-6);
  // Stage 0 holds all m microbatches' activations: 1000 elements x 4 B each.
  EXPECT_DOUBLE_EQ(r.per_worker[0].peak_memory_bytes, m * 1000 * 4.0);
}

TEST(Replay, OneFOneBSameTimeAsGPipeWithPMicrobatchesOfMemory) {
  const int p = 4;
  const int m = 8;
  Report r = pipeline_report(PipelineSchedule::one_f_one_b, p, m);
  EXPECT_NEAR(r.iteration_time_s, (m + p - 1) * 3e-3, 1e-9);
  EXPECT_DOUBLE_EQ(r.per_worker[0].peak_memory_bytes, p * 1000 * 4.0);
  EXPECT_DOUBLE_EQ(r.per_worker[p - 1].peak_memory_bytes, 1 * 1000 * 4.0);
}

double dp_time(double bucket_bytes) {
  // 8 layers, backward 1 ms each, 25 M fp32 parameters (100 MB of gradients) per layer.
  Model model = test::fixed_model(8, 0.5e-3, 1e-3, 25e6);
  StrategyConfig c;
  c.dp = 4;
  c.global_batch = 4;
  c.dtype = DType::fp32;
  c.optimizer = Optimizer::sgd;
  c.bucket_bytes = bucket_bytes;
  return replay(lower(model, c), test::platforms_dir() + "test-flat-4.xml", default_options())
      .report.iteration_time_s;
}

TEST(Replay, DataParallelBucketsOverlapBackward) {
  auto bucketed = std::stod(run_in_child([] { return std::to_string(dp_time(100e6)); }));
  auto single = std::stod(run_in_child([] { return std::to_string(dp_time(1e12)); }));
  EXPECT_LT(bucketed, single * 0.9) << "bucketed " << bucketed << " s, one bucket " << single << " s";
}

// SimGrid accepts a platform that gives a host no route to itself (a Full zone without such a
// route); strata then copies between two workers of that host through memory: each byte read and
// written once at the host's memory bandwidth, the cost model's elementwise kernel. Where the host
// has a route to itself, that route is used as before (OneTransferIsLatencyPlusSizeOverBandwidth).
TEST(Replay, WorkersOfAHostWithoutARouteToItselfCopyThroughMemory) {
  const std::string platform = test::write_temp(
      "no-self-route.xml",
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n"
      "<host id=\"alpha\" speed=\"1e12f\" core=\"2\"><prop id=\"gpus\" value=\"2\"/>"
      "<prop id=\"mem_bw\" value=\"1e12\"/></host>\n"
      "<host id=\"beta\" speed=\"1e12f\" core=\"2\"><prop id=\"gpus\" value=\"2\"/></host>\n"
      "<link id=\"l\" bandwidth=\"1e10Bps\" latency=\"1us\"/>\n"
      "<route src=\"alpha\" dst=\"beta\"><link_ctn id=\"l\"/></route>\n"
      "</zone></platform>\n");
  Plan plan(2);  // workers 0 and 1 both on alpha (natural placement)
  add_transfer(plan, 0, 1, 1e9);
  plan.validate();
  const ReplayResult result = replay(plan, platform, default_options());
  Task copy;
  copy.kind = TaskKind::elementwise;
  copy.bytes_read = 1e9;
  copy.bytes_written = 1e9;
  const double expected = CostModel(Calibration::defaults())
                              .compute_time(copy, host_spec_from_properties(
                                                      "alpha", {{"gpus", "2"}, {"mem_bw", "1e12"}}, 1e12, 2));
  EXPECT_GT(expected, 2e9 / 1e12 - 1e-12);  // no faster than the bandwidth itself
  EXPECT_NEAR(result.report.iteration_time_s, expected, 1e-12);
  EXPECT_DOUBLE_EQ(result.report.bytes_intra_host, 1e9);
}

TEST(Replay, TooFewSlotsIsOneLineError) {
  Plan plan(5);
  for (int w = 0; w < 5; ++w) plan.add_task(fixed_task("t" + std::to_string(w), w, 1.0));
  plan.validate();
  try {
    replay(plan, flat4(), default_options());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), flat4() + ": 5 workers need 5 worker slots, the platform has 4");
  }
}

TEST(Replay, UnknownHostInPlacement) {
  Plan plan(2);
  plan.add_task(fixed_task("a", 0, 1.0));
  plan.add_task(fixed_task("b", 1, 1.0));
  plan.validate();
  ReplayOptions options;
  options.placement = {"node-0", "node-9"};
  try {
    replay(plan, flat4(), options);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "placement: worker 1: unknown host 'node-9'");
  }
}

TEST(Replay, TransfersAbove2To53BytesAreRefused) {
  // SimGrid takes a payload as a 64-bit integer; converting 1e20 B would be undefined.
  for (const double bytes : {1e20, 9007199254740994.0}) {
    Plan plan(2);
    Task send = comm_task("send", TaskKind::send, bytes);
    send.worker = 0;
    send.peer = 1;
    TaskIndex s = plan.add_task(send);
    Task recv = comm_task("recv", TaskKind::recv, bytes);
    recv.worker = 1;
    recv.peer = 0;
    plan.add_data_dep(s, plan.add_task(recv));
    // Plan::validate refuses such sizes too; the replay's own check stands behind it for a Plan
    // built in code that was only graph-checked.
    plan.validate_graph();
    try {
      replay(plan, flat4(), default_options());
      FAIL() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("plan: task 'send': "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(" B to transfer is above 2^53 B (9.007e15 B)"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Replay, MalformedPlatformXml) {
  const std::string path = test::write_temp(
      "bad.xml",
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n<zone id=\"z\" "
      "routing=\"Full\">\n<host id=\"a\" speed=\"1f\">\n</zone>\n</platform>\n");
  Plan plan(1);
  plan.add_task(fixed_task("a", 0, 1.0));
  plan.validate();
  try {
    replay(plan, path, default_options());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.xml:6"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace strata
