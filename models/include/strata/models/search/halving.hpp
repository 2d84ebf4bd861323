// The successive-halving family of hyperparameter-search policies (DESIGN.md, scheduling: the
// job level), as pure policies over trial results: no engine, no clock. `strata search` runs
// them over trials whose time comes from the simulator and whose accuracy comes from real
// training or learning-curve files.
//
// Every policy minimises a loss (pass 1 - accuracy, or a validation loss). Resources (epochs,
// iterations) are positive reals. Ties break to the lower trial id, so a search is a function of
// its inputs.
//
// - hyperband_brackets: Li et al., "Hyperband", JMLR 2018, Algorithm 1: s_max = floor(log_eta R),
//   B = (s_max + 1) R; bracket s in s_max..0 starts n = ceil(B/R * eta^s / (s + 1))
//   configurations at r = R eta^-s, and rung i keeps floor(n eta^-i) at r eta^i.
// - SuccessiveHalving (synchronous, one bracket): every trial of a rung reports, then the best
//   floor(n / eta) go on.
// - AshaPromotion: Li et al., "A System for Massively Parallel Hyperparameter Tuning", MLSys
//   2020, Algorithm 2: when a worker asks for a job, the highest rung k below the top that holds a
//   trial among its best floor(|rung k| / eta) not yet promoted promotes it to k + 1; otherwise a
//   new trial starts at rung 0.
// - AshaStopping: the stopping form as Ray Tune's AsyncHyperBandScheduler implements it (one
//   bracket): rung milestones grace * eta^k up to max_t; a trial's first result at or past a
//   milestone is compared with the rewards recorded there before it, and stopped when below
//   their (1 - 1/eta) percentile (numpy's linear interpolation); it is recorded either way.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace strata {
inline namespace models {

struct HalvingRung {
  std::int64_t configurations = 0;
  double resource = 0;  // per configuration, in the search's resource unit
};

struct HyperbandBracket {
  int s = 0;
  std::vector<HalvingRung> rungs;  // rung 0 first
};

// Throws InputError when max_resource < 1 or eta < 2.
std::vector<HyperbandBracket> hyperband_brackets(double max_resource, int eta);
// The configurations the brackets start (their rungs 0).
std::int64_t hyperband_configurations(const std::vector<HyperbandBracket>& brackets);

// The `keep` trials of least loss among `losses` (trial id -> loss), best first; ties to the
// lower id. O(n log n).
std::vector<int> best_trials(const std::map<int, double>& losses, std::size_t keep);

class AshaPromotion {
 public:
  // `top_rung`: the highest rung (rung k trains to min_resource eta^k); eta >= 2.
  AshaPromotion(int eta, int top_rung);

  struct Job {
    int trial = -1;  // the trial promoted, or -1: start a new trial
    int rung = 0;    // the rung to train it to
  };
  // What an idle worker runs next (Algorithm 2's get_job); a promotion is recorded as made.
  Job next_job();
  // A trial's loss at a rung.
  void report(int trial, int rung, double loss);

  int top_rung() const { return top_rung_; }
  // The trials promoted out of rung k.
  const std::set<int>& promoted(int rung) const { return promoted_.at(static_cast<std::size_t>(rung)); }

 private:
  int eta_;
  int top_rung_;
  // Per rung: trial -> loss, and the same results ordered (loss, trial) so that a job looks at
  // the best floor(n / eta) without sorting: O(promoted + 1) per rung and call.
  std::vector<std::map<int, double>> rungs_;
  std::vector<std::set<std::pair<double, int>>> ordered_;
  std::vector<std::set<int>> promoted_;
};

class AshaStopping {
 public:
  // Milestones grace * eta^k below or at max_t (Ray: int(log(max_t / grace) / log(eta)) + 1 of
  // them). Throws InputError unless 0 < grace <= max_t and eta >= 2.
  AshaStopping(double grace, double max_t, double eta);

  enum class Decision : std::uint8_t { go_on, stop };
  // A trial's loss after `time` units of resource. A result at or past max_t stops the trial.
  Decision on_result(int trial, double time, double loss);

  const std::vector<double>& milestones() const { return milestones_; }  // highest first

 private:
  double max_t_;
  double eta_;
  std::vector<double> milestones_;
  std::vector<std::set<int>> recorded_;       // per milestone: the trials recorded there
  std::vector<std::vector<double>> rewards_;  // per milestone: their rewards (-loss), sorted
};

// numpy.percentile(values, q) with its default linear interpolation; q in [0, 100]. NaN for no
// values.
double percentile_linear(std::vector<double> values, double q);
// The same of values already in ascending order.
double sorted_percentile(const std::vector<double>& values, double q);

}  // namespace models
}  // namespace strata
