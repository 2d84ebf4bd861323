// The successive-halving family: see halving.hpp.
#include "strata/models/search/halving.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

std::vector<HyperbandBracket> hyperband_brackets(double max_resource, int eta) {
  if (!(max_resource >= 1) || !std::isfinite(max_resource))
    throw InputError("hyperband: the maximum resource per configuration must be a finite number >= 1");
  if (eta < 2) throw InputError("hyperband: eta must be >= 2");
  // s_max = floor(log_eta R) by integer powers (no rounding of logarithms: R = 81, eta = 3 is 4).
  int s_max = 0;
  for (double p = eta; p <= max_resource * (1 + 1e-12); p *= eta) ++s_max;
  const double budget = (s_max + 1) * max_resource;
  std::vector<HyperbandBracket> out;
  for (int s = s_max; s >= 0; --s) {
    const double eta_s = std::pow(static_cast<double>(eta), s);
    const auto n = static_cast<std::int64_t>(std::ceil(budget / max_resource * eta_s / (s + 1) - 1e-9));
    const double r = max_resource / eta_s;
    HyperbandBracket b;
    b.s = s;
    for (int i = 0; i <= s; ++i) {
      const double eta_i = std::pow(static_cast<double>(eta), i);
      b.rungs.push_back(HalvingRung{
          static_cast<std::int64_t>(std::floor(static_cast<double>(n) / eta_i + 1e-9)), r * eta_i});
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::int64_t hyperband_configurations(const std::vector<HyperbandBracket>& brackets) {
  std::int64_t n = 0;
  for (const HyperbandBracket& b : brackets) n += b.rungs.empty() ? 0 : b.rungs.front().configurations;
  return n;
}

std::vector<int> best_trials(const std::map<int, double>& losses, std::size_t keep) {
  std::vector<std::pair<double, int>> order;
  order.reserve(losses.size());
  for (const auto& [trial, loss] : losses) order.emplace_back(loss, trial);
  keep = std::min(keep, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end());
  std::vector<int> out;
  out.reserve(keep);
  for (std::size_t i = 0; i < keep; ++i) out.push_back(order[i].second);
  return out;
}

AshaPromotion::AshaPromotion(int eta, int top_rung)
    : eta_(eta),
      top_rung_(top_rung),
      rungs_(static_cast<std::size_t>(std::max(0, top_rung) + 1)),
      ordered_(static_cast<std::size_t>(std::max(0, top_rung) + 1)),
      promoted_(static_cast<std::size_t>(std::max(0, top_rung) + 1)) {
  if (eta < 2) throw InputError("asha: eta must be >= 2");
  if (top_rung < 0) throw InputError("asha: the top rung must be >= 0");
}

AshaPromotion::Job AshaPromotion::next_job() {
  for (int k = top_rung_ - 1; k >= 0; --k) {
    const auto& ordered = ordered_[static_cast<std::size_t>(k)];
    std::set<int>& done = promoted_[static_cast<std::size_t>(k)];
    std::size_t left = ordered.size() / static_cast<std::size_t>(eta_);  // the best floor(n / eta)
    for (auto it = ordered.begin(); left > 0 && it != ordered.end(); ++it, --left)
      if (done.count(it->second) == 0) {
        done.insert(it->second);
        return Job{it->second, k + 1};
      }
  }
  return Job{-1, 0};
}

void AshaPromotion::report(int trial, int rung, double loss) {
  if (rung < 0 || rung > top_rung_)
    throw InputError("asha: rung " + std::to_string(rung) + " outside 0.." + std::to_string(top_rung_));
  if (!std::isfinite(loss)) throw InputError("asha: trial " + std::to_string(trial) + ": loss is not finite");
  auto& results = rungs_[static_cast<std::size_t>(rung)];
  auto& ordered = ordered_[static_cast<std::size_t>(rung)];
  if (const auto it = results.find(trial); it != results.end()) ordered.erase({it->second, trial});
  results[trial] = loss;
  ordered.emplace(loss, trial);
}

AshaStopping::AshaStopping(double grace, double max_t, double eta) : max_t_(max_t), eta_(eta) {
  if (!(grace > 0) || !(max_t >= grace) || !std::isfinite(max_t))
    throw InputError("asha-stop: need 0 < grace period <= max resource");
  if (!(eta >= 2)) throw InputError("asha-stop: eta must be >= 2");
  // Ray: MAX_RUNGS = int(log(max_t / grace) / log(eta) - s + 1) with s = 0, milestones
  // grace * eta^k, highest first.
  const int rungs = static_cast<int>(std::log(max_t / grace) / std::log(eta) + 1);
  for (int k = rungs - 1; k >= 0; --k) milestones_.push_back(grace * std::pow(eta, k));
  recorded_.resize(milestones_.size());
  rewards_.resize(milestones_.size());
}

AshaStopping::Decision AshaStopping::on_result(int trial, double time, double loss) {
  if (!std::isfinite(loss))
    throw InputError("asha-stop: trial " + std::to_string(trial) + ": loss is not finite");
  if (time >= max_t_) return Decision::stop;
  const double reward = -loss;  // Ray maximises; a loss is minimised
  for (std::size_t m = 0; m < milestones_.size(); ++m) {
    std::set<int>& recorded = recorded_[m];
    if (time < milestones_[m] || recorded.count(trial) != 0) continue;
    std::vector<double>& rewards = rewards_[m];  // sorted: the percentile without sorting again
    Decision d = Decision::go_on;
    if (!rewards.empty() && reward < sorted_percentile(rewards, (1 - 1 / eta_) * 100)) d = Decision::stop;
    recorded.insert(trial);
    rewards.insert(std::upper_bound(rewards.begin(), rewards.end(), reward), reward);
    return d;
  }
  return Decision::go_on;
}

double percentile_linear(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return sorted_percentile(values, q);
}

double sorted_percentile(const std::vector<double>& values, double q) {
  if (values.empty()) return NAN;
  const double at = q / 100 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (at - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

}  // namespace models
}  // namespace strata
