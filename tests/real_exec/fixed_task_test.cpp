// The real executor's `fixed` kind: a task that busy-waits its duration_s. It lasts at least
// that long as the interpreter measures it, 0 is an empty task, and a Plan whose fixed task has
// no usable duration is refused by check_kernels before anything runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "strata/real/exec/interpreter.hpp"
#include "strata/real/transport/thread_transport.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

Task fixed_task(const std::string& id, WorkerId worker, std::optional<AttrValue> duration) {
  Task t;
  t.id = id;
  t.kind = TaskKind::fixed;
  t.worker = worker;
  if (duration) t.attrs["duration_s"] = *duration;
  return t;
}

// A chain of `count` fixed tasks of `duration_s`, task i on worker i mod `workers`, each
// data-dependent on the one before.
Plan fixed_chain(int count, int workers, AttrValue duration_s) {
  Plan plan(workers);
  for (int i = 0; i < count; ++i) {
    plan.add_task(fixed_task("it0/t" + std::to_string(i), i % workers, duration_s));
    if (i > 0) plan.add_data_dep(static_cast<TaskIndex>(i - 1), static_cast<TaskIndex>(i));
  }
  plan.validate();
  return plan;
}

// Runs `plan` once on the real interpreter (after check_kernels, as every caller must).
// `cpu_share`: each worker's share of its core (Interpreter::set_cpu_share).
std::vector<TaskTiming> run_plan(const Plan& plan, double* wall_s, double cpu_share = 1) {
  check_kernels(plan, "test");
  CpuBackend backend;
  Workspace<float> ws(plan);
  ThreadTransport<float> transport;
  TaskRunner<float> runner(plan, backend, ws, transport, OptimizerSettings{});
  Interpreter<float> interpreter(plan, runner, false);
  interpreter.set_cpu_share(cpu_share);
  return interpreter.run(wall_s);
}

TEST(FixedTask, FiveMillisecondsIsMeasuredAtLeastFiveMilliseconds) {
  const Plan plan = fixed_chain(1, 1, 5e-3);
  double wall = 0;
  const auto timings = run_plan(plan, &wall);
  ASSERT_EQ(timings.size(), 1u);
  EXPECT_GE(timings[0].end - timings[0].start, 5e-3);
  EXPECT_GE(wall, 5e-3);
}

// A worker of half a core (a function of half a vCPU): its compute idles as long as it ran, so
// 40 tasks of 1 ms take 80 ms; the debt is slept off in periods of 1 ms or more, so no sleep's
// overshoot piles up per task (within 20 ms over the run).
TEST(FixedTask, AHalfCoreQuotaDoublesTheComputeTime) {
  const Plan plan = fixed_chain(40, 1, 1e-3);
  double full = 0, half = 0;
  run_plan(plan, &full);
  run_plan(plan, &half, 0.5);
  EXPECT_GE(full, 40e-3);
  EXPECT_GE(half, 79e-3);
  EXPECT_LE(half, 2 * full + 20e-3);
}

// The executor honours a Plan's issue order as the replay does (Replay.AStreamInIssueOrder...):
// worker 0 issues a (waits for worker 1's x, 30 ms) before b (independent, 10 ms). As a dataflow
// b starts at once, before a; in issue order only once a has ended, so the run lasts at least
// x + a + b.
TEST(FixedTask, AStreamInIssueOrderRunsItsTasksInThatOrder) {
  Plan plan(2);
  const TaskIndex x = plan.add_task(fixed_task("it0/x", 1, 30e-3));
  Task a = fixed_task("it0/a", 0, 10e-3);
  a.priority = 0;
  const TaskIndex ai = plan.add_task(a);
  Task b = fixed_task("it0/b", 0, 10e-3);
  b.priority = 1;
  const TaskIndex bi = plan.add_task(b);
  plan.add_data_dep(x, ai);
  plan.validate();
  double wall = 0;
  const auto dataflow = run_plan(plan, &wall);
  EXPECT_LT(dataflow[bi].start, dataflow[ai].start);
  plan.info.stream_order = StreamOrder::issue;
  const auto issued = run_plan(plan, &wall);
  EXPECT_GE(issued[ai].start, issued[x].end);
  EXPECT_GE(issued[bi].start, issued[ai].end);
  EXPECT_GE(wall, 50e-3);
}

TEST(FixedTask, IntegerDurationIsSeconds) {
  Plan plan(1);
  plan.add_task(fixed_task("it0/t0", 0, std::int64_t{0}));
  plan.validate();
  double wall = 0;
  EXPECT_EQ(run_plan(plan, &wall).size(), 1u);
}

TEST(FixedTask, ZeroDurationIsAnEmptyTaskOnEitherWorker) {
  const Plan plan = fixed_chain(200, 2, 0.0);
  double wall = 0;
  const auto timings = run_plan(plan, &wall);
  ASSERT_EQ(timings.size(), 200u);
  for (std::size_t i = 1; i < timings.size(); ++i) {
    EXPECT_LE(timings[i].start, timings[i].end) << i;
    EXPECT_GE(timings[i].start, timings[i - 1].end) << i;  // the chain is respected
  }
  EXPECT_LT(wall, 1.0);  // 200 empty tasks; a generous bound that still catches a stray sleep
}

TEST(FixedTask, MissingNegativeOrNonNumericDurationIsRefusedBeforeAnythingRuns) {
  const std::optional<AttrValue> bad[] = {std::nullopt, -1e-3, std::string("5ms"),
                                          std::numeric_limits<double>::quiet_NaN(),
                                          std::numeric_limits<double>::infinity()};
  for (const auto& duration : bad) {
    Plan plan(1);
    plan.add_task(fixed_task("it0/ok", 0, 0.0));
    plan.add_task(fixed_task("it0/bad", 0, duration));
    plan.add_data_dep(0, 1);
    plan.validate_graph();  // validate() refuses these durations itself; this test is check_kernels'
    try {
      check_kernels(plan, "edited.json");
      ADD_FAILURE() << "expected InputError";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("edited.json"), std::string::npos) << what;
      EXPECT_NE(what.find("/tasks/1"), std::string::npos) << what;
      EXPECT_NE(what.find("it0/bad"), std::string::npos) << what;
      EXPECT_NE(what.find("duration_s"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    // A runner handed the task anyway (check_kernels skipped) trips an assertion, never spins.
    CpuBackend backend;
    Workspace<float> ws(plan);
    ThreadTransport<float> transport;
    TaskRunner<float> runner(plan, backend, ws, transport, OptimizerSettings{});
    EXPECT_THROW(runner.run(1), std::logic_error);
  }
}

}  // namespace
}  // namespace strata::real
