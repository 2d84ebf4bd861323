// Convergence of the real executor on Fashion-MNIST (5 epochs, Adam lr 1e-3, batch 64, seed 0):
// the recipes' reference runs measured 86.8–88.0 % (MLP 784-256-128-10, He init) and
// 89.0–89.7 % (LeNet-5 with ReLU and max-pool, PyTorch's default init). Labelled `slow` in CMake.
#include <gtest/gtest.h>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::real {
namespace {

// dp > 1: strata run's data-parallel batch, 64 per worker.
double accuracy_after_five_epochs(const std::string& model, WeightInit init, int dp = 1,
                                  Compression compression = Compression::none) {
  StrategyConfig c;
  c.dp = dp;
  c.global_batch = 64 * dp;
  c.compression = compression;
  c.optimizer = Optimizer::adam;
  c.dtype = DType::fp32;
  Plan plan = lower(make_model(model, {}), c);
  plan.validate();
  const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  const LabelledImages test = load_fashion_mnist(DatasetSplit::test);
  CpuBackend backend;
  TrainConfig config;
  config.init = init;
  Trainer<float> trainer(plan, backend, config);
  EpochResult r;
  for (int e = 1; e <= 5; ++e) {
    r = trainer.train_epoch(e, train, test);
    std::printf("%s %s epoch %d: loss %.4f, test accuracy %.2f %%, %.0f samples/s\n", model.c_str(),
                std::string(to_string(compression)).c_str(), e, r.train_loss, 100 * r.test_accuracy,
                r.samples_per_second);
  }
  return r.test_accuracy;
}

TEST(Accuracy, MlpReaches86Point5PercentInFiveEpochs) {
  EXPECT_GE(accuracy_after_five_epochs("mlp", WeightInit::he_normal), 0.865);
}

// With He-normal init and zero biases the same run ended at 87.83 % (86.99-88.98 % over epochs
// 1-5): PyTorch's default init is part of the LeNet-5 recipe.
TEST(Accuracy, LeNet5Reaches88PercentInFiveEpochs) {
  EXPECT_GE(accuracy_after_five_epochs("lenet5", WeightInit::fan_in_uniform), 0.88);
}

// Gradient compression with error feedback on 4 data-parallel workers (batch 256): each codec
// ends its 5 epochs within 2 points of the same run uncompressed (measured 2026-11-26: none
// 86.34 %, int8 86.61 %, fp8 86.63 %, top-k 1 % 85.49 %, PowerSGD rank 4 85.95 %).
TEST(Accuracy, CompressedDataParallelMlpEndsWithinTwoPointsOfUncompressed) {
  const double plain = accuracy_after_five_epochs("mlp", WeightInit::he_normal, 4);
  ASSERT_GE(plain, 0.85);
  for (Compression codec : {Compression::int8, Compression::topk, Compression::powersgd})
    EXPECT_GE(accuracy_after_five_epochs("mlp", WeightInit::he_normal, 4, codec), plain - 0.02)
        << to_string(codec);
}

}  // namespace
}  // namespace strata::real
