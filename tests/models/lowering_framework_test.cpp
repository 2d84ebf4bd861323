// The framework as an input of the lowering (StrategyConfig::tp_comm, p2p): which stream each
// communication task runs on, in a Plan whose streams run in issue order.
#include <gtest/gtest.h>

#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

bool tensor_parallel(const Task& t) {
  return is_collective(t.kind) && t.group.size() == 2 && t.id.find("/mb") != std::string::npos;
}

// tiny_gpt(2) on dp = 2, tp = 2, pp = 2, 4 microbatches.
Plan framework_plan(TpComm tp_comm, P2pMode p2p) {
  StrategyConfig config = config_of(2, 2, 2, 4);
  config.tp_comm = tp_comm;
  config.p2p = p2p;
  return lower(tiny_gpt(2), config);
}

TEST(LoweringFramework, ThePlanRunsInIssueOrderAndEachModeChoosesItsStream) {
  for (const TpComm tp_comm : {TpComm::sync, TpComm::async})
    for (const P2pMode p2p : {P2pMode::blocking, P2pMode::async}) {
      SCOPED_TRACE(std::string(to_string(tp_comm)) + " " + std::string(to_string(p2p)));
      const Plan plan = framework_plan(tp_comm, p2p);
      EXPECT_EQ(plan.info.stream_order, StreamOrder::issue);
      std::size_t tp = 0, p2p_tasks = 0, dp = 0;
      for (const Task& t : plan.tasks()) {
        if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
          ++p2p_tasks;
          EXPECT_EQ(t.stream, p2p == P2pMode::blocking ? Stream::compute : Stream::comm) << t.id;
        } else if (tensor_parallel(t)) {
          ++tp;
          EXPECT_EQ(t.stream, tp_comm == TpComm::sync ? Stream::compute : Stream::comm) << t.id;
        } else if (is_collective(t.kind)) {
          ++dp;  // data-parallel gradient buckets: always beside the compute
          EXPECT_EQ(t.stream, Stream::comm) << t.id;
        }
      }
      EXPECT_GT(tp, 0u);
      EXPECT_GT(p2p_tasks, 0u);
      EXPECT_GT(dp, 0u);
      // Both executors' stream rules accept the order, and it runs to the end.
      EXPECT_NO_THROW(Dispatcher(plan, CommStreams::one_per_worker));
      const RunResult run = run_unit_durations(plan);
      EXPECT_TRUE(run.finished);
    }
}

// With unit durations a collective on the compute stream can only lengthen the run: the
// weight-gradient GEMM no longer runs beside the backward all-reduce.
TEST(LoweringFramework, SynchronousCommunicationIsNeverFaster) {
  const double async = run_unit_durations(framework_plan(TpComm::async, P2pMode::async)).makespan;
  const double sync = run_unit_durations(framework_plan(TpComm::sync, P2pMode::async)).makespan;
  const double blocking = run_unit_durations(framework_plan(TpComm::sync, P2pMode::blocking)).makespan;
  EXPECT_GT(sync, async);
  EXPECT_GE(blocking, sync);
}

// Scatter-gather (Narayanan et al. 2021, section 4.1): each of the t = 2 ranks sends half of the
// activation (and of the gradient), and the receiving stage all-gathers the whole tensor before
// its first forward (its last backward) reads it.
TEST(LoweringFramework, ScatterGatherSendsOneTthAndAllGathersTheRest) {
  StrategyConfig config = config_of(1, 2, 2, 2);
  const Plan whole = lower(tiny_gpt(2), config);
  config.p2p_scatter_gather = true;
  const Plan split = lower(tiny_gpt(2), config);
  const std::string send = "it0/dp0/pp0/tp1/mb1/send/fwd";
  const double bytes = whole.task(index_of(whole, send)).comm_bytes;
  EXPECT_GT(bytes, 0);
  EXPECT_DOUBLE_EQ(split.task(index_of(split, send)).comm_bytes, bytes / 2);
  EXPECT_DOUBLE_EQ(split.task(index_of(split, "it0/dp0/pp1/tp0/mb0/send/bwd")).comm_bytes,
                   whole.task(index_of(whole, "it0/dp0/pp1/tp0/mb0/send/bwd")).comm_bytes / 2);
  EXPECT_EQ(count_ids(whole, R"(.*/recv/(fwd|bwd)/ag)"), 0u);
  EXPECT_EQ(count_ids(split, R"(.*/recv/(fwd|bwd)/ag)"), 2u * 2);  // per microbatch, each way
  const TaskIndex gather = index_of(split, "it0/dp0/pp1/mb1/recv/fwd/ag");
  const Task& ag = split.task(gather);
  EXPECT_EQ(ag.kind, TaskKind::allgather);
  EXPECT_DOUBLE_EQ(ag.comm_bytes, bytes);
  EXPECT_TRUE(has(ag.data_deps, index_of(split, "it0/dp0/pp1/tp0/mb1/recv/fwd")));
  EXPECT_TRUE(has(ag.data_deps, index_of(split, "it0/dp0/pp1/tp1/mb1/recv/fwd")));
  for (const char* rank : {"tp0", "tp1"}) {
    const std::string first = std::string("it0/dp0/pp1/") + rank + "/mb1/fwd/";
    std::size_t readers = 0;
    for (const Task& t : split.tasks())
      if (t.id.rfind(first, 0) == 0 && has(t.data_deps, gather)) ++readers;
    EXPECT_EQ(readers, 1u) << rank;
  }
  EXPECT_TRUE(run_unit_durations(split).finished);
  // Not with sequence parallelism, which already splits the activation.
  config.sequence_parallel = true;
  EXPECT_EQ(count_ids(lower(tiny_gpt(2), config), R"(.*/recv/(fwd|bwd)/ag)"), 0u);
}

}  // namespace
}  // namespace strata
