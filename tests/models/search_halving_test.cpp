// The successive-halving policies against their papers' and Ray Tune's known answers
// (models/search/halving.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "strata/models/search/halving.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

// Li et al. (JMLR 2018), Table 1: R = 81, eta = 3.
TEST(Hyperband, BracketsOfRIs81AndEtaIs3AreThePapersTable) {
  const std::vector<HyperbandBracket> b = hyperband_brackets(81, 3);
  const std::vector<std::vector<std::pair<std::int64_t, double>>> expected = {
      {{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}},
      {{34, 3}, {11, 9}, {3, 27}, {1, 81}},
      {{15, 9}, {5, 27}, {1, 81}},
      {{8, 27}, {2, 81}},
      {{5, 81}}};
  ASSERT_EQ(b.size(), expected.size());
  for (std::size_t s = 0; s < b.size(); ++s) {
    EXPECT_EQ(b[s].s, 4 - static_cast<int>(s));
    ASSERT_EQ(b[s].rungs.size(), expected[s].size()) << "s = " << b[s].s;
    for (std::size_t i = 0; i < b[s].rungs.size(); ++i) {
      EXPECT_EQ(b[s].rungs[i].configurations, expected[s][i].first) << "s = " << b[s].s << ", rung " << i;
      EXPECT_DOUBLE_EQ(b[s].rungs[i].resource, expected[s][i].second) << "s = " << b[s].s << ", rung " << i;
    }
  }
  EXPECT_EQ(hyperband_configurations(b), 143);
}

TEST(Hyperband, OneBracketBelowEtaAndBadArgumentsAreRefused) {
  const std::vector<HyperbandBracket> b = hyperband_brackets(2, 3);  // s_max = 0: 1 config at R
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].rungs[0].configurations, 1);
  EXPECT_DOUBLE_EQ(b[0].rungs[0].resource, 2);
  EXPECT_THROW(hyperband_brackets(0.5, 3), InputError);
  EXPECT_THROW(hyperband_brackets(81, 1), InputError);
  EXPECT_THROW(hyperband_brackets(NAN, 3), InputError);
}

TEST(BestTrials, LeastLossFirstTiesToTheLowerId) {
  EXPECT_EQ(best_trials({{4, 0.2}, {1, 0.5}, {2, 0.2}, {3, 0.9}}, 3), (std::vector<int>{2, 4, 1}));
  EXPECT_EQ(best_trials({{1, 0.5}}, 3), (std::vector<int>{1}));
  EXPECT_TRUE(best_trials({}, 2).empty());
}

// The stream: rung-0 losses 0.5, 0.3, 0.9, 0.2, 0.8, 0.7, a worker asking for work after
// each. 0.3 goes up after the 3rd result (the best 1 of 3), 0.2 after the 4th (the best 1 of 4),
// nothing after the 5th (0.2 already went) nor the 6th (the best 2 of 6 both went).
TEST(AshaPromotion, PromotesAsAlgorithmTwoOfTheMlsysPaper) {
  AshaPromotion asha(3, 2);
  const std::vector<double> losses = {0.5, 0.3, 0.9, 0.2, 0.8, 0.7};
  std::vector<AshaPromotion::Job> jobs;
  for (std::size_t t = 0; t < losses.size(); ++t) {
    asha.report(static_cast<int>(t), 0, losses[t]);
    jobs.push_back(asha.next_job());
  }
  const std::vector<std::pair<int, int>> expected = {{-1, 0}, {-1, 0}, {1, 1}, {3, 1}, {-1, 0}, {-1, 0}};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].trial, expected[i].first) << "after result " << i + 1;
    EXPECT_EQ(jobs[i].rung, expected[i].second) << "after result " << i + 1;
  }
  EXPECT_EQ(asha.promoted(0), (std::set<int>{1, 3}));
  // Rung 1 fills: with 3 results there its best goes to the top rung before rung 0 is looked at.
  asha.report(1, 1, 0.25);
  asha.report(3, 1, 0.15);
  asha.report(7, 1, 0.4);
  const AshaPromotion::Job top = asha.next_job();
  EXPECT_EQ(top.trial, 3);
  EXPECT_EQ(top.rung, 2);
  EXPECT_THROW(asha.report(9, 3, 0.1), InputError);
  EXPECT_THROW(asha.report(9, 0, NAN), InputError);
  EXPECT_THROW(AshaPromotion(1, 2), InputError);
}

// The same stream through Ray Tune's AsyncHyperBandScheduler rule (grace 1, eta 3, max_t 81),
// each result at the first milestone. The cut-off is the 66.7th percentile of the rewards (-loss)
// recorded before: none (0.5 goes on); -0.5 (0.3 goes on); -0.3667 of {-0.5, -0.3} (0.9 stops);
// -0.4333 of {-0.9, -0.5, -0.3} (0.2 goes on); -0.3 of four (0.8 stops); -0.3667 of five (0.7
// stops).
TEST(AshaStopping, FollowsRayTunesPercentileCutoff) {
  AshaStopping asha(1, 81, 3);
  EXPECT_EQ(asha.milestones(), (std::vector<double>{81, 27, 9, 3, 1}));
  const std::vector<double> losses = {0.5, 0.3, 0.9, 0.2, 0.8, 0.7};
  const std::vector<AshaStopping::Decision> expected = {
      AshaStopping::Decision::go_on, AshaStopping::Decision::go_on, AshaStopping::Decision::stop,
      AshaStopping::Decision::go_on, AshaStopping::Decision::stop,  AshaStopping::Decision::stop};
  for (std::size_t t = 0; t < losses.size(); ++t)
    EXPECT_EQ(asha.on_result(static_cast<int>(t), 1, losses[t]), expected[t]) << "result " << t + 1;
  // A trial recorded at a milestone is not judged there again; past the next one it is.
  EXPECT_EQ(asha.on_result(1, 2, 0.95), AshaStopping::Decision::go_on);
  EXPECT_EQ(asha.on_result(1, 3, 0.3), AshaStopping::Decision::go_on);   // first at milestone 3
  EXPECT_EQ(asha.on_result(3, 3, 0.6), AshaStopping::Decision::stop);    // below -0.3's cut-off
  EXPECT_EQ(asha.on_result(0, 81, 0.01), AshaStopping::Decision::stop);  // max_t reached
  EXPECT_THROW(AshaStopping(0, 81, 3), InputError);
  EXPECT_THROW(AshaStopping(10, 5, 3), InputError);
}

TEST(Percentile, MatchesNumpysLinearInterpolation) {
  EXPECT_DOUBLE_EQ(percentile_linear({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile_linear({3, 1, 2}, 100), 3);
  EXPECT_DOUBLE_EQ(percentile_linear({3, 1, 2}, 0), 1);
  EXPECT_NEAR(percentile_linear({-0.5, -0.3}, 100 * 2.0 / 3), -0.5 + 0.2 * 2.0 / 3, 1e-12);
  EXPECT_TRUE(std::isnan(percentile_linear({}, 50)));
}

}  // namespace
}  // namespace strata
