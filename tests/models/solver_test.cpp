// Solvers: their --set keys and checks, and the Plans of the layer-group solvers (AMPNet, local
// parallelism): task counts, the parameter versions AMPNet fixes, its in-flight limit, the
// messages local parallelism sends, and a run of each Plan through the Dispatcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "strata/models/solver.hpp"
#include "strata/models/zoo.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

SolverConfig parse(Solver solver, std::map<std::string, std::string> sets) {
  return parse_solver_config(solver, sets);
}

StrategyConfig workers(int n) {
  StrategyConfig c;
  c.dp = n;
  c.global_batch = 32;
  return c;
}

const Task& task(const Plan& plan, const std::string& id) {
  const long i = plan.find(id);
  EXPECT_GE(i, 0) << id;
  return plan.task(static_cast<TaskIndex>(std::max(0L, i)));
}

bool depends_on(const Plan& plan, const std::string& after, const std::string& before) {
  const Task& t = task(plan, after);
  const auto b = static_cast<TaskIndex>(plan.find(before));
  for (const auto* deps : {&t.data_deps, &t.control_deps})
    if (std::find(deps->begin(), deps->end(), b) != deps->end()) return true;
  return false;
}

// Every task of the Plan completes when run through the Dispatcher one at a time.
void runs_to_the_end(const Plan& plan) {
  Dispatcher d(plan);
  std::size_t done = 0;
  for (;;) {
    const std::vector<TaskIndex> start = d.take_startable();
    if (start.empty()) break;
    for (TaskIndex t : start) {
      d.complete(t);
      ++done;
    }
  }
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(done, plan.size());
}

TEST(SolverConfig, TakesItsKeysAndLeavesTheModelsOnes) {
  std::map<std::string, std::string> sets = {{"rho", "0.5"}, {"nu", "2"}, {"sizes", "784,10"}};
  const SolverConfig c = parse_solver_config(Solver::pdadmm, sets);
  EXPECT_DOUBLE_EQ(c.rho, 0.5);
  EXPECT_DOUBLE_EQ(c.nu, 2);
  EXPECT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets.count("sizes"), 1u);
  EXPECT_EQ(parse(Solver::ampnet, {{"max_active_keys", "3"}}).max_active_keys, 3);
  EXPECT_EQ(parse(Solver::gist, {{"m", "4"}, {"zeta", "5"}}).subnets, 4);
  EXPECT_EQ(parse(Solver::local, {{"variant", "greedy"}}).local_variant, LocalVariant::greedy);
  EXPECT_EQ(parse_solver("pdadmm-g-q"), Solver::pdadmm_g_q);
  EXPECT_FALSE(parse_solver("sgd").has_value());
}

TEST(SolverConfig, BadValuesAreOneLine) {
  EXPECT_EQ(error_of([] { parse(Solver::pdadmm, {{"rho", "-1"}}); }), "--set rho: must be > 0, got -1");
  EXPECT_EQ(error_of([] { parse(Solver::dladmm, {{"rho", "0"}}); }), "--set rho: must be > 0, got 0");
  EXPECT_EQ(error_of([] { parse(Solver::pdadmm, {{"nu", "x"}}); }), "--set nu: 'x' is not a number");
  EXPECT_EQ(error_of([] { parse(Solver::local, {{"chunks", "2.5"}}); }), "--set chunks: '2.5' is not an integer");
  EXPECT_EQ(error_of([] { parse(Solver::ampnet, {{"max_active_keys", "0"}}); }),
            "--set max_active_keys: must be >= 1, got 0");
  EXPECT_EQ(error_of([] { parse(Solver::pdadmm_g_q, {{"quant_bits", "16"}}); }),
            "--set quant_bits: p is sent as int8, so at most 8 bits, got 16");
  EXPECT_EQ(error_of([] { parse(Solver::local, {{"variant", "lazy"}}); }),
            "--set variant: unknown variant 'lazy' (known: greedy, chunked, overlapping)");
}

TEST(SolverConfig, ChecksAgainstTheModelAndTheWorkers) {
  const Model mlp = make_model("mlp");
  SolverConfig local = parse(Solver::local, {{"chunks", "4"}});
  EXPECT_EQ(error_of([&] { check_solver(mlp, workers(1), local); }),
            "--set chunks: 4 chunks but model mlp has only 3 layer groups");
  local.chunks = 2;
  EXPECT_EQ(error_of([&] { check_solver(mlp, workers(3), local); }),
            "--solver local: 3 workers but only 2 chunks (each worker runs at least one; --set chunks=N)");
  const SolverConfig ampnet = parse(Solver::ampnet, {});
  EXPECT_EQ(error_of([&] { check_solver(mlp, workers(4), ampnet); }),
            "--solver ampnet: 4 workers but model mlp has only 3 layer groups");
  StrategyConfig tp = workers(1);
  tp.tp = 2;
  EXPECT_NE(error_of([&] { check_solver(mlp, tp, ampnet); }).find("spreads layers over workers itself"), std::string::npos);
}

// mlp on 2 workers: stage 0 holds fc1 and relu1, stage 1 the rest (partition_blocks by FLOP).
TEST(Ampnet, PlanHasEveryInstanceEveryUpdateAndTheVersionsItReads) {
  SolverConfig s = parse(Solver::ampnet, {{"max_active_keys", "3"}, {"min_update_frequency", "2"}, {"instances", "7"}});
  const Plan plan = lower_solver(make_model("mlp"), workers(2), s);
  // Per instance: 6 forwards, 6 backward-data, 3 backward-weight, a send/recv pair each way.
  // Updates: 3 layers with weights x ceil(7 / 2) = 4 groups.
  EXPECT_EQ(plan.size(), 7u * (6 + 6 + 3 + 4) + 3u * 4);
  EXPECT_EQ(plan.num_workers(), 2);
  EXPECT_EQ(plan.info.global_batch, 7 * 32);
  for (int k = 0; k < 7; ++k) {
    const std::string mb = "it0/dp0/pp0/tp0/mb" + std::to_string(k);
    // Stage 0 of 2: lag min(mak - 1, 2 (S - 1 - s)) = 2, version floor((k - 2) / f).
    const std::int64_t expected = std::max(0, (k - 2) / 2);
    // Stage 1 holds the loss: lag 0, version floor(k / f).
    EXPECT_EQ(task(plan, "it0/dp0/pp1/tp0/mb" + std::to_string(k) + "/fwd/fc3").attr_int("param_version"), k / 2);
    EXPECT_EQ(task(plan, mb + "/fwd/fc1").attr_int("param_version"), expected) << k;
    EXPECT_EQ(task(plan, mb + "/bwd/fc1").attr_int("param_version"), expected) << k;
    if (expected >= 1) {
      EXPECT_TRUE(depends_on(plan, mb + "/fwd/fc1", "it0/dp0/pp0/tp0/opt/fc1/u" + std::to_string(expected - 1)));
    }
    // At most max_active_keys instances in flight: k starts after the backward of k - 3.
    if (k >= 3) {
      EXPECT_TRUE(depends_on(plan, mb + "/fwd/fc1", "it0/dp0/pp0/tp0/mb" + std::to_string(k - 3) + "/bwd/fc1"));
    }
  }
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp1/tp0/opt/fc3/u1", "it0/dp0/pp1/tp0/mb2/bwdw/fc3"));
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp1/tp0/opt/fc3/u1", "it0/dp0/pp1/tp0/mb3/bwdw/fc3"));
  EXPECT_EQ(task(plan, "it0/dp0/pp1/tp0/mb0/bwd/loss").attr_int("mean_over"), 64);
  runs_to_the_end(plan);
}

TEST(LocalParallelism, ChunkedSendsNoGradientOverlappingSendsOnePerBoundary) {
  SolverConfig s = parse(Solver::local, {{"chunks", "3"}, {"instances", "5"}});
  const Plan chunked = lower_solver(make_model("mlp"), workers(3), s);
  s.local_variant = LocalVariant::overlapping;
  const Plan overlapping = lower_solver(make_model("mlp"), workers(3), s);
  auto count = [](const Plan& plan, const std::string& what) {
    return std::count_if(plan.tasks().begin(), plan.tasks().end(),
                         [&](const Task& t) { return t.id.find(what) != std::string::npos; });
  };
  EXPECT_EQ(count(chunked, "/send/fwd/"), 5 * 2);
  EXPECT_EQ(count(chunked, "/send/bwd/"), 0);
  EXPECT_EQ(count(overlapping, "/send/bwd/"), 5 * 2);
  EXPECT_EQ(count(chunked, "/fwd/aux0/fc"), 5);
  EXPECT_EQ(count(chunked, "/fwd/aux1/loss"), 5);
  EXPECT_EQ(count(chunked, "/fwd/aux2"), 0);  // the last chunk uses the model's head
  auto input_grads = [](const Plan& plan, const std::string& layer) {
    return std::count_if(plan.tasks().begin(), plan.tasks().end(), [&](const Task& t) {
      return t.kind == TaskKind::linear_bwd_data && t.id.size() >= layer.size() && t.id.ends_with("/bwd/" + layer);
    });
  };
  EXPECT_EQ(input_grads(chunked, "fc2"), 0);  // a chunk's first layer computes no input gradient
  EXPECT_EQ(input_grads(overlapping, "fc2"), 5);
  EXPECT_EQ(task(chunked, "it0/dp0/pp0/tp0/mb0/fwd/aux0/loss").attr_int("aux"), 1);
  EXPECT_TRUE(depends_on(chunked, "it0/dp0/pp0/tp0/mb1/fwd/fc1", "it0/dp0/pp0/tp0/mb0/opt/fc1"));
  runs_to_the_end(chunked);
  runs_to_the_end(overlapping);
}

// 784-256-256-10 on 3 workers, 2 iterations, N = 100 samples.
TEST(Admm, PdadmmSendsPBackwardAndQUForwardAtEveryBoundary) {
  StrategyConfig c = workers(3);
  c.global_batch = 100;
  SolverConfig s = parse(Solver::pdadmm, {{"admm_iterations", "2"}});
  const Model mlp = make_model("mlp", {{"sizes", "784,256,256,10"}});
  const Plan plan = lower_solver(mlp, c, s);
  // Per iteration: 3 backward and 2 forward updates; 2 boundaries x (p, q, u) x (send, recv).
  EXPECT_EQ(plan.size(), 2u * (3 + 2 + 2 * 3 * 2));
  EXPECT_EQ(plan.num_iterations(), 2);
  double bytes = 0;
  for (const Task& t : plan.tasks())
    if (t.kind == TaskKind::send && t.iteration == 0) bytes += t.comm_bytes;
  EXPECT_DOUBLE_EQ(bytes, 2 * 3 * 256.0 * 100 * 4);  // 3 n N values per boundary, fp32
  const Task& b1 = task(plan, "it1/dp0/pp1/tp0/l1/bwd");
  EXPECT_EQ(b1.kind, TaskKind::admm_backward);
  EXPECT_DOUBLE_EQ(b1.flops, 8.0 * 256 * 256 * 100 + 20.0 * 256 * 100);
  // Jacobi: B(k, l) needs the predecessor's q and u of iteration k-1, not of k.
  EXPECT_TRUE(depends_on(plan, "it1/dp0/pp1/tp0/l1/bwd", "it0/dp0/pp1/tp0/l1/recv/u"));
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp0/tp0/l0/fwd", "it0/dp0/pp0/tp0/l0/recv/p"));
  EXPECT_FALSE(depends_on(plan, "it0/dp0/pp1/tp0/l1/bwd", "it0/dp0/pp2/tp0/l2/bwd"));
  runs_to_the_end(plan);

  s.solver = Solver::pdadmm_g_q;
  const Plan quantized = lower_solver(mlp, c, s);
  EXPECT_DOUBLE_EQ(task(quantized, "it0/dp0/pp1/tp0/l1/send/p").comm_bytes, 256.0 * 100);  // int8 codes
  EXPECT_DOUBLE_EQ(task(quantized, "it0/dp0/pp0/tp0/l0/send/q").comm_bytes, 256.0 * 100 * 4);

  s.solver = Solver::dladmm;
  const Plan serial = lower_solver(mlp, c, s);
  EXPECT_TRUE(depends_on(serial, "it0/dp0/pp1/tp0/l1/bwd", "it0/dp0/pp2/tp0/l2/bwd"));
  EXPECT_TRUE(depends_on(serial, "it0/dp0/pp0/tp0/l0/fwd", "it0/dp0/pp0/tp0/l0/bwd"));
  EXPECT_TRUE(depends_on(serial, "it0/dp0/pp1/tp0/l1/fwd", "it0/dp0/pp0/tp0/l0/fwd"));
  runs_to_the_end(serial);
}

TEST(Admm, RefusesWhatItCannotTrain) {
  const SolverConfig s = parse(Solver::pdadmm, {});
  EXPECT_EQ(error_of([&] { lower_solver(make_model("lenet5"), workers(2), s); }),
            "--solver: the ADMM solvers train MLPs (linear and ReLU layers); model lenet5 has a conv layer (conv1)");
  EXPECT_EQ(error_of([&] { lower_solver(make_model("mlp"), workers(4), s); }),
            "--solver pdadmm: 4 workers but model mlp has only 3 layers (one worker holds at least one)");
}

}  // namespace
}  // namespace strata
