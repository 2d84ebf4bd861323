// A hyperparameter search played out on a cluster: see trial_search.hpp.
#include "strata/models/search/trial_search.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#include "strata/models/search/halving.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

struct Work {
  int trial = -1;
  int until = 0;  // the epoch it trains to before its policy looks at it again
};

enum class Step : std::uint8_t { go_on, pause, end, checkpoint_go_on };

struct Live {
  TrialRecord rec;
  int until = 0;
  bool paused = false;       // checkpointed, GPUs given up; resumes with a restore
  bool finished = false;     // completed or ended
  double probability = 0.5;  // pop: P(reaching the incumbent) at its last epoch
  bool reload = false;       // pbt: restores another member's checkpoint before its next epoch
  int held = 0;              // GPUs it holds now
  Lineage lineage;           // pbt: what its model trained under
};

struct State {
  const SearchSettings& settings;
  const TrialSource& source;
  std::vector<Live> trials;
  bool exhausted = false;
  double best_accuracy = 0;

  // A new trial from the source, or -1 (the trial cap reached, the source exhausted).
  int new_trial() {
    if (exhausted || static_cast<int>(trials.size()) >= settings.trials) return -1;
    std::optional<Assignment> a = source.next();
    if (!a) {
      exhausted = true;
      return -1;
    }
    Live t;
    t.rec.id = static_cast<int>(trials.size());
    t.rec.assignment = std::move(*a);
    t.rec.cost = cost_of(t.rec.assignment, t.rec.id);
    t.lineage = {{t.rec.assignment, 0}};
    trials.push_back(std::move(t));
    return trials.back().rec.id;
  }
  TrialCost cost_of(const Assignment& a, int id) const {
    const TrialCost c = source.cost(a);
    const std::string name = "trial " + std::to_string(id);
    if (c.gpus < 1 || c.gpus > settings.cluster_gpus)
      throw InputError(name + ": needs " + std::to_string(c.gpus) + " GPUs, the cluster has " +
                       std::to_string(settings.cluster_gpus));
    if (!(c.epoch_s > 0) || !std::isfinite(c.epoch_s))
      throw InputError(name + ": epoch time is not a positive number");
    if (!(c.checkpoint_s >= 0) || !(c.restore_s >= 0) || !std::isfinite(c.checkpoint_s) ||
        !std::isfinite(c.restore_s))
      throw InputError(name + ": checkpoint and restore times are finite numbers >= 0");
    return c;
  }
  bool may_start_new() const { return !exhausted && static_cast<int>(trials.size()) < settings.trials; }
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::optional<Work> next(State& s) = 0;
  // After `trial`'s epoch `epoch` (before max_epochs).
  virtual Step after_epoch(State& s, int trial, int epoch, double accuracy) = 0;
  // Trials the policy ended while paused (losers of a rung): marked stopped.
  std::vector<int> ended;
};

// The ladder of rung epochs min_epochs eta^k, the last one max_epochs.
std::vector<int> rung_epochs(const SearchSettings& s) {
  std::vector<int> out;
  double e = s.min_epochs;
  while (true) {
    const int epochs = static_cast<int>(std::min<double>(s.max_epochs, std::round(e)));
    out.push_back(epochs);
    if (epochs >= s.max_epochs) break;
    e *= s.eta;
  }
  return out;
}

class FullTraining final : public Policy {
 public:
  std::optional<Work> next(State& s) override {
    const int id = s.new_trial();
    if (id < 0) return std::nullopt;
    return Work{id, s.settings.max_epochs};
  }
  Step after_epoch(State&, int, int, double) override { return Step::go_on; }
};

// Synchronous successive halving over one or more brackets (sha: one; hyperband: its brackets).
class SyncHalving final : public Policy {
 public:
  struct Bracket {
    std::vector<std::pair<std::int64_t, int>> rungs;  // (configurations, epochs)
    std::size_t k = 0;
    std::int64_t created = 0;
    std::deque<int> queue;
    std::set<int> in_rung;  // trials running or waiting at rung k
    std::map<int, double> losses;
  };
  explicit SyncHalving(std::vector<Bracket> brackets) : brackets_(std::move(brackets)) {}

  std::optional<Work> next(State& s) override {
    for (std::size_t b = 0; b < brackets_.size(); ++b) {
      Bracket& B = brackets_[b];
      if (B.k >= B.rungs.size()) continue;
      if (B.k == 0 && B.created < B.rungs[0].first) {
        const int id = s.new_trial();
        if (id >= 0) {
          ++B.created;
          B.in_rung.insert(id);
          bracket_of_[id] = b;
          return Work{id, B.rungs[0].second};
        }
        B.rungs[0].first = B.created;  // the source ran out: the rung is what started
        if (B.created == 0) {
          B.k = B.rungs.size();
          continue;
        }
        maybe_promote(B);
      }
      if (!B.queue.empty()) {
        const int id = B.queue.front();
        B.queue.pop_front();
        return Work{id, B.rungs[B.k].second};
      }
    }
    return std::nullopt;
  }

  Step after_epoch(State&, int trial, int epoch, double accuracy) override {
    Bracket& B = brackets_[bracket_of_.at(trial)];
    if (epoch < B.rungs[B.k].second) return Step::go_on;
    B.losses[trial] = 1 - accuracy;
    const bool last = B.k + 1 >= B.rungs.size();
    maybe_promote(B);
    return last ? Step::end : Step::pause;
  }

 private:
  // Once every trial of rung k reported: the best of them go up, the rest end.
  void maybe_promote(Bracket& B) {
    const auto expected =
        static_cast<std::size_t>(B.k == 0 ? B.rungs[0].first : static_cast<std::int64_t>(B.in_rung.size()));
    if (B.losses.size() < expected || (B.k == 0 && B.created < B.rungs[0].first)) return;
    if (B.k + 1 >= B.rungs.size()) {
      B.k = B.rungs.size();
      return;
    }
    const std::size_t keep =
        std::min<std::size_t>(B.losses.size(), static_cast<std::size_t>(B.rungs[B.k + 1].first));
    const std::vector<int> up = best_trials(B.losses, keep);
    const std::set<int> going(up.begin(), up.end());
    for (const auto& [id, loss] : B.losses)
      if (going.count(id) == 0) ended.push_back(id);
    ++B.k;
    B.losses.clear();
    B.in_rung = going;
    B.queue.assign(up.begin(), up.end());
    if (up.empty()) B.k = B.rungs.size();
  }

  std::vector<Bracket> brackets_;
  std::map<int, std::size_t> bracket_of_;
};

class AshaPolicy final : public Policy {
 public:
  explicit AshaPolicy(const SearchSettings& s)
      : epochs_(rung_epochs(s)), asha_(s.eta, static_cast<int>(epochs_.size()) - 1) {}

  std::optional<Work> next(State& s) override {
    const AshaPromotion::Job job = asha_.next_job();
    if (job.trial >= 0) {
      rung_[job.trial] = job.rung;
      return Work{job.trial, epochs_[static_cast<std::size_t>(job.rung)]};
    }
    const int id = s.new_trial();
    if (id < 0) return std::nullopt;
    rung_[id] = 0;
    return Work{id, epochs_[0]};
  }

  Step after_epoch(State&, int trial, int epoch, double accuracy) override {
    const int rung = rung_.at(trial);
    if (epoch < epochs_[static_cast<std::size_t>(rung)]) return Step::go_on;
    asha_.report(trial, rung, 1 - accuracy);
    return Step::pause;
  }

 private:
  std::vector<int> epochs_;
  AshaPromotion asha_;
  std::map<int, int> rung_;
};

class AshaStopPolicy final : public Policy {
 public:
  explicit AshaStopPolicy(const SearchSettings& s) : rule_(s.min_epochs, s.max_epochs, s.eta) {}
  std::optional<Work> next(State& s) override {
    const int id = s.new_trial();
    if (id < 0) return std::nullopt;
    return Work{id, s.settings.max_epochs};
  }
  Step after_epoch(State&, int trial, int epoch, double accuracy) override {
    return rule_.on_result(trial, epoch, 1 - accuracy) == AshaStopping::Decision::stop ? Step::end
                                                                                       : Step::go_on;
  }

 private:
  AshaStopping rule_;
};

class PopPolicy final : public Policy {
 public:
  std::optional<Work> next(State& s) override {
    if (const int id = best_paused(s, CurveClass::promising); id >= 0) return resume(s, id);
    if (const int id = s.new_trial(); id >= 0) return Work{id, s.settings.max_epochs};
    if (const int id = best_paused(s, CurveClass::opportunistic); id >= 0) return resume(s, id);
    return std::nullopt;
  }

  Step after_epoch(State& s, int trial, int epoch, double) override {
    Live& t = s.trials[static_cast<std::size_t>(trial)];
    if (epoch < 3) return Step::go_on;
    t.probability = probability_at_least(fit_pow3(t.rec.accuracy), s.settings.max_epochs, s.best_accuracy);
    const CurveClass c = classify(t.probability, s.settings.pop);
    t.rec.last_class = c;
    if (c == CurveClass::poor) return Step::end;
    if (c == CurveClass::promising) return Step::go_on;
    const bool wanted = s.may_start_new() || best_paused(s, CurveClass::promising) >= 0;
    if (wanted) waiting_.insert(trial);
    return wanted ? Step::pause : Step::go_on;
  }

 private:
  // The paused trial of class c with the highest probability (ties to the lower id), or -1.
  int best_paused(State& s, CurveClass c) const {
    int best = -1;
    for (int id : waiting_) {
      const Live& t = s.trials[static_cast<std::size_t>(id)];
      if (t.rec.last_class != c) continue;
      if (best < 0 || t.probability > s.trials[static_cast<std::size_t>(best)].probability) best = id;
    }
    return best;
  }
  Work resume(State& s, int id) {
    waiting_.erase(id);
    return Work{id, s.settings.max_epochs};
  }
  std::set<int> waiting_;
};

class PbtPolicy final : public Policy {
 public:
  explicit PbtPolicy(const SearchSettings& s)
      : interval_(s.pbt_interval > 0 ? s.pbt_interval : s.min_epochs), rng_(s.seed) {}

  std::optional<Work> next(State& s) override {
    if (const int id = s.new_trial(); id >= 0) return Work{id, s.settings.max_epochs};
    const int id = laggard(s, -1);
    if (id < 0) return std::nullopt;
    waiting_.erase(id);
    return Work{id, s.settings.max_epochs};
  }

  Step after_epoch(State& s, int trial, int epoch, double accuracy) override {
    if (epoch % interval_ != 0) return Step::go_on;
    losses_[trial] = 1 - accuracy;
    Live& t = s.trials[static_cast<std::size_t>(trial)];
    assignments_[trial] = t.rec.assignment;
    const PbtStep step = pbt_step(trial, losses_, assignments_, s.settings.space, s.settings.pbt, rng_);
    if (step.exploit) {
      const Live& from = s.trials[static_cast<std::size_t>(step.clone_from)];
      t.rec.accuracy = from.rec.accuracy;
      t.lineage = from.lineage;
      t.lineage.push_back({step.assignment, 0});
      t.rec.assignment = step.assignment;
      assignments_[trial] = step.assignment;
      const int gpus = t.rec.cost.gpus;
      t.rec.cost = s.cost_of(t.rec.assignment, trial);  // the new assignment's epoch time
      ++t.rec.clones;
      t.reload = true;
      losses_[trial] = losses_.at(step.clone_from);
      if (static_cast<int>(t.rec.accuracy.size()) >= s.settings.max_epochs) return Step::end;
      if (t.rec.cost.gpus != gpus) {  // it gives its GPUs back and starts again on as many as it needs
        waiting_.insert(trial);
        return Step::pause;
      }
    }
    const int behind = laggard(s, static_cast<int>(t.rec.accuracy.size()));
    if (behind >= 0 || (s.may_start_new())) {
      waiting_.insert(trial);
      return Step::pause;
    }
    return Step::checkpoint_go_on;
  }

 private:
  // The waiting member with the fewest epochs, fewer than `below` when given (ties: lower id).
  int laggard(const State& s, int below) const {
    int best = -1;
    std::size_t fewest = 0;
    for (int id : waiting_) {
      const std::size_t e = s.trials[static_cast<std::size_t>(id)].rec.accuracy.size();
      if (below >= 0 && e >= static_cast<std::size_t>(below)) continue;
      if (best < 0 || e < fewest) {
        best = id;
        fewest = e;
      }
    }
    return best;
  }
  int interval_;
  std::mt19937_64 rng_;
  std::map<int, double> losses_;           // each member's latest loss at a checkpoint
  std::map<int, Assignment> assignments_;  // ... and its assignment then
  std::set<int> waiting_;
};

std::unique_ptr<Policy> make_policy(const SearchSettings& s) {
  switch (s.policy) {
    case SearchPolicyKind::random:
    case SearchPolicyKind::grid:
      return std::make_unique<FullTraining>();
    case SearchPolicyKind::sha: {
      SyncHalving::Bracket b;
      std::int64_t n = s.trials;
      for (int epochs : rung_epochs(s)) {
        if (n < 1) break;
        b.rungs.emplace_back(n, epochs);
        n /= s.eta;
      }
      return std::make_unique<SyncHalving>(std::vector<SyncHalving::Bracket>{b});
    }
    case SearchPolicyKind::hyperband: {
      std::vector<SyncHalving::Bracket> brackets;
      for (const HyperbandBracket& h :
           hyperband_brackets(static_cast<double>(s.max_epochs) / s.min_epochs, s.eta)) {
        SyncHalving::Bracket b;
        for (const HalvingRung& r : h.rungs)
          b.rungs.emplace_back(r.configurations,
                               std::max(1, static_cast<int>(std::lround(r.resource * s.min_epochs))));
        b.rungs.back().second = s.max_epochs;
        brackets.push_back(std::move(b));
      }
      return std::make_unique<SyncHalving>(std::move(brackets));
    }
    case SearchPolicyKind::asha:
      return std::make_unique<AshaPolicy>(s);
    case SearchPolicyKind::asha_stop:
      return std::make_unique<AshaStopPolicy>(s);
    case SearchPolicyKind::pop:
      return std::make_unique<PopPolicy>();
    case SearchPolicyKind::pbt:
      return std::make_unique<PbtPolicy>(s);
  }
  return std::make_unique<FullTraining>();
}

constexpr std::array<std::pair<SearchPolicyKind, std::string_view>, 8> kPolicies = {{
    {SearchPolicyKind::random, "random"},
    {SearchPolicyKind::grid, "grid"},
    {SearchPolicyKind::sha, "sha"},
    {SearchPolicyKind::hyperband, "hyperband"},
    {SearchPolicyKind::asha, "asha"},
    {SearchPolicyKind::asha_stop, "asha-stop"},
    {SearchPolicyKind::pop, "pop"},
    {SearchPolicyKind::pbt, "pbt"},
}};

}  // namespace

std::optional<SearchPolicyKind> parse_search_policy(std::string_view text) {
  for (const auto& [kind, name] : kPolicies)
    if (name == text) return kind;
  return std::nullopt;
}

std::string_view to_string(SearchPolicyKind kind) {
  for (const auto& [k, name] : kPolicies)
    if (k == kind) return name;
  return "random";
}

double lineage_accuracy(const Lineage& lineage, int max_epochs,
                        const std::function<double(const Assignment&, int epoch)>& accuracy) {
  STRATA_ASSERT(!lineage.empty(), "lineage_accuracy: an empty lineage");
  double a = 0;
  for (std::size_t k = 0; k < lineage.size(); ++k) {
    const LineageSegment& seg = lineage[k];
    if (seg.epochs == 0) continue;
    int equivalent = 0;  // where this assignment's curve first reaches a
    if (k > 0 && a > 0) {
      equivalent = -1;
      for (int e = 1; e <= max_epochs; ++e)
        if (accuracy(seg.assignment, e) >= a) {
          equivalent = e;
          break;
        }
    }
    if (equivalent < 0) continue;  // never reaches a: the model stays at a
    a = accuracy(seg.assignment, std::min(max_epochs, equivalent + seg.epochs));
  }
  return a;
}

double TrialRecord::best() const {
  return accuracy.empty() ? 0 : *std::max_element(accuracy.begin(), accuracy.end());
}

SearchResult run_search(const SearchSettings& settings, const TrialSource& source) {
  if (settings.cluster_gpus < 1) throw InputError("search: the cluster needs at least one GPU");
  if (settings.min_epochs < 1 || settings.max_epochs < settings.min_epochs)
    throw InputError("search: need 1 <= min_epochs <= max_epochs");
  if (settings.eta < 2) throw InputError("search: eta must be >= 2");
  if (settings.trials < 1) throw InputError("search: at least one trial");
  if (!(settings.budget_gpu_s > 0)) throw InputError("search: the budget must be positive");
  if (settings.policy == SearchPolicyKind::pbt) check_pbt_space(settings.space, "search: pbt");
  State s{settings, source, {}, false, 0};
  std::unique_ptr<Policy> policy = make_policy(settings);
  SearchResult result;
  int free = settings.cluster_gpus;
  double now = 0, spent = 0;
  bool budget_out = false;
  std::optional<Work> deferred;
  // (time, trial, kind, GPUs): kind 0 an epoch ends, 1 a checkpoint ends (its GPUs freed), 2 a
  // checkpoint ends and the trial trains on.
  std::set<std::tuple<double, int, int, int>> events;  // ... and the GPUs a kind-1 event frees

  const auto epoch_cost = [&](const Live& t) {
    return (t.paused || t.reload ? t.rec.cost.restore_s : 0) + t.rec.cost.epoch_s;
  };
  const auto affordable = [&](const Live& t) {
    return spent + t.rec.cost.gpus * epoch_cost(t) <= settings.budget_gpu_s * (1 + 1e-12);
  };
  const auto run_epoch = [&](Live& t) {
    const double d = epoch_cost(t);
    t.paused = false;
    t.reload = false;
    spent += t.rec.cost.gpus * d;
    t.rec.gpu_s += t.rec.cost.gpus * d;
    events.emplace(now + d, t.rec.id, 0, 0);
  };
  const auto finish = [&](Live& t, TrialEnd end) {
    t.finished = true;
    t.rec.end = end;
  };
  const auto fill = [&] {
    while (!budget_out && free > 0) {  // a policy is asked only when GPUs are free
      std::optional<Work> w = deferred ? deferred : policy->next(s);
      deferred.reset();
      if (!w) break;
      Live& t = s.trials[static_cast<std::size_t>(w->trial)];
      if (s.trials.size() == 1 && t.rec.accuracy.empty() && !affordable(t))
        throw InputError("search: the budget is below one epoch of the first trial (" +
                         std::to_string(t.rec.cost.gpus * t.rec.cost.epoch_s) + " GPU-s)");
      if (t.rec.cost.gpus > free) {
        deferred = w;
        break;
      }
      if (!affordable(t)) {
        budget_out = true;
        break;
      }
      t.until = w->until;
      free -= t.rec.cost.gpus;
      t.held += t.rec.cost.gpus;
      run_epoch(t);
    }
  };

  fill();
  while (!events.empty()) {
    const auto [time, id, kind, freed] = *events.begin();
    events.erase(events.begin());
    now = time;
    Live& t = s.trials[static_cast<std::size_t>(id)];
    if (kind == 1) {  // checkpoint written: its GPUs are free
      free += freed;
      fill();
      continue;
    }
    if (kind == 2) {  // checkpoint written: it trains on
      if (affordable(t)) {
        run_epoch(t);
      } else {
        budget_out = true;
        free += t.held;
        t.held = 0;
        finish(t, TrialEnd::unfinished);
      }
      continue;
    }
    const int epoch = static_cast<int>(t.rec.accuracy.size()) + 1;
    ++t.lineage.back().epochs;
    double acc = 0;
    if (source.lineage_accuracy && settings.policy == SearchPolicyKind::pbt) {
      acc = source.lineage_accuracy(t.lineage);
    } else if (t.lineage.size() == 1) {
      acc = source.accuracy(t.rec.assignment, epoch);
    } else {
      acc = lineage_accuracy(t.lineage, settings.max_epochs, source.accuracy);
    }
    t.rec.accuracy.push_back(acc);
    if (result.best_trial < 0 || acc > s.best_accuracy) {  // ties: the first to reach it
      s.best_accuracy = acc;
      result.best_trial = id;
      result.incumbent.emplace_back(now, acc);
    }
    if (!result.time_to_target_s && acc >= settings.target_accuracy) result.time_to_target_s = now;
    Step step = Step::end;
    if (epoch < settings.max_epochs) step = policy->after_epoch(s, id, epoch, acc);
    const int reached = static_cast<int>(t.rec.accuracy.size());  // a pbt clone may jump ahead
    for (int ended : policy->ended) {
      Live& e = s.trials[static_cast<std::size_t>(ended)];
      if (!e.finished) finish(e, TrialEnd::stopped);
    }
    policy->ended.clear();
    if (step == Step::go_on && !affordable(t)) {
      budget_out = true;
      step = Step::end;
    }
    switch (step) {
      case Step::go_on:
        run_epoch(t);
        break;
      case Step::pause: {
        t.paused = true;
        spent += t.held * t.rec.cost.checkpoint_s;
        t.rec.gpu_s += t.held * t.rec.cost.checkpoint_s;
        events.emplace(now + t.rec.cost.checkpoint_s, id, 1, t.held);
        t.held = 0;  // the checkpoint gives them back; the trial may be resumed before it ends
        break;
      }
      case Step::checkpoint_go_on:
        spent += t.held * t.rec.cost.checkpoint_s;
        t.rec.gpu_s += t.held * t.rec.cost.checkpoint_s;
        events.emplace(now + t.rec.cost.checkpoint_s, id, 2, 0);
        break;
      case Step::end:
        free += t.held;
        t.held = 0;
        finish(t, reached >= settings.max_epochs ? TrialEnd::completed
                  : budget_out                   ? TrialEnd::unfinished
                                                 : TrialEnd::stopped);
        break;
    }
    fill();
  }
  result.makespan_s = now;
  result.gpu_s = spent;
  result.best_accuracy = s.best_accuracy;
  for (Live& t : s.trials) {
    if (!t.finished) finish(t, budget_out ? TrialEnd::unfinished : TrialEnd::stopped);
    if (t.rec.end == TrialEnd::stopped) result.ended_early_gpu_s += t.rec.gpu_s;
    result.trials.push_back(std::move(t.rec));
  }
  return result;
}

}  // namespace models
}  // namespace strata
