// Learning curves for hyperparameter search (DESIGN.md, scheduling: the job level): a trial's test
// accuracy after each epoch, read from a curve file or drawn from a seeded parametric family, and
// the probabilistic curve model `pop` classifies trials with (HyperDrive, Rasley et al.,
// Middleware 2017: promising, opportunistic, poor).
//
// The model: Domhan et al.'s pow3 family (IJCAI 2015), y(t) = c - a t^-alpha, fitted to the
// epochs seen so far by least squares: for each alpha of a fixed log-spaced grid (0.05 to 4,
// 80 values) c and a are the linear least-squares solution, and the alpha of least residual is
// kept. The prediction at epoch T is normal with the fit's mean and the variance of a linear
// model's prediction, s^2 (1 + x_T' (X'X)^-1 x_T), s^2 the residual variance over n - 2 degrees of
// freedom (floored at `noise_floor`^2 so that a curve that fits exactly is not certain). With
// fewer than 3 epochs there is no fit: the probability is 1/2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/models/search/space.hpp"

namespace strata {
inline namespace models {

struct LearningCurve {
  Assignment assignment;
  std::vector<double> accuracy;  // accuracy[e]: after epoch e + 1, in [0, 1]
};

// A curve file (docs/search.md):
//   {"format": "strata-curves", "schema_version": 1, "source": "...",
//    "curves": [{"assignment": {"lr": "0.01", "width": "64"}, "accuracy": [0.61, 0.72, ...]}, ...]}
// Every curve has the same keys in its assignment and at least one epoch; assignments are
// distinct. InputError naming the file and the JSON pointer otherwise.
std::vector<LearningCurve> read_curve_file(const std::string& path);
std::vector<LearningCurve> parse_curves(const nlohmann::json& json, const std::string& file);

// The seeded parametric family for searches too large to train: pow3 with c (the final accuracy
// approached) uniform in [c_lo, c_hi], a in [a_lo, a_hi], alpha in [alpha_lo, alpha_hi], and
// independent normal noise of standard deviation `noise` per epoch (clipped to [0, 1]), all drawn
// from a generator seeded by `seed` and the FNV-1a hash of the assignment's text: a configuration
// has one curve per seed. These ranges are assumptions for exercising the policies, not fitted to
// any data set.
struct CurveFamily {
  double c_lo = 0.80, c_hi = 0.93;
  double a_lo = 0.2, a_hi = 0.6;
  double alpha_lo = 0.3, alpha_hi = 1.5;
  double noise = 0.005;
};
std::vector<double> family_curve(const CurveFamily& family, const Assignment& assignment, std::uint64_t seed,
                                 int epochs);

struct CurveFit {
  bool fitted = false;  // false: fewer than 3 points
  double c = 0, a = 0, alpha = 0;
  double residual_variance = 0;
  // (X'X)^-1 of the chosen alpha's design [1, -t^-alpha], for the prediction's variance.
  double inv00 = 0, inv01 = 0, inv11 = 0;
  double mean(double epoch) const;
  double stddev(double epoch) const;  // of a new observation at `epoch`
};

// `noise_floor`: the least standard deviation a prediction keeps (accuracy units).
CurveFit fit_pow3(const std::vector<double>& accuracy, double noise_floor = 0.005);

// P(accuracy at `epoch` >= target) under the fit; 1/2 when not fitted.
double probability_at_least(const CurveFit& fit, double epoch, double target);

enum class CurveClass : std::uint8_t { promising, opportunistic, poor };
std::string_view to_string(CurveClass c);

// pop's thresholds: promising when P(reaching the target) >= `promising`, poor below `poor`,
// opportunistic between.
struct PopThresholds {
  double promising = 0.5;
  double poor = 0.05;
};
CurveClass classify(double probability, const PopThresholds& thresholds);

}  // namespace models
}  // namespace strata
