// PlanTrainer: make_plan_trainer picks the trainer from what the Plan says it is (PlanInfo), and
// a Plan trained through the interface ends with the buffers its own trainer gives, bit for bit
// in float64; ADMM and GCN Plans refuse a device without their kernels in one line.
#include "strata/real/train/plan_trainer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "strata/models/solvers/solver.hpp"
#include "strata/real/train/admm_plan.hpp"
#include "strata/real/train/gcn_plan.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

using training_runs::kSeed;

const LabelledImages& train_set() {
  static const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  return train;
}

Plan solver_plan(Solver solver, int workers, const std::string& model,
                 std::map<std::string, std::string> sets, std::int64_t batch) {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = batch;
  const SolverConfig s = parse_solver_config(solver, sets);
  const std::map<std::string, std::string> sizes =
      model == "gcn" ? std::map<std::string, std::string>{{"sizes", "784,24,16,10"}, {"nodes", "600"}}
                     : std::map<std::string, std::string>{{"sizes", "784,48,32,10"}};
  Plan plan = lower_solver(make_model(model, sizes), c, s);
  plan.validate();
  return plan;
}

// Every buffer of `a` equals the same buffer of `b`, bit for bit.
void expect_same_buffers(const Plan& plan, Workspace<double>& a, Workspace<double>& b) {
  for (BufferIndex i = 0; i < plan.buffers().size(); ++i) {
    ASSERT_EQ(a.size(i), b.size(i)) << plan.buffer(i).id;
    EXPECT_EQ(std::memcmp(a.data(i), b.data(i), static_cast<std::size_t>(a.size(i)) * sizeof(double)), 0)
        << plan.buffer(i).id;
  }
}

TEST(PlanTrainer, BackpropPlanThroughTheInterfaceGivesTheTrainersWeightsBitForBit) {
  const Plan plan = training_runs::mlp_plan(2, 2, 2);
  CpuBackend backend;
  Trainer<double> direct(plan, backend, training_runs::train_config());
  for (int s = 0; s < 3; ++s) direct.train_batch(train_set(), training_runs::batch_indices(s));

  RealSettings settings;
  settings.seed = kSeed;
  settings.optimizer = training_runs::train_config().optimizer;
  const std::unique_ptr<PlanTrainer<double>> trainer = make_plan_trainer<double>(plan, settings, train_set());
  for (int s = 0; s < 3; ++s) EXPECT_EQ(trainer->run().size(), plan.size());
  EXPECT_EQ(trainer->backend_name(), direct.backend_name());
  EXPECT_EQ(trainer->bytes_sent(), direct.bytes_sent());
  expect_same_buffers(plan, trainer->workspace(), direct.workspace());
}

TEST(PlanTrainer, AdmmPlanThroughTheInterfaceGivesAdmmPlanTrainersIteratesBitForBit) {
  constexpr std::int64_t kSamples = 256;
  const Plan plan = solver_plan(Solver::pdadmm, 2, "mlp", {{"admm_iterations", "2"}}, kSamples);
  ASSERT_EQ(plan.info.solver, PlanSolver::pdadmm);
  const AdmmData<double> columns = admm_columns<double>(train_set(), kSamples, kSeed);
  CpuBackend backend;
  ThreadTransport<double> transport;
  AdmmPlanTrainer<double> direct(plan, columns, kSeed, backend, transport, false);
  direct.run();

  RealSettings settings;
  settings.seed = kSeed;
  settings.pin_workers = false;
  const std::unique_ptr<PlanTrainer<double>> trainer = make_plan_trainer<double>(plan, settings, train_set());
  trainer->run();
  EXPECT_EQ(trainer->bytes_sent(), direct.bytes_sent());
  expect_same_buffers(plan, trainer->workspace(), direct.workspace());
}

TEST(PlanTrainer, GistPlanThroughTheInterfaceGivesGcnPlanTrainersWeightsBitForBit) {
  const Plan plan = solver_plan(Solver::gist, 2, "gcn", {{"m", "2"}, {"zeta", "2"}}, 0);
  ASSERT_EQ(plan.info.graph_nodes, 600);
  CpuBackend backend;
  const GcnData<double> data = gcn_plan_data<double>(backend, plan.info.graph_nodes, kSeed);
  ThreadTransport<double> transport;
  OptimizerSettings adam;
  adam.learning_rate = 0.01;  // what make_plan_trainer gives a GCN Plan when none is set
  GcnPlanTrainer<double> direct(plan, data, kSeed, backend, transport, adam, false);
  direct.run();

  RealSettings settings;
  settings.seed = kSeed;
  settings.pin_workers = false;
  const std::unique_ptr<PlanTrainer<double>> trainer = make_plan_trainer<double>(plan, settings, train_set());
  trainer->run();
  EXPECT_EQ(trainer->bytes_sent(), direct.bytes_sent());
  expect_same_buffers(plan, trainer->workspace(), direct.workspace());
}

// Local parallelism trains through the backprop trainer (its Plans are layer tasks and local
// heads): through the interface it is the Trainer's run, batch for batch.
TEST(PlanTrainer, LocalPlanThroughTheInterfaceGivesTheTrainersWeightsBitForBit) {
  const Plan plan =
      solver_plan(Solver::local, 2, "mlp", {{"chunks", "2"}, {"instances", "2"}}, training_runs::kBatch / 2);
  ASSERT_EQ(plan.info.solver, PlanSolver::local);
  ASSERT_EQ(plan.info.global_batch, training_runs::kBatch);
  CpuBackend backend;
  Trainer<double> direct(plan, backend, training_runs::train_config());
  for (int s = 0; s < 2; ++s) direct.train_batch(train_set(), training_runs::batch_indices(s));

  RealSettings settings;
  settings.seed = kSeed;
  settings.optimizer = training_runs::train_config().optimizer;
  const std::unique_ptr<PlanTrainer<double>> trainer = make_plan_trainer<double>(plan, settings, train_set());
  for (int s = 0; s < 2; ++s) trainer->run();
  expect_same_buffers(plan, trainer->workspace(), direct.workspace());
}

TEST(PlanTrainer, AdmmAndGcnPlansRefuseADeviceWithoutTheirKernelsInOneLine) {
  const Plan admm = solver_plan(Solver::dladmm, 1, "mlp", {}, 128);
  const Plan gist = solver_plan(Solver::gist, 2, "gcn", {{"m", "2"}, {"zeta", "1"}}, 0);
  ASSERT_TRUE(gist.info.trains_graph());
  RealSettings settings;
  settings.device = "cuda";
  try {
    make_plan_trainer<float>(admm, settings, train_set());
    FAIL() << "an ADMM Plan was accepted on cuda";
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "--device cuda: the dladmm Plan needs the admm_backward and admm_forward kernels, which only "
        "the CPU executor has");
  }
  try {
    make_plan_trainer<float>(gist, settings, train_set());
    FAIL() << "a GCN Plan was accepted on cuda";
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "--device cuda: a GCN Plan needs the spmm kernel and GIST's slice copies, which only the CPU "
        "executor has");
  }
  EXPECT_NO_THROW(check_plan_device(admm, "cpu"));
  // A ResNet (batch norm, residual adds) and the auxiliary-variable solvers run on the CPU only.
  StrategyConfig one;
  one.global_batch = 4;
  try {
    check_plan_device(lower(make_model("resnet20"), one), "cuda");
    FAIL() << "a ResNet Plan was accepted on cuda";
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "--device cuda: the resnet20 Plan needs the batch-norm and residual-add kernels, which only the "
        "CPU executor has");
  }
  SolverConfig hybrid;
  hybrid.solver = Solver::serial_parallel;
  hybrid.instances = 2;
  hybrid.correction_period = 2;
  one.dp = 2;
  EXPECT_THROW(check_plan_device(lower_solver(make_model("mlp"), one, hybrid), "cuda"), InputError);
  EXPECT_NO_THROW(check_plan_device(lower_solver(make_model("mlp"), one, hybrid), "cpu"));
}

// The solver is what the Plan says, not what its tasks look like: the same ADMM tasks labelled
// as another solver are not taken for an ADMM Plan.
TEST(PlanTrainer, TheSolverComesFromPlanInfo) {
  Plan plan = solver_plan(Solver::dladmm, 1, "mlp", {}, 128);
  EXPECT_NO_THROW(admm_plan_shape(plan));
  plan.info.solver = PlanSolver::ampnet;
  EXPECT_THROW(admm_plan_shape(plan), InputError);
}

// The input width comes from the Plan (info.input_elements), not from a constant: a Plan of
// another width refuses Fashion-MNIST's 784-pixel samples in one line, and a Plan that does not
// record it (schema version 1) sizes its microbatches from the global batch and trains the same.
TEST(PlanTrainer, TheInputWidthComesFromThePlan) {
  StrategyConfig c;
  c.global_batch = training_runs::kBatch;
  Plan narrow = lower(make_model("mlp", {{"sizes", "100,16,10"}}), c);
  EXPECT_EQ(narrow.info.input_elements, 100);
  CpuBackend backend;
  Trainer<double> trainer(narrow, backend, training_runs::train_config());
  try {
    trainer.train_batch(train_set(), training_runs::batch_indices(0));
    FAIL() << "784-pixel samples were bound to a 100-wide input";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "data: samples of 784 pixels, but the Plan's input is 100 elements per sample");
  }

  const Plan plan = training_runs::mlp_plan(2, 1, 2);
  EXPECT_EQ(plan.info.input_elements, 784);
  Plan unrecorded = plan;
  unrecorded.info.input_elements = 0;
  Trainer<double> a(plan, backend, training_runs::train_config());
  Trainer<double> b(unrecorded, backend, training_runs::train_config());
  EXPECT_EQ(b.global_batch(), a.global_batch());
  EXPECT_EQ(a.train_batch(train_set(), training_runs::batch_indices(0)),
            b.train_batch(train_set(), training_runs::batch_indices(0)));
}

}  // namespace
}  // namespace strata::real
