// GCN Plans over a graph split in parts (graph_step.hpp, solver_graph.cpp, solver_gist.cpp):
// backprop on --strategy dp=P and GIST with --set parts=P. The partitioned step does the same
// arithmetic as the whole graph's, its halo messages carry exactly the layout's rows, the
// weight gradients are summed once per layer, and bad input gets one line.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "../input_error.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using test::error_of;

SolverConfig parse(Solver solver, std::map<std::string, std::string> sets) {
  return parse_solver_config(solver, sets);
}

StrategyConfig dp(int n) {
  StrategyConfig c;
  c.dp = n;
  return c;
}

Model small_gcn() {
  return make_model("gcn", {{"nodes", "2000"}, {"avg_degree", "10"}, {"sizes", "64,32,32,8"}});
}

double flops(const Plan& plan, TaskKind kind) {
  double total = 0;
  for (const Task& t : plan.tasks())
    if (t.kind == kind) total += t.flops;
  return total;
}

void runs_to_the_end(const Plan& plan) {
  Dispatcher d(plan);
  for (;;) {
    const std::vector<TaskIndex> start = d.take_startable();
    if (start.empty()) break;
    for (TaskIndex t : start) d.complete(t);
  }
  EXPECT_TRUE(d.finished());
}

TEST(GraphPlan, PartitionedBackpropDoesTheWholeGraphsArithmetic) {
  const Model gcn = small_gcn();
  const SolverConfig backprop = parse(Solver::backprop, {});
  const Plan whole = lower_solver(gcn, dp(1), backprop);
  const Plan split = lower_solver(gcn, dp(4), backprop);
  EXPECT_EQ(split.num_workers(), 4);
  runs_to_the_end(split);
  // Every row is computed once, on its part: the same FLOPs for every compute kind but the
  // optimizer, which each replica runs, and the gradient of ÂX, which the split graph does not
  // form (nothing reads it): the first layer's backward is its weight gradient alone.
  for (TaskKind kind : {TaskKind::linear_fwd, TaskKind::linear_bwd_weight, TaskKind::spmm,
                        TaskKind::activation_fwd, TaskKind::loss_fwd})
    EXPECT_NEAR(flops(split, kind), flops(whole, kind), 1e-9 * flops(whole, kind)) << to_string(kind);
  const double input_grad = 2.0 * 2000 * 64 * 32;
  EXPECT_NEAR(flops(split, TaskKind::linear_bwd_data), flops(whole, TaskKind::linear_bwd_data) - input_grad,
              1e-9 * input_grad);
  EXPECT_DOUBLE_EQ(flops(split, TaskKind::optimizer_step), 4 * flops(whole, TaskKind::optimizer_step));
  EXPECT_EQ(split.info.parameters.graph_parts, 4);
  EXPECT_EQ(split.info.parameters.graph_edges, 10000);
  EXPECT_EQ(split.info.parameters.partitioner, "streaming");
  EXPECT_EQ(split.info.strategy, "dp=4,nodes=2000,edges=10000,partitioner=streaming");
}

TEST(GraphPlan, HaloMessagesCarryTheLayoutsRows) {
  const Model gcn = small_gcn();
  const SolverConfig backprop = parse(Solver::backprop, {});
  const Plan plan = lower_solver(gcn, dp(4), backprop);
  const GraphLayout layout = power_law_layout(2000, 10000, [] {
    GraphLayoutOptions o;
    o.parts = 4;
    return o;
  }());
  EXPECT_EQ(plan.info.parameters.halo_rows, layout.total_halo());
  // Two aggregations (gc1, gc2), each exchanging forward and backward: rows x width x 4 B.
  std::map<std::string, double> bytes;
  int sends = 0, allreduces = 0;
  for (const Task& t : plan.tasks()) {
    if (t.kind == TaskKind::send) {
      ++sends;
      const bool gc1 = t.id.find("/gc1/agg/") != std::string::npos;
      bytes[gc1 ? "gc1" : "gc2"] += t.comm_bytes;
    }
    if (t.kind == TaskKind::allreduce) ++allreduces;
  }
  EXPECT_EQ(sends, 4 * layout.exchanging_pairs());
  EXPECT_DOUBLE_EQ(bytes["gc1"], 2.0 * static_cast<double>(layout.total_halo()) * 32 * 4);
  EXPECT_DOUBLE_EQ(bytes["gc2"], 2.0 * static_cast<double>(layout.total_halo()) * 8 * 4);
  EXPECT_EQ(allreduces, 3);  // one per layer with weights
  // Part 1's aggregation waits for the rows of part 0 it needs.
  const std::string recv = "it0/dp1/recv/fwd/gc1/agg/from0";
  ASSERT_GE(plan.find(recv), 0);
  const Task& agg = plan.task(static_cast<TaskIndex>(plan.find("it0/dp1/fwd/gc1/agg")));
  EXPECT_NE(std::find(agg.data_deps.begin(), agg.data_deps.end(), static_cast<TaskIndex>(plan.find(recv))),
            agg.data_deps.end());
  EXPECT_EQ(agg.attr_int("nnz"), layout.part_nnz[1]);
}

TEST(GraphPlan, GistSplitsEverySubGcnOverItsParts) {
  const Model gcn = small_gcn();
  const Plan plan =
      lower_solver(gcn, dp(6), parse(Solver::gist, {{"m", "3"}, {"parts", "2"}, {"zeta", "2"}}));
  EXPECT_EQ(plan.num_workers(), 6);
  runs_to_the_end(plan);
  EXPECT_EQ(plan.info.strategy, "workers=6,m=3,zeta=2,parts=2,nodes=2000,edges=10000");
  // Site 2's parts run on workers 4 and 5; its slices reach both; part 0 sends them back.
  EXPECT_EQ(plan.task(static_cast<TaskIndex>(plan.find("it0/site2/dp1/step1/fwd/gc1/agg"))).worker, 5);
  EXPECT_GE(plan.find("it0/site2/recv/dp1/scatter/gc0/fc"), 0);
  EXPECT_EQ(plan.task(static_cast<TaskIndex>(plan.find("it0/site2/send/gather/gc0/fc"))).worker, 4);
  // Site 0's part 0 is the coordinator: no scatter to it, one to its part 1.
  EXPECT_LT(plan.find("it0/site0/recv/dp0/scatter/gc0/fc"), 0);
  EXPECT_GE(plan.find("it0/site0/recv/dp1/scatter/gc0/fc"), 0);
  // Each step of each site sums its parts' gradients.
  int allreduces = 0;
  for (const Task& t : plan.tasks()) allreduces += t.kind == TaskKind::allreduce ? 1 : 0;
  EXPECT_EQ(allreduces, 3 * 2 * 3);  // sites x steps x layers with weights
}

TEST(GraphPlan, BadInputIsOneLine) {
  const Model gcn = small_gcn();
  StrategyConfig c = dp(2);
  c.tp = 2;
  EXPECT_EQ(
      error_of([&] { lower_solver(gcn, c, parse(Solver::backprop, {})); }),
      "dp=2,tp=2,pp=1: a GCN's graph splits over data-parallel ranks only (dp=2 parts, one per worker); "
      "give --strategy dp=2");
  EXPECT_EQ(error_of([&] {
              lower_solver(gcn, dp(4), parse(Solver::gist, {{"m", "3"}, {"parts", "2"}}));
            }),
            "--set parts=2: 3 sub-GCNs of 2 graph parts each need 6 workers, not 4 (give --workers 6)");
  EXPECT_EQ(error_of([&] { lower_solver(gcn, dp(4000), parse(Solver::backprop, {})); }),
            "dp=4000: more graph parts than the 2000 nodes of model gcn");
  EXPECT_EQ(error_of([] {
              make_model("gcn", {{"nodes", "100"}, {"edges", "5000"}});
            }),
            "--set edges=5000: a simple graph of 100 nodes has at most nodes (nodes - 1) / 2 edges");
  EXPECT_EQ(error_of([] {
              parse(Solver::gist, {{"partitioner", "kl"}});
            }).substr(0, 27),
            "--set partitioner: unknown ");
}

// ---- GraphSAGE-style sampled minibatches (solver_sampled_gcn.cpp) ----

// Mean degree 50 on 100,000 nodes: every expected degree of the power-law graph is above 16
// (its smallest, w_min = mean (beta - 2) / (beta - 1) = 50 / 3), so a node keeps exactly f of
// its neighbours at fan-outs 3 and 2, and the frontiers follow the occupancy formula by hand.
Model wide_gcn() {
  return make_model("gcn", {{"nodes", "100000"}, {"edges", "2500000"}, {"sizes", "64,32,32,8"}});
}

TEST(GraphPlan, SampledFrontiersFollowTheOccupancyFormula) {
  const SampledFrontiers s = sampled_frontiers(wide_gcn(), {3, 2}, 512, std::int64_t{1} << 17);
  ASSERT_EQ(s.rows.size(), 3u);
  const double n = 100000;
  const double hop1 = n - (n - 512) * std::exp(-512.0 * 3 / n);  // fanout[0]: the targets' hop
  const double hop2 = n - (n - hop1) * std::exp(-hop1 * 2 / n);  // fanout[1]: the next one out
  EXPECT_DOUBLE_EQ(s.rows[2], 512);
  EXPECT_NEAR(s.rows[1], hop1, 1e-9 * hop1);
  EXPECT_NEAR(s.rows[0], hop2, 1e-9 * hop2);
  EXPECT_DOUBLE_EQ(s.neighbours[1], 3);
  EXPECT_DOUBLE_EQ(s.neighbours[0], 2);
  // A fan-out above every degree keeps every neighbour: the mean degree.
  const SampledFrontiers all = sampled_frontiers(wide_gcn(), {100000, 100000}, 512, std::int64_t{1} << 17);
  EXPECT_NEAR(all.neighbours[0], 50, 0.01);
}

TEST(GraphPlan, SampledMinibatchPlanRunsEachLayerOnItsFrontier) {
  StrategyConfig c = dp(2);
  c.global_batch = 1024;
  const Plan plan = lower_solver(wide_gcn(), c, parse(Solver::backprop, {{"fanout", "3,2"}}));
  EXPECT_EQ(plan.num_workers(), 2);
  runs_to_the_end(plan);
  EXPECT_EQ(plan.info.strategy, "dp=2,fanout=3,2,batch=1024,nodes=100000");
  EXPECT_EQ(plan.info.parameters.fanout, "3,2");
  EXPECT_EQ(plan.info.global_batch, 1024);
  const SampledFrontiers s = sampled_frontiers(wide_gcn(), {3, 2}, 512, std::int64_t{1} << 17);
  auto task = [&](const std::string& id) { return plan.task(static_cast<TaskIndex>(plan.find(id))); };
  // The layers before the first aggregation on the outermost frontier, the loss on the targets.
  EXPECT_EQ(task("it0/dp1/fwd/gc0/fc").attr_int("m"), std::llround(s.rows[0]));
  EXPECT_EQ(task("it0/dp1/fwd/gc1/agg").attr_int("nodes"), std::llround(s.rows[1]));
  EXPECT_EQ(task("it0/dp1/fwd/gc1/agg").attr_int("nnz"), std::llround(std::round(s.rows[1]) * 3));
  EXPECT_EQ(task("it0/dp1/fwd/gc2/agg").attr_int("nodes"), 512);
  EXPECT_EQ(task("it0/dp1/bwd/loss").attr_int("mean_over"), 1024);
  EXPECT_DOUBLE_EQ(task("it0/dp0/fwd/gc1/fc").flops, 2.0 * std::round(s.rows[0]) * 32 * 32);
  EXPECT_EQ(task("it0/dp0/load").kind, TaskKind::embedding_fwd);
  EXPECT_LT(plan.find("it0/dp0/bwd/gc0/fc"), 0);  // the input rows' gradient is not formed
  int allreduces = 0;
  for (const Task& t : plan.tasks()) allreduces += t.kind == TaskKind::allreduce ? 1 : 0;
  EXPECT_EQ(allreduces, 3);  // one per layer with weights
}

TEST(GraphPlan, SampledMinibatchBadInputIsOneLine) {
  const Model gcn = wide_gcn();
  EXPECT_EQ(error_of([&] {
              lower_solver(gcn, dp(1), parse(Solver::backprop, {{"fanout", "25"}}));
            }),
            "--set fanout=25: 1 fan-out(s) for the 2 aggregations of model gcn (one per hop)");
  StrategyConfig c = dp(2);
  c.global_batch = 1001;
  EXPECT_EQ(error_of([&] {
              lower_solver(gcn, c, parse(Solver::backprop, {{"fanout", "3,2"}}));
            }),
            "--set fanout=3,2: global batch 1001 target nodes does not divide over dp=2");
  EXPECT_EQ(error_of([] { parse(Solver::backprop, {{"fanout", "3,0"}}); }).substr(0, 13), "--set fanout=");
}

}  // namespace
}  // namespace strata
