// Plan: validation messages (one line, exact wording), id index, iterations, topological order,
// participants and typed attributes.
#include "strata/traces/plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

Task compute_task(const std::string& id, WorkerId worker) {
  Task t;
  t.id = id;
  t.kind = TaskKind::fixed;
  t.stream = Stream::compute;
  t.worker = worker;
  return t;
}

Task send_task(const std::string& id, WorkerId worker, WorkerId peer) {
  Task t;
  t.id = id;
  t.kind = TaskKind::send;
  t.stream = Stream::comm;
  t.worker = worker;
  t.peer = peer;
  return t;
}

Task allreduce_task(const std::string& id, std::vector<WorkerId> group) {
  Task t;
  t.id = id;
  t.kind = TaskKind::allreduce;
  t.stream = Stream::comm;
  t.algo = CollectiveAlgo::ring;
  t.group = std::move(group);
  return t;
}

// A two-worker plan holding only `task`: every test below breaks one field of an otherwise valid
// task, so the message can only come from that field.
Plan single_task_plan(Task task) {
  Plan plan(2);
  plan.add_task(std::move(task));
  return plan;
}

// The message of the InputError validate() throws, or a marker the expectation will not match.
std::string validate_message(const Plan& plan, const std::string& source = "plan") {
  try {
    plan.validate(source);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

TEST(PlanValidate, AcceptsAValidPlan) {
  // A compute -> send -> recv -> allreduce chain that uses every kind of placement field.
  Plan plan(2);
  plan.add_buffer(Buffer{"dp0/act", 0, 1024, DType::fp32, false});
  Task c = compute_task("it0/dp0/fwd", 0);
  c.flops = 1e9;
  c.writes = {0};
  TaskIndex ci = plan.add_task(c);
  TaskIndex si = plan.add_task(send_task("it0/dp0/send", 0, 1));
  Task r = send_task("it0/dp1/recv", 1, 0);
  r.kind = TaskKind::recv;
  TaskIndex ri = plan.add_task(r);
  TaskIndex ai = plan.add_task(allreduce_task("it0/ar", {1, 0}));
  plan.add_data_dep(ci, si);
  plan.add_data_dep(si, ri);
  plan.add_control_dep(ri, ai);
  EXPECT_NO_THROW(plan.validate());
}

TEST(PlanValidate, NumWorkersMustBePositive) {
  // Checked before any task: a plan without workers has nowhere to place anything.
  EXPECT_EQ(validate_message(Plan(0)), "plan: /num_workers: must be positive");
  EXPECT_EQ(validate_message(Plan(-3)), "plan: /num_workers: must be positive");
  EXPECT_EQ(validate_message(Plan()), "plan: /num_workers: must be positive");
}

TEST(PlanValidate, SourceNamesTheFile) {
  EXPECT_EQ(validate_message(Plan(0), "run/plan.json"), "run/plan.json: /num_workers: must be positive");
}

TEST(PlanValidate, EmptyId) {
  EXPECT_EQ(validate_message(single_task_plan(compute_task("", 0))), "plan: /tasks/0/id: empty id");
}

TEST(PlanValidate, NegativeSizes) {
  // std::to_string(double) prints six decimals: -1 -> "-1.000000", -2.5 -> "-2.500000".
  struct Case {
    double Task::*field;
    const char* name;
  };
  const Case cases[] = {{&Task::flops, "flops"},
                        {&Task::bytes_read, "bytes_read"},
                        {&Task::bytes_written, "bytes_written"},
                        {&Task::comm_bytes, "comm_bytes"},
                        {&Task::mem_alloc, "mem_alloc"},
                        {&Task::mem_free, "mem_free"}};
  for (const Case& c : cases) {
    Task t = compute_task("a", 0);
    t.*c.field = -1;
    EXPECT_EQ(validate_message(single_task_plan(t)),
              std::string("plan: /tasks/0/") + c.name + ": negative value -1.000000");
    t.*c.field = -2.5;
    EXPECT_EQ(validate_message(single_task_plan(t)),
              std::string("plan: /tasks/0/") + c.name + ": negative value -2.500000");
  }
}

TEST(PlanValidate, NegativeSizeOnALaterTaskNamesItsIndex) {
  Plan plan(2);
  plan.add_task(compute_task("a", 0));
  plan.add_task(compute_task("b", 1));
  Task t = compute_task("c", 1);
  t.bytes_read = -3;
  plan.add_task(t);
  EXPECT_EQ(validate_message(plan), "plan: /tasks/2/bytes_read: negative value -3.000000");
}

TEST(PlanValidate, NonFiniteSizes) {
  // Non-finite is reported as such even when negative (-inf): the finiteness check comes first.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Task t = compute_task("a", 0);
  t.flops = kNaN;
  EXPECT_EQ(validate_message(single_task_plan(t)), "plan: /tasks/0/flops: not a finite number");
  t = compute_task("a", 0);
  t.comm_bytes = kInf;
  EXPECT_EQ(validate_message(single_task_plan(t)), "plan: /tasks/0/comm_bytes: not a finite number");
  t = compute_task("a", 0);
  t.mem_alloc = -kInf;
  EXPECT_EQ(validate_message(single_task_plan(t)), "plan: /tasks/0/mem_alloc: not a finite number");
}

TEST(PlanValidate, WorkerOutOfRange) {
  // Valid workers of a 2-worker plan are 0 and 1.
  EXPECT_EQ(validate_message(single_task_plan(compute_task("a", 2))),
            "plan: /tasks/0/worker: worker 2 outside [0, 2)");
  EXPECT_EQ(validate_message(single_task_plan(compute_task("a", -2))),
            "plan: /tasks/0/worker: worker -2 outside [0, 2)");
  // -1: an unplaced task, which only a Plan that allows them holds (docs/scheduling.md).
  EXPECT_EQ(validate_message(single_task_plan(compute_task("a", -1))),
            "plan: /tasks/0/worker: task is unplaced: give --schedule-policy heft|cpop|peft|minmin|cp|rr to "
            "place it");
  EXPECT_NO_THROW(single_task_plan(compute_task("a", 1)).validate());
}

TEST(PlanValidate, PeerOutOfRange) {
  EXPECT_EQ(validate_message(single_task_plan(send_task("s", 0, 5))),
            "plan: /tasks/0/peer: worker 5 outside [0, 2)");
  // A send without a peer keeps the default -1.
  EXPECT_EQ(validate_message(single_task_plan(send_task("s", 0, -1))),
            "plan: /tasks/0/peer: worker -1 outside [0, 2)");
}

TEST(PlanValidate, PeerIsOwnWorker) {
  EXPECT_EQ(validate_message(single_task_plan(send_task("s", 1, 1))),
            "plan: /tasks/0/peer: peer is the task's own worker");
  Task r = send_task("r", 0, 0);
  r.kind = TaskKind::recv;
  EXPECT_EQ(validate_message(single_task_plan(r)), "plan: /tasks/0/peer: peer is the task's own worker");
}

TEST(PlanValidate, CollectiveWithoutGroup) {
  EXPECT_EQ(validate_message(single_task_plan(allreduce_task("ar", {}))),
            "plan: /tasks/0/group: collective without group");
}

TEST(PlanValidate, GroupMemberListedTwice) {
  EXPECT_EQ(validate_message(single_task_plan(allreduce_task("ar", {0, 1, 0}))),
            "plan: /tasks/0/group: worker listed twice");
}

TEST(PlanValidate, GroupMemberOutOfRange) {
  // The pointer names the member's position in the group: {0, 3} -> /group/1.
  EXPECT_EQ(validate_message(single_task_plan(allreduce_task("ar", {0, 3}))),
            "plan: /tasks/0/group/1: worker 3 outside [0, 2)");
}

TEST(PlanValidate, ComputeKindOnCommStream) {
  Task t = compute_task("a", 0);
  t.kind = TaskKind::linear_fwd;
  t.stream = Stream::comm;
  EXPECT_EQ(validate_message(single_task_plan(t)),
            "plan: /tasks/0/stream: kind 'linear_fwd' must run on the compute stream");
}

// A communication task may run on the compute stream: a blocking call the compute waits for
// (--set p2p=blocking, tp_comm=sync). A compute kind never runs on the comm stream (above).
TEST(PlanValidate, CommKindOnComputeStreamIsABlockingCall) {
  Plan plan(2);
  Task s = send_task("s", 0, 1);
  s.stream = Stream::compute;
  const TaskIndex si = plan.add_task(s);
  Task r = send_task("r", 1, 0);
  r.kind = TaskKind::recv;
  r.comm_bytes = 0;
  r.stream = Stream::compute;
  plan.add_data_dep(si, plan.add_task(r));
  Task a = allreduce_task("ar", {0, 1});
  a.stream = Stream::compute;
  plan.add_task(a);
  EXPECT_EQ(validate_message(plan), "<no InputError>");
}

TEST(PlanValidate, SelfDependency) {
  Plan plan(2);
  plan.add_task(compute_task("a", 0));
  Task b = compute_task("b", 0);
  b.data_deps = {0, 1};  // the second entry is b itself
  plan.add_task(b);
  EXPECT_EQ(validate_message(plan), "plan: /tasks/1/data_deps/1: task depends on itself");

  Plan control(2);
  Task c = compute_task("c", 0);
  c.control_deps = {0};
  control.add_task(c);
  EXPECT_EQ(validate_message(control), "plan: /tasks/0/control_deps/0: task depends on itself");
}

TEST(PlanValidate, UnknownTaskIndex) {
  Task t = compute_task("a", 0);
  t.data_deps = {7};
  EXPECT_EQ(validate_message(single_task_plan(t)), "plan: /tasks/0/data_deps/0: unknown task index 7");
  t = compute_task("a", 0);
  t.control_deps = {1};  // one task: index 1 is one past the end
  EXPECT_EQ(validate_message(single_task_plan(t)), "plan: /tasks/0/control_deps/0: unknown task index 1");
}

TEST(PlanValidate, UnknownBufferIndex) {
  Plan plan(2);
  plan.add_buffer(Buffer{"w", 0, 64, DType::fp32, true});  // only buffer 0 exists
  Task t = compute_task("a", 0);
  t.reads = {0, 3};
  plan.add_task(t);
  EXPECT_EQ(validate_message(plan), "plan: /tasks/0/reads: unknown buffer index 3");

  Plan writes(2);
  Task w = compute_task("a", 0);
  w.writes = {0};  // no buffer at all
  writes.add_task(w);
  EXPECT_EQ(validate_message(writes), "plan: /tasks/0/writes: unknown buffer index 0");
}

TEST(PlanValidate, BadBuffers) {
  Plan negative(2);
  negative.add_buffer(Buffer{"w", 0, -8, DType::fp32, true});
  EXPECT_EQ(validate_message(negative), "plan: /buffers/0/bytes: negative or non-finite size");
  Plan nan(2);
  nan.add_buffer(Buffer{"w", 0, 1, DType::fp32, true});
  nan.add_buffer(Buffer{"g", 1, std::nan(""), DType::fp32, true});
  EXPECT_EQ(validate_message(nan), "plan: /buffers/1/bytes: negative or non-finite size");
  Plan worker(2);
  worker.add_buffer(Buffer{"w", 2, 8, DType::fp32, true});
  EXPECT_EQ(validate_message(worker), "plan: /buffers/0/worker: worker outside [0, num_workers)");
}

TEST(PlanValidate, CycleIsReported) {
  // root <- p <- q <- r and p control-depends on r: the cycle p -> q -> r -> p, reported from
  // its smallest index (p = 1).
  Plan plan(1);
  for (const char* id : {"root", "p", "q", "r"}) plan.add_task(compute_task(id, 0));
  plan.add_data_dep(0, 1);
  plan.add_data_dep(1, 2);
  plan.add_data_dep(2, 3);
  plan.add_control_dep(3, 1);
  EXPECT_EQ(validate_message(plan, "p.json"),
            "p.json: /tasks/1: dependency cycle through 'p' -> 'q' -> 'r' -> 'p'");
}

TEST(PlanAddTask, DuplicateIdThrowsAndAddsNothing) {
  Plan plan(1);
  EXPECT_EQ(plan.add_task(compute_task("a", 0)), 0u);
  EXPECT_EQ(plan.add_task(compute_task("b", 0)), 1u);
  try {
    plan.add_task(compute_task("a", 0));
    ADD_FAILURE() << "duplicate id accepted";
  } catch (const InputError& e) {
    // The pointer names the index the task would have taken.
    EXPECT_STREQ(e.what(), "plan: /tasks/2/id: duplicate task id 'a'");
  }
  EXPECT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan.find("a"), 0);  // the first one keeps its id
}

TEST(PlanAddTask, IndicesAreDenseInCreationOrder) {
  Plan plan(1);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(plan.add_task(compute_task("t" + std::to_string(i), 0)), static_cast<TaskIndex>(i));
  EXPECT_EQ(plan.size(), 5u);
  EXPECT_EQ(plan.task(3).id, "t3");
}

TEST(PlanAddDep, OutOfRangeIsAnInternalError) {
  // Builders are strata code: a bad index there is a bug (STRATA_ASSERT), not input.
  Plan plan(1);
  plan.add_task(compute_task("a", 0));
  EXPECT_THROW(plan.add_data_dep(0, 1), std::logic_error);
  EXPECT_THROW(plan.add_control_dep(2, 0), std::logic_error);
}

TEST(PlanFind, ReturnsIndexOrMinusOne) {
  Plan plan(2);
  plan.add_task(compute_task("it0/dp0/fwd", 0));
  plan.add_task(compute_task("it0/dp1/fwd", 1));
  EXPECT_EQ(plan.find("it0/dp0/fwd"), 0);
  EXPECT_EQ(plan.find("it0/dp1/fwd"), 1);
  EXPECT_EQ(plan.find("it0/dp2/fwd"), -1);
  EXPECT_EQ(plan.find(""), -1);
  EXPECT_EQ(Plan(1).find("anything"), -1);
}

TEST(PlanNumIterations, OnePlusHighest) {
  EXPECT_EQ(Plan(1).num_iterations(), 0);
  Plan plan(1);
  // Iterations 0, 3, 1: the highest is 3, so 4 iterations (not 3 distinct ones).
  for (int it : {0, 3, 1}) {
    Task t = compute_task("t" + std::to_string(it), 0);
    t.iteration = it;
    plan.add_task(t);
  }
  EXPECT_EQ(plan.num_iterations(), 4);
}

TEST(TopologicalOrder, SmallestReadyIndexFirst) {
  // Edges: 3 -> 0 (data), 1 -> 4 (data), 5 -> 2 (control). Kahn, smallest ready first:
  //   ready {1,3,5}: take 1, releases 4 -> {3,4,5}
  //   take 3, releases 0              -> {0,4,5}
  //   take 0                          -> {4,5}
  //   take 4                          -> {5}
  //   take 5, releases 2              -> {2}
  //   take 2.
  Plan plan(1);
  for (int i = 0; i < 6; ++i) plan.add_task(compute_task("t" + std::to_string(i), 0));
  plan.add_data_dep(3, 0);
  plan.add_data_dep(1, 4);
  plan.add_control_dep(5, 2);
  const std::vector<TaskIndex> expected = {1, 3, 0, 4, 5, 2};
  EXPECT_EQ(topological_order(plan), expected);
  EXPECT_EQ(topological_order(plan), expected);  // a function of the plan alone
}

TEST(TopologicalOrder, EmptyAndIndependent) {
  EXPECT_TRUE(topological_order(Plan(1)).empty());
  Plan plan(1);
  for (int i = 0; i < 4; ++i) plan.add_task(compute_task("t" + std::to_string(i), 0));
  EXPECT_EQ(topological_order(plan), (std::vector<TaskIndex>{0, 1, 2, 3}));
}

TEST(TopologicalOrder, DependenciesPrecedeConsumersOnRandomDags) {
  // Edges always go from a higher index to a lower one, so plan order is never a valid answer
  // and the sort has to reorder.
  std::mt19937 rng(20240611);
  for (int round = 0; round < 10; ++round) {
    const int n = 300;
    Plan plan(1);
    for (int i = 0; i < n; ++i) plan.add_task(compute_task("t" + std::to_string(i), 0));
    std::uniform_int_distribution<int> coin(0, 1);
    for (int consumer = 0; consumer < n - 1; ++consumer) {
      std::uniform_int_distribution<int> pick(consumer + 1, n - 1);
      for (int e = 0; e < 3; ++e) {
        auto producer = static_cast<TaskIndex>(pick(rng));
        if (coin(rng) == 0)
          plan.add_data_dep(producer, consumer);
        else
          plan.add_control_dep(producer, consumer);
      }
    }
    const std::vector<TaskIndex> order = topological_order(plan);
    ASSERT_EQ(order.size(), static_cast<std::size_t>(n));
    std::vector<int> position(n, -1);
    for (std::size_t p = 0; p < order.size(); ++p) {
      ASSERT_EQ(position[order[p]], -1) << "task " << order[p] << " listed twice";
      position[order[p]] = static_cast<int>(p);
    }
    for (TaskIndex t = 0; t < static_cast<TaskIndex>(n); ++t) {
      for (TaskIndex d : plan.task(t).data_deps) EXPECT_LT(position[d], position[t]);
      for (TaskIndex d : plan.task(t).control_deps) EXPECT_LT(position[d], position[t]);
    }
    EXPECT_NO_THROW(plan.validate());
  }
}

TEST(TopologicalOrder, CycleNamesItsTasksFromTheSmallestIndex) {
  // 0 -> 2 -> 3 -> 1 -> 2. Depth-first search from 0 enters the cycle at 2 and closes it with
  // the back edge 1 -> 2; the report still starts at the smallest index on the cycle, 1.
  Plan plan(1);
  for (int i = 0; i < 4; ++i) plan.add_task(compute_task("t" + std::to_string(i), 0));
  plan.add_data_dep(0, 2);
  plan.add_data_dep(2, 3);
  plan.add_control_dep(3, 1);
  plan.add_data_dep(1, 2);
  try {
    topological_order(plan, "g.json");
    ADD_FAILURE() << "cycle not detected";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "g.json: /tasks/1: dependency cycle through 't1' -> 't2' -> 't3' -> 't1'");
  }
}

TEST(TopologicalOrder, LongCycleIsShortened) {
  // A ring of 10 tasks: 8 ids are shown, then the count, so the message stays one line.
  Plan plan(1);
  for (int i = 0; i < 10; ++i) plan.add_task(compute_task("t" + std::to_string(i), 0));
  for (TaskIndex i = 0; i < 10; ++i) plan.add_data_dep(i, (i + 1) % 10);
  try {
    topological_order(plan);
    ADD_FAILURE() << "cycle not detected";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "plan: /tasks/0: dependency cycle through 't0' -> 't1' -> 't2' -> 't3' -> 't4' "
                 "-> 't5' -> 't6' -> 't7' -> ... (10 tasks)");
  }
}

TEST(TaskParticipants, ComputeAndP2pAreTheirWorker) {
  Task c = compute_task("c", 3);
  ASSERT_EQ(c.participants().size(), 1u);
  EXPECT_EQ(c.participants()[0], 3);
  // A send involves its peer's link too, but only its own worker's stream.
  Task s = send_task("s", 1, 2);
  ASSERT_EQ(s.participants().size(), 1u);
  EXPECT_EQ(s.participants()[0], 1);
}

TEST(TaskParticipants, CollectiveIsItsGroupInRingOrder) {
  Task a = allreduce_task("ar", {2, 0, 1});
  a.worker = 5;  // ignored for a collective
  const auto members = a.participants();
  EXPECT_EQ(std::vector<WorkerId>(members.begin(), members.end()), (std::vector<WorkerId>{2, 0, 1}));
  EXPECT_EQ(members.data(), a.group.data());  // a view, not a copy
}

TEST(TaskAttributes, TypedAccess) {
  Task t = compute_task("a", 0);
  t.attrs["m"] = std::int64_t{4096};
  t.attrs["duration_s"] = 0.25;
  t.attrs["act"] = std::string("gelu");
  t.attrs["shape"] = std::vector<std::int64_t>{2, 3};
  // An integer widens to a real: cost formulas read sizes as doubles.
  EXPECT_EQ(t.attr_real("m"), std::optional<double>(4096.0));
  EXPECT_EQ(t.attr_int("m"), std::optional<std::int64_t>(4096));
  EXPECT_EQ(t.attr_real("duration_s"), std::optional<double>(0.25));
  // A real never silently truncates to an integer.
  EXPECT_EQ(t.attr_int("duration_s"), std::nullopt);
  EXPECT_EQ(t.attr_real("act"), std::nullopt);
  EXPECT_EQ(t.attr_int("act"), std::nullopt);
  EXPECT_EQ(t.attr_real("shape"), std::nullopt);
  EXPECT_EQ(t.attr_int("shape"), std::nullopt);
  EXPECT_EQ(t.attr_real("missing"), std::nullopt);
  EXPECT_EQ(t.attr_int("missing"), std::nullopt);
}

}  // namespace
}  // namespace strata
