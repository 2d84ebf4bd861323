// Searches played out on a cluster (models/search/trial_search.hpp): times, GPU time and the
// trials each policy keeps, against figures derived by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/models/search/trial_search.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

// Trials named "0", "1", ... with quality q = (i + 1) / n: accuracy q (1 - 0.5 / epoch), so a
// better trial is better at every epoch; one GPU each, `epoch_s` per epoch.
TrialSource ladder(int n, double epoch_s, double checkpoint_s = 0, double restore_s = 0) {
  auto next = std::make_shared<int>(0);
  TrialSource s;
  s.next = [next, n]() -> std::optional<Assignment> {
    if (*next >= n) return std::nullopt;
    return Assignment{{"trial", std::to_string((*next)++)}};
  };
  s.cost = [=](const Assignment&) { return TrialCost{1, epoch_s, checkpoint_s, restore_s}; };
  s.accuracy = [n](const Assignment& a, int epoch) {
    const double q = (std::stoi(a.at("trial")) + 1.0) / n;
    return q * (1 - 0.5 / epoch);
  };
  return s;
}

SearchSettings settings(SearchPolicyKind policy, int gpus, int max_epochs, int trials) {
  SearchSettings s;
  s.policy = policy;
  s.cluster_gpus = gpus;
  s.max_epochs = max_epochs;
  s.min_epochs = 1;
  s.eta = 3;
  s.trials = trials;
  return s;
}

// 4 trials of 3 epochs on 2 GPUs: two waves of 30 s. Trial 3 (q = 1) reaches 0.8 at its 3rd
// epoch (1 - 0.5/3 = 0.833 >= 0.8): 60 s; trial 2 (q = 0.75) never does.
TEST(TrialSearch, RandomTrainsEveryTrialToTheEnd) {
  SearchSettings s = settings(SearchPolicyKind::random, 2, 3, 4);
  s.target_accuracy = 0.8;
  const SearchResult r = run_search(s, ladder(4, 10));
  EXPECT_DOUBLE_EQ(r.makespan_s, 60);
  EXPECT_DOUBLE_EQ(r.gpu_s, 120);
  ASSERT_TRUE(r.time_to_target_s);
  EXPECT_DOUBLE_EQ(*r.time_to_target_s, 60);
  EXPECT_EQ(r.best_trial, 3);
  EXPECT_NEAR(r.best_accuracy, 1 - 0.5 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(r.ended_early_gpu_s, 0);
  for (const TrialRecord& t : r.trials) EXPECT_EQ(t.end, TrialEnd::completed);
  // The incumbent rises: trial 0 and 1's first epochs at 10 s (0.125, then 0.25), ...
  ASSERT_FALSE(r.incumbent.empty());
  EXPECT_DOUBLE_EQ(r.incumbent.front().first, 10);
  EXPECT_DOUBLE_EQ(r.incumbent.back().second, r.best_accuracy);
}

// One bracket, n = 9, eta = 3, epochs 1, 3, 9 on one GPU: 9 epochs, then 3 trials from epoch 1
// to 3 (6), then 1 from 3 to 9 (6): 21 s of epochs. Every trial of rungs 0 and 1 pauses (12
// checkpoints of 0.5 s); 3 + 1 resume (0.25 s each): 21 + 6 + 1 = 28 s. The best (trial 8) wins;
// 6 trials end after 1 epoch and 2 after 3: 12 epochs and 8 checkpoints ended early.
TEST(TrialSearch, SynchronousHalvingKeepsTheBestThirdOfEachRung) {
  const SearchResult r = run_search(settings(SearchPolicyKind::sha, 1, 9, 9), ladder(9, 1, 0.5, 0.25));
  EXPECT_DOUBLE_EQ(r.makespan_s, 28);
  EXPECT_DOUBLE_EQ(r.gpu_s, 28);
  EXPECT_EQ(r.best_trial, 8);
  std::map<std::size_t, int> by_epochs;
  for (const TrialRecord& t : r.trials) ++by_epochs[t.accuracy.size()];
  EXPECT_EQ(by_epochs, (std::map<std::size_t, int>{{1, 6}, {3, 2}, {9, 1}}));
  EXPECT_EQ(r.trials[8].end, TrialEnd::completed);
  EXPECT_EQ(r.trials[0].end, TrialEnd::stopped);
  // Ended early: 6 x (1 + 0.5) + 2 x (0.25 + 2 + 0.5 + 1 ... ) is what each held; by epochs:
  double early = 0;
  for (const TrialRecord& t : r.trials)
    if (t.end == TrialEnd::stopped) early += t.gpu_s;
  EXPECT_DOUBLE_EQ(r.ended_early_gpu_s, early);
  EXPECT_DOUBLE_EQ(early, 6 * 1.5 + 2 * (1 + 0.5 + 0.25 + 2 + 0.5));
}

// R = 9, eta = 3: brackets 9@1 3@3 1@9, 5@3 1@9, 3@9 (17 trials). On one GPU without checkpoint
// costs the GPU never idles: 21 + 21 + 27 = 69 epochs.
TEST(TrialSearch, HyperbandRunsItsBracketsOnAfterAnother) {
  const SearchResult r = run_search(settings(SearchPolicyKind::hyperband, 1, 9, 100), ladder(17, 1));
  EXPECT_EQ(r.trials.size(), 17u);
  EXPECT_DOUBLE_EQ(r.makespan_s, 69);
  int completed = 0;
  for (const TrialRecord& t : r.trials) completed += t.end == TrialEnd::completed ? 1 : 0;
  EXPECT_EQ(completed, 1 + 1 + 3);
  EXPECT_EQ(r.best_trial, 16);  // the last bracket trains its 3 trials (14, 15, 16) to the end
}

// ASHA on one GPU: every trial stops at a rung (1, 3 or 9 epochs); the GPU never idles; the best
// trial is promoted up to the top rung.
TEST(TrialSearch, AshaPromotesAsTrialsReport) {
  const SearchResult r = run_search(settings(SearchPolicyKind::asha, 1, 9, 12), ladder(12, 1));
  EXPECT_EQ(r.trials.size(), 12u);
  double epochs = 0;
  for (const TrialRecord& t : r.trials) {
    const std::size_t e = t.accuracy.size();
    EXPECT_TRUE(e == 1 || e == 3 || e == 9) << "trial " << t.id << ": " << e << " epochs";
    epochs += static_cast<double>(e);
  }
  EXPECT_DOUBLE_EQ(r.makespan_s, epochs);
  EXPECT_EQ(r.trials[11].accuracy.size(), 9u);
}

// asha-stop on a ladder of rising quality: each new trial is the best so far, so none is below
// the cut-off at its milestones; on a falling ladder every trial after the first two stops at
// epoch 1.
TEST(TrialSearch, AshaStopEndsTrialsBelowTheCutoff) {
  const SearchResult rising = run_search(settings(SearchPolicyKind::asha_stop, 1, 9, 5), ladder(5, 1));
  for (const TrialRecord& t : rising.trials) EXPECT_EQ(t.end, TrialEnd::completed) << t.id;
  TrialSource falling = ladder(5, 1);
  falling.accuracy = [](const Assignment& a, int epoch) {
    return (5.0 - std::stoi(a.at("trial"))) / 5 * (1 - 0.5 / epoch);
  };
  const SearchResult r = run_search(settings(SearchPolicyKind::asha_stop, 1, 9, 5), falling);
  EXPECT_EQ(r.trials[0].end, TrialEnd::completed);
  for (std::size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(r.trials[i].end, TrialEnd::stopped) << i;
    EXPECT_EQ(r.trials[i].accuracy.size(), 1u) << i;
  }
  EXPECT_GT(r.ended_early_gpu_s, 0);
}

// pop on trials whose curves flatten far below the first one's: each is poor by its third epoch
// and ends, so the search spends far less than training all to the end.
TEST(TrialSearch, PopEndsPoorTrialsEarly) {
  const auto source = [] {
    TrialSource s = ladder(8, 1);
    s.accuracy = [](const Assignment& a, int epoch) {
      const double top = std::stoi(a.at("trial")) == 0 ? 0.9 : 0.5;
      return top - 0.4 * std::pow(epoch, -1.0);
    };
    return s;
  };
  const SearchResult pop = run_search(settings(SearchPolicyKind::pop, 1, 20, 8), source());
  const SearchResult all = run_search(settings(SearchPolicyKind::random, 1, 20, 8), source());
  EXPECT_EQ(pop.best_trial, 0);
  EXPECT_DOUBLE_EQ(pop.best_accuracy, all.best_accuracy);
  for (std::size_t i = 1; i < 8; ++i) {
    EXPECT_EQ(pop.trials[i].end, TrialEnd::stopped) << i;
    EXPECT_EQ(pop.trials[i].last_class, CurveClass::poor) << i;
    EXPECT_EQ(pop.trials[i].accuracy.size(), 3u) << i;
  }
  EXPECT_DOUBLE_EQ(pop.gpu_s, 20 + 7 * 3);
  EXPECT_DOUBLE_EQ(all.gpu_s, 8 * 20);
}

TEST(TrialSearch, BudgetsAndBadSettingsAreRefusedOrHonoured) {
  SearchSettings s = settings(SearchPolicyKind::random, 1, 3, 4);
  s.budget_gpu_s = 5;  // 5 epochs of 1 s: trial 0 completes, trial 1 stops after 2
  const SearchResult r = run_search(s, ladder(4, 1));
  EXPECT_DOUBLE_EQ(r.gpu_s, 5);
  ASSERT_EQ(r.trials.size(), 2u);
  EXPECT_EQ(r.trials[0].end, TrialEnd::completed);
  EXPECT_EQ(r.trials[1].end, TrialEnd::unfinished);
  s.budget_gpu_s = 0.5;
  EXPECT_THROW(run_search(s, ladder(4, 1)), InputError);
  SearchSettings bad = settings(SearchPolicyKind::asha, 0, 3, 4);
  EXPECT_THROW(run_search(bad, ladder(4, 1)), InputError);
  bad = settings(SearchPolicyKind::asha, 1, 3, 4);
  bad.min_epochs = 5;
  EXPECT_THROW(run_search(bad, ladder(4, 1)), InputError);
  TrialSource wide = ladder(4, 1);
  wide.cost = [](const Assignment&) { return TrialCost{4, 1, 0, 0}; };
  EXPECT_THROW(run_search(settings(SearchPolicyKind::asha, 2, 3, 4), wide), InputError);
  EXPECT_EQ(parse_search_policy("asha-stop"), SearchPolicyKind::asha_stop);
  EXPECT_FALSE(parse_search_policy("bayes"));
}

// The progress-equivalent model: A = [0.5, 0.6, 0.7, 0.8], B = [0.3, 0.55, 0.65, 0.9],
// C = [0.1, 0.2, 0.3, 0.4]. A for 2 epochs (0.6), then B: B first reaches 0.6 at its 3rd epoch,
// one more is its 4th, 0.9. B for 1 (0.3) then A: A reaches 0.3 at once, one more: 0.6. A for 3
// (0.7) then C, which never reaches 0.7: the model stays at 0.7.
TEST(TrialSearch, LineageAccuracyFollowsTheNewCurveFromWhereItReachesTheState) {
  const std::map<std::string, std::vector<double>> curves = {
      {"A", {0.5, 0.6, 0.7, 0.8}}, {"B", {0.3, 0.55, 0.65, 0.9}}, {"C", {0.1, 0.2, 0.3, 0.4}}};
  const auto accuracy = [&](const Assignment& a, int e) { return curves.at(a.at("x")).at(e - 1); };
  const auto seg = [](const char* x, int epochs) { return LineageSegment{{{"x", x}}, epochs}; };
  EXPECT_DOUBLE_EQ(lineage_accuracy({seg("A", 3)}, 4, accuracy), 0.7);
  EXPECT_DOUBLE_EQ(lineage_accuracy({seg("A", 2), seg("B", 1)}, 4, accuracy), 0.9);
  EXPECT_DOUBLE_EQ(lineage_accuracy({seg("B", 1), seg("A", 1)}, 4, accuracy), 0.6);
  EXPECT_DOUBLE_EQ(lineage_accuracy({seg("A", 3), seg("C", 1)}, 4, accuracy), 0.7);
  EXPECT_DOUBLE_EQ(lineage_accuracy({seg("B", 1), seg("A", 0)}, 4, accuracy), 0.3);
}

// Two members on two GPUs, 10 s epochs, q = 0.2 and 0.9 with accuracy q·e/3, PBT every epoch,
// quantile 0.5, no resampling. At 20 s member 0 (loss 0.867 after 2 epochs) is below member 1
// (0.7 after its first): it takes member 1's checkpoint (its one epoch, 0.3) and q = 0.9 × 0.8 or
// × 1.2 (kept within [0.1, 1]): 0.72 reaches 0.3 at its 2nd epoch, so its next epoch is its 3rd,
// 0.72, and it stays there; 1 reaches 0.3 at its 1st: then 0.667 and 1. Member 1 trains on to
// 0.9 at 30 s; member 0 ends its 3rd model epoch at 40 s.
TEST(TrialSearch, PbtClonesTheBetterMemberAndFollowsItsLineage) {
  const std::vector<Domain> space =
      parse_space(nlohmann::json::parse(R"({"q": {"uniform": [0.1, 1]}})"), "t");
  auto next = std::make_shared<int>(0);
  TrialSource src;
  src.next = [next]() -> std::optional<Assignment> {
    const int i = (*next)++;
    return Assignment{{"q", i == 0 ? "0.2" : "0.9"}};
  };
  src.cost = [](const Assignment&) { return TrialCost{1, 10, 0, 0}; };
  src.accuracy = [](const Assignment& a, int e) { return std::stod(a.at("q")) * e / 3; };
  SearchSettings s = settings(SearchPolicyKind::pbt, 2, 3, 2);
  s.space = space;
  s.pbt.quantile = 0.5;
  s.pbt.resample = 0;
  s.pbt_interval = 1;
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    s.seed = seed;
    const SearchResult r = run_search(s, src);
    *next = 0;
    ASSERT_EQ(r.trials.size(), 2u);
    const TrialRecord& m0 = r.trials[0];
    const TrialRecord& m1 = r.trials[1];
    EXPECT_EQ(m0.clones, 1);
    EXPECT_EQ(m1.clones, 0);
    EXPECT_EQ(m1.accuracy, (std::vector<double>{0.3, 0.6, 0.9}));
    ASSERT_EQ(m0.accuracy.size(), 3u);
    EXPECT_DOUBLE_EQ(m0.accuracy[0], 0.3);
    const std::string q = m0.assignment.at("q");
    ASSERT_TRUE(q == "0.72" || q == "1") << q;
    if (q == "0.72") {
      EXPECT_NEAR(m0.accuracy[1], 0.72, 1e-12);
      EXPECT_NEAR(m0.accuracy[2], 0.72, 1e-12);
    } else {
      EXPECT_NEAR(m0.accuracy[1], 2.0 / 3, 1e-12);
      EXPECT_NEAR(m0.accuracy[2], 1.0, 1e-12);
    }
    EXPECT_EQ(m0.end, TrialEnd::completed);
    EXPECT_DOUBLE_EQ(r.makespan_s, 40);
    EXPECT_DOUBLE_EQ(r.gpu_s, 70);  // member 0: 2 epochs, 2 after the clone; member 1: 3
  }
  // A source that trains lineages itself is asked for every epoch of every member.
  int asked = 0;
  src.lineage_accuracy = [&](const Lineage& l) {
    ++asked;
    int epochs = 0;
    for (const LineageSegment& seg : l) epochs += seg.epochs;
    return std::stod(l.back().assignment.at("q")) * epochs / 3;
  };
  s.seed = 1;
  const SearchResult hooked = run_search(s, src);
  *next = 0;
  EXPECT_EQ(asked, 7);  // member 0: 2, then 2 after the clone; member 1: 3
  // Over a space of choices alone there is nothing to perturb.
  s.space = parse_space(nlohmann::json::parse(R"({"q": {"choice": ["0.2", "0.9"]}})"), "t");
  try {
    run_search(s, src);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("search: pbt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata
