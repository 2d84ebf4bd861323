// Learning curves: the curve file, the seeded family and pop's pow3 model
// (models/search/curves.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "strata/models/search/curves.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_curves(nlohmann::json::parse(text), "c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CurveFile, ReadsCurvesAndRefusesBadOnesNamingThePlace) {
  const std::vector<LearningCurve> c = parse_curves(nlohmann::json::parse(R"({
    "format": "strata-curves", "schema_version": 1, "source": "a test",
    "curves": [{"assignment": {"lr": "0.1", "width": 64}, "accuracy": [0.5, 0.7]},
               {"assignment": {"lr": "0.01", "width": 64}, "accuracy": [0.4]}]})"),
                                                    "c.json");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].assignment.at("width"), "64");
  EXPECT_EQ(c[0].accuracy, (std::vector<double>{0.5, 0.7}));
  const std::string head = R"({"format": "strata-curves", "schema_version": 1, "curves": )";
  EXPECT_NE(parse_error(head + "[]}").find("c.json: /curves: no curve"), std::string::npos);
  EXPECT_NE(parse_error(head + R"([{"assignment": {"lr": "1"}, "accuracy": [1.5]}]})")
                .find("/curves/0/accuracy/0: an accuracy is in [0, 1]"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"([{"assignment": {"lr": "1"}, "accuracy": []}]})").find("no epoch"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"([{"assignment": {"lr": "1"}, "accuracy": [0.1]},
                                   {"assignment": {"lr": "1"}, "accuracy": [0.2]}]})")
                .find("/curves/1/assignment: the same assignment as an earlier curve"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"([{"assignment": {"lr": "1"}, "accuracy": [0.1]},
                                   {"assignment": {"wd": "1"}, "accuracy": [0.2]}]})")
                .find("its keys differ from the first curve's"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"format": "strata-curves", "schema_version": 2, "curves": []})").find("version"),
            std::string::npos);
}

TEST(CurveFamily, OneCurvePerAssignmentAndSeedInItsRanges) {
  const CurveFamily f;
  const Assignment a{{"lr", "0.1"}}, b{{"lr", "0.2"}};
  const std::vector<double> ca = family_curve(f, a, 1, 50);
  EXPECT_EQ(ca, family_curve(f, a, 1, 50));
  EXPECT_NE(ca, family_curve(f, b, 1, 50));
  EXPECT_NE(ca, family_curve(f, a, 2, 50));
  ASSERT_EQ(ca.size(), 50u);
  EXPECT_LT(ca.front(), ca.back());
  EXPECT_GE(ca.back(), f.c_lo - f.a_hi * std::pow(50, -f.alpha_lo) - 5 * f.noise);
  EXPECT_LE(ca.back(), f.c_hi + 5 * f.noise);
}

// A noiseless pow3 curve is recovered (alpha on the fit's grid), and its prediction at epoch 50
// is certain up to the noise floor: P(>= mean - 2 floor) is about 97.7 %.
TEST(CurveFit, RecoversAPow3CurveAndPredictsWithItsUncertainty) {
  const double c = 0.9, a = 0.5, alpha = 0.05 * std::pow(4 / 0.05, 30.0 / 79);
  std::vector<double> y;
  for (int t = 1; t <= 10; ++t) y.push_back(c - a * std::pow(t, -alpha));
  const CurveFit fit = fit_pow3(y);
  ASSERT_TRUE(fit.fitted);
  EXPECT_NEAR(fit.c, c, 1e-9);
  EXPECT_NEAR(fit.a, a, 1e-9);
  EXPECT_NEAR(fit.alpha, alpha, 1e-12);
  EXPECT_NEAR(fit.mean(50), c - a * std::pow(50, -alpha), 1e-9);
  EXPECT_GT(fit.stddev(50), 0.005);  // the floor, widened by the extrapolation
  EXPECT_GT(probability_at_least(fit, 50, fit.mean(50) - 2 * 0.005), 0.9);
  EXPECT_NEAR(probability_at_least(fit, 50, fit.mean(50)), 0.5, 1e-12);
  EXPECT_LT(probability_at_least(fit, 50, fit.mean(50) + 0.1), 0.01);
  // Fewer than three epochs: no fit, an even chance.
  EXPECT_FALSE(fit_pow3({0.5, 0.6}).fitted);
  EXPECT_DOUBLE_EQ(probability_at_least(fit_pow3({0.5, 0.6}), 50, 0.9), 0.5);
  // Noisier curves predict less surely.
  std::vector<double> noisy = y;
  for (std::size_t i = 0; i < noisy.size(); ++i) noisy[i] += i % 2 == 0 ? 0.03 : -0.03;
  EXPECT_GT(fit_pow3(noisy).stddev(50), 2 * fit.stddev(50));
}

TEST(CurveFit, ClassifiesByThresholds) {
  const PopThresholds t;
  EXPECT_EQ(classify(0.7, t), CurveClass::promising);
  EXPECT_EQ(classify(0.5, t), CurveClass::promising);
  EXPECT_EQ(classify(0.2, t), CurveClass::opportunistic);
  EXPECT_EQ(classify(0.05, t), CurveClass::opportunistic);
  EXPECT_EQ(classify(0.049, t), CurveClass::poor);
  EXPECT_EQ(to_string(CurveClass::opportunistic), "opportunistic");
}

}  // namespace
}  // namespace strata
