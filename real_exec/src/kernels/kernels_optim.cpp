// Optimizer steps, gradient accumulation and weight initialisation.
#include "strata/real/kernels/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/random_draws.hpp"

namespace strata::real {

template <typename T>
void sgd_momentum_step(const SgdConfig& config, std::int64_t n, const T* grad, T* velocity, T* weight) {
  const auto lr = static_cast<T>(config.learning_rate);
  const auto mu = static_cast<T>(config.momentum);
  for (std::int64_t i = 0; i < n; ++i) {
    velocity[i] = mu * velocity[i] + grad[i];
    weight[i] -= lr * velocity[i];
  }
}

template <typename T>
void adam_step(const AdamConfig& config, std::int64_t step, std::int64_t n, const T* grad, T* m, T* v,
               T* weight) {
  check_adam_step(step);
  const double correction1 = 1.0 - std::pow(config.beta1, static_cast<double>(step));
  const double correction2 = 1.0 - std::pow(config.beta2, static_cast<double>(step));
  // PyTorch's arrangement of the same formula: the bias corrections fold into a step size and
  // a divisor of sqrt(v), which keeps eps outside the correction exactly as in Algorithm 1.
  const auto step_size = static_cast<T>(config.learning_rate / correction1);
  const auto sqrt_correction2 = static_cast<T>(std::sqrt(correction2));
  const auto beta1 = static_cast<T>(config.beta1), beta2 = static_cast<T>(config.beta2);
  const auto eps = static_cast<T>(config.eps);
  for (std::int64_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (T{1} - beta1) * grad[i];
    v[i] = beta2 * v[i] + (T{1} - beta2) * grad[i] * grad[i];
    weight[i] -= step_size * m[i] / (std::sqrt(v[i]) / sqrt_correction2 + eps);
  }
}

template <typename T>
void accumulate(Backend& backend, std::int64_t n, const T* src, T* dst) {
  backend.axpy(n, T{1}, src, dst);
}

template <typename T>
void zero(std::int64_t n, T* dst) {
  std::fill(dst, dst + n, T{0});
}

template <typename T>
void he_normal_init(std::mt19937_64& rng, std::int64_t fan_in, std::int64_t n, T* weight) {
  STRATA_ASSERT(fan_in > 0, "He initialisation with fan_in " + std::to_string(fan_in));
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in));
  // Box-Muller: two uniforms give two independent standard normals. 1 - u keeps the
  // logarithm's argument in (0, 1].
  for (std::int64_t i = 0; i < n; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - unit_draw(rng)));
    const double angle = 2.0 * std::numbers::pi * unit_draw(rng);
    weight[i] = static_cast<T>(stddev * radius * std::cos(angle));
    if (i + 1 < n) weight[i + 1] = static_cast<T>(stddev * radius * std::sin(angle));
  }
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                      \
  template void sgd_momentum_step<T>(const SgdConfig&, std::int64_t, const T*, T*, T*);            \
  template void adam_step<T>(const AdamConfig&, std::int64_t, std::int64_t, const T*, T*, T*, T*); \
  template void accumulate<T>(Backend&, std::int64_t, const T*, T*);                               \
  template void zero<T>(std::int64_t, T*);                                                         \
  template void he_normal_init<T>(std::mt19937_64&, std::int64_t, std::int64_t, T*);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
