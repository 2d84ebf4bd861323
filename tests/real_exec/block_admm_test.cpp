// Stochastic Block-ADMM run for real through the Plan interpreter (float64, plain SGD): one block
// is minibatch SGD; where the blocks run does not change the run; with rho large the auxiliary
// variables stay on the forward pass, by the bound the z update gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/train/trainer.hpp"
#include "training_runs.hpp"
#include "weights.hpp"

namespace strata::real {
namespace {

using training_runs::batch_indices;
using training_runs::kBatch;
using training_runs::max_abs_difference;
using training_runs::mlp_plan;
using training_runs::train_config;

Plan block_plan(int workers, int blocks, int inner_steps, int instances, double rho = 1, bool batch = false) {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = kBatch;  // per instance
  c.optimizer = Optimizer::sgd;
  SolverConfig s;
  s.solver = Solver::block_admm;
  s.blocks = blocks;
  s.inner_steps = inner_steps;
  s.instances = instances;
  s.block_rho = rho;
  s.batch_setting = batch;
  return lower_solver(make_model("mlp"), c, s);
}

std::map<std::string, std::vector<double>> weights_after(const Plan& plan, int runs) {
  return training_runs::weights_after_runs(plan, runs);
}

const std::vector<double>& array(Trainer<double>& trainer, const Plan& plan, const std::string& id) {
  return training_runs::buffer_array(trainer, plan, id);
}

TEST(BlockAdmm, OneBlockIsMinibatchSgd) {
  const auto sgd = weights_after(mlp_plan(1, 1, 1), 8);
  const auto admm = weights_after(block_plan(1, 1, 1, 4), 2);
  ASSERT_EQ(admm.size(), 3u);
  EXPECT_LT(max_abs_difference(sgd, admm), 1e-9);
  // Two inner steps are two SGD steps on each minibatch: not the same run.
  EXPECT_GT(max_abs_difference(sgd, weights_after(block_plan(1, 1, 2, 4), 2)), 1e-6);
}

// Blocks on one worker read z from their own memory; on three they receive it: the same numbers.
TEST(BlockAdmm, WhereTheBlocksRunDoesNotChangeTheRun) {
  const auto one = weights_after(block_plan(1, 3, 3, 4), 2);
  const auto three = weights_after(block_plan(3, 3, 3, 4), 2);
  const auto before = weights_after(block_plan(1, 3, 3, 4), 0);
  EXPECT_LT(max_abs_difference(one, three), 1e-12);
  EXPECT_GT(max_abs_difference(before, one), 1e-4);  // every block moved
  for (const char* layer : {"/w/fc1", "/w/fc2", "/w/fc3"}) {
    double moved = 0;
    for (std::size_t i = 0; i < one.at(layer).size(); ++i)
      moved = std::max(moved, std::abs(one.at(layer)[i] - before.at(layer)[i]));
    EXPECT_GT(moved, 1e-6) << layer;
  }
}

// With rho large the auxiliary variable stays on the block's output. After step 0, z_0 = a_0 and
// lambda_0 = 0, so the z update gives z_0 - a_0 = -m g_0 / (rho + 1/eta) exactly, elementwise:
// |z_0 - a_0| <= m max|g_0| / rho. Step 1 recomputes a_0 from the input with W_0 unchanged (its
// step-0 gradient is 0: plain SGD does not move), so the bound compares z_0 with the forward pass.
TEST(BlockAdmm, LargeRhoKeepsTheAuxiliaryVariablesOnTheForwardPass) {
  for (int workers : {1, 2}) {
    const double rho = 1e8;
    const Plan plan = block_plan(workers, 2, 2, 1, rho);
    CpuBackend backend;
    TrainConfig config = train_config();
    config.release_buffers = false;  // keep z, g and the activations for reading
    Trainer<double> trainer(plan, backend, config);
    trainer.train_batch(training_runs::train_images(), batch_indices(0));
    const std::vector<double> z = array(trainer, plan, "dp0/pp0/tp0/mb0/admm/b0/z");
    const std::vector<double> g = array(trainer, plan, "dp0/pp0/tp0/mb0/admm/b0/g");
    const std::vector<double> a = array(trainer, plan, "dp0/pp0/tp0/mb0/act/relu1");
    ASSERT_EQ(z.size(), static_cast<std::size_t>(kBatch * 256));
    ASSERT_EQ(a.size(), z.size());
    double g_max = 0, gap = 0;
    for (std::size_t i = 0; i < z.size(); ++i) {
      g_max = std::max(g_max, std::abs(g[i]));
      gap = std::max(gap, std::abs(z[i] - a[i]));
      // The exact update, value by value (eta = 0.5).
      EXPECT_NEAR(z[i] - a[i], -static_cast<double>(kBatch) * g[i] / (rho + 2), 1e-12) << i;
    }
    EXPECT_GT(g_max, 0);  // the loss reached block 0
    EXPECT_LE(gap, static_cast<double>(kBatch) * g_max / rho) << workers << " workers";
    EXPECT_GT(gap, 0);
  }
}

// The batch setting keeps z and lambda per training sample. A first visit starts z at the
// forward pass and lambda at 0, so block 0's term (and its gradient) is 0 and plain SGD leaves its
// weights alone; the update stores the rows; a second visit of the same samples starts from them,
// and block 0 learns.
TEST(BlockAdmm, BatchSettingKeepsEachSamplesAuxiliaryVariables) {
  const Plan plan = block_plan(2, 2, 1, 1, 1, true);
  ASSERT_EQ(plan.info.parameters.stored_samples, 60000);
  ASSERT_EQ(plan.info.parameters.inner_steps, 1);
  CpuBackend backend;
  TrainConfig config = train_config();
  config.release_buffers = false;
  Trainer<double> trainer(plan, backend, config);
  const auto fc1 = [&] { return array(trainer, plan, "dp0/pp0/tp0/w/fc1"); };
  const std::vector<double> before = fc1();
  trainer.train_batch(training_runs::train_images(), batch_indices(3));  // samples 192 .. 255
  EXPECT_EQ(max_abs_difference({{"fc1", before}}, {{"fc1", fc1()}}), 0.0);
  const std::vector<double> seen = array(trainer, plan, "dp0/pp0/tp0/admm/b0/seen");
  const std::vector<double> z_store = array(trainer, plan, "dp0/pp0/tp0/admm/b0/z_store");
  const std::vector<double> z = array(trainer, plan, "dp0/pp0/tp0/mb0/admm/b0/z");
  ASSERT_EQ(seen.size(), 60000u);
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i >= 192 && i < 256 ? 1.0 : 0.0) << i;
  for (std::size_t j = 0; j < 256; ++j) {
    EXPECT_EQ(z_store[192 * 256 + j], z[j]);             // sample 192 is the minibatch's row 0
    EXPECT_EQ(z_store[255 * 256 + j], z[63 * 256 + j]);  // and 255 its row 63
  }
  trainer.train_batch(training_runs::train_images(), batch_indices(3));
  EXPECT_GT(max_abs_difference({{"fc1", before}}, {{"fc1", fc1()}}), 1e-8);
}

}  // namespace
}  // namespace strata::real
