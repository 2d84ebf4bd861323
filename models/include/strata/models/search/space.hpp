// A hyperparameter and system-configuration search space (strata search's `space`), its
// samplers and Population Based Training's exploit-and-explore step, as pure functions of a
// seeded generator (DESIGN.md, scheduling: the job level).
//
// A space is a JSON object, one member per key the Experiment takes (`--set` keys such as lr,
// width, rho; system keys such as dp, tp, pp; the global batch as batch):
//   {"lr": {"log_uniform": [1e-4, 1e-1]}, "momentum": {"uniform": [0.5, 0.99]},
//    "width": {"integer": [16, 256]}, "optimizer": {"choice": ["sgd", "adam"]}}
// An assignment gives each key its value as the text --set takes (reals with 6 significant
// digits, integers whole). Keys are kept in name order, so an assignment and its text are a
// function of the space and the seed.
//
// Random draws come from the seeded 64-bit Mersenne Twister through strata's own mapping of its
// bits to [0, 1) (53 bits), not through std::uniform_*_distribution, whose results differ across
// standard libraries.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "strata/traces/random_draws.hpp"  // unit_draw, which searches draw from
namespace strata {
inline namespace models {

enum class DomainKind : std::uint8_t { uniform, log_uniform, integer, choice };

struct Domain {
  std::string key;
  DomainKind kind = DomainKind::uniform;
  double lo = 0, hi = 0;             // uniform, log_uniform (lo > 0), integer (whole numbers)
  std::vector<std::string> choices;  // choice: the values as text
  bool numeric() const { return kind != DomainKind::choice; }
};

using Assignment = std::map<std::string, std::string>;  // key -> value as --set text

// The space of `json` (an object as above). InputError naming `where` (e.g. "search.json:
// /search/space/lr") for anything else: an unknown kind, bounds that are not two finite numbers
// lo <= hi, a log-uniform bound <= 0, integer bounds that are not whole, an empty choice list, an
// empty space.
std::vector<Domain> parse_space(const nlohmann::json& json, const std::string& where);

// One assignment drawn from every domain: uniform, uniform in log, a uniform whole number, a
// uniform choice.
Assignment sample_assignment(const std::vector<Domain>& space, std::mt19937_64& rng);

// The grid: `points` values of each numeric domain (evenly spaced, in log for log_uniform; whole
// numbers deduplicated), every choice; the cross product in key order, the last key fastest.
// InputError when it would hold more than `limit` assignments.
std::vector<Assignment> grid_assignments(const std::vector<Domain>& space, int points, std::size_t limit);

// The value text of a number in a domain.
std::string domain_value_text(const Domain& domain, double value);

// Population Based Training (Jaderberg et al., 2017), as Ray Tune's PopulationBasedTraining
// decides by default: a trial is in the lower quantile when it is among the ceil(n q) worst by
// its latest loss (at most n / 2), in the upper among the ceil(n q) best; a trial of the lower
// quantile that is ready (its perturbation interval reached) clones a trial of the upper drawn
// uniformly (exploit) and perturbs the clone's assignment (explore): each key is redrawn from
// its domain with probability `resample`, else a number is multiplied by 0.8 or 1.2 (drawn
// alike) and kept in its bounds, and a choice moves to a neighbouring one.
struct PbtSettings {
  double quantile = 0.25;
  double resample = 0.25;
};

struct PbtStep {
  bool exploit = false;  // false: go on as is
  int clone_from = -1;   // the trial whose state and assignment it takes
  Assignment assignment;
};

// `losses`: every live trial's latest loss (trial -> loss); `assignments`: each trial's. Throws
// InputError when the space has no numeric domain (PBT's perturbation needs one).
PbtStep pbt_step(int trial, const std::map<int, double>& losses, const std::map<int, Assignment>& assignments,
                 const std::vector<Domain>& space, const PbtSettings& settings, std::mt19937_64& rng);

// Checked once before a PBT search: the same InputError as pbt_step for a space without a
// numeric domain, naming `where`.
void check_pbt_space(const std::vector<Domain>& space, const std::string& where);

}  // namespace models
}  // namespace strata
