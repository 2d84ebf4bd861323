// Convergence of the layer-group solvers on Fashion-MNIST against synchronous backprop on the
// same model, optimizer (Adam lr 1e-3, fp32), batch (64 per step) and seed, 5 epochs each
// (labelled `slow`). AMPNet with 4 instances in flight must end within 1 point of backprop;
// local parallelism within 2 points with 2 chunks and within 3 with 4 chunks (on a 5-layer MLP,
// as the zoo's MLP has only 3 layer groups).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::real {
namespace {

constexpr int kEpochs = 5;

double accuracy(const std::string& sizes, int workers, const SolverConfig& solver, const std::string& label) {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = 64;  // per step: per instance for the layer-group solvers
  c.optimizer = Optimizer::adam;
  c.dtype = DType::fp32;
  const Plan plan = lower_solver(make_model("mlp", {{"sizes", sizes}}), c, solver);
  static const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  static const LabelledImages test = load_fashion_mnist(DatasetSplit::test);
  CpuBackend backend;
  TrainConfig config;
  config.init = WeightInit::he_normal;
  Trainer<float> trainer(plan, backend, config);
  EpochResult r;
  double seconds = 0;
  for (int e = 1; e <= kEpochs; ++e) {
    r = trainer.train_epoch(e, train, test);
    seconds += r.train_seconds;
    std::printf("%-28s epoch %d: loss %.4f, test accuracy %.2f %%, %.0f samples/s, %.1f s\n", label.c_str(),
                e, r.train_loss, 100 * r.test_accuracy, r.samples_per_second, seconds);
  }
  return 100 * r.test_accuracy;
}

double backprop(const std::string& sizes) { return accuracy(sizes, 1, SolverConfig{}, "backprop " + sizes); }

TEST(SolverConvergence, AmpnetWithFourKeysInFlightIsWithinOnePointOfBackprop) {
  const std::string sizes = "784,256,128,10";
  const double reference = backprop(sizes);
  SolverConfig s;
  s.solver = Solver::ampnet;
  s.max_active_keys = 4;
  const double ampnet = accuracy(sizes, 2, s, "ampnet mak=4 2 workers");
  std::printf("backprop %.2f %%, ampnet %.2f %%\n", reference, ampnet);
  EXPECT_GE(ampnet, reference - 1.0);
}

TEST(SolverConvergence, LocalParallelismIsWithinTwoPointsWithTwoChunksAndThreeWithFour) {
  const std::string sizes = "784,256,256,128,64,10";
  const double reference = backprop(sizes);
  SolverConfig s;
  s.solver = Solver::local;
  s.chunks = 2;
  const double two = accuracy(sizes, 2, s, "local 2 chunks");
  s.chunks = 4;
  const double four = accuracy(sizes, 2, s, "local 4 chunks on 2 workers");
  std::printf("backprop %.2f %%, local 2 chunks %.2f %%, 4 chunks %.2f %%\n", reference, two, four);
  EXPECT_GE(two, reference - 2.0);
  EXPECT_GE(four, reference - 3.0);
}

}  // namespace
}  // namespace strata::real
