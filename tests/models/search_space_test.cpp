// Search spaces, their samplers and PBT's step (models/search/space.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "strata/models/search/space.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

const nlohmann::json kSpace = nlohmann::json::parse(R"({
  "lr": {"log_uniform": [1e-4, 1e-1]}, "momentum": {"uniform": [0.5, 0.9]},
  "width": {"integer": [16, 256]}, "optimizer": {"choice": ["sgd", "adam"]}})");

TEST(SearchSpace, ParsesEveryDomainInKeyOrder) {
  const std::vector<Domain> space = parse_space(kSpace, "s.json: /search/space");
  ASSERT_EQ(space.size(), 4u);
  EXPECT_EQ(space[0].key, "lr");
  EXPECT_EQ(space[0].kind, DomainKind::log_uniform);
  EXPECT_EQ(space[1].key, "momentum");
  EXPECT_EQ(space[2].key, "optimizer");
  EXPECT_EQ(space[2].choices, (std::vector<std::string>{"sgd", "adam"}));
  EXPECT_EQ(space[3].key, "width");
  EXPECT_DOUBLE_EQ(space[3].hi, 256);
}

TEST(SearchSpace, BadSpacesAreOneLineNamingThePlace) {
  const auto error = [](const std::string& text) {
    try {
      parse_space(nlohmann::json::parse(text), "s.json: /search/space");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("{}"), "s.json: /search/space: a search space is a non-empty object of keys and domains");
  EXPECT_EQ(
      error(R"({"lr": {"normal": [0, 1]}})"),
      "s.json: /search/space/lr: unknown domain 'normal' (known: choice, integer, log_uniform, uniform)");
  EXPECT_EQ(error(R"({"lr": {"uniform": [1, 0]}})"),
            "s.json: /search/space/lr/uniform: need finite lo <= hi");
  EXPECT_EQ(error(R"({"lr": {"log_uniform": [0, 1]}})"), "s.json: /search/space/lr/log_uniform: need lo > 0");
  EXPECT_EQ(error(R"({"w": {"integer": [1.5, 4]}})"),
            "s.json: /search/space/w/integer: bounds must be whole numbers");
  EXPECT_EQ(error(R"({"o": {"choice": []}})"), "s.json: /search/space/o/choice: a non-empty list of values");
  EXPECT_EQ(error(R"({"o": {"choice": ["a", "a"]}})"), "s.json: /search/space/o/choice: a is listed twice");
  EXPECT_EQ(error(R"({"lr": {"uniform": [0, 1], "choice": [1]}})").substr(0, 30),
            "s.json: /search/space/lr: a do");
}

// Draws stay in their domains, cover them, and the same seed gives the same assignments.
TEST(SearchSpace, SamplesStayInTheirDomainsAndRepeatWithTheSeed) {
  const std::vector<Domain> space = parse_space(kSpace, "s");
  std::mt19937_64 rng(7), again(7);
  std::set<std::string> optimizers;
  double lr_lo = 1, lr_hi = 0, below_1e3 = 0;
  for (int i = 0; i < 2000; ++i) {
    const Assignment a = sample_assignment(space, rng);
    EXPECT_EQ(a, sample_assignment(space, again));
    const double lr = std::stod(a.at("lr"));
    lr_lo = std::min(lr_lo, lr);
    lr_hi = std::max(lr_hi, lr);
    below_1e3 += lr < 1e-3 ? 1 : 0;
    const int width = std::stoi(a.at("width"));
    EXPECT_GE(width, 16);
    EXPECT_LE(width, 256);
    EXPECT_EQ(a.at("width"), std::to_string(width));
    optimizers.insert(a.at("optimizer"));
  }
  EXPECT_GE(lr_lo, 1e-4);
  EXPECT_LT(lr_hi, 1e-1);
  // Log-uniform: a third of the draws below 1e-3 (one decade of three), within sampling error.
  EXPECT_NEAR(below_1e3 / 2000, 1.0 / 3, 0.04);
  EXPECT_EQ(optimizers.size(), 2u);
}

TEST(SearchSpace, GridCrossesEveryValueAndRefusesAboveItsLimit) {
  const std::vector<Domain> space = parse_space(kSpace, "s");
  const std::vector<Assignment> grid = grid_assignments(space, 3, 1000);
  ASSERT_EQ(grid.size(), 3u * 3 * 2 * 3);
  EXPECT_EQ(grid.front().at("lr"), "0.0001");
  EXPECT_EQ(grid.front().at("width"), "16");
  EXPECT_EQ(grid[1].at("width"), "136");  // the last key fastest
  EXPECT_EQ(grid.back().at("lr"), "0.1");
  EXPECT_EQ(grid[18].at("lr"), "0.00316228");  // the middle of the decades
  EXPECT_THROW(grid_assignments(space, 3, 10), InputError);
  // Whole numbers repeat on a narrow range: deduplicated.
  const std::vector<Domain> narrow = parse_space(nlohmann::json::parse(R"({"w": {"integer": [1, 2]}})"), "s");
  EXPECT_EQ(grid_assignments(narrow, 5, 10).size(), 2u);
}

// Eight trials with losses 0.1 .. 0.8: the quantile is ceil(8 x 0.25) = 2. Trials 6 and 7 (the
// worst two) clone trial 0 or 1 and perturb; the others go on.
TEST(Pbt, TheLowerQuantileClonesTheUpperAndPerturbs) {
  const std::vector<Domain> space = parse_space(kSpace, "s");
  std::map<int, double> losses;
  std::map<int, Assignment> assignments;
  std::mt19937_64 rng(3);
  for (int t = 0; t < 8; ++t) {
    losses[t] = 0.1 * (t + 1);
    assignments[t] = sample_assignment(space, rng);
  }
  for (int t = 0; t < 6; ++t)
    EXPECT_FALSE(pbt_step(t, losses, assignments, space, PbtSettings{}, rng).exploit);
  std::set<int> donors;
  int moved = 0, kept_in_bounds = 0;
  for (int round = 0; round < 200; ++round) {
    const PbtStep step = pbt_step(7, losses, assignments, space, PbtSettings{}, rng);
    ASSERT_TRUE(step.exploit);
    donors.insert(step.clone_from);
    const double lr = std::stod(step.assignment.at("lr")),
                 old = std::stod(assignments[step.clone_from].at("lr"));
    moved += std::fabs(lr - old * 0.8) < 1e-6 * old || std::fabs(lr - old * 1.2) < 1e-6 * old ? 1 : 0;
    kept_in_bounds += lr >= 1e-4 && lr <= 1e-1 ? 1 : 0;
  }
  EXPECT_EQ(donors, (std::set<int>{0, 1}));
  EXPECT_EQ(kept_in_bounds, 200);
  // Three in four draws perturb by 0.8 or 1.2 (the rest resample, or are clipped at a bound).
  EXPECT_GT(moved, 120);
  // Two trials: the quantile is at most n / 2 = 1; one trial: nothing to clone from.
  EXPECT_TRUE(pbt_step(1, {{0, 0.1}, {1, 0.2}}, assignments, space, PbtSettings{}, rng).exploit);
  EXPECT_FALSE(pbt_step(0, {{0, 0.1}}, assignments, space, PbtSettings{}, rng).exploit);
}

TEST(Pbt, ASpaceOfChoicesAloneIsRefused) {
  const std::vector<Domain> choices =
      parse_space(nlohmann::json::parse(R"({"optimizer": {"choice": ["sgd", "adam"]}})"), "s");
  try {
    check_pbt_space(choices, "search.json: /search/space");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "search.json: /search/space: pbt perturbs numbers (x0.8, x1.2); this space has choices only");
  }
}

}  // namespace
}  // namespace strata
