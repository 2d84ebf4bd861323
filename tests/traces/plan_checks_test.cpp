// Plan::validate beyond one task: the bounds on sizes, FLOPs and fixed durations, point-to-point
// pairing, the order of buffer writes and reads, and the error type a caller can tell apart.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "strata/traces/error.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
namespace {

Task compute(const std::string& id, WorkerId worker) {
  Task t;
  t.id = id;
  t.kind = TaskKind::fixed;
  t.worker = worker;
  return t;
}

Task p2p(TaskKind kind, const std::string& id, WorkerId worker, WorkerId peer, double bytes) {
  Task t;
  t.id = id;
  t.kind = kind;
  t.stream = Stream::comm;
  t.worker = worker;
  t.peer = peer;
  t.comm_bytes = bytes;
  return t;
}

std::string message(const Plan& plan) {
  try {
    plan.validate("p.json");
  } catch (const InvalidPlanError& e) {
    return e.what();
  }
  return "<no InvalidPlanError>";
}

// send (0 -> 1, 64 B) then its recv, which may be left out or changed by the caller.
Plan pair_plan(double recv_bytes = 0) {
  Plan plan(2);
  const TaskIndex s = plan.add_task(p2p(TaskKind::send, "it0/send", 0, 1, 64));
  const TaskIndex r = plan.add_task(p2p(TaskKind::recv, "it0/recv", 1, 0, recv_bytes));
  plan.add_data_dep(s, r);
  return plan;
}

TEST(PlanBounds, BytesFlopsAndDurationsAboveTheirBoundsAreRefusedNamingTheTask) {
  Task t = compute("it0/fwd/l0", 0);
  t.bytes_read = 1e30;
  Plan bytes(1);
  bytes.add_task(t);
  EXPECT_EQ(message(bytes),
            "p.json: /tasks/0/bytes_read: task 'it0/fwd/l0': 1e+30 B is out of range "
            "(must be below 2^53 B)");
  t.bytes_read = 9007199254740992.0;  // 2^53 itself is out
  Plan at_bound(1);
  at_bound.add_task(t);
  EXPECT_NE(message(at_bound).find("out of range"), std::string::npos);
  t.bytes_read = 9007199254740991.0;  // the largest byte count a double holds exactly
  Plan below(1);
  below.add_task(t);
  EXPECT_NO_THROW(below.validate());

  Task f = compute("it0/fwd/l1", 0);
  f.flops = 2e24;
  Plan flops(1);
  flops.add_task(f);
  EXPECT_EQ(
      message(flops),
      "p.json: /tasks/0/flops: task 'it0/fwd/l1': 2e+24 FLOP is out of range (must be below 1e24 FLOP)");

  Task d = compute("it0/fixed", 0);
  d.attrs["duration_s"] = 1e8;
  Plan duration(1);
  duration.add_task(d);
  EXPECT_EQ(message(duration),
            "p.json: /tasks/0/attrs/duration_s: task 'it0/fixed': 1e+08 s is out of range "
            "(must be below 1e7 s)");
  d.attrs["duration_s"] = std::nan("");
  Plan nan_duration(1);
  nan_duration.add_task(d);
  EXPECT_EQ(message(nan_duration), "p.json: /tasks/0/attrs/duration_s: not a finite number");

  // A framework's passes and kernels (gpu_kernels.hpp): bytes bounded, counts whole numbers.
  Task g = compute("it0/bwdw/l1", 0);
  g.attrs["pass_bytes"] = -1.0;
  Plan negative_pass(1);
  negative_pass.add_task(g);
  EXPECT_EQ(message(negative_pass), "p.json: /tasks/0/attrs/pass_bytes: negative value -1.000000");
  g.attrs["pass_bytes"] = 1e6;
  g.attrs["passes"] = 1.5;
  Plan fractional(1);
  fractional.add_task(g);
  EXPECT_EQ(
      message(fractional),
      "p.json: /tasks/0/attrs/passes: task 'it0/bwdw/l1': passes must be a whole number in [0, 1000000]");
  g.attrs.erase("passes");
  g.attrs["kernels"] = std::int64_t{0};
  Plan no_kernel(1);
  no_kernel.add_task(g);
  EXPECT_EQ(
      message(no_kernel),
      "p.json: /tasks/0/attrs/kernels: task 'it0/bwdw/l1': kernels must be a whole number in [1, 1000000]");
  g.attrs["kernels"] = std::int64_t{3};
  Plan fine(1);
  fine.add_task(g);
  EXPECT_NO_THROW(fine.validate());

  Plan buffer(1);
  buffer.add_buffer(Buffer{"dp0/w", 0, 1e20, DType::fp32, true});
  EXPECT_EQ(message(buffer),
            "p.json: /buffers/0/bytes: buffer 'dp0/w': 1e+20 B is out of range (must be "
            "below 2^53 B)");
}

TEST(PlanBounds, NanFlopsIsAnInvalidPlan) {
  Task t = compute("it0/fwd", 0);
  t.flops = std::nan("");
  Plan plan(1);
  plan.add_task(t);
  EXPECT_EQ(message(plan), "p.json: /tasks/0/flops: not a finite number");
}

TEST(PlanP2p, ARecvCompletesExactlyOneSendOfItsPeer) {
  EXPECT_NO_THROW(pair_plan().validate());
  EXPECT_NO_THROW(pair_plan(64).validate());  // a recv may state the size, then it must agree

  Plan lone_recv(2);
  lone_recv.add_task(p2p(TaskKind::recv, "it0/recv", 1, 0, 0));
  EXPECT_EQ(message(lone_recv),
            "p.json: /tasks/0/data_deps: recv 'it0/recv' has no send from worker 0 to "
            "worker 1 among its data dependencies");

  // A send to another worker does not count.
  Plan wrong_peer(3);
  const TaskIndex s = wrong_peer.add_task(p2p(TaskKind::send, "it0/send", 0, 2, 8));
  const TaskIndex r = wrong_peer.add_task(p2p(TaskKind::recv, "it0/recv", 1, 0, 0));
  wrong_peer.add_data_dep(s, r);
  EXPECT_NE(message(wrong_peer).find("recv 'it0/recv' has no send from worker 0"), std::string::npos);

  EXPECT_EQ(message(pair_plan(32)),
            "p.json: /tasks/1/comm_bytes: recv 'it0/recv' expects 32 B but its send "
            "'it0/send' carries 64 B");
}

TEST(PlanP2p, EverySendHasExactlyOneRecv) {
  Plan lone_send(2);
  lone_send.add_task(p2p(TaskKind::send, "it0/send", 0, 1, 8));
  EXPECT_EQ(message(lone_send),
            "p.json: /tasks/0: send 'it0/send' to worker 1 has no recv (a recv on that "
            "worker with a data dependency on it)");

  Plan twice(2);
  const TaskIndex s = twice.add_task(p2p(TaskKind::send, "it0/send", 0, 1, 8));
  const TaskIndex a = twice.add_task(p2p(TaskKind::recv, "it0/recv/a", 1, 0, 0));
  const TaskIndex b = twice.add_task(p2p(TaskKind::recv, "it0/recv/b", 1, 0, 0));
  twice.add_data_dep(s, a);
  twice.add_data_dep(s, b);
  EXPECT_EQ(message(twice),
            "p.json: /tasks/2/data_deps: send 'it0/send' is received twice, by 'it0/recv/a' "
            "and 'it0/recv/b'");

  Plan ambiguous(2);
  const TaskIndex s1 = ambiguous.add_task(p2p(TaskKind::send, "it0/send/1", 0, 1, 8));
  const TaskIndex s2 = ambiguous.add_task(p2p(TaskKind::send, "it0/send/2", 0, 1, 8));
  const TaskIndex r = ambiguous.add_task(p2p(TaskKind::recv, "it0/recv", 1, 0, 0));
  ambiguous.add_data_dep(s1, r);
  ambiguous.add_data_dep(s2, r);
  EXPECT_EQ(message(ambiguous),
            "p.json: /tasks/2/data_deps: recv 'it0/recv' matches two sends, 'it0/send/1' "
            "and 'it0/send/2'");
  // validate_graph() leaves pairing out (scheduling fixtures); validate() never does.
  EXPECT_NO_THROW(lone_send.validate_graph());
}

TEST(PlanBuffers, AReaderDependsOnAWriterOfItsBuffer) {
  // w writes act; x reads it through a chain w -> m -> x: fine. y reads it with no path from w.
  Plan plan(1);
  const BufferIndex act = plan.add_buffer(Buffer{"dp0/mb0/act/l0", 0, 16, DType::fp32, false});
  Task w = compute("it0/fwd/l0", 0);
  w.writes = {act};
  const TaskIndex wi = plan.add_task(w);
  const TaskIndex mi = plan.add_task(compute("it0/fwd/l1", 0));
  Task x = compute("it0/bwd/l0", 0);
  x.reads = {act};
  const TaskIndex xi = plan.add_task(x);
  plan.add_data_dep(wi, mi);
  plan.add_control_dep(mi, xi);
  EXPECT_NO_THROW(plan.validate());

  Task y = compute("it0/fwd/l2", 0);
  y.reads = {act};
  plan.add_task(y);
  EXPECT_EQ(message(plan),
            "p.json: /tasks/3/reads/0: task 'it0/fwd/l2' reads buffer 'dp0/mb0/act/l0' but "
            "depends on no task that writes it (e.g. 'it0/fwd/l0')");
}

TEST(PlanBuffers, PersistentUnwrittenAndReadModifyWriteBuffersAreNotChecked) {
  Plan plan(1);
  const BufferIndex weight = plan.add_buffer(Buffer{"dp0/w/l0", 0, 16, DType::fp32, true});
  const BufferIndex input = plan.add_buffer(Buffer{"dp0/mb0/act/input", 0, 16, DType::fp32, false});
  const BufferIndex grad = plan.add_buffer(Buffer{"dp0/mb0/grad/l0", 0, 16, DType::fp32, false});
  // The forward reads the weights before the step writes them, and the input nobody writes.
  Task f = compute("it0/fwd/l0", 0);
  f.reads = {weight, input};
  const TaskIndex fi = plan.add_task(f);
  Task step = compute("it0/opt/l0", 0);
  step.writes = {weight};
  plan.add_data_dep(fi, plan.add_task(step));
  // Two accumulations into one gradient, each reading what it writes.
  for (const char* id : {"it0/acc/a", "it0/acc/b"}) {
    Task acc = compute(id, 0);
    acc.reads = {grad};
    acc.writes = {grad};
    plan.add_task(acc);
  }
  EXPECT_NO_THROW(plan.validate());
}

TEST(PlanCycle, ACycleIsAnInvalidPlanNamingItsTasks) {
  Plan plan(1);
  const TaskIndex a = plan.add_task(compute("it0/a", 0));
  const TaskIndex b = plan.add_task(compute("it0/b", 0));
  plan.add_data_dep(a, b);
  plan.add_control_dep(b, a);
  EXPECT_EQ(message(plan), "p.json: /tasks/0: dependency cycle through 'it0/a' -> 'it0/b' -> 'it0/a'");
}

}  // namespace
}  // namespace strata
