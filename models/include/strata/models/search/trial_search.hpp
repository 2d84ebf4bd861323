// A hyperparameter search played out on a cluster (DESIGN.md, scheduling: the job level): trials
// occupy GPUs for as long as their epochs take, a policy decides which trial runs next and
// whether a trial goes on, pauses (checkpoints and gives up its GPUs) or ends, and the search
// reports time to the target accuracy, GPU-hours, the incumbent over time and the budget spent
// on trials ended early. Engine-free: a discrete-event loop over given epoch times, so the same
// search runs over times from strata's simulator or closed form, and over accuracies from real
// training, a curve file or the seeded family.
//
// Time: a trial that starts on free GPUs pays its restore time if it was paused before, then
// `epoch_s` per epoch; a trial that pauses pays its checkpoint time before its GPUs are free.
// A trial ends at `max_epochs`. Events at the same time are taken in trial-id order; a policy's
// choices break ties to the lower trial id; so a search is a function of its inputs.
//
// Policies (SearchPolicyKind):
// - random, grid: every trial trains to max_epochs (the baselines).
// - sha: one bracket of synchronous successive halving: n trials (settings.trials) to min_epochs,
//   then the best floor(n / eta) of each rung, once every trial of the rung reported, to the next
//   rung's epochs (min_epochs eta^k, at most max_epochs).
// - hyperband: the brackets of hyperband_brackets(max_epochs / min_epochs, eta) with resources in
//   units of min_epochs, each a synchronous SHA, one after another; a bracket's first rung starts
//   on GPUs the one before leaves idle while it waits for a rung to finish.
// - asha: ASHA's promotion (AshaPromotion), rung k at min_epochs eta^k, the top rung at
//   max_epochs; new trials while settings.trials allows.
// - asha-stop: Ray Tune's stopping rule (AshaStopping, grace min_epochs) after every epoch.
// - pop: HyperDrive's classes from each trial's curve (fit_pow3 after 3 epochs): P(accuracy at
//   max_epochs >= the best accuracy any trial has reached so far) decides (settings.pop's
//   thresholds): poor trials end; promising ones go on and resume first; an opportunistic trial
//   pauses when a new trial may still start or a promising one waits, and resumes on GPUs
//   nothing else wants.
// - pbt: Population Based Training (pbt_step in space.hpp): a population of settings.trials
//   members, each checkpointed every `pbt_interval` epochs (checkpoint_s); at that point a member
//   in the lower quantile takes a member of the upper quantile's checkpoint (restore_s) and its
//   perturbed assignment, and goes on from that member's epoch; it ends at max_epochs. When the
//   population does not fit the cluster, a member at a checkpoint pauses if another waits with
//   fewer epochs, and the member with fewest epochs resumes first (ties: the lower id).
//   A member's accuracy after such a clone is its lineage's (TrialSource::lineage_accuracy), by
//   default the progress-equivalent model of lineage_accuracy() below.
//   Cost: each checkpoint ranks the population (pbt_step), O(n log n) for n members, so a search
//   is O(n² log n · max_epochs / interval); PBT populations are tens to hundreds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/search/curves.hpp"
#include "strata/models/search/space.hpp"

namespace strata {
inline namespace models {

enum class SearchPolicyKind : std::uint8_t { random, grid, sha, hyperband, asha, asha_stop, pop, pbt };
std::optional<SearchPolicyKind> parse_search_policy(std::string_view text);
std::string_view to_string(SearchPolicyKind kind);

// What a trial costs on the cluster.
struct TrialCost {
  int gpus = 1;
  double epoch_s = 0;       // > 0
  double checkpoint_s = 0;  // >= 0
  double restore_s = 0;     // >= 0
};

// A PBT member's history: the assignments its model trained under, in order, and for how many
// epochs each (a clone copies the source's segments and starts a new one).
struct LineageSegment {
  Assignment assignment;
  int epochs = 0;
};
using Lineage = std::vector<LineageSegment>;

// Where trials come from: the next assignment to try (nullopt when the space is exhausted: a
// grid's end, a curve file's last curve), its cost, and its accuracy after an epoch (1-based);
// optionally, for pbt, the accuracy of a lineage after its last epoch (real training resumed from
// checkpoints: asked for every epoch of every member), else lineage_accuracy() over `accuracy`.
struct TrialSource {
  std::function<std::optional<Assignment>()> next;
  std::function<TrialCost(const Assignment&)> cost;
  std::function<double(const Assignment&, int epoch)> accuracy;
  std::function<double(const Lineage&)> lineage_accuracy;
};

// The progress-equivalent model of a lineage's accuracy where only each assignment's own curve
// is known: a model of accuracy a continuing under assignment A is where A's curve first reaches
// a (its equivalent epoch e, the curve taken as 0 before epoch 1), and k epochs later it is A's
// accuracy at e + k (at most max_epochs); if A's curve never reaches a within max_epochs the
// model stays at a. One segment: the curve itself. O(segments × max_epochs) calls of `accuracy`.
double lineage_accuracy(const Lineage& lineage, int max_epochs,
                        const std::function<double(const Assignment&, int epoch)>& accuracy);

struct SearchSettings {
  SearchPolicyKind policy = SearchPolicyKind::asha;
  int cluster_gpus = 8;
  int max_epochs = 27;  // R
  int min_epochs = 1;   // r, the grace period
  int eta = 3;
  int trials = 64;                 // most trials started (random, asha, asha-stop, pop; sha's n)
  double budget_gpu_s = INFINITY;  // no epoch starts once this much GPU time is spent
  double target_accuracy = 1.0;    // time to target: the first epoch at or above it
  PopThresholds pop;
  // pbt: its settings, the epochs between checkpoints (0: min_epochs), the space it perturbs
  // (at least one numeric domain) and the seed of its draws.
  PbtSettings pbt;
  int pbt_interval = 0;
  std::vector<Domain> space;
  std::uint64_t seed = 0;
};

enum class TrialEnd : std::uint8_t { completed, stopped, unfinished };

struct TrialRecord {
  int id = 0;
  Assignment assignment;
  TrialCost cost;
  std::vector<double> accuracy;  // per epoch trained
  double gpu_s = 0;              // GPU time it held (epochs, checkpoints, restores)
  TrialEnd end = TrialEnd::unfinished;
  std::optional<CurveClass> last_class;  // pop: its last class
  int clones = 0;                        // pbt: how often it took another member's checkpoint
  double best() const;
};

struct SearchResult {
  std::vector<TrialRecord> trials;  // by id
  double makespan_s = 0;
  double gpu_s = 0;
  double ended_early_gpu_s = 0;  // GPU time of trials stopped before max_epochs
  std::optional<double> time_to_target_s;
  double best_accuracy = 0;
  int best_trial = -1;
  std::vector<std::pair<double, double>> incumbent;  // (time s, best accuracy so far), at each rise
};

// Throws InputError for settings out of range (min_epochs > max_epochs, eta < 2, no GPU, a trial
// needing more GPUs than the cluster has, a budget below one epoch of the first trial, pbt over a
// space without a numeric domain) naming the setting.
SearchResult run_search(const SearchSettings& settings, const TrialSource& source);

}  // namespace models
}  // namespace strata
