// Search spaces, samplers and PBT's step: see space.hpp.
#include "strata/models/search/space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

const std::map<std::string, DomainKind> kKinds = {{"uniform", DomainKind::uniform},
                                                  {"log_uniform", DomainKind::log_uniform},
                                                  {"integer", DomainKind::integer},
                                                  {"choice", DomainKind::choice}};

std::string fmt6(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string choice_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::size_t draw_index(std::size_t n, std::mt19937_64& rng) {
  return std::min(n - 1, static_cast<std::size_t>(unit_draw(rng) * static_cast<double>(n)));
}

double draw_number(const Domain& d, std::mt19937_64& rng) {
  const double u = unit_draw(rng);
  switch (d.kind) {
    case DomainKind::uniform:
      return d.lo + u * (d.hi - d.lo);
    case DomainKind::log_uniform:
      return std::exp(std::log(d.lo) + u * (std::log(d.hi) - std::log(d.lo)));
    case DomainKind::integer:
      return std::min(d.hi, d.lo + std::floor(u * (d.hi - d.lo + 1)));
    case DomainKind::choice:
      break;
  }
  return d.lo;
}

std::string draw_value(const Domain& d, std::mt19937_64& rng) {
  if (d.kind == DomainKind::choice) return d.choices[draw_index(d.choices.size(), rng)];
  return domain_value_text(d, draw_number(d, rng));
}

}  // namespace

std::vector<Domain> parse_space(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object() || json.empty())
    throw InputError(where + ": a search space is a non-empty object of keys and domains");
  std::vector<Domain> out;
  for (const auto& [key, spec] : json.items()) {
    const std::string at = where + "/" + key;
    if (!spec.is_object() || spec.size() != 1)
      throw InputError(at +
                       ": a domain is one of {\"uniform\": [lo, hi]}, {\"log_uniform\": [lo, hi]}, "
                       "{\"integer\": [lo, hi]}, {\"choice\": [values]}");
    const std::string kind = spec.begin().key();
    const auto k = kKinds.find(kind);
    if (k == kKinds.end())
      throw InputError(at + ": unknown domain '" + kind + "' (known: choice, integer, log_uniform, uniform)");
    const nlohmann::json& v = spec.begin().value();
    Domain d;
    d.key = key;
    d.kind = k->second;
    if (d.kind == DomainKind::choice) {
      if (!v.is_array() || v.empty()) throw InputError(at + "/choice: a non-empty list of values");
      std::set<std::string> seen;
      for (const auto& c : v) {
        if (!c.is_string() && !c.is_number() && !c.is_boolean())
          throw InputError(at + "/choice: values are strings, numbers or booleans");
        if (!seen.insert(choice_text(c)).second)
          throw InputError(at + "/choice: " + choice_text(c) + " is listed twice");
        d.choices.push_back(choice_text(c));
      }
    } else {
      if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
        throw InputError(at + "/" + kind + ": two numbers [lo, hi]");
      d.lo = v[0].get<double>();
      d.hi = v[1].get<double>();
      if (!std::isfinite(d.lo) || !std::isfinite(d.hi) || d.lo > d.hi)
        throw InputError(at + "/" + kind + ": need finite lo <= hi");
      if (d.kind == DomainKind::log_uniform && d.lo <= 0) throw InputError(at + "/log_uniform: need lo > 0");
      if (d.kind == DomainKind::integer && (d.lo != std::floor(d.lo) || d.hi != std::floor(d.hi)))
        throw InputError(at + "/integer: bounds must be whole numbers");
    }
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const Domain& a, const Domain& b) { return a.key < b.key; });
  return out;
}

std::string domain_value_text(const Domain& domain, double value) {
  if (domain.kind == DomainKind::integer)
    return std::to_string(static_cast<std::int64_t>(std::llround(value)));
  return fmt6(value);
}

Assignment sample_assignment(const std::vector<Domain>& space, std::mt19937_64& rng) {
  Assignment a;
  for (const Domain& d : space) a[d.key] = draw_value(d, rng);
  return a;
}

std::vector<Assignment> grid_assignments(const std::vector<Domain>& space, int points, std::size_t limit) {
  if (points < 1) throw InputError("grid: at least one point per numeric domain");
  std::vector<std::vector<std::string>> values;
  double total = 1;
  for (const Domain& d : space) {
    std::vector<std::string> v;
    if (d.kind == DomainKind::choice) {
      v = d.choices;
    } else {
      for (int i = 0; i < points; ++i) {
        const double f = points == 1 ? 0.5 : static_cast<double>(i) / (points - 1);
        const double x = d.kind == DomainKind::log_uniform
                             ? std::exp(std::log(d.lo) + f * (std::log(d.hi) - std::log(d.lo)))
                             : d.lo + f * (d.hi - d.lo);
        const std::string text = domain_value_text(d, x);
        if (std::find(v.begin(), v.end(), text) == v.end()) v.push_back(text);
      }
    }
    total *= static_cast<double>(v.size());
    values.push_back(std::move(v));
  }
  if (total > static_cast<double>(limit))
    throw InputError("grid: " + fmt6(total) + " assignments, above the limit of " + std::to_string(limit));
  std::vector<Assignment> out(1);
  for (std::size_t k = 0; k < space.size(); ++k) {
    std::vector<Assignment> next;
    next.reserve(out.size() * values[k].size());
    for (const Assignment& a : out)
      for (const std::string& v : values[k]) {
        Assignment b = a;
        b[space[k].key] = v;
        next.push_back(std::move(b));
      }
    out = std::move(next);
  }
  return out;
}

void check_pbt_space(const std::vector<Domain>& space, const std::string& where) {
  if (std::none_of(space.begin(), space.end(), [](const Domain& d) { return d.numeric(); }))
    throw InputError(where + ": pbt perturbs numbers (x0.8, x1.2); this space has choices only");
}

PbtStep pbt_step(int trial, const std::map<int, double>& losses, const std::map<int, Assignment>& assignments,
                 const std::vector<Domain>& space, const PbtSettings& settings, std::mt19937_64& rng) {
  check_pbt_space(space, "pbt");
  PbtStep step;
  // Trials by latest loss, best first (ties to the lower id).
  std::vector<std::pair<double, int>> order;
  for (const auto& [id, loss] : losses) order.emplace_back(loss, id);
  std::sort(order.begin(), order.end());
  const std::size_t n = order.size();
  std::size_t q = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * settings.quantile));
  q = std::min(q, n / 2);
  if (q == 0) return step;
  bool lower = false;
  for (std::size_t i = n - q; i < n; ++i) lower = lower || order[i].second == trial;
  if (!lower) return step;
  const int donor = order[draw_index(q, rng)].second;
  const auto from = assignments.find(donor);
  if (from == assignments.end())
    throw InputError("pbt: trial " + std::to_string(donor) + " has a loss but no assignment");
  step.exploit = true;
  step.clone_from = donor;
  step.assignment = from->second;
  for (const Domain& d : space) {
    std::string& value = step.assignment[d.key];
    if (unit_draw(rng) < settings.resample || value.empty()) {
      value = draw_value(d, rng);
      continue;
    }
    const bool up = unit_draw(rng) < 0.5;
    if (d.kind == DomainKind::choice) {
      const auto it = std::find(d.choices.begin(), d.choices.end(), value);
      std::size_t at = it == d.choices.end() ? 0 : static_cast<std::size_t>(it - d.choices.begin());
      at = up ? std::min(at + 1, d.choices.size() - 1) : (at == 0 ? 0 : at - 1);
      value = d.choices[at];
    } else {
      const double x = std::clamp(std::stod(value) * (up ? 1.2 : 0.8), d.lo, d.hi);
      value = domain_value_text(d, x);
    }
  }
  return step;
}

}  // namespace models
}  // namespace strata
