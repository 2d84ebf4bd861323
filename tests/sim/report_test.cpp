// Report: MFU and hardware FLOP utilisation from a Plan and its spans, against hand-derived
// figures. make_report is a plain function of the Plan, the spans and the platform: no SimGrid.
#include "strata/sim/report.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

// One host of two GPUs of 1e12 FLOP/s in bf16 (and fp32: a plain host's one rate).
PlatformSummary one_host() {
  HostSpec host;
  host.name = "gpu-host";
  host.slots = 2;
  host.flops_fp32 = 1e12;
  host.flops_bf16 = 1e12;
  PlatformSummary platform;
  platform.path = "test.xml";
  platform.hosts = {host};
  return platform;
}

// Two workers each running a 1e12 FLOP linear forward and its 1e12 FLOP recomputation, and a
// 5e11 FLOP fixed task (its duration is given: not counted), each over [0, 10 s].
Plan recompute_plan(double model_flops) {
  Plan plan(2);
  plan.info.dtype = DType::bf16;
  plan.info.global_batch = 2;
  plan.info.model_flops_per_iteration = model_flops;
  for (WorkerId w = 0; w < 2; ++w)
    for (const char* name : {"fwd", "recompute", "fixed"}) {
      Task task;
      task.id = std::string("w") + std::to_string(w) + "/" + name;
      task.kind = std::string(name) == "fixed" ? TaskKind::fixed : TaskKind::linear_fwd;
      task.dtype = DType::bf16;
      task.worker = w;
      task.flops = std::string(name) == "fixed" ? 5e11 : 1e12;
      task.attrs["duration_s"] = 1.0;
      plan.add_task(task);
    }
  return plan;
}

Report report_of(const Plan& plan, double seconds) {
  std::vector<Span> spans;
  for (TaskIndex i = 0; i < plan.size(); ++i) spans.push_back({i, plan.task(i).worker, 0, seconds});
  ReplayFacts facts;
  facts.host_of_worker = {0, 0};
  return make_report(plan, spans, one_host(), facts);
}

TEST(Report, MfuCountsModelFlopsAndHfuEveryExecutedFlop) {
  // 10 s on 2 x 1e12 FLOP/s: MFU = 2e12 model FLOP / 2e13 = 10 %; HFU counts the recomputation
  // too: 4e12 / 2e13 = 20 %.
  const Report r = report_of(recompute_plan(2e12), 10);
  EXPECT_DOUBLE_EQ(r.iteration_time_s, 10);
  EXPECT_DOUBLE_EQ(r.mfu, 0.1);
  EXPECT_DOUBLE_EQ(r.hfu, 0.2);
  const std::string text = format_report(r);
  EXPECT_NE(text.find("MFU                 10.0 % (model FLOPs), hardware FLOP utilisation 20.0 %"),
            std::string::npos)
      << text;
  const nlohmann::json j = report_to_json(r);
  EXPECT_DOUBLE_EQ(j.at("hfu").get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(report_from_json(j).hfu, 0.2);
}

TEST(Report, PlanDeclaringMoreModelFlopsThanItRunsIsRefusedInOneLine) {
  // 3e13 model FLOP in 10 s on 2e12 FLOP/s would be an MFU of 150 %.
  try {
    report_of(recompute_plan(3e13), 10);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "plan: info/model_flops_per_iteration: 3e+13 FLOP per iteration is more than its compute tasks "
              "can execute in the simulated iteration (MFU would be 150.0 %): give the model FLOPs its "
              "tasks execute, without recomputation");
  }
}

// Two replicas of two workers (dp_replicas 2). Worker 0: a linear [0, 2], an attention core
// [2, 3], a norm [3, 4], an optimizer step [9, 10]; a TP all-reduce with worker 1 [4, 6]; a send
// to worker 2 [5, 7]; a DP all-reduce with worker 2 [6, 9]. The other workers compute nothing
// (not averaged). Exposed (not under compute): TP 2 s, PP 2 s, DP 3 s, their union 5 s; idle
// 10 - 5 (compute) - 5 = 0.
TEST(Report, TheBreakdownSplitsComputeByKindAndExposedCommunicationByGroup) {
  Plan plan(4);
  plan.info.dp_replicas = 2;
  std::vector<Span> spans;
  auto add = [&](const char* id, TaskKind kind, std::vector<WorkerId> group, double start, double end) {
    Task task;
    task.id = id;
    task.kind = kind;
    task.worker = group.front();
    if (is_collective(kind)) {
      task.group = group;
      task.stream = Stream::comm;
      task.comm_bytes = 1;
    } else if (kind == TaskKind::send) {
      task.peer = group.back();
      task.stream = Stream::comm;
      task.comm_bytes = 1;
    }
    const TaskIndex t = plan.add_task(task);
    for (WorkerId w : is_collective(kind) ? group : std::vector<WorkerId>{group.front()})
      spans.push_back({t, w, start, end});
  };
  add("gemm", TaskKind::linear_fwd, {0}, 0, 2);
  add("attention", TaskKind::attention_fwd, {0}, 2, 3);
  add("norm", TaskKind::norm_fwd, {0}, 3, 4);
  add("optimizer", TaskKind::optimizer_step, {0}, 9, 10);
  add("tp", TaskKind::allreduce, {0, 1}, 4, 6);
  add("pp", TaskKind::send, {0, 2}, 5, 7);
  add("dp", TaskKind::allreduce, {0, 2}, 6, 9);
  ReplayFacts facts;
  facts.host_of_worker = {0, 0, 0, 0};
  PlatformSummary platform = one_host();
  platform.hosts[0].slots = 4;
  const Report r = make_report(plan, spans, platform, facts);
  const Breakdown& b = r.breakdown;
  EXPECT_DOUBLE_EQ(b.gemm_s, 2);
  EXPECT_DOUBLE_EQ(b.attention_s, 1);
  EXPECT_DOUBLE_EQ(b.memory_bound_s, 1);
  EXPECT_DOUBLE_EQ(b.optimizer_s, 1);
  EXPECT_DOUBLE_EQ(b.gemm_s + b.attention_s + b.memory_bound_s + b.optimizer_s, r.compute_s);
  EXPECT_DOUBLE_EQ(b.exposed_tp_s, 2);
  EXPECT_DOUBLE_EQ(b.exposed_pp_s, 2);
  EXPECT_DOUBLE_EQ(b.exposed_dp_s, 3);
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, 5);
  EXPECT_DOUBLE_EQ(b.idle_s, 0);
  const Report back = report_from_json(report_to_json(r));
  EXPECT_DOUBLE_EQ(back.breakdown.exposed_dp_s, 3);
  EXPECT_DOUBLE_EQ(back.breakdown.memory_bound_s, 1);
  EXPECT_NE(
      format_report(r).find("by part per worker  GEMM 2.000 s, attention core 1.000 s, memory-bound 1.000 s, "
                            "optimizer 1.000 s; exposed TP 2.000 s, PP 2.000 s, DP 3.000 s"),
      std::string::npos)
      << format_report(r);
}

TEST(Report, HardwareUtilisationAbovePeakIsAnInternalError) {
  // 2e12 FLOP per worker in 1 s at 1e12 FLOP/s: 200 %, a task priced faster than peak.
  EXPECT_THROW(report_of(recompute_plan(0), 1), std::logic_error);
}

}  // namespace
}  // namespace strata
