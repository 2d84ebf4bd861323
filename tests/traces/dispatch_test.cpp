// Dispatcher: readiness, (priority, index) order, stream exclusivity, collectives without
// back-filling, and freedom from deadlock, all on a virtual clock driven by a fake executor.
#include "strata/traces/dispatch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "strata/traces/plan.hpp"

namespace strata {
namespace {

constexpr double kNever = -1;  // start/end of a task that never ran

// What the fake executor observed.
struct Schedule {
  std::vector<double> start;
  std::vector<double> end;
  std::vector<TaskIndex> start_order;  // in the order the Dispatcher handed tasks out
  bool finished = false;
  std::size_t completed = 0;
  std::vector<std::string> violations;  // broken rules seen while running; empty when sound
};

std::size_t slot_of(WorkerId worker, Stream stream) {
  return static_cast<std::size_t>(worker) * 2 + (stream == Stream::comm ? 1 : 0);
}

// The smallest possible executor: each task takes duration[task] seconds of virtual time. Events
// are (end time, task) in a min-heap; every task ending at the same instant is completed before
// the Dispatcher is asked again, as a real executor draining its completion queue would. While
// running it checks, independently of the Dispatcher, that no (worker, stream) ever runs two
// tasks at once and that take_startable() lists tasks in (priority, index) order.
Schedule run_on_virtual_clock(const Plan& plan, const std::vector<double>& duration) {
  Schedule s;
  s.start.assign(plan.size(), kNever);
  s.end.assign(plan.size(), kNever);
  constexpr TaskIndex kIdle = std::numeric_limits<TaskIndex>::max();
  std::vector<TaskIndex> occupant(static_cast<std::size_t>(plan.num_workers()) * 2, kIdle);

  using Event = std::pair<double, TaskIndex>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  Dispatcher dispatcher(plan);
  double now = 0;
  for (;;) {
    const std::vector<TaskIndex> started = dispatcher.take_startable();
    for (std::size_t k = 0; k < started.size(); ++k) {
      const TaskIndex t = started[k];
      const Task& task = plan.task(t);
      if (k > 0) {
        const Task& prev = plan.task(started[k - 1]);
        if (std::make_pair(prev.priority, started[k - 1]) >= std::make_pair(task.priority, t))
          s.violations.push_back("take_startable out of (priority, index) order at task " +
                                 std::to_string(t));
      }
      if (s.start[t] != kNever) {
        // A broken Dispatcher could hand out the same tasks forever: stop instead of hanging.
        s.violations.push_back("task " + task.id + " started twice");
        s.finished = false;
        return s;
      }
      for (WorkerId w : task.participants()) {
        TaskIndex& o = occupant[slot_of(w, task.stream)];
        if (o != kIdle)
          s.violations.push_back("task " + task.id + " started at " + std::to_string(now) + " while " +
                                 plan.task(o).id + " runs on its stream");
        o = t;
      }
      s.start[t] = now;
      s.start_order.push_back(t);
      events.emplace(now + duration[t], t);
    }
    if (dispatcher.running() != events.size())
      s.violations.push_back("running() disagrees with the executor");
    if (events.empty()) break;
    now = events.top().first;
    while (!events.empty() && events.top().first == now) {
      const TaskIndex t = events.top().second;
      events.pop();
      const Task& task = plan.task(t);
      for (WorkerId w : task.participants()) occupant[slot_of(w, task.stream)] = kIdle;
      s.end[t] = now;
      dispatcher.complete(t);
    }
  }
  s.finished = dispatcher.finished();
  s.completed = dispatcher.completed();
  return s;
}

Task compute(const std::string& id, WorkerId worker, std::int64_t priority = 0) {
  Task t;
  t.id = id;
  t.kind = TaskKind::fixed;
  t.stream = Stream::compute;
  t.worker = worker;
  t.priority = priority;
  return t;
}

Task p2p(TaskKind kind, const std::string& id, WorkerId worker, WorkerId peer, std::int64_t priority = 0) {
  Task t;
  t.id = id;
  t.kind = kind;
  t.stream = Stream::comm;
  t.worker = worker;
  t.peer = peer;
  t.priority = priority;
  return t;
}

Task collective(TaskKind kind, const std::string& id, std::vector<WorkerId> group,
                std::int64_t priority = 0) {
  Task t;
  t.id = id;
  t.kind = kind;
  t.stream = Stream::comm;
  t.algo = CollectiveAlgo::ring;
  t.group = std::move(group);
  t.priority = priority;
  return t;
}

// --- hand-made schedules ---------------------------------------------------------------------

TEST(Dispatcher, ComputeStreamRunsOneTaskAtATimeByPriorityThenIndex) {
  // Three independent tasks on worker 0 with priorities 2, 0, 1 and d = 1 s each: the stream
  // takes the lowest priority first, so the order is 1 (t=0), 2 (t=1), 0 (t=2).
  Plan plan(1);
  plan.add_task(compute("a", 0, 2));
  plan.add_task(compute("b", 0, 0));
  plan.add_task(compute("c", 0, 1));
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {1, 1, 1});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start_order, (std::vector<TaskIndex>{1, 2, 0}));
  EXPECT_EQ(s.start, (std::vector<double>{2, 0, 1}));
  EXPECT_EQ(s.end, (std::vector<double>{3, 1, 2}));
  EXPECT_TRUE(s.finished);
}

TEST(Dispatcher, EqualPrioritiesRunInPlanOrder) {
  // Same priority everywhere: the index breaks the tie, so plan order 0, 1, 2, 3 at 0, 2, 4, 6.
  Plan plan(1);
  for (int i = 0; i < 4; ++i) plan.add_task(compute("t" + std::to_string(i), 0, 7));
  const Schedule s = run_on_virtual_clock(plan, {2, 2, 2, 2});
  EXPECT_EQ(s.start_order, (std::vector<TaskIndex>{0, 1, 2, 3}));
  EXPECT_EQ(s.start, (std::vector<double>{0, 2, 4, 6}));
}

TEST(Dispatcher, ComputeAndCommStreamsOfOneWorkerOverlap) {
  // Worker 0: compute a (3 s) then b (1 s); comm s1 (2 s) then s2 (2 s). The two streams are
  // independent, so a and s1 both start at 0; s2 follows s1 at 2 and b follows a at 3.
  Plan plan(2);
  const TaskIndex a = plan.add_task(compute("a", 0, 0));
  const TaskIndex b = plan.add_task(compute("b", 0, 1));
  const TaskIndex s1 = plan.add_task(p2p(TaskKind::send, "s1", 0, 1, 0));
  const TaskIndex s2 = plan.add_task(p2p(TaskKind::send, "s2", 0, 1, 1));
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {3, 1, 2, 2});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start[a], 0);
  EXPECT_EQ(s.start[s1], 0);
  EXPECT_EQ(s.start[s2], 2);
  EXPECT_EQ(s.start[b], 3);
  // The first batch holds both a and s1, in (priority, index) order: a (0, 0) before s1 (0, 2).
  EXPECT_EQ(s.start_order, (std::vector<TaskIndex>{a, s1, s2, b}));
}

TEST(Dispatcher, DifferentWorkersRunInParallel) {
  // One 5 s task per worker on 4 workers: all start at 0.
  Plan plan(4);
  for (WorkerId w = 0; w < 4; ++w) plan.add_task(compute("w" + std::to_string(w), w));
  const Schedule s = run_on_virtual_clock(plan, {5, 5, 5, 5});
  EXPECT_EQ(s.start, (std::vector<double>{0, 0, 0, 0}));
}

TEST(Dispatcher, CollectiveWaitsForAllMembersAndIsNotOvertaken) {
  // Comm streams only, durations in brackets:
  //   t0: send on worker 1, priority 0 [5 s]
  //   t1: allreduce over {0, 1}, priority 1 [2 s]
  //   t2: send on worker 0, priority 2 [1 s]
  // At 0 all three are ready. Worker 1's comm head is t0, worker 0's is t1. t1 cannot start
  // (worker 1 is not at t1), t0 starts. Worker 0's comm stream is idle, but t2 sits behind t1
  // and must not back-fill it. At 5 t0 ends, t1 heads both queues: starts at 5, ends at 7; then
  // t2 starts at 7. With back-filling t2 would have run at 0.
  Plan plan(2);
  plan.add_task(p2p(TaskKind::send, "t0", 1, 0, 0));
  plan.add_task(collective(TaskKind::allreduce, "t1", {0, 1}, 1));
  plan.add_task(p2p(TaskKind::send, "t2", 0, 1, 2));
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {5, 2, 1});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start, (std::vector<double>{0, 5, 7}));
  EXPECT_EQ(s.end, (std::vector<double>{5, 7, 8}));
  EXPECT_TRUE(s.finished);
}

TEST(Dispatcher, CollectiveWaitsForItsLastMemberToBecomeReady) {
  // The allreduce over {0, 1, 2} data-depends on a 4 s compute on worker 2, so it is ready at 4;
  // it then needs all three comm streams. A send on worker 0 (priority 5, after the allreduce's
  // 0) that was ready at 0 ran at 0..1 while the collective was not yet ready: an idle stream
  // with no collective at its head does run what it has. Allreduce: 4..7.
  Plan plan(3);
  const TaskIndex c = plan.add_task(compute("c", 2));
  const TaskIndex ar = plan.add_task(collective(TaskKind::allreduce, "ar", {2, 0, 1}, 0));
  const TaskIndex snd = plan.add_task(p2p(TaskKind::send, "snd", 0, 1, 5));
  plan.add_data_dep(c, ar);
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {4, 3, 1});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start[snd], 0);
  EXPECT_EQ(s.start[ar], 4);
  EXPECT_EQ(s.end[ar], 7);
}

TEST(Dispatcher, CollectiveEndFreesEveryMemberStream) {
  // allreduce over {0, 1} [2 s], then one queued send on each member [1 s] (priority 1 > 0):
  // both sends start the moment the collective ends, at 2, not only the first member's.
  Plan plan(2);
  plan.add_task(collective(TaskKind::allreduce, "ar", {0, 1}, 0));
  plan.add_task(p2p(TaskKind::send, "s0", 0, 1, 1));
  plan.add_task(p2p(TaskKind::send, "s1", 1, 0, 1));
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {2, 1, 1});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start, (std::vector<double>{0, 2, 2}));
  EXPECT_TRUE(s.finished);
}

TEST(Dispatcher, MoreUrgentTaskReadyLaterTakesTheHeadBeforeABlockedCollective) {
  // The collective does not reserve worker 0's stream while it waits: queues are ordered by
  // (priority, index), so a task that becomes ready with a lower priority is the new head.
  //   t0: compute on worker 0 [1 s]
  //   t1: send on worker 1, priority 0 [5 s]     -> worker 1 comm busy 0..5
  //   t2: allreduce {0, 1}, priority 3 [2 s]     -> blocked until 5
  //   t3: send on worker 0, priority 1 [2 s], data-dependent on t0: ready at 1, heads worker 0's
  //       comm queue (1 < 3) and starts at 1, ends at 3, before the collective could run anyway.
  //   t4: send on worker 0, priority 4 [1 s]     -> behind t2: starts at 7 only.
  Plan plan(2);
  plan.add_task(compute("t0", 0));
  plan.add_task(p2p(TaskKind::send, "t1", 1, 0, 0));
  plan.add_task(collective(TaskKind::allreduce, "t2", {0, 1}, 3));
  plan.add_task(p2p(TaskKind::send, "t3", 0, 1, 1));
  plan.add_task(p2p(TaskKind::send, "t4", 0, 1, 4));
  plan.add_data_dep(0, 3);
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {1, 5, 2, 2, 1});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start, (std::vector<double>{0, 0, 5, 1, 7}));
}

TEST(Dispatcher, ControlDependenciesAreHonouredLikeDataOnes) {
  // b (worker 1, priority -5) would start at 0, but control-depends on a (worker 0, 2 s): starts
  // at 2. c (worker 1) data-depends on b (1 s): starts at 3. d, a send on worker 0 that
  // control-depends on c, starts at c's end, 3 + 1 = 4; the comm stream was idle all along.
  Plan plan(2);
  const TaskIndex a = plan.add_task(compute("a", 0));
  const TaskIndex b = plan.add_task(compute("b", 1, -5));
  const TaskIndex c = plan.add_task(compute("c", 1));
  const TaskIndex d = plan.add_task(p2p(TaskKind::send, "d", 0, 1));
  plan.add_control_dep(a, b);
  plan.add_data_dep(b, c);
  plan.add_control_dep(c, d);
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, {2, 1, 1, 1});
  EXPECT_TRUE(s.violations.empty()) << s.violations.front();
  EXPECT_EQ(s.start, (std::vector<double>{0, 2, 3, 4}));
  EXPECT_TRUE(s.finished);
}

TEST(Dispatcher, TaskWithSeveralDependenciesWaitsForTheLast) {
  // z depends on x (data, 2 s, worker 0) and y (control, 6 s, worker 1): starts at max(2, 6).
  Plan plan(3);
  const TaskIndex x = plan.add_task(compute("x", 0));
  const TaskIndex y = plan.add_task(compute("y", 1));
  const TaskIndex z = plan.add_task(compute("z", 2));
  plan.add_data_dep(x, z);
  plan.add_control_dep(y, z);
  const Schedule s = run_on_virtual_clock(plan, {2, 6, 1});
  EXPECT_EQ(s.start[z], 6);
}

TEST(Dispatcher, EmptyPlanIsFinishedAtOnce) {
  Plan plan(2);
  Dispatcher dispatcher(plan);
  EXPECT_TRUE(dispatcher.finished());
  EXPECT_TRUE(dispatcher.take_startable().empty());
}

TEST(Dispatcher, CompleteWithoutRunningTaskIsAnInternalError) {
  Plan plan(1);
  plan.add_task(compute("a", 0));
  Dispatcher dispatcher(plan);
  EXPECT_THROW(dispatcher.complete(0), std::logic_error);
}

// --- tasks run elsewhere (complete_unstarted) ------------------------------------------------

TEST(Dispatcher, CompleteUnstartedReleasesSuccessorsBeforeItsOwnDependencies) {
  // a -> b -> c, a and b on worker 0, c on worker 1. b is completed unstarted while a has not
  // even started: c is ready at once, beside a, and b is never handed out (a's end releases
  // nothing more).
  Plan plan(2);
  const TaskIndex a = plan.add_task(compute("a", 0));
  const TaskIndex b = plan.add_task(compute("b", 0));
  const TaskIndex c = plan.add_task(compute("c", 1));
  plan.add_data_dep(a, b);
  plan.add_data_dep(b, c);
  ASSERT_NO_THROW(plan.validate_graph());
  Dispatcher dispatcher(plan);
  dispatcher.complete_unstarted(b);
  EXPECT_EQ(dispatcher.completed(), 1u);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{a, c}));
  dispatcher.complete(a);
  EXPECT_TRUE(dispatcher.take_startable().empty());
  dispatcher.complete(c);
  EXPECT_TRUE(dispatcher.take_startable().empty());
  EXPECT_TRUE(dispatcher.finished());
  EXPECT_EQ(dispatcher.running(), 0u);
}

TEST(Dispatcher, CompleteUnstartedClearsAQueuedCollectiveThatHeldAStream) {
  // As in CollectiveWaitsForAllMembersAndIsNotOvertaken: t1 (allreduce {0, 1}) heads worker 0's
  // comm queue and holds t2 back while t0 keeps worker 1 busy. Completing t1 unstarted takes it
  // out of both queues: t2 starts at once, and t0's end hands out nothing.
  Plan plan(2);
  const TaskIndex t0 = plan.add_task(p2p(TaskKind::send, "t0", 1, 0, 0));
  const TaskIndex t1 = plan.add_task(collective(TaskKind::allreduce, "t1", {0, 1}, 1));
  const TaskIndex t2 = plan.add_task(p2p(TaskKind::send, "t2", 0, 1, 2));
  ASSERT_NO_THROW(plan.validate_graph());
  Dispatcher dispatcher(plan);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{t0}));
  dispatcher.complete_unstarted(t1);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{t2}));
  dispatcher.complete(t0);
  EXPECT_TRUE(dispatcher.take_startable().empty());
  dispatcher.complete(t2);
  EXPECT_TRUE(dispatcher.finished());
}

TEST(Dispatcher, TaskRunElsewhereIsNeverHandedOutEvenWhenReady) {
  // x (worker 1) has no dependencies, so it is ready at once, but another executor runs it: the
  // first batch holds only z. When x is reported done, y (which waits for it) starts after z.
  Plan plan(2);
  const TaskIndex x = plan.add_task(compute("x", 1));
  const TaskIndex y = plan.add_task(compute("y", 0, 0));
  const TaskIndex z = plan.add_task(compute("z", 0, 5));
  plan.add_data_dep(x, y);
  ASSERT_NO_THROW(plan.validate_graph());
  Dispatcher dispatcher(plan);
  dispatcher.run_elsewhere(x);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{z}));
  dispatcher.complete_unstarted(x);
  EXPECT_TRUE(dispatcher.take_startable().empty());  // y waits for z's stream
  dispatcher.complete(z);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{y}));
  dispatcher.complete(y);
  EXPECT_TRUE(dispatcher.finished());
  EXPECT_THROW(dispatcher.run_elsewhere(y), std::logic_error);
}

TEST(Dispatcher, CompletingATaskTwiceIsAnInternalError) {
  Plan plan(1);
  const TaskIndex a = plan.add_task(compute("a", 0));
  const TaskIndex b = plan.add_task(compute("b", 0, 1));
  Dispatcher dispatcher(plan);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{a}));
  EXPECT_THROW(dispatcher.complete_unstarted(a), std::logic_error);  // a has started
  dispatcher.complete_unstarted(b);
  EXPECT_THROW(dispatcher.complete_unstarted(b), std::logic_error);
  EXPECT_THROW(dispatcher.complete(b), std::logic_error);
  dispatcher.complete(a);
  EXPECT_THROW(dispatcher.complete(a), std::logic_error);
  EXPECT_TRUE(dispatcher.finished());
}

// --- issue order (StreamOrder::issue) ---------------------------------------------------------

TEST(DispatcherIssueOrder, ATaskThatIsNotReadyHoldsItsStream) {
  // Worker 0's compute stream issues a (priority 0, waits for worker 1's x, 3 s) then b (1, 1 s,
  // independent). As a dataflow b runs at 0 and a at 3 (end 4); in issue order b waits behind a:
  // a at 3, b at 4, end 5.
  Plan plan(2);
  const TaskIndex x = plan.add_task(compute("x", 1, 0));
  const TaskIndex a = plan.add_task(compute("a", 0, 0));
  const TaskIndex b = plan.add_task(compute("b", 0, 1));
  plan.add_data_dep(x, a);
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule dataflow = run_on_virtual_clock(plan, {3, 1, 1});
  EXPECT_EQ(dataflow.start, (std::vector<double>{0, 3, 0}));
  plan.info.stream_order = StreamOrder::issue;
  const Schedule issued = run_on_virtual_clock(plan, {3, 1, 1});
  EXPECT_TRUE(issued.violations.empty()) << issued.violations.front();
  EXPECT_EQ(issued.start, (std::vector<double>{0, 3, 4}));
  EXPECT_EQ(issued.end[b], 5);
  EXPECT_TRUE(issued.finished);
}

TEST(DispatcherIssueOrder, ACollectiveHoldsEveryMemberStreamUntilItIsReady) {
  // Worker 0's comm stream issues the allreduce r (priority 0) then s (1); r waits for worker 1's
  // compute c (2 s). s, ready at once, starts only when r (1 s) has ended: at 3.
  Plan plan(2);
  const TaskIndex c = plan.add_task(compute("c", 1, 0));
  const TaskIndex r = plan.add_task(collective(TaskKind::allreduce, "r", {0, 1}, 0));
  const TaskIndex s = plan.add_task(collective(TaskKind::allreduce, "s", {0, 1}, 1));
  plan.add_data_dep(c, r);
  plan.info.stream_order = StreamOrder::issue;
  const Schedule issued = run_on_virtual_clock(plan, {2, 1, 1});
  EXPECT_TRUE(issued.violations.empty()) << issued.violations.front();
  EXPECT_EQ(issued.start[r], 2);
  EXPECT_EQ(issued.start[s], 3);
  plan.info.stream_order = StreamOrder::ready;
  EXPECT_EQ(run_on_virtual_clock(plan, {2, 1, 1}).start[s], 0);
}

TEST(DispatcherIssueOrder, AnOrderThatContradictsADependencyIsRefusedNamingTheTask) {
  // a is issued first on worker 0's compute stream but waits for b, issued after it.
  Plan plan(1);
  const TaskIndex a = plan.add_task(compute("a", 0, 0));
  const TaskIndex b = plan.add_task(compute("b", 0, 1));
  plan.add_data_dep(b, a);
  ASSERT_NO_THROW(plan.validate_graph());  // acyclic as a dataflow
  EXPECT_NO_THROW(Dispatcher{plan});
  plan.info.stream_order = StreamOrder::issue;
  try {
    Dispatcher dispatcher(plan);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidPlanError& e) {
    EXPECT_EQ(std::string(e.what()),
              "plan: task a can never start: in the order its streams issue tasks (priority, then index) "
              "it waits, through its dependencies, for a task issued after it on one of its streams");
  }
}

TEST(DispatcherIssueOrder, WhetherAnOrderFinishesDependsOnTheCommStreams) {
  // Worker 1 receives r (priority 0) then joins the allreduce c (1); worker 0 joins c, then sends
  // s (2), which r waits for. On one comm stream per worker r blocks c on worker 1 and c blocks s
  // on worker 0: refused. With a stream per communicator r, c and s are on three streams: runs.
  Plan plan(2);
  const TaskIndex c = plan.add_task(collective(TaskKind::allreduce, "c", {0, 1}, 1));
  const TaskIndex s = plan.add_task(p2p(TaskKind::send, "s", 0, 1, 2));
  const TaskIndex r = plan.add_task(p2p(TaskKind::recv, "r", 1, 0, 0));
  plan.add_data_dep(s, r);
  ASSERT_NO_THROW(plan.validate_graph());
  plan.info.stream_order = StreamOrder::issue;
  EXPECT_THROW(Dispatcher(plan, CommStreams::one_per_worker), InvalidPlanError);
  Dispatcher dispatcher(plan, CommStreams::per_group);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{c, s}));
  dispatcher.complete(c);
  dispatcher.complete(s);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{r}));
  dispatcher.complete(r);
  EXPECT_TRUE(dispatcher.finished());
  EXPECT_EQ(dispatcher.issue_edges().size(), 0u);  // three streams of one task each
}

TEST(DispatcherIssueOrder, TasksRunElsewhereOrCompletedUnstartedDoNotHoldAStream) {
  // Worker 0 issues a (0), b (1), c (2): b runs in another process and completes unstarted once
  // a has run; c then starts at once.
  Plan plan(1);
  const TaskIndex a = plan.add_task(compute("a", 0, 0));
  const TaskIndex b = plan.add_task(compute("b", 0, 1));
  const TaskIndex c = plan.add_task(compute("c", 0, 2));
  plan.info.stream_order = StreamOrder::issue;
  Dispatcher dispatcher(plan);
  dispatcher.run_elsewhere(b);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{a}));
  dispatcher.complete(a);
  EXPECT_EQ(dispatcher.take_startable(), (std::vector<TaskIndex>{c}));
  dispatcher.complete_unstarted(b);
  dispatcher.complete(c);
  EXPECT_TRUE(dispatcher.finished());
  EXPECT_EQ(dispatcher.issue_edges(), (std::vector<std::pair<TaskIndex, TaskIndex>>{{a, b}, {b, c}}));
}

// --- random plans -----------------------------------------------------------------------------

// A random valid plan: compute tasks, send/recv pairs (the recv data-dependent on its send) and
// collectives over random subsets of workers in random ring order, with random priorities (few
// values, so index tie-breaks matter) and random data/control dependencies on recent tasks (a
// window keeps the graph deep rather than wide). Dependencies only point backwards: acyclic by
// construction, while priorities are unrelated to plan order.
Plan random_plan(std::uint32_t seed, int num_tasks, int num_workers, std::vector<double>& duration) {
  std::mt19937 rng(seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Plan plan(num_workers);
  duration.clear();
  static constexpr TaskKind kCollectives[] = {TaskKind::allreduce, TaskKind::allgather,
                                              TaskKind::reduce_scatter, TaskKind::broadcast};
  auto add = [&](Task t) {
    // Integer durations make many tasks end at the same instant, the case most likely to expose
    // ordering mistakes.
    duration.push_back(uniform(1, 10));
    t.priority = uniform(0, 4);
    const auto index = static_cast<TaskIndex>(plan.size());
    const int deps = index == 0 ? 0 : uniform(0, 3);
    for (int d = 0; d < deps; ++d) {
      const int lo = std::max(0, static_cast<int>(index) - 64);
      const auto dep = static_cast<TaskIndex>(uniform(lo, static_cast<int>(index) - 1));
      (uniform(0, 1) == 0 ? t.data_deps : t.control_deps).push_back(dep);
    }
    return plan.add_task(std::move(t));
  };
  while (static_cast<int>(plan.size()) < num_tasks) {
    const std::string id = "t" + std::to_string(plan.size());
    const int roll = uniform(0, 9);
    if (roll < 6) {
      add(compute(id, uniform(0, num_workers - 1)));
    } else if (roll < 8 && static_cast<int>(plan.size()) + 2 <= num_tasks) {
      const WorkerId from = uniform(0, num_workers - 1);
      WorkerId to = uniform(0, num_workers - 2);
      if (to >= from) ++to;  // any worker but `from`
      const TaskIndex send = add(p2p(TaskKind::send, id + "/send", from, to));
      const TaskIndex recv = add(p2p(TaskKind::recv, id + "/recv", to, from));
      plan.add_data_dep(send, recv);
    } else {
      std::vector<WorkerId> workers(num_workers);
      for (int w = 0; w < num_workers; ++w) workers[w] = w;
      std::shuffle(workers.begin(), workers.end(), rng);
      workers.resize(uniform(2, num_workers));
      add(collective(kCollectives[uniform(0, 3)], id, workers));
    }
  }
  return plan;
}

TEST(DispatcherRandom, GeneratorMakesValidMixedPlans) {
  // Guards the tests below: they mean something only if the plans are valid and mix every kind.
  std::vector<double> duration;
  const Plan plan = random_plan(1, 2000, 8, duration);
  ASSERT_NO_THROW(plan.validate_graph());
  EXPECT_EQ(plan.size(), 2000u);
  EXPECT_EQ(duration.size(), plan.size());
  int computes = 0, sends = 0, recvs = 0, collectives = 0;
  for (const Task& t : plan.tasks()) {
    if (is_collective(t.kind))
      ++collectives;
    else if (t.kind == TaskKind::send)
      ++sends;
    else if (t.kind == TaskKind::recv)
      ++recvs;
    else
      ++computes;
  }
  EXPECT_GT(computes, 500);
  EXPECT_GT(sends, 100);
  EXPECT_EQ(sends, recvs);
  EXPECT_GT(collectives, 100);
}

class DispatcherRandomSeed : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(DispatcherRandomSeed, FinishesRespectsDependenciesAndStreams) {
  std::vector<double> duration;
  const Plan plan = random_plan(GetParam(), 2000, 8, duration);
  ASSERT_NO_THROW(plan.validate_graph());
  const Schedule s = run_on_virtual_clock(plan, duration);

  // (7) and the order of take_startable(), checked while running.
  EXPECT_TRUE(s.violations.empty()) << s.violations.size() << " violations, first: " << s.violations.front();

  // (5) No deadlock: every task ran, and the Dispatcher agrees.
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.completed, plan.size());
  EXPECT_EQ(s.start_order.size(), plan.size());
  for (TaskIndex t = 0; t < plan.size(); ++t) ASSERT_NE(s.end[t], kNever) << plan.task(t).id;

  // (6) Every task starts after all of its dependencies ended.
  int late = 0;
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    const Task& task = plan.task(t);
    for (const auto* deps : {&task.data_deps, &task.control_deps})
      for (TaskIndex d : *deps)
        if (s.start[t] < s.end[d] && ++late <= 5)
          ADD_FAILURE() << task.id << " started at " << s.start[t] << " before " << plan.task(d).id
                        << " ended at " << s.end[d];
  }
  EXPECT_EQ(late, 0);

  // (7) again, after the fact: per (worker, stream), the intervals sorted by start never overlap.
  std::vector<std::vector<std::pair<double, double>>> intervals(static_cast<std::size_t>(plan.num_workers()) *
                                                                2);
  for (TaskIndex t = 0; t < plan.size(); ++t)
    for (WorkerId w : plan.task(t).participants())
      intervals[slot_of(w, plan.task(t).stream)].emplace_back(s.start[t], s.end[t]);
  for (auto& slot : intervals) {
    std::sort(slot.begin(), slot.end());
    for (std::size_t k = 1; k < slot.size(); ++k)
      ASSERT_LE(slot[k - 1].second, slot[k].first) << "overlap on one stream";
  }
}

TEST_P(DispatcherRandomSeed, IsDeterministic) {
  // Same plan, same durations: the same start order, so simulated and real runs are repeatable.
  std::vector<double> duration;
  const Plan plan = random_plan(GetParam(), 2000, 8, duration);
  EXPECT_EQ(run_on_virtual_clock(plan, duration).start_order,
            run_on_virtual_clock(plan, duration).start_order);
}

// Issue order on random Plans: with priorities that follow plan order (every dependency points
// back) the order always finishes; with random priorities the Dispatcher either refuses the Plan
// or runs it to the end with each (worker, stream) starting its tasks in (priority, index) order.
TEST_P(DispatcherRandomSeed, IssueOrderFinishesInOrderOrIsRefused) {
  std::vector<double> duration;
  for (const bool by_index : {true, false}) {
    SCOPED_TRACE(by_index ? "priorities in plan order" : "random priorities");
    Plan plan = random_plan(GetParam(), 2000, 8, duration);
    if (by_index)
      for (TaskIndex t = 0; t < plan.size(); ++t) plan.mutable_task(t).priority = t;
    plan.info.stream_order = StreamOrder::issue;
    Schedule s;
    try {
      s = run_on_virtual_clock(plan, duration);
    } catch (const InvalidPlanError&) {
      EXPECT_FALSE(by_index) << "refused a Plan whose issue order follows its dependencies";
      continue;
    }
    EXPECT_TRUE(s.violations.empty()) << s.violations.front();
    ASSERT_TRUE(s.finished);
    std::vector<std::vector<TaskIndex>> started(static_cast<std::size_t>(plan.num_workers()) * 2);
    for (TaskIndex t : s.start_order)
      for (WorkerId w : plan.task(t).participants()) started[slot_of(w, plan.task(t).stream)].push_back(t);
    for (auto& stream : started) {
      std::vector<TaskIndex> issued = stream;
      std::stable_sort(issued.begin(), issued.end(), [&](TaskIndex a, TaskIndex b) {
        return std::make_pair(plan.task(a).priority, a) < std::make_pair(plan.task(b).priority, b);
      });
      ASSERT_EQ(stream, issued);
    }
  }
}

// 20 fixed seeds: a failure names its seed and reproduces.
INSTANTIATE_TEST_SUITE_P(TwentySeeds, DispatcherRandomSeed, ::testing::Range(1u, 21u));

}  // namespace
}  // namespace strata
