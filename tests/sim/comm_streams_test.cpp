// Communication streams in the replay: one stream per communicator per worker (replay.hpp,
// traces/dispatch.hpp CommStreams::per_group) against the single comm stream of one_per_worker.
// Times are derived by hand from α–β on test platforms with SimGrid's factors set to 1 (strata's
// default), so max-min sharing gives each of k flows on a link exactly 1/k of it. Each replay
// runs in its own child process (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "sim_fixtures.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
namespace {

using test::comm_task;
using test::fixed_task;

constexpr double kBw = 1e11;   // B/s: 100 GB/s private links, and the loopback below
constexpr double kLat = 1e-6;  // s per link: an inter-host route is 2 links (α = 2 µs), loopback 1

// Two hosts of two GPUs: workers 0, 1 on node-0 and 2, 3 on node-1 (natural order). Inter-host
// routes: the source's private link up, an ideal backbone, the destination's link down
// (SPLITDUPLEX: up and down are separate); intra-host routes: the loopback (FATPIPE: every flow
// gets all of it).
std::string two_by_two() { return test::flat_cluster(2, 2, kBw, kLat, kBw, kLat); }
std::string flat4() { return test::platforms_dir() + "test-flat-4.xml"; }

Task allreduce(const std::string& id, std::vector<WorkerId> group, double bytes) {
  Task t = comm_task(id, TaskKind::allreduce, bytes);
  t.algo = CollectiveAlgo::ring;
  t.group = std::move(group);
  return t;
}

Task p2p(const std::string& id, TaskKind kind, WorkerId worker, WorkerId peer, double bytes) {
  Task t = comm_task(id, kind, bytes);
  t.worker = worker;
  t.peer = peer;
  return t;
}

// Replays `plan` in a child and returns each task's end (s), the latest over its workers.
std::map<std::string, double> task_ends(const Plan& plan, const std::string& platform, CommStreams streams) {
  std::string text = run_in_child([&] {
    ReplayOptions options;
    options.comm_streams = streams;
    options.collectives = CollectiveMode::step;
    ReplayResult result = replay(plan, platform, options);
    std::map<std::string, double> ends;
    for (const TraceRecord& r : result.trace.records) ends[r.id] = std::max(ends[r.id], r.end);
    std::ostringstream out;
    out.precision(17);
    for (const auto& [id, end] : ends) out << id << ' ' << end << '\n';
    return out.str();
  });
  std::map<std::string, double> ends;
  std::istringstream in(text);
  std::string id;
  double end = 0;
  while (in >> id >> end) ends[id] = end;
  return ends;
}

// Worker 0 is in a data-parallel group {0, 2} (across hosts) and a tensor-parallel group {0, 1}
// (inside node-0), and sends to pipeline peer 1. The DP allreduce is ready at 0; the TP allreduce
// and the send become ready at 0.1 s, after a compute task on each of workers 0 and 1.
Plan dp_tp_pp_plan() {
  Plan plan(4);
  plan.add_task(allreduce("dp_ar", {0, 2}, 1e11));
  TaskIndex c0 = plan.add_task(fixed_task("c0", 0, 0.1));
  TaskIndex c1 = plan.add_task(fixed_task("c1", 1, 0.1));
  TaskIndex tp = plan.add_task(allreduce("tp_ar", {0, 1}, 2e10));
  TaskIndex send = plan.add_task(p2p("pp_send", TaskKind::send, 0, 1, 1e10));
  TaskIndex recv = plan.add_task(p2p("pp_recv", TaskKind::recv, 1, 0, 1e10));
  for (TaskIndex c : {c0, c1}) plan.add_data_dep(c, tp);
  plan.add_data_dep(c0, send);
  plan.add_data_dep(send, recv);
  plan.validate();
  return plan;
}

// Ring allreduce of S bytes on 2 ranks: 2 steps of S/2 each way, 2·(α + S/(2B)) uncontended.
//   dp_ar: inter-host, α = 2 µs, S = 1e11 B:  2·(2e-6 + 0.5)  = 1.000004 s
//   tp_ar: loopback,   α = 1 µs, S = 2e10 B:  2·(1e-6 + 0.1)  = 0.200002 s
//   pp_send: loopback, 1e10 B:                1e-6 + 0.1       = 0.100001 s
// The DP flows use the private links, the TP and PP flows the loopback: no link is shared, so
// each takes its uncontended time.
TEST(CommStreams, LongDataParallelAllreduceNoLongerDelaysTensorParallelOrSend) {
  const Plan plan = dp_tp_pp_plan();
  const double dp = 2 * (2 * kLat + 1e11 / (2 * kBw));
  const double tp = 2 * (kLat + 2e10 / (2 * kBw));
  const double send = kLat + 1e10 / kBw;

  // Per communicator: TP and the send start when ready, at 0.1 s, beside the DP allreduce.
  auto ends = task_ends(plan, two_by_two(), CommStreams::per_group);
  EXPECT_NEAR(ends["dp_ar"], dp, 1e-9);            // 1.000004 s
  EXPECT_NEAR(ends["tp_ar"], 0.1 + tp, 1e-9);      // 0.300002 s
  EXPECT_NEAR(ends["pp_send"], 0.1 + send, 1e-9);  // 0.200001 s
  EXPECT_NEAR(ends["pp_recv"], 0.1 + send, 1e-9);

  // One comm stream per worker: both wait for the DP allreduce on worker 0's stream, then run one
  // after the other in plan order (equal priorities): tp_ar before pp_send.
  ends = task_ends(plan, two_by_two(), CommStreams::one_per_worker);
  EXPECT_NEAR(ends["dp_ar"], dp, 1e-9);                // 1.000004 s
  EXPECT_NEAR(ends["tp_ar"], dp + tp, 1e-9);           // 1.200006 s
  EXPECT_NEAR(ends["pp_send"], dp + tp + send, 1e-9);  // 1.300007 s
}

// On test-flat-4 (one GPU per node), allreduces over {0, 2} and {0, 3} both cross node-0's link:
// in each of the 2 ring steps, flows 0→2 and 0→3 share node-0's up link and 2→0 and 3→0 its down
// link (SPLITDUPLEX), all four of S/2 bytes. Max-min gives each B/2, so a step takes
// α + (S/2)/(B/2) = α + S/B and each allreduce 2·(α + S/B) = 2·(2e-6 + 0.1) = 0.200004 s for
// S = 1e10 B. With one comm stream, worker 0 runs them one after the other at full bandwidth:
// 2·(α + S/(2B)) = 0.100004 s each, the second ending at 0.200008 s.
TEST(CommStreams, CollectivesOfTwoGroupsOnSharedLinksEachGetHalfTheBandwidth) {
  Plan plan(4);
  plan.add_task(allreduce("a", {0, 2}, 1e10));
  plan.add_task(allreduce("b", {0, 3}, 1e10));
  plan.validate();
  const double alpha = 2 * kLat;
  auto ends = task_ends(plan, flat4(), CommStreams::per_group);
  EXPECT_NEAR(ends["a"], 2 * (alpha + 1e10 / kBw), 1e-9);  // 0.200004 s
  EXPECT_NEAR(ends["b"], 2 * (alpha + 1e10 / kBw), 1e-9);
  ends = task_ends(plan, flat4(), CommStreams::one_per_worker);
  EXPECT_NEAR(ends["a"], 2 * (alpha + 1e10 / (2 * kBw)), 1e-9);  // 0.100004 s
  EXPECT_NEAR(ends["b"], 4 * (alpha + 1e10 / (2 * kBw)), 1e-9);  // 0.200008 s
}

// A send 0→1 beside an allreduce over {0, 1} (S = 1e10 B each) on test-flat-4: the send and
// the allreduce's flows 0→1 share node-0's up link (and node-1's down link); the flows 1→0 use
// the other directions alone. SimGrid gives a flow no bandwidth during its latency (weight 0 in
// the max-min system until α has passed), so, with α = 2 µs and B = 1e11 B/s:
//   [0, α]: the three flows wait their latency;
//   step 1: flow 0→1 (5e9 B) shares with the send at B/2 and ends at α + 5e9/5e10 = 0.100002 s,
//     flow 1→0 (alone, B) at 0.050002 s; the send has moved 5e9 B;
//   step 2 starts at 0.100002 s: during its flows' latency (to 0.100004 s) the send is alone at
//     B and moves 2e5 B; then it shares with flow 0→1 at B/2: its last 5e9 − 2e5 B take
//     0.099996 s and it ends at 0.2 s exactly; flow 0→1 has 2e5 B left, alone at B: 2 µs more,
//     so the allreduce ends at 0.200002 s.
// One comm stream: the allreduce alone (2·(α + S/(2B)) = 0.100004 s), then the send alone
// (α + S/B = 0.100002 s): 0.200006 s.
TEST(CommStreams, SendBesideAllreduceSharesTheLinkInsteadOfWaiting) {
  Plan plan(2);
  plan.add_task(allreduce("ar", {0, 1}, 1e10));
  TaskIndex send = plan.add_task(p2p("send", TaskKind::send, 0, 1, 1e10));
  TaskIndex recv = plan.add_task(p2p("recv", TaskKind::recv, 1, 0, 1e10));
  plan.add_data_dep(send, recv);
  plan.validate();
  const double alpha = 2 * kLat;
  auto ends = task_ends(plan, flat4(), CommStreams::per_group);
  EXPECT_NEAR(ends["send"], 0.2, 1e-9);
  EXPECT_NEAR(ends["ar"], 0.200002, 1e-9);
  ends = task_ends(plan, flat4(), CommStreams::one_per_worker);
  EXPECT_NEAR(ends["ar"], 2 * (alpha + 1e10 / (2 * kBw)), 1e-9);                         // 0.100004 s
  EXPECT_NEAR(ends["send"], 2 * (alpha + 1e10 / (2 * kBw)) + alpha + 1e10 / kBw, 1e-9);  // 0.200006 s
}

// The `comm_group` attribute names the communicator: two allreduces over the same ranks run
// concurrently when their names differ (each at B/2 on both links: 2·(α + S/B) = 0.200004 s)
// and one after the other when the names are equal (0.100004 s, then 0.200008 s). Without the
// attribute they share the group's stream, as with equal names.
TEST(CommStreams, CommGroupAttributeNamesTheCommunicator) {
  const double alpha = 2 * kLat;
  for (const bool distinct : {true, false}) {
    Plan plan(2);
    Task a = allreduce("a", {0, 1}, 1e10);
    Task b = allreduce("b", {1, 0}, 1e10);  // the same set of ranks in another ring order
    a.attrs["comm_group"] = std::string("dp");
    b.attrs["comm_group"] = std::string(distinct ? "zero" : "dp");
    plan.add_task(a);
    plan.add_task(b);
    plan.validate();
    auto ends = task_ends(plan, flat4(), CommStreams::per_group);
    if (distinct) {
      EXPECT_NEAR(ends["a"], 2 * (alpha + 1e10 / kBw), 1e-9);
      EXPECT_NEAR(ends["b"], 2 * (alpha + 1e10 / kBw), 1e-9);
    } else {
      EXPECT_NEAR(ends["a"], 2 * (alpha + 1e10 / (2 * kBw)), 1e-9);
      EXPECT_NEAR(ends["b"], 4 * (alpha + 1e10 / (2 * kBw)), 1e-9);
    }
  }
  Plan plan(2);
  plan.add_task(allreduce("a", {0, 1}, 1e10));
  plan.add_task(allreduce("b", {1, 0}, 1e10));
  plan.validate();
  auto ends = task_ends(plan, flat4(), CommStreams::per_group);
  EXPECT_NEAR(ends["b"], 4 * (alpha + 1e10 / (2 * kBw)), 1e-9);
}

}  // namespace
}  // namespace strata
