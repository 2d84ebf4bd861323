// Learning curves, their seeded family and pop's curve model: see curves.hpp.
#include "strata/models/search/curves.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "strata/models/experiment.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

std::string assignment_text(const Assignment& a) {
  std::string text;
  for (const auto& [k, v] : a) text += k + "=" + v + ";";
  return text;
}

// A standard normal draw by Box-Muller from strata's own uniform draws (deterministic across
// standard libraries, unlike std::normal_distribution).
double normal_draw(std::mt19937_64& rng) {
  const double u1 = std::max(unit_draw(rng), 1e-300), u2 = unit_draw(rng);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

}  // namespace

std::vector<LearningCurve> parse_curves(const nlohmann::json& json, const std::string& file) {
  const JsonNode root(json, file);
  check_file_header(root, "strata-curves", 1);
  root.reject_unknown_fields({"format", "schema_version", "source", "curves"});
  const JsonNode curves = root.at("curves");
  if (curves.size() == 0) curves.fail("no curve");
  std::vector<LearningCurve> out;
  std::set<std::string> seen;
  std::set<std::string> keys;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const JsonNode c = curves.at(i);
    c.reject_unknown_fields({"assignment", "accuracy"});
    LearningCurve curve;
    const JsonNode a = c.at("assignment");
    std::set<std::string> these;
    for (const std::string& k : a.keys()) {
      const JsonNode v = a.at(k);
      curve.assignment[k] = v.value().is_string() ? v.as_string() : v.value().dump();
      these.insert(k);
    }
    if (i == 0) keys = these;
    if (these != keys) a.fail("its keys differ from the first curve's");
    if (!seen.insert(assignment_text(curve.assignment)).second)
      a.fail("the same assignment as an earlier curve");
    const JsonNode acc = c.at("accuracy");
    if (acc.size() == 0) acc.fail("no epoch");
    for (std::size_t e = 0; e < acc.size(); ++e) {
      const double y = acc.at(e).as_number();
      if (y < 0 || y > 1) acc.at(e).fail("an accuracy is in [0, 1]");
      curve.accuracy.push_back(y);
    }
    out.push_back(std::move(curve));
  }
  return out;
}

std::vector<LearningCurve> read_curve_file(const std::string& path) {
  return parse_curves(read_json_file(path), path);
}

std::vector<double> family_curve(const CurveFamily& family, const Assignment& assignment, std::uint64_t seed,
                                 int epochs) {
  std::mt19937_64 rng(seed ^ fnv1a64(assignment_text(assignment)));
  const double c = family.c_lo + unit_draw(rng) * (family.c_hi - family.c_lo);
  const double a = family.a_lo + unit_draw(rng) * (family.a_hi - family.a_lo);
  const double alpha = family.alpha_lo + unit_draw(rng) * (family.alpha_hi - family.alpha_lo);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(std::max(0, epochs)));
  for (int e = 1; e <= epochs; ++e)
    out.push_back(std::clamp(c - a * std::pow(e, -alpha) + family.noise * normal_draw(rng), 0.0, 1.0));
  return out;
}

double CurveFit::mean(double epoch) const { return c - a * std::pow(epoch, -alpha); }

double CurveFit::stddev(double epoch) const {
  const double z = -std::pow(epoch, -alpha);
  const double leverage = inv00 + 2 * inv01 * z + inv11 * z * z;
  return std::sqrt(residual_variance * (1 + std::max(0.0, leverage)));
}

CurveFit fit_pow3(const std::vector<double>& accuracy, double noise_floor) {
  CurveFit best;
  const std::size_t n = accuracy.size();
  if (n < 3) return best;
  double best_sse = INFINITY;
  constexpr int kAlphas = 80;
  for (int k = 0; k < kAlphas; ++k) {
    const double alpha = 0.05 * std::pow(4 / 0.05, static_cast<double>(k) / (kAlphas - 1));
    double sz = 0, szz = 0, sy = 0, szy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double z = -std::pow(static_cast<double>(i + 1), -alpha);
      sz += z;
      szz += z * z;
      sy += accuracy[i];
      szy += z * accuracy[i];
    }
    const double nn = static_cast<double>(n);
    const double det = nn * szz - sz * sz;
    if (!(det > 1e-12 * nn * szz)) continue;
    const double c = (szz * sy - sz * szy) / det;
    const double a = (nn * szy - sz * sy) / det;
    double sse = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = accuracy[i] - (c - a * std::pow(static_cast<double>(i + 1), -alpha));
      sse += r * r;
    }
    if (sse < best_sse) {
      best_sse = sse;
      best.fitted = true;
      best.c = c;
      best.a = a;
      best.alpha = alpha;
      best.inv00 = szz / det;
      best.inv01 = -sz / det;
      best.inv11 = nn / det;
    }
  }
  if (best.fitted)
    best.residual_variance = std::max(best_sse / static_cast<double>(n - 2), noise_floor * noise_floor);
  return best;
}

double probability_at_least(const CurveFit& fit, double epoch, double target) {
  if (!fit.fitted) return 0.5;
  const double sd = fit.stddev(epoch);
  return 0.5 * std::erfc((target - fit.mean(epoch)) / (sd * std::sqrt(2.0)));
}

std::string_view to_string(CurveClass c) {
  switch (c) {
    case CurveClass::promising:
      return "promising";
    case CurveClass::opportunistic:
      return "opportunistic";
    case CurveClass::poor:
      return "poor";
  }
  return "poor";
}

CurveClass classify(double probability, const PopThresholds& thresholds) {
  if (probability >= thresholds.promising) return CurveClass::promising;
  if (probability < thresholds.poor) return CurveClass::poor;
  return CurveClass::opportunistic;
}

}  // namespace models
}  // namespace strata
