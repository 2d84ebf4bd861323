// Solvers: their --set keys and checks, and the Plans of the layer-group solvers (AMPNet, local
// parallelism): task counts, the parameter versions AMPNet fixes, its in-flight limit, the
// messages local parallelism sends, and a run of each Plan through the Dispatcher; the ADMM
// Plans' messages; GIST's round (slices, steps, the 1/m^2 cost of its hidden-to-hidden GEMMs).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "../input_error.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata {
namespace {

using test::error_of;

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
  EXPECT_EQ(error_of([] {
              parse(Solver::local, {{"chunks", "2.5"}});
            }),
            "--set chunks: '2.5' is not an integer");
  EXPECT_EQ(error_of([] {
              parse(Solver::ampnet, {{"max_active_keys", "0"}});
            }),
            "--set max_active_keys: must be >= 1, got 0");
  EXPECT_EQ(error_of([] {
              parse(Solver::pdadmm_g_q, {{"quant_bits", "16"}});
            }),
            "--set quant_bits: p is sent as int8, so at most 8 bits, got 16");
  EXPECT_EQ(error_of([] {
              parse(Solver::local, {{"variant", "lazy"}});
            }),
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
  EXPECT_NE(error_of([&] { check_solver(mlp, tp, ampnet); }).find("spreads layers over workers itself"),
            std::string::npos);
}

// mlp on 2 workers: stage 0 holds fc1 and relu1, stage 1 the rest (partition_blocks by FLOP).
TEST(Ampnet, PlanHasEveryInstanceEveryUpdateAndTheVersionsItReads) {
  SolverConfig s =
      parse(Solver::ampnet, {{"max_active_keys", "3"}, {"min_update_frequency", "2"}, {"instances", "7"}});
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
    EXPECT_EQ(task(plan, "it0/dp0/pp1/tp0/mb" + std::to_string(k) + "/fwd/fc3").attr_int("param_version"),
              k / 2);
    EXPECT_EQ(task(plan, mb + "/fwd/fc1").attr_int("param_version"), expected) << k;
    EXPECT_EQ(task(plan, mb + "/bwd/fc1").attr_int("param_version"), expected) << k;
    if (expected >= 1) {
      EXPECT_TRUE(
          depends_on(plan, mb + "/fwd/fc1", "it0/dp0/pp0/tp0/opt/fc1/u" + std::to_string(expected - 1)));
    }
    // At most max_active_keys instances in flight: k starts after the backward of k - 3.
    if (k >= 3) {
      EXPECT_TRUE(
          depends_on(plan, mb + "/fwd/fc1", "it0/dp0/pp0/tp0/mb" + std::to_string(k - 3) + "/bwd/fc1"));
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
      return t.kind == TaskKind::linear_bwd_data && t.id.size() >= layer.size() &&
             t.id.ends_with("/bwd/" + layer);
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
            "--solver: the ADMM solvers train MLPs (linear and ReLU layers); model lenet5 has a conv layer "
            "(conv1)");
  EXPECT_EQ(error_of([&] { lower_solver(make_model("mlp"), workers(4), s); }),
            "--solver pdadmm: 4 workers but model mlp has only 3 layers (one worker holds at least one)");
}

// ---- GIST on the gcn preset: 784-256-256-10, 10,000 nodes of mean degree 20 ----

StrategyConfig gcn_workers(int n) {
  StrategyConfig c;
  c.dp = n;
  return c;
}

// Sum of the FLOPs of the tasks of `kind` whose id starts with `prefix` and ends with `suffix`.
double flops_of(const Plan& plan, const std::string& prefix, const std::string& suffix, TaskKind kind) {
  double total = 0;
  for (const Task& t : plan.tasks())
    if (t.kind == kind && t.id.rfind(prefix, 0) == 0 && t.id.size() >= suffix.size() &&
        t.id.compare(t.id.size() - suffix.size(), suffix.size(), suffix) == 0)
      total += t.flops;
  return total;
}

double gemm_flops(const Plan& plan, const std::string& prefix, const std::string& layer) {
  double total = 0;
  for (TaskKind kind : {TaskKind::linear_fwd, TaskKind::linear_bwd_data, TaskKind::linear_bwd_weight})
    total += flops_of(plan, prefix, "/" + layer, kind);
  return total;
}

// m = 2 on 2 workers, zeta = 10. Per local step a site runs 8 forwards (3 fc, 2 agg, 2 relu, the
// loss), 8 backward-data, 3 backward-weight and 3 optimizer steps: 22 tasks, 220 per round. Site 0
// shares worker 0 with the coordinator; site 1 also gets its 3 slices and sends them back.
// Block-ADMM on the MLP (784-256-128-10, three layer groups) over two workers: per instance, the
// forward pass sends block 0's output once; each step but the last sends g_0 back after block 1's
// backward and z_0 forward before the next step: 3 messages of 32 samples x 256 values x 4 B.
TEST(BlockAdmm, SendsZForwardAndItsGradientBackOncePerStepAndBoundary) {
  const Plan plan =
      lower_solver(make_model("mlp"), workers(2), parse(Solver::block_admm, {{"instances", "3"}}));
  EXPECT_EQ(plan.info.solver, PlanSolver::block_admm);
  EXPECT_EQ(plan.info.parameters.blocks, 2);       // one per worker
  EXPECT_EQ(plan.info.parameters.inner_steps, 2);  // as many as blocks
  EXPECT_EQ(plan.info.parameters.rho, 1.0);
  int sends = 0;
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::send) continue;
    ++sends;
    EXPECT_EQ(t.comm_bytes, 32.0 * 256 * 4) << t.id;
  }
  EXPECT_EQ(sends, 3 * 3);
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp0/tp0/mb0/step1/send/z/b0", "it0/dp0/pp0/tp0/mb0/z_update/b0"));
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp1/tp0/mb0/step1/fwd/fc2", "it0/dp0/pp1/tp0/mb0/step1/recv/z/b0"));
  // The z update waits for the gradient from the block above; the last step updates no z.
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp0/tp0/mb0/z_update/b0", "it0/dp0/pp0/tp0/mb0/recv/bwd/fc2"));
  EXPECT_LT(plan.find("it0/dp0/pp0/tp0/mb0/step1/z_update/b0"), 0);
  runs_to_the_end(plan);
}

// One block: no auxiliary variables, no messages; each step is one SGD step of the network.
TEST(BlockAdmm, OneBlockHasNoAuxiliaryVariables) {
  const Plan plan = lower_solver(make_model("mlp"), workers(1),
                                 parse(Solver::block_admm, {{"blocks", "1"}, {"inner_steps", "3"}}));
  for (const Task& t : plan.tasks()) {
    EXPECT_NE(t.kind, TaskKind::elementwise) << t.id;
    EXPECT_NE(t.kind, TaskKind::send) << t.id;
  }
  int steps = 0;
  for (const Task& t : plan.tasks()) steps += t.kind == TaskKind::optimizer_step && t.coords.mb == 0 ? 1 : 0;
  EXPECT_EQ(steps, 3 * 3);  // three linear layers, three steps
}

// The batch setting: per boundary, stores of one row per training sample (z, lambda) and a seen
// flag, persistent on block b's worker; one step per minibatch unless told otherwise.
TEST(BlockAdmm, BatchSettingKeepsStoresOfEveryTrainingSample) {
  const Plan plan =
      lower_solver(make_model("mlp"), workers(2),
                   parse(Solver::block_admm, {{"setting", "batch"}, {"train_samples", "1000"}}));
  EXPECT_EQ(plan.info.parameters.inner_steps, 1);
  EXPECT_EQ(plan.info.parameters.stored_samples, 1000);
  int stores = 0;
  for (const Buffer& b : plan.buffers())
    if (b.id == "dp0/pp0/tp0/admm/b0/z_store" || b.id == "dp0/pp0/tp0/admm/b0/lambda_store") {
      EXPECT_TRUE(b.persistent);
      EXPECT_EQ(b.bytes, 1000.0 * 256 * 4);
      ++stores;
    }
  EXPECT_EQ(stores, 2);
  // With one step, the step's z update is also the last: it writes the stores.
  EXPECT_EQ(std::get<std::int64_t>(task(plan, "it0/dp0/pp0/tp0/mb0/z_update/b0").attrs.at("to_store")), 1);
  EXPECT_EQ(std::get<std::int64_t>(task(plan, "it0/dp0/pp0/tp0/mb0/penalty/b0").attrs.at("from_store")), 1);
  runs_to_the_end(plan);
}

TEST(BlockAdmm, RefusesWhatItCannotTrain) {
  EXPECT_EQ(error_of([] {
              lower_solver(make_model("mlp"), workers(1), parse(Solver::block_admm, {{"blocks", "4"}}));
            }),
            "--set blocks: 4 blocks but model mlp has only 3 layer groups (a block holds at least one)");
  EXPECT_EQ(
      error_of([] {
        lower_solver(make_model("mlp"), workers(3), parse(Solver::block_admm, {{"blocks", "2"}}));
      }),
      "--solver block-admm: 3 workers but only 2 blocks (each worker runs at least one; --set blocks=N)");
  EXPECT_EQ(error_of([] {
              parse(Solver::block_admm, {{"inner_steps", "0"}});
            }),
            "--set inner_steps: must be >= 1, got 0");
  EXPECT_EQ(error_of([] { parse(Solver::block_admm, {{"rho", "-1"}}); }), "--set rho: must be > 0, got -1");
  EXPECT_EQ(error_of([] { parse(Solver::block_admm, {{"z_lr", "nan"}}); }).substr(0, 11), "--set z_lr:");
  EXPECT_EQ(error_of([] {
              parse(Solver::block_admm, {{"setting", "offline"}});
            }).substr(0, 14),
            "--set setting:");
  // rho sets Block-ADMM's own penalty, not the ADMM family's.
  const SolverConfig s = parse(Solver::block_admm, {{"rho", "5"}});
  EXPECT_EQ(s.block_rho, 5.0);
  EXPECT_EQ(s.rho, SolverConfig{}.rho);
}

// Whether `after` waits for `before`, directly or through other tasks.
bool reaches(const Plan& plan, const std::string& after, const std::string& before) {
  const auto target = static_cast<TaskIndex>(plan.find(before));
  std::vector<TaskIndex> stack = {static_cast<TaskIndex>(plan.find(after))};
  std::vector<bool> seen(plan.size(), false);
  while (!stack.empty()) {
    const Task& t = plan.task(stack.back());
    stack.pop_back();
    for (const auto* deps : {&t.data_deps, &t.control_deps})
      for (TaskIndex d : *deps) {
        if (d == target) return true;
        if (!seen[d]) seen[d] = true, stack.push_back(d);
      }
  }
  return false;
}

// The serial-parallel hybrid on the MLP over two workers, period 2: minibatch 0 is parallel (block
// 1 starts from z_0 fetched from block 0's store, no forward pass crosses), minibatch 1 serial (the
// pipeline's forward and backward transfers, and the refresh of the store). Messages of 32 samples
// x 256 values x 4 B: z and g in the parallel one, the activation and its gradient in the serial one.
TEST(SerialParallel, AlternatesTheParallelPhaseAndTheSerialCorrection) {
  const Plan plan =
      lower_solver(make_model("mlp"), workers(2),
                   parse(Solver::serial_parallel, {{"instances", "2"}, {"correction_period", "2"}}));
  EXPECT_EQ(plan.info.solver, PlanSolver::serial_parallel);
  EXPECT_EQ(plan.info.parameters.correction_period, 2);
  EXPECT_EQ(plan.info.parameters.downsample, 1);
  EXPECT_EQ(plan.info.parameters.method, "penalty");
  EXPECT_EQ(plan.info.parameters.stored_samples, 60000);
  std::vector<std::string> sends;
  for (const Task& t : plan.tasks())
    if (t.kind == TaskKind::send) {
      sends.push_back(t.id);
      EXPECT_EQ(t.comm_bytes, 32.0 * 256 * 4) << t.id;
    }
  EXPECT_EQ(sends, (std::vector<std::string>{"it0/dp0/pp0/tp0/mb0/send/z/b0", "it0/dp0/pp1/tp0/mb0/send/g/b0",
                                             "it0/dp0/pp0/tp0/mb1/send/fwd/fc2",
                                             "it0/dp0/pp1/tp0/mb1/send/bwd/fc2"}));
  // Block 1 starts from the fetched state, not from block 0's forward.
  EXPECT_TRUE(reaches(plan, "it0/dp0/pp1/tp0/mb0/fwd/fc2", "it0/dp0/pp0/tp0/mb0/fetch/b0"));
  EXPECT_FALSE(reaches(plan, "it0/dp0/pp1/tp0/mb0/fwd/fc2", "it0/dp0/pp0/tp0/mb0/fwd/fc1"));
  EXPECT_TRUE(depends_on(plan, "it0/dp0/pp0/tp0/mb0/z_update/b0", "it0/dp0/pp0/tp0/mb0/recv/g/b0"));
  EXPECT_EQ(std::get<std::int64_t>(task(plan, "it0/dp0/pp0/tp0/mb0/z_update/b0").attrs.at("dual")), 0);
  EXPECT_EQ(std::get<std::int64_t>(task(plan, "it0/dp0/pp1/tp0/mb0/fwd/loss").attrs.at("forward_unlocked")),
            1);
  EXPECT_EQ(task(plan, "it0/dp0/pp1/tp0/mb1/fwd/loss").attrs.count("forward_unlocked"), 0u);
  // The serial minibatch refreshes the store after the parallel one wrote it.
  EXPECT_TRUE(reaches(plan, "it0/dp0/pp0/tp0/mb1/refresh/b0", "it0/dp0/pp0/tp0/mb0/z_update/b0"));
  runs_to_the_end(plan);
  // Period 1: no parallel minibatch at all.
  const Plan serial =
      lower_solver(make_model("mlp"), workers(2),
                   parse(Solver::serial_parallel, {{"instances", "2"}, {"correction_period", "1"}}));
  for (const Task& t : serial.tasks()) EXPECT_EQ(t.id.find("/fetch/"), std::string::npos) << t.id;
}

// downsample=d pools the states and their gradients over d x d windows where they cross workers:
// each boundary transfer of the parallel phase carries exactly 1/d^2 of the bytes (ResNet-20 on 2
// workers: the boundary is a 32x16x16 map after stage 2's third block... whatever the cut, the
// ratio), and the serial pass's transfers stay whole.
TEST(SerialParallel, DownsamplingDividesEachBoundaryTransferByTheFactorSquared) {
  const auto sends = [](const std::string& d) {
    const Plan plan = lower_solver(make_model("resnet20"), workers(2),
                                   parse(Solver::serial_parallel, {{"instances", "4"}, {"downsample", d}}));
    std::map<std::string, double> bytes;
    for (const Task& t : plan.tasks())
      if (t.kind == TaskKind::send) bytes[t.id] = t.comm_bytes;
    return bytes;
  };
  const std::map<std::string, double> whole = sends("1"), halved = sends("2"), quartered = sends("4");
  ASSERT_EQ(whole.size(), halved.size());
  int pooled = 0;
  for (const auto& [id, bytes] : whole) {
    const bool state = id.find("/z/") != std::string::npos || id.find("/g/") != std::string::npos;
    EXPECT_EQ(halved.at(id), state ? bytes / 4 : bytes) << id;
    EXPECT_EQ(quartered.at(id), state ? bytes / 16 : bytes) << id;
    pooled += state ? 1 : 0;
  }
  EXPECT_EQ(pooled, 3 * 2);  // 3 parallel minibatches of 4, z and g each
}

TEST(SerialParallel, RefusesWhatItCannotTrain) {
  EXPECT_EQ(error_of([] {
              parse(Solver::serial_parallel, {{"correction_period", "0"}});
            }),
            "--set correction_period: must be >= 1, got 0");
  EXPECT_EQ(error_of([] {
              parse(Solver::serial_parallel, {{"method", "admm"}});
            }).substr(0, 13),
            "--set method:");
  EXPECT_EQ(
      error_of([] {
        lower_solver(make_model("resnet20"), workers(2),
                     parse(Solver::serial_parallel, {{"downsample", "3"}}));
      }),
      "--set downsample=3: block 0 of model resnet20 ends in layer conv3_1/relu, whose 16x16 feature map "
      "the factor does not divide");
  EXPECT_EQ(
      error_of([] {
        lower_solver(make_model("mlp"), workers(2), parse(Solver::serial_parallel, {{"downsample", "2"}}));
      }),
      "--set downsample=2: block 0 of model mlp ends in layer relu1, a vector of 256 values, not a feature "
      "map (downsampling pools height and width)");
  EXPECT_EQ(
      error_of([] { lower_solver(make_model("mlp"), workers(4), parse(Solver::serial_parallel, {})); }),
      "--solver serial-parallel: 4 workers but model mlp has only 3 layer groups (one block per worker)");
  EXPECT_EQ(
      error_of([] {
        lower_solver(make_model("mlp"), workers(2),
                     parse(Solver::serial_parallel, {{"correction_period", "3"}}));
      }),
      "--set correction_period=3: must divide --set instances=16 (the Plan's minibatches repeat from one run "
      "to the next)");
  const SolverConfig s = parse(Solver::serial_parallel, {{"rho", "5"}, {"method", "al"}});
  EXPECT_EQ(s.block_rho, 5.0);
  EXPECT_TRUE(s.augmented_lagrangian);
}

TEST(Gist, PlanOfOneRoundScattersTrainsAndGathersTheSlices) {
  const SolverConfig s = parse(Solver::gist, {});
  const Plan plan = lower_solver(make_model("gcn"), gcn_workers(2), s);
  EXPECT_EQ(plan.num_workers(), 2);
  EXPECT_EQ(plan.num_iterations(), 1);
  EXPECT_EQ(plan.size(), (1 + 220 + 1) + (1 + 3 + 3 + 220 + 3 + 3 + 1) + 1u);
  // Slices of site 1, fp32, biases included: (784 x 128 + 128), (128 x 128 + 128), (128 x 10 + 10).
  const std::map<std::string, double> slice = {{"gc0/fc", (784.0 * 128 + 128) * 4},
                                               {"gc1/fc", (128.0 * 128 + 128) * 4},
                                               {"gc2/fc", (128.0 * 10 + 10) * 4}};
  double sent = 0;
  for (const auto& [layer, bytes] : slice) {
    const Task& down = task(plan, "it0/site1/send/scatter/" + layer);
    EXPECT_EQ(down.worker, 0);
    EXPECT_EQ(down.peer, 1);
    EXPECT_DOUBLE_EQ(down.comm_bytes, bytes) << layer;
    const Task& up = task(plan, "it0/site1/send/gather/" + layer);
    EXPECT_EQ(up.worker, 1);
    EXPECT_EQ(up.peer, 0);
    EXPECT_DOUBLE_EQ(up.comm_bytes, bytes) << layer;
    EXPECT_EQ(task(plan, "it0/site1/recv/scatter/" + layer).worker, 1);
    sent += bytes;
    EXPECT_TRUE(depends_on(plan, "it0/site1/step0/fwd/" + layer, "it0/site1/recv/scatter/" + layer));
    EXPECT_TRUE(depends_on(plan, "it0/site1/step1/fwd/" + layer, "it0/site1/step0/opt/" + layer));
    EXPECT_TRUE(depends_on(plan, "it0/site1/send/gather/" + layer, "it0/site1/step9/opt/" + layer));
    EXPECT_TRUE(depends_on(plan, "it0/site0/step0/fwd/" + layer, "it0/site0/extract"));
  }
  EXPECT_DOUBLE_EQ(sent, 473128);  // what strata::real's gist_round measures per site (docs/solvers.md)
  // Nothing else crosses the network: the steps are local.
  EXPECT_EQ(std::count_if(plan.tasks().begin(), plan.tasks().end(),
                          [](const Task& t) { return t.kind == TaskKind::send; }),
            6);
  // Every step reads all 10,000 nodes: Â has 10,000 x 21 nonzeros, aggregated 128 wide.
  const Task& agg = task(plan, "it0/site1/step3/fwd/gc1/agg");
  EXPECT_EQ(agg.kind, TaskKind::spmm);
  EXPECT_EQ(agg.worker, 1);
  EXPECT_EQ(agg.attr_int("nnz"), 210000);
  EXPECT_EQ(agg.attr_int("nodes"), 10000);
  EXPECT_EQ(agg.attr_int("width"), 128);
  EXPECT_DOUBLE_EQ(agg.flops, 2.0 * 210000 * 128);
  EXPECT_EQ(task(plan, "it0/site1/step3/fwd/gc1/fc").attr_int("m"), 10000);
  EXPECT_EQ(task(plan, "it0/site0/write_back").worker, 0);
  EXPECT_TRUE(depends_on(plan, "it0/site1/write_back", "it0/site1/recv/gather/gc0/fc"));
  EXPECT_TRUE(depends_on(plan, "it0/average", "it0/site0/write_back"));
  EXPECT_TRUE(depends_on(plan, "it0/average", "it0/site1/write_back"));
  EXPECT_EQ(plan.info.schedule_label(), "gist");
  EXPECT_EQ(plan.info.global_batch, 10000 * 10);  // 10 full-graph steps per round
  runs_to_the_end(plan);
  // Deterministic: the same inputs give the same Plan, byte for byte.
  EXPECT_EQ(plan_to_json(plan).dump(),
            plan_to_json(lower_solver(make_model("gcn"), gcn_workers(2), s)).dump());
}

TEST(Gist, RoundsFollowOneAnother) {
  StrategyConfig c = gcn_workers(2);
  c.iterations = 2;
  const Plan plan = lower_solver(make_model("gcn"), c, parse(Solver::gist, {{"zeta", "3"}}));
  EXPECT_EQ(plan.num_iterations(), 2);
  EXPECT_TRUE(depends_on(plan, "it1/site1/extract", "it0/average"));
  EXPECT_EQ(task(plan, "it1/site1/step2/opt/gc2/fc").iteration, 1);
  runs_to_the_end(plan);
}

// A sub-GCN's hidden-to-hidden GEMMs cost 1/m^2 of the full model's per step; its first and last
// GEMMs and its aggregations 1/m. The full model: backprop on one worker, one step.
TEST(Gist, HiddenToHiddenGemmsCostOneOverMSquared) {
  const Model gcn = make_model("gcn");
  const Plan full = lower_solver(gcn, gcn_workers(1), parse(Solver::backprop, {}));
  EXPECT_EQ(full.info.global_batch, 10000);
  const double hidden = gemm_flops(full, "", "gc1/fc");
  EXPECT_DOUBLE_EQ(hidden, 3 * 2.0 * 10000 * 256 * 256);  // forward, dX, dW
  for (int m : {2, 4}) {
    SolverConfig s = parse(Solver::gist, {{"m", std::to_string(m)}, {"zeta", "5"}});
    const Plan plan = lower_solver(gcn, gcn_workers(m), s);
    for (int i = 0; i < m; ++i) {
      const std::string site = "it0/site" + std::to_string(i) + "/";
      EXPECT_DOUBLE_EQ(gemm_flops(plan, site, "gc1/fc") / 5, hidden / (m * m)) << "m=" << m << " site " << i;
      EXPECT_DOUBLE_EQ(gemm_flops(plan, site, "gc0/fc") / 5, gemm_flops(full, "", "gc0/fc") / m);
      EXPECT_DOUBLE_EQ(flops_of(plan, site, "/gc1/agg", TaskKind::spmm) / 5,
                       flops_of(full, "", "/gc1/agg", TaskKind::spmm) / m);
    }
  }
}

TEST(Gist, RefusesWhatItCannotTrain) {
  const SolverConfig s = parse(Solver::gist, {});
  EXPECT_EQ(error_of([&] { lower_solver(make_model("mlp"), gcn_workers(2), s); }),
            "--solver gist: model mlp is not a GCN; GIST trains sub-GCNs of a graph convolutional network "
            "(--model gcn)");
  const Model narrow = make_model("gcn", {{"sizes", "784,16,10"}});
  EXPECT_EQ(error_of([&] {
              lower_solver(narrow, gcn_workers(32), parse(Solver::gist, {{"m", "32"}}));
            }),
            "--set m: 32 sub-GCNs but the narrowest hidden layer of model gcn has 16 units (each sub-GCN "
            "needs at least one)");
  EXPECT_EQ(error_of([] { parse(Solver::gist, {{"zeta", "0"}}); }), "--set zeta: must be >= 1, got 0");
  EXPECT_EQ(error_of([] { parse(Solver::gist, {{"m", "0"}}); }), "--set m: must be >= 1, got 0");
  EXPECT_EQ(error_of([&] { lower_solver(make_model("gcn"), gcn_workers(4), s); }),
            "--set m: 2 sub-GCNs but 4 workers; GIST trains one sub-GCN per worker (give --workers 2)");
  EXPECT_EQ(
      error_of([&] {
        lower_solver(make_model("gcn", {{"sizes", "784,10"}}), gcn_workers(2), s);
      }),
      "--solver gist: model gcn has no hidden layer to split (give --set sizes=F,H,...,C with at least one "
      "hidden width)");
  StrategyConfig batch = gcn_workers(2);
  batch.global_batch = 64;
  EXPECT_EQ(error_of([&] { lower_solver(make_model("gcn"), batch, s); }),
            "--global-batch 64: GIST trains full-graph on the 10000 nodes of model gcn (set the graph with "
            "--set nodes=N)");
  // Backprop over dp=2 splits the graph in two parts (graph_plan_test.cpp); lower() alone, which
  // knows no graph layout, still refuses it.
  EXPECT_EQ(lower_solver(make_model("gcn"), gcn_workers(2), parse(Solver::backprop, {}))
                .info.parameters.graph_parts,
            2);
  EXPECT_EQ(error_of([&] { lower(make_model("gcn"), gcn_workers(2)); }),
            "dp=2: model gcn trains full-graph (every step reads all 10000 nodes); split its graph with "
            "--solver backprop (the default), which lowers dp=N to N graph parts, or --solver gist");
}

}  // namespace
}  // namespace strata
