// The image pipeline (augment.hpp): padding centres the image, a crop-flip shifts and mirrors it
// pixel by pixel, draws stay within the pad and are the same for a seed; the Trainer pads
// Fashion-MNIST to a 32x32 LeNet-5 and, augmented, trains on other pixels than without.
#include "strata/real/data/augment.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/train/trainer.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

TEST(Augment, PaddingCentresTheImage) {
  const std::vector<float> image = {1, 2, 3, 4};  // 2x2
  std::vector<float> out(16, -1);
  pad_image(image.data(), 2, 4, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0}));
}

TEST(Augment, CropFlipShiftsAndMirrorsPixelByPixel) {
  const std::vector<float> image = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3
  std::vector<float> out(9);
  crop_flip(image.data(), 3, {0, 0, false}, out.data());
  EXPECT_EQ(out, image);
  crop_flip(image.data(), 3, {0, 0, true}, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 2, 1, 6, 5, 4, 9, 8, 7}));
  crop_flip(image.data(), 3, {1, -1, false}, out.data());  // dst(y, x) = src(y + 1, x - 1)
  EXPECT_EQ(out, (std::vector<float>{0, 4, 5, 0, 7, 8, 0, 0, 0}));
  crop_flip(image.data(), 3, {-1, 1, true}, out.data());  // src(y - 1, 2 - x + 1)
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 0, 3, 2, 0, 6, 5}));
}

TEST(Augment, DrawsStayWithinThePadAndRepeatForASeed) {
  std::mt19937_64 a(3), b(3);
  std::set<std::int64_t> shifts;
  int flips = 0;
  for (int i = 0; i < 2000; ++i) {
    const CropFlip c = draw_crop_flip(a), d = draw_crop_flip(b);
    EXPECT_EQ(c.dy, d.dy);
    EXPECT_EQ(c.dx, d.dx);
    EXPECT_EQ(c.flip, d.flip);
    ASSERT_GE(c.dy, -kCropPad);
    ASSERT_LE(c.dy, kCropPad);
    shifts.insert(c.dx);
    flips += c.flip ? 1 : 0;
  }
  EXPECT_EQ(shifts.size(), 9u);  // every shift in [-4, 4] drawn
  EXPECT_GT(flips, 900);         // a fair coin: 1000 +- 3 sigma (67)
  EXPECT_LT(flips, 1100);
  EXPECT_EQ(parse_augment("crop-flip"), Augment::crop_flip);
  EXPECT_FALSE(parse_augment("rotate").has_value());
}

Plan lenet32() {
  StrategyConfig c;
  c.global_batch = training_runs::kBatch;
  c.optimizer = Optimizer::sgd;
  return lower(make_model("lenet5", {{"image", "32"}}), c);
}

// LeNet-5 at 32x32 trains on Fashion-MNIST padded by 2; crop-flip changes the run, and a seed
// repeats it.
TEST(Augment, TrainerPadsAndAugmentsTrainingImagesOnly) {
  const Plan plan = lenet32();
  ASSERT_EQ(plan.info.input_elements, 32 * 32);
  CpuBackend backend;
  auto loss_after = [&](Augment augment) {
    TrainConfig config = training_runs::train_config();
    config.augment = augment;
    Trainer<double> trainer(plan, backend, config);
    double loss = 0;
    for (int s = 0; s < 3; ++s)
      loss = trainer.train_batch(training_runs::train_images(), training_runs::batch_indices(s));
    return loss;
  };
  const double plain = loss_after(Augment::none), augmented = loss_after(Augment::crop_flip);
  EXPECT_NE(plain, augmented);
  EXPECT_EQ(augmented, loss_after(Augment::crop_flip));
  EXPECT_TRUE(std::isfinite(plain));
}

}  // namespace
}  // namespace strata::real
