// Dispatcher with CommStreams::per_group: which communication tasks share a stream (the same
// communicator on a worker) and which start together (different communicators), asked directly
// of take_startable() without an executor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/traces/dispatch.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
namespace {

Task collective(const std::string& id, std::vector<WorkerId> group, std::int64_t priority = 0) {
  Task t;
  t.id = id;
  t.kind = TaskKind::allreduce;
  t.stream = Stream::comm;
  t.algo = CollectiveAlgo::ring;
  t.group = std::move(group);
  t.priority = priority;
  return t;
}

Task p2p(TaskKind kind, const std::string& id, WorkerId worker, WorkerId peer) {
  Task t;
  t.id = id;
  t.kind = kind;
  t.stream = Stream::comm;
  t.worker = worker;
  t.peer = peer;
  return t;
}

std::vector<TaskIndex> startable(Dispatcher& d) {
  const auto& s = d.take_startable();
  return {s.begin(), s.end()};
}

// Worker 0 takes part in a DP allreduce {0, 2}, a TP allreduce {0, 1}, a send to 1 and a recv
// from 3, all ready at once: four communicators, so all start together; with one comm stream per
// worker only the first (plan order) starts.
Plan four_communicators() {
  Plan plan(4);
  plan.add_task(collective("dp", {0, 2}));
  plan.add_task(collective("tp", {0, 1}));
  plan.add_task(p2p(TaskKind::send, "send", 0, 1));
  plan.add_task(p2p(TaskKind::recv, "recv", 0, 3));
  plan.validate_graph();  // sends without receivers: a scheduling fixture
  return plan;
}

TEST(DispatcherCommStreams, DifferentCommunicatorsOfOneWorkerStartTogether) {
  const Plan plan = four_communicators();
  Dispatcher per_group(plan, CommStreams::per_group);
  EXPECT_EQ(startable(per_group), (std::vector<TaskIndex>{0, 1, 2, 3}));
  // Streams: compute none; comm: dp on 0 and 2, tp on 0 and 1, send (0, to 1), recv (0, from 3).
  EXPECT_EQ(per_group.streams_used(), 6U);

  Dispatcher one(plan, CommStreams::one_per_worker);
  EXPECT_EQ(startable(one), (std::vector<TaskIndex>{0}));
  EXPECT_EQ(one.streams_used(), 3U);  // the comm streams of workers 0, 1, 2
  one.complete(0);
  EXPECT_EQ(startable(one), (std::vector<TaskIndex>{1}));
}

// A group is a set: {0, 1} and {1, 0} are one communicator and run in (priority, index) order.
TEST(DispatcherCommStreams, OneGroupInAnyRingOrderIsOneStreamInPriorityOrder) {
  Plan plan(2);
  plan.add_task(collective("a", {0, 1}, 5));
  plan.add_task(collective("b", {1, 0}, 1));
  plan.validate();
  Dispatcher d(plan, CommStreams::per_group);
  EXPECT_EQ(startable(d), (std::vector<TaskIndex>{1}));
  EXPECT_TRUE(startable(d).empty());
  d.complete(1);
  EXPECT_EQ(startable(d), (std::vector<TaskIndex>{0}));
}

// Sends to two peers, and a send and a recv with one peer, are separate streams; two sends to one
// peer share one.
TEST(DispatcherCommStreams, PointToPointStreamIsPeerAndDirection) {
  Plan plan(3);
  plan.add_task(p2p(TaskKind::send, "s1", 0, 1));
  plan.add_task(p2p(TaskKind::send, "s2", 0, 2));
  plan.add_task(p2p(TaskKind::recv, "r1", 0, 1));
  plan.add_task(p2p(TaskKind::send, "s1b", 0, 1));
  plan.validate_graph();
  Dispatcher d(plan, CommStreams::per_group);
  EXPECT_EQ(startable(d), (std::vector<TaskIndex>{0, 1, 2}));
  d.complete(0);
  EXPECT_EQ(startable(d), (std::vector<TaskIndex>{3}));
}

// The comm_group attribute names the communicator: same name, one stream even across kinds and
// groups; different names, different streams even for one group.
TEST(DispatcherCommStreams, CommGroupAttributeOverridesTheDerivedStream) {
  Plan plan(2);
  Task a = collective("a", {0, 1});
  Task b = collective("b", {0, 1});
  Task s = p2p(TaskKind::send, "s", 0, 1);
  a.attrs[kCommGroupAttr] = std::string("dp");
  b.attrs[kCommGroupAttr] = std::string("zero");
  s.attrs[kCommGroupAttr] = std::string("dp");
  plan.add_task(a);
  plan.add_task(b);
  plan.add_task(s);
  plan.validate_graph();
  Dispatcher d(plan, CommStreams::per_group);
  EXPECT_EQ(startable(d), (std::vector<TaskIndex>{0, 1}));
  d.complete(0);
  EXPECT_EQ(startable(d), (std::vector<TaskIndex>{2}));
}

}  // namespace
}  // namespace strata
