// The pipeline partitioner (partition.hpp): the known answer for layer costs 1..9 on three
// stages, a faster device taking more layers, memory caps with 1F1B's microbatches in flight,
// the exact optimum against brute force on random problems, and one line per bad problem.
#include "strata/models/schedule/partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

PartitionProblem layers_of(const std::vector<double>& times, std::size_t stages) {
  PartitionProblem p;
  for (double t : times) p.layers.push_back({t, 0, 0, 0});
  p.stages.assign(stages, PartitionStage{});
  return p;
}

TEST(Partition, CostsOneToNineOnThreeStagesHaveSeventeenAsTheSlowestStage) {
  const Partition part = partition_layers(layers_of({1, 2, 3, 4, 5, 6, 7, 8, 9}, 3), "test");
  EXPECT_DOUBLE_EQ(part.bottleneck_s, 17);  // 1+..+5 = 15 | 6+7 = 13 | 8+9 = 17
  EXPECT_EQ(part.first, (std::vector<int>{0, 5, 7, 9}));
  EXPECT_EQ(part.stage_time_s, (std::vector<double>{15, 13, 17}));
  EXPECT_DOUBLE_EQ(uniform_partition(layers_of({1, 2, 3, 4, 5, 6, 7, 8, 9}, 3)).bottleneck_s, 24);  // 7+8+9
}

TEST(Partition, AFasterStageTakesMoreLayersAndTransfersCount) {
  PartitionProblem p = layers_of({1, 1, 1, 1, 1, 1}, 2);
  p.stages[0].speed = 2;  // twice as fast: 4 layers in 2 s, against 2 layers in 2 s
  const Partition part = partition_layers(p, "test");
  EXPECT_EQ(part.first, (std::vector<int>{0, 4, 6}));
  EXPECT_DOUBLE_EQ(part.bottleneck_s, 2);
  EXPECT_DOUBLE_EQ(uniform_partition(p).bottleneck_s, 3);  // 3 layers each: the slow stage 3 s
  // Sending the 4th layer's output costs 1 s, so cutting after it makes stage 0 take 3 s; the cut
  // moves after the 5th layer: 5 layers at speed 2 take 2.5 s, the last one 1 s.
  p.layers[3].transfer_s = 1;
  const Partition moved = partition_layers(p, "test");
  EXPECT_EQ(moved.first, (std::vector<int>{0, 5, 6}));
  EXPECT_DOUBLE_EQ(moved.bottleneck_s, 2.5);
}

TEST(Partition, MemoryCapsWithOneFOneBInFlightMoveLayersOffTheFirstStage) {
  EXPECT_EQ(one_f_one_b_in_flight(4), (std::vector<double>{4, 3, 2, 1}));
  PartitionProblem p = layers_of({1, 1, 1, 1, 1, 1, 1, 1}, 2);
  for (PartitionLayer& l : p.layers) l.static_bytes = 100, l.activation_bytes = 50;
  const std::vector<double> in_flight = one_f_one_b_in_flight(2);
  for (std::size_t s = 0; s < 2; ++s) p.stages[s].in_flight = in_flight[s], p.stages[s].memory_bytes = 700;
  // Stage 0 holds 2 microbatches: 4 layers need 4 x (100 + 2 x 50) = 800 B > 700 B, 3 layers 600 B;
  // stage 1 with 5 layers: 5 x (100 + 50) = 750 B > 700 B. Nothing fits 4 | 4 or 3 | 5.
  EXPECT_THROW(partition_layers(p, "caps"), InputError);
  try {
    partition_layers(p, "caps");
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no partition of 8 layers into 2 stages fits: at best stage"), std::string::npos)
        << message;
    EXPECT_NE(message.find("B more than its 700 B"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  p.stages[1].memory_bytes = 750;  // now 3 | 5 fits
  const Partition part = partition_layers(p, "caps");
  EXPECT_EQ(part.first, (std::vector<int>{0, 3, 8}));
  EXPECT_EQ(part.stage_bytes, (std::vector<double>{600, 750}));
}

// Every composition of L layers into S non-empty stages, for the brute-force check.
void compositions(int layers, int stages, std::vector<int>& first, const std::function<void()>& visit) {
  const int s = static_cast<int>(first.size()) - 1;
  if (s == stages) {
    if (first.back() == layers) visit();
    return;
  }
  for (int next = first.back() + 1; next <= layers - (stages - s - 1); ++next) {
    first.push_back(next);
    compositions(layers, stages, first, visit);
    first.pop_back();
  }
}

TEST(Partition, MatchesBruteForceOnRandomHeterogeneousProblems) {
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  for (int trial = 0; trial < 200; ++trial) {
    const int layers = 3 + trial % 8, stages = 1 + trial % 3;
    if (layers < stages) continue;
    PartitionProblem p;
    for (int i = 0; i < layers; ++i) p.layers.push_back({u(rng), u(rng) * 0.2, u(rng) * 10, u(rng) * 5});
    for (int s = 0; s < stages; ++s)
      p.stages.push_back({u(rng), trial % 2 == 0 ? 0.0 : 25.0, double(stages - s), {}});
    double best = 1e300;
    std::vector<int> first{0};
    compositions(layers, stages, first, [&] {
      double worst = 0;
      for (int s = 0; s < stages; ++s) {
        double time = 0, bytes = 0;
        for (int i = first[s]; i < first[s + 1]; ++i)
          time += p.layers[i].time_s,
              bytes += p.layers[i].static_bytes + p.stages[s].in_flight * p.layers[i].activation_bytes;
        time /= p.stages[s].speed;
        if (s + 1 < stages) time += p.layers[first[s + 1] - 1].transfer_s;
        if (p.stages[s].memory_bytes > 0 && bytes > p.stages[s].memory_bytes) worst = 1e300;
        worst = std::max(worst, time);
      }
      best = std::min(best, worst);
    });
    SCOPED_TRACE("trial " + std::to_string(trial));
    if (best >= 1e300) {
      EXPECT_THROW(partition_layers(p, "random"), InputError);
    } else {
      EXPECT_NEAR(partition_layers(p, "random").bottleneck_s, best, 1e-12);
    }
  }
}

TEST(Partition, BadProblemsAreRefusedInOneLine) {
  auto refusal = [](const PartitionProblem& p) {
    try {
      partition_layers(p, "flags");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(layers_of({1, 2}, 3)).find("2 layers cannot fill 3 stages"), std::string::npos);
  PartitionProblem slow = layers_of({1, 2, 3}, 2);
  slow.stages[1].speed = 0;
  EXPECT_NE(refusal(slow).find("stage 1: speed must be > 0"), std::string::npos) << refusal(slow);
  PartitionProblem nan = layers_of({1, 2, 3}, 2);
  nan.layers[2].time_s = std::nan("");
  EXPECT_NE(refusal(nan).find("layer 2"), std::string::npos) << refusal(nan);
}

// Per-stage tensor-parallel degree with the split: four layers of 1 s on one device, 0.5 s on
// two (perfect scaling), two stages. With 2 devices both stages run at degree 1 (2 | 2 layers:
// 2 s); with 3, one stage doubles and takes 3 layers (1.5 s against 1 s; the tie between which
// stage goes to the stage with the smaller first boundary: stage 0 keeps 1 layer); with 4 both
// double (1 s).
TEST(Partition, TensorParallelDegreePerStageIsChosenWithTheSplit) {
  const std::vector<int> degrees = {1, 2};
  const std::vector<PartitionProblem> problems = {layers_of({1, 1, 1, 1}, 2),
                                                  layers_of({0.5, 0.5, 0.5, 0.5}, 2)};
  const TpPartition two = partition_layers_and_tp(degrees, problems, 2, "test");
  EXPECT_EQ(two.degree, (std::vector<int>{1, 1}));
  EXPECT_NEAR(two.partition.bottleneck_s, 2, 1e-9);
  const TpPartition three = partition_layers_and_tp(degrees, problems, 3, "test");
  EXPECT_EQ(three.degree, (std::vector<int>{1, 2}));
  EXPECT_EQ(three.partition.first, (std::vector<int>{0, 1, 4}));
  EXPECT_NEAR(three.partition.bottleneck_s, 1.5, 1e-9);
  EXPECT_EQ(three.devices, 3);
  const TpPartition four = partition_layers_and_tp(degrees, problems, 4, "test");
  EXPECT_EQ(four.degree, (std::vector<int>{2, 2}));
  EXPECT_NEAR(four.partition.bottleneck_s, 1, 1e-9);
  try {
    partition_layers_and_tp(degrees, problems, 1, "test");
    ADD_FAILURE() << "one device for two stages was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "test: 2 stages need at least 2 devices, there are 1");
  }
}

// Layer times per stage's device override speed: a device of another kind (fast at some layers,
// not others) is priced layer by layer.
TEST(Partition, StagesWithTheirOwnLayerTimes) {
  PartitionProblem p = layers_of({1, 1, 1, 1}, 2);
  p.stages[1].layer_time_s = {4, 4, 0.5, 0.5};  // stage 1's device is fast only at the last two
  const Partition part = partition_layers(p, "test");
  EXPECT_EQ(part.first, (std::vector<int>{0, 2, 4}));
  EXPECT_DOUBLE_EQ(part.bottleneck_s, 2);
}

}  // namespace
}  // namespace strata
