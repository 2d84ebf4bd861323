// The ADMM updates of admm.hpp. Equations cite pdADMM (Wang, Chai, Cheng & Zhao, ICDM 2020) and
// its public code (github.com/xianggebenben/pdADMM, pdADMM-G); the code was read, not copied.
#include "strata/real/admm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using I64 = std::int64_t;

// ---- small dense helpers (double accumulation: sums run over up to ~10^7 values) ----

// Four partial sums: one dependent chain of double adds is latency-bound (a fixed order keeps
// the result deterministic).
template <typename T>
double sum_squares(const T* x, I64 n) {
  double s[4] = {0, 0, 0, 0};
  I64 i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
  for (; i < n; ++i) s[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

template <typename T>
double sum_squares(const Tensor<T>& x) {
  return sum_squares(x.data(), x.size());
}

template <typename T>
double squared_distance(const Tensor<T>& x, const Tensor<T>& y) {
  double s = 0;
  for (I64 i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    s += d * d;
  }
  return s;
}

template <typename T>
T relu(T v) {
  return v > T{0} ? v : T{0};
}

// c = alpha op(a) op(b) + beta c, tensors as row-major matrices.
template <typename T>
void matmul(Backend& backend, const Tensor<T>& a, Transpose ta, const Tensor<T>& b, Transpose tb,
            Tensor<T>& c, T alpha, T beta) {
  const I64 m = ta == Transpose::kNo ? a.dim(0) : a.dim(1);
  const I64 k = ta == Transpose::kNo ? a.dim(1) : a.dim(0);
  const I64 n = tb == Transpose::kNo ? b.dim(1) : b.dim(0);
  STRATA_ASSERT((tb == Transpose::kNo ? b.dim(0) : b.dim(1)) == k, "admm: inner dimensions differ");
  STRATA_ASSERT(c.rank() == 2 && c.dim(0) == m && c.dim(1) == n, "admm: output shape differs");
  backend.gemm(ta, tb, m, n, k, alpha, a.data(), a.dim(1), b.data(), b.dim(1), beta, c.data(), c.dim(1));
}

// W p + b - z: the residual of the layer-fit term.
template <typename T>
Tensor<T> fit_residual(const AdmmLayer<T>& layer) {
  Tensor<T> r = layer.wp;
  const I64 rows = r.dim(0), cols = r.dim(1);
  for (I64 i = 0; i < rows; ++i)
    for (I64 j = 0; j < cols; ++j) r[i * cols + j] += layer.b[i] - layer.z[i * cols + j];
  return r;
}

// Doubles the curvature t from t0 until the quadratic bound of the subproblem holds. For a
// quadratic φ and a step d, φ(x + d) = φ(x) + ⟨∇φ, d⟩ + ½ dᵀHd exactly, so the papers' test
// φ(x + d) ≤ φ(x) + ⟨∇φ, d⟩ + t/2‖d‖² (pdADMM, the conditions on U and V) reads dᵀHd ≤ t‖d‖²:
// `hess` = dᵀHd and `norm2` = ‖d‖², both for the direction -∇φ, so each trial costs O(1).
BacktrackResult backtrack(double hess, double norm2, double t0, int max_doublings) {
  BacktrackResult r{t0, 0, true};
  while (hess > r.curvature * norm2) {
    if (r.doublings == max_doublings) return {r.curvature, r.doublings, false};
    r.curvature *= 2;
    ++r.doublings;
  }
  return r;
}

// x -= y / t over whole tensors.
template <typename T>
void subtract_scaled(Tensor<T>& x, const Tensor<T>& y, double t) {
  const T inv = static_cast<T>(1 / t);
  for (I64 i = 0; i < x.size(); ++i) x[i] -= inv * y[i];
}

// Softmax over each column of logits [classes, n] into probs (scratch of the same size) and the
// summed cross-entropy against one-hot labels. One exp per element.
template <typename T>
double softmax_columns(const T* logits, const T* labels, I64 classes, I64 n, T* probs) {
  std::vector<double> max(static_cast<std::size_t>(n)), sum(static_cast<std::size_t>(n), 0.0);
  for (I64 j = 0; j < n; ++j) max[j] = logits[j];
  for (I64 c = 1; c < classes; ++c)
    for (I64 j = 0; j < n; ++j) max[j] = std::max(max[j], static_cast<double>(logits[c * n + j]));
  for (I64 c = 0; c < classes; ++c)
    for (I64 j = 0; j < n; ++j) {
      const double e = std::exp(logits[c * n + j] - max[j]);
      probs[c * n + j] = static_cast<T>(e);
      sum[j] += e;
    }
  double loss = 0;
  for (I64 j = 0; j < n; ++j) loss += max[j] + std::log(sum[j]);  // Σ_j log Σ_c exp, labels one-hot
  for (I64 c = 0; c < classes; ++c)
    for (I64 j = 0; j < n; ++j) {
      loss -= static_cast<double>(labels[c * n + j]) * logits[c * n + j];
      probs[c * n + j] = static_cast<T>(probs[c * n + j] / sum[j]);
    }
  return loss;
}

template <typename T>
double cross_entropy_sum(const Tensor<T>& logits, const Tensor<T>& labels) {
  Tensor<T> scratch = Tensor<T>::zeros(logits.shape());
  return softmax_columns(logits.data(), labels.data(), logits.dim(0), logits.dim(1), scratch.data());
}

// GCC keeps loops with float compares scalar under its default -ftrapping-math ("control flow
// in loop"): this one measured 27 ms instead of 2.5 ms per 256 x 10,000 layer. Nothing here relies
// on floating-point traps.
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_VECTORIZE_COMPARES __attribute__((optimize("no-trapping-math")))
#else
#define STRATA_VECTORIZE_COMPARES
#endif

// One row of the hidden z update: z ≤ 0 minimises (z−a)² + q² + (z−old)², z ≥ 0 minimises
// (z−a)² + (q−z)² + (z−old)²; each branch is a clipped mean, the better one wins.
template <typename T>
STRATA_VECTORIZE_COMPARES void z_hidden_row(T* __restrict z, const T* __restrict wp, const T* __restrict q,
                                            T bias, I64 n) {
  for (I64 j = 0; j < n; ++j) {
    const T a = wp[j] + bias, old = z[j], h = q[j];
    // Plain ternaries: std::min/max would not inline into a function with its own optimize flags.
    const T mean_neg = (a + old) / T{2}, mean_pos = (a + old + h) / T{3};
    const T neg = mean_neg < T{0} ? mean_neg : T{0};
    const T pos = mean_pos > T{0} ? mean_pos : T{0};
    const T value_neg = (neg - a) * (neg - a) + h * h + (neg - old) * (neg - old);
    const T value_pos = (pos - a) * (pos - a) + (h - pos) * (h - pos) + (pos - old) * (pos - old);
    z[j] = value_neg > value_pos ? pos : neg;
  }
}

// q = (ν ReLU(z) + u + ρ p_next) / (ν + ρ), elementwise.
template <typename T>
STRATA_VECTORIZE_COMPARES void q_update(T* __restrict q, const T* __restrict z, const T* __restrict u,
                                        const T* __restrict p_next, T nu, T rho, T inv, I64 n) {
  for (I64 i = 0; i < n; ++i) q[i] = (nu * (z[i] > T{0} ? z[i] : T{0}) + u[i] + rho * p_next[i]) * inv;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

void require_positive(double value, const char* name) {
  if (!(value > 0)) throw InputError("admm: " + std::string(name) + " = " + number(value) + ": must be > 0");
}

// Standard normal from raw mt19937_64 output (Box-Muller), so a seed gives one network on every
// standard library (std::normal_distribution's algorithm is left to each library).
double standard_normal(std::mt19937_64& rng) {
  constexpr double kTwoPi = 6.283185307179586;
  const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return std::sqrt(-2 * std::log(u1)) * std::cos(kTwoPi * u2);
}

template <typename T>
Tensor<T> normal_tensor(Shape shape, double stddev, std::mt19937_64& rng) {
  Tensor<T> t = Tensor<T>::zeros(std::move(shape));
  for (I64 i = 0; i < t.size(); ++i) t[i] = static_cast<T>(stddev * standard_normal(rng));
  return t;
}

// Codes of x / step rounded to the nearest integer (ties to even) and clamped to [−128, 127];
// NaN maps to −128. Rounding by adding and subtracting 1.5·2^(digits−1) keeps the loop
// vectorisable (std::round is a libm call per element without SSE4.1).
template <typename T>
STRATA_VECTORIZE_COMPARES void grid_codes(const T* __restrict x, I64 n, T inv_step,
                                          std::int8_t* __restrict codes) {
  constexpr T kMagic = T(1.5) * T(1ULL << (std::numeric_limits<T>::digits - 1));
  for (I64 i = 0; i < n; ++i) {
    T v = x[i] * inv_step;
    v = v > T{-128} ? v : T{-128};
    v = v < T{127} ? v : T{127};
    v = (v + kMagic) - kMagic;
    codes[i] = static_cast<std::int8_t>(static_cast<int>(v));
  }
}

template <typename T>
void grid_values(const std::int8_t* __restrict codes, I64 n, T step, T* __restrict out) {
  for (I64 i = 0; i < n; ++i) out[i] = static_cast<T>(codes[i]) * step;
}

// p (quantised, pdADMM-G-Q): candidate = nearest grid point to p - g/t; the bound is checked on
// the actual step d = candidate - p, which needs W d (one GEMM per trial).
template <typename T>
BacktrackResult update_p_quantized(AdmmLayer<T>& layer, const Tensor<T>& g, const AdmmSettings& s,
                                   Backend& backend) {
  Tensor<T> candidate = Tensor<T>::zeros(layer.p.shape()), d = candidate;
  std::vector<std::int8_t> codes(static_cast<std::size_t>(d.size()));
  Tensor<T> wd = Tensor<T>::zeros(layer.wp.shape());
  BacktrackResult r{s.p_curvature, 0, true};
  for (;;) {
    const bool give_up = r.doublings > s.max_backtracks;  // the code keeps Q(p_old) then
    const T inv = give_up ? T{0} : static_cast<T>(1 / r.curvature);
    for (I64 i = 0; i < d.size(); ++i) candidate[i] = layer.p[i] - inv * g[i];
    grid_codes(candidate.data(), d.size(), static_cast<T>(1 / s.grid.step), codes.data());
    grid_values(codes.data(), d.size(), static_cast<T>(s.grid.step), candidate.data());
    for (I64 i = 0; i < d.size(); ++i) d[i] = candidate[i] - layer.p[i];
    const double dd = sum_squares(d);
    if (dd > 0) matmul(backend, layer.W, Transpose::kNo, d, Transpose::kNo, wd, T{1}, T{0});
    const double hess = dd > 0 ? s.nu * sum_squares(wd) + s.rho * dd : 0.0;
    if (give_up || hess <= r.curvature * dd) {
      if (dd > 0) {
        layer.p = std::move(candidate);  // exactly on the grid, as the receiver decodes it
        for (I64 i = 0; i < wd.size(); ++i) layer.wp[i] += wd[i];
      }
      if (give_up) return {r.curvature, s.max_backtracks, false};
      return r;
    }
    r.curvature *= 2;
    ++r.doublings;
  }
}

template <typename T>
void check_layer(const AdmmLayer<T>& layer) {
  STRATA_ASSERT(layer.p.rank() == 2 && layer.W.rank() == 2 && layer.W.dim(1) == layer.p.dim(0),
                "admm: W and p do not chain");
  STRATA_ASSERT(
      layer.wp.rank() == 2 && layer.wp.dim(0) == layer.W.dim(0) && layer.wp.dim(1) == layer.p.dim(1),
      "admm: W p cache has the wrong shape");
  STRATA_ASSERT(layer.b.size() == layer.W.dim(0) && layer.z.shape() == layer.wp.shape(),
                "admm: b or z has the wrong shape");
}

template <typename T>
Tensor<T> add_bias(Tensor<T> m, const Tensor<T>& b, bool apply_relu) {
  const I64 rows = m.dim(0), cols = m.dim(1);
  for (I64 i = 0; i < rows; ++i)
    for (I64 j = 0; j < cols; ++j) {
      T& v = m[i * cols + j];
      v += b[i];
      if (apply_relu) v = relu(v);
    }
  return m;
}

}  // namespace

void validate(const AdmmSettings& s) {
  require_positive(s.rho, "rho");
  require_positive(s.nu, "nu");
  if (!(s.weight_decay >= 0))
    throw InputError("admm: weight_decay = " + number(s.weight_decay) + ": must be >= 0");
  require_positive(s.p_curvature, "p_curvature");
  require_positive(s.w_curvature, "w_curvature");
  require_positive(s.fista_step, "fista_step");
  require_positive(s.grid.step, "grid.step");
  if (s.max_backtracks < 0)
    throw InputError("admm: max_backtracks = " + std::to_string(s.max_backtracks) + ": must be >= 0");
  if (s.fista_iterations < 1)
    throw InputError("admm: fista_iterations = " + std::to_string(s.fista_iterations) + ": must be >= 1");
  if (!(s.fista_tolerance >= 0))
    throw InputError("admm: fista_tolerance = " + number(s.fista_tolerance) + ": must be >= 0");
}

// ---- updates ----

template <typename T>
BacktrackResult update_p(AdmmLayer<T>& layer, const Tensor<T>& q_prev, const Tensor<T>& u_prev,
                         const AdmmSettings& s, Backend& backend) {
  check_layer(layer);
  STRATA_ASSERT(q_prev.shape() == layer.p.shape() && u_prev.shape() == layer.p.shape(),
                "admm: q_prev/u_prev do not match p");
  // ∇φ_p = ν Wᵀ(W p + b − z) + u_{l-1} + ρ (p − q_{l-1})
  const Tensor<T> r = fit_residual(layer);
  Tensor<T> g = Tensor<T>::zeros(layer.p.shape());
  matmul(backend, layer.W, Transpose::kYes, r, Transpose::kNo, g, static_cast<T>(s.nu), T{0});
  const T rho = static_cast<T>(s.rho);
  for (I64 i = 0; i < g.size(); ++i) g[i] += u_prev[i] + rho * (layer.p[i] - q_prev[i]);
  if (s.quantize_p) return update_p_quantized(layer, g, s, backend);

  Tensor<T> wg = Tensor<T>::zeros(layer.wp.shape());
  matmul(backend, layer.W, Transpose::kNo, g, Transpose::kNo, wg, T{1}, T{0});
  const double gg = sum_squares(g);
  const BacktrackResult bt =
      backtrack(s.nu * sum_squares(wg) + s.rho * gg, gg, s.p_curvature, s.max_backtracks);
  if (bt.moved) {
    subtract_scaled(layer.p, g, bt.curvature);
    subtract_scaled(layer.wp, wg, bt.curvature);
  }
  return bt;
}

template <typename T>
BacktrackResult update_W(AdmmLayer<T>& layer, const AdmmSettings& s, Backend& backend) {
  check_layer(layer);
  // ∇φ_W = ν (W p + b − z) pᵀ + μ W; along it the Hessian term is ν‖G p‖² + μ‖G‖².
  const Tensor<T> r = fit_residual(layer);
  Tensor<T> grad = layer.W;
  matmul(backend, r, Transpose::kNo, layer.p, Transpose::kYes, grad, static_cast<T>(s.nu),
         static_cast<T>(s.weight_decay));
  Tensor<T> gp = Tensor<T>::zeros(layer.wp.shape());
  matmul(backend, grad, Transpose::kNo, layer.p, Transpose::kNo, gp, T{1}, T{0});
  const double gg = sum_squares(grad);
  const BacktrackResult bt =
      backtrack(s.nu * sum_squares(gp) + s.weight_decay * gg, gg, s.w_curvature, s.max_backtracks);
  if (bt.moved) {
    subtract_scaled(layer.W, grad, bt.curvature);
    subtract_scaled(layer.wp, gp, bt.curvature);
  }
  return bt;
}

template <typename T>
void update_b(AdmmLayer<T>& layer) {
  check_layer(layer);
  const I64 rows = layer.z.dim(0), cols = layer.z.dim(1);
  for (I64 i = 0; i < rows; ++i) {
    double sum = 0;
    for (I64 j = 0; j < cols; ++j) sum += static_cast<double>(layer.z[i * cols + j]) - layer.wp[i * cols + j];
    layer.b[i] = static_cast<T>(sum / static_cast<double>(cols));
  }
}

template <typename T>
void update_z_hidden(AdmmLayer<T>& layer, const AdmmSettings& s) {
  check_layer(layer);
  STRATA_ASSERT(layer.q.shape() == layer.z.shape(), "admm: hidden z update needs q");
  (void)s;  // every term carries ν, so the minimiser does not depend on it
  const I64 rows = layer.z.dim(0), cols = layer.z.dim(1);
  for (I64 i = 0; i < rows; ++i)
    z_hidden_row(layer.z.data() + i * cols, layer.wp.data() + i * cols, layer.q.data() + i * cols, layer.b[i],
                 cols);
}

template <typename T>
int update_z_output(AdmmLayer<T>& layer, const Tensor<T>& labels, const AdmmSettings& s) {
  check_layer(layer);
  STRATA_ASSERT(labels.shape() == layer.z.shape(), "admm: labels do not match the output z");
  const I64 classes = layer.z.dim(0), n = layer.z.dim(1);
  const Tensor<T> a = add_bias(layer.wp, layer.b, false);
  // Proximal gradient step from y with step η on R, exact prox of ν/2‖z − a‖²:
  //   x⁺ = (ν η a + y − η ∇R(y)) / (ν η + 1),  ∇R = softmax − labels (column-wise).
  const double eta = s.fista_step, denom = s.nu * eta + 1;
  Tensor<T> x = layer.z, y = layer.z, probs = Tensor<T>::zeros(layer.z.shape());
  double lambda = 1, previous = 0;
  int it = 0;
  while (it < s.fista_iterations) {
    const double f = softmax_columns(y.data(), labels.data(), classes, n, probs.data()) +
                     s.nu / 2 * squared_distance(y, a);
    if (it > 0 && std::abs(f - previous) <= s.fista_tolerance * (1 + std::abs(f))) break;
    previous = f;
    ++it;
    const double next_lambda = (1 + std::sqrt(1 + 4 * lambda * lambda)) / 2;
    const double momentum = (lambda - 1) / next_lambda;
    for (I64 i = 0; i < x.size(); ++i) {
      const double grad = static_cast<double>(probs[i]) - labels[i];
      const T next = static_cast<T>((s.nu * eta * a[i] + y[i] - eta * grad) / denom);
      y[i] = static_cast<T>(next + momentum * (static_cast<double>(next) - x[i]));
      x[i] = next;
    }
    lambda = next_lambda;
  }
  layer.z = std::move(x);
  return it;
}

template <typename T>
void update_q(AdmmLayer<T>& layer, const Tensor<T>& p_next, const AdmmSettings& s) {
  STRATA_ASSERT(layer.q.shape() == layer.z.shape() && p_next.shape() == layer.q.shape(),
                "admm: q update shapes differ");
  const T nu = static_cast<T>(s.nu), rho = static_cast<T>(s.rho), inv = static_cast<T>(1 / (s.nu + s.rho));
  q_update(layer.q.data(), layer.z.data(), layer.u.data(), p_next.data(), nu, rho, inv, layer.q.size());
}

template <typename T>
void update_u(AdmmLayer<T>& layer, const Tensor<T>& p_next, const AdmmSettings& s) {
  STRATA_ASSERT(layer.u.shape() == layer.q.shape() && p_next.shape() == layer.q.shape(),
                "admm: u update shapes differ");
  const T rho = static_cast<T>(s.rho);
  for (I64 i = 0; i < layer.u.size(); ++i) layer.u[i] += rho * (p_next[i] - layer.q[i]);
}

template <typename T>
void update_layer_backward(AdmmLayer<T>& layer, const BackwardInputs<T>& in, const AdmmSettings& s,
                           Backend& backend) {
  if (in.q_prev != nullptr) update_p(layer, *in.q_prev, *in.u_prev, s, backend);
  update_W(layer, s, backend);
  update_b(layer);
  if (in.labels != nullptr) {
    update_z_output(layer, *in.labels, s);
  } else {
    update_z_hidden(layer, s);
  }
}

template <typename T>
void update_layer_forward(AdmmLayer<T>& layer, const Tensor<T>& p_next, const AdmmSettings& s) {
  update_q(layer, p_next, s);
  update_u(layer, p_next, s);
}

// ---- subproblem objectives ----

template <typename T>
double p_objective(const AdmmLayer<T>& layer, const Tensor<T>& p, const Tensor<T>& q_prev,
                   const Tensor<T>& u_prev, const AdmmSettings& s, Backend& backend) {
  AdmmLayer<T> at = layer;
  at.p = p;
  matmul(backend, at.W, Transpose::kNo, p, Transpose::kNo, at.wp, T{1}, T{0});
  double coupling = 0;
  for (I64 i = 0; i < p.size(); ++i) {
    const double d = static_cast<double>(p[i]) - q_prev[i];
    coupling += u_prev[i] * d + s.rho / 2 * d * d;
  }
  return s.nu / 2 * sum_squares(fit_residual(at)) + coupling;
}

template <typename T>
double w_objective(const AdmmLayer<T>& layer, const Tensor<T>& W, const AdmmSettings& s, Backend& backend) {
  AdmmLayer<T> at = layer;
  at.W = W;
  matmul(backend, W, Transpose::kNo, at.p, Transpose::kNo, at.wp, T{1}, T{0});
  return s.nu / 2 * sum_squares(fit_residual(at)) + s.weight_decay / 2 * sum_squares(W);
}

template <typename T>
double z_hidden_objective(const AdmmLayer<T>& layer, const Tensor<T>& z, const Tensor<T>& z_old,
                          const AdmmSettings& s) {
  const I64 rows = z.dim(0), cols = z.dim(1);
  double sum = 0;
  for (I64 i = 0; i < rows; ++i)
    for (I64 j = 0; j < cols; ++j) {
      const I64 e = i * cols + j;
      const double v = z[e], a = static_cast<double>(layer.wp[e]) + layer.b[i];
      const double h = static_cast<double>(layer.q[e]) - std::max(v, 0.0);
      sum += (v - a) * (v - a) + h * h + (v - z_old[e]) * (v - z_old[e]);
    }
  return s.nu / 2 * sum;
}

template <typename T>
double z_output_objective(const AdmmLayer<T>& layer, const Tensor<T>& z, const Tensor<T>& labels,
                          const AdmmSettings& s) {
  AdmmLayer<T> at = layer;
  at.z = z;
  return cross_entropy_sum(z, labels) + s.nu / 2 * sum_squares(fit_residual(at));
}

// ---- drivers ----

namespace {

template <typename T>
BackwardInputs<T> backward_inputs(const AdmmNetwork<T>& net, std::size_t l, const Tensor<T>* q_prev,
                                  const Tensor<T>* u_prev) {
  BackwardInputs<T> in;
  if (l > 0) {
    in.q_prev = q_prev;
    in.u_prev = u_prev;
  }
  if (l + 1 == net.layers.size()) in.labels = &net.labels;
  return in;
}

template <typename T>
AdmmTraffic traffic_of(const AdmmNetwork<T>& net, const AdmmSettings& s) {
  AdmmTraffic t;
  for (std::size_t l = 1; l < net.layers.size(); ++l) {
    const I64 values = net.layers[l].p.size();
    t.p_bytes += values * (s.quantize_p ? 1 : static_cast<I64>(sizeof(T)));
    t.q_bytes += values * static_cast<I64>(sizeof(T));
    t.u_bytes += values * static_cast<I64>(sizeof(T));
  }
  return t;
}

// Runs work(l) for l in [0, count), on one thread each when `threads`; rethrows the first error.
void for_each_layer(std::size_t count, bool threads, const std::function<void(std::size_t)>& work) {
  if (!threads) {
    for (std::size_t l = 0; l < count; ++l) work(l);
    return;
  }
  std::vector<std::exception_ptr> errors(count);
  std::vector<std::thread> pool;
  pool.reserve(count);
  for (std::size_t l = 0; l < count; ++l) {
    pool.emplace_back([&, l] {
      try {
        work(l);
      } catch (...) {
        errors[l] = std::current_exception();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

template <typename T>
AdmmTraffic iterate_serial(AdmmNetwork<T>& net, const AdmmSettings& s, Backend& backend) {
  validate(s);
  STRATA_ASSERT(!net.layers.empty(), "admm: a network without layers");
  const std::size_t count = net.layers.size();
  for (std::size_t l = count; l-- > 0;) {
    const Tensor<T>* q_prev = l > 0 ? &net.layers[l - 1].q : nullptr;
    const Tensor<T>* u_prev = l > 0 ? &net.layers[l - 1].u : nullptr;
    update_layer_backward(net.layers[l], backward_inputs(net, l, q_prev, u_prev), s, backend);
  }
  for (std::size_t l = 0; l + 1 < count; ++l) update_layer_forward(net.layers[l], net.layers[l + 1].p, s);
  return traffic_of(net, s);
}

template <typename T>
AdmmTraffic iterate_parallel(AdmmNetwork<T>& net, const AdmmSettings& s, Backend& backend, bool threads) {
  validate(s);
  STRATA_ASSERT(!net.layers.empty(), "admm: a network without layers");
  const std::size_t count = net.layers.size();
  // Messages of iteration k-1, as layer l received them: q_{l-1}, u_{l-1}.
  std::vector<Tensor<T>> q_in(count), u_in(count), p_in(count);
  for (std::size_t l = 1; l < count; ++l) {
    q_in[l] = net.layers[l - 1].q;
    u_in[l] = net.layers[l - 1].u;
  }
  for_each_layer(count, threads, [&](std::size_t l) {
    update_layer_backward(net.layers[l], backward_inputs(net, l, &q_in[l], &u_in[l]), s, backend);
    if (l == 0) return;
    const Tensor<T>& p = net.layers[l].p;  // sent to layer l-1
    p_in[l - 1] = s.quantize_p ? dequantize<T>(quantize(p, s.grid), p.shape(), s.grid) : p;
  });
  for_each_layer(count - 1, threads, [&](std::size_t l) { update_layer_forward(net.layers[l], p_in[l], s); });
  return traffic_of(net, s);
}

// ---- quantisation and adaptive ρ ----

template <typename T>
std::vector<std::int8_t> quantize(const Tensor<T>& values, const QuantGrid& grid) {
  std::vector<std::int8_t> codes(static_cast<std::size_t>(values.size()));
  grid_codes(values.data(), values.size(), static_cast<T>(1 / grid.step), codes.data());
  return codes;
}

template <typename T>
Tensor<T> dequantize(const std::vector<std::int8_t>& codes, const Shape& shape, const QuantGrid& grid) {
  STRATA_ASSERT(static_cast<I64>(codes.size()) == element_count(shape),
                "admm: code count differs from shape");
  Tensor<T> t = Tensor<T>::zeros(shape);
  grid_values(codes.data(), t.size(), static_cast<T>(grid.step), t.data());
  return t;
}

AdaptiveRho::AdaptiveRho(double min_decrease, double rho_max)
    : min_decrease_(min_decrease), rho_max_(rho_max) {
  require_positive(rho_max, "rho_max");
}

bool AdaptiveRho::observe(double train_cost, AdmmSettings& s) {
  costs_.push_back(train_cost);
  const std::size_t k = costs_.size() - 1;
  if (k < 3) return false;
  const bool stalled =
      costs_[k] > costs_[k - 1] - min_decrease_ && costs_[k - 1] > costs_[k - 2] - min_decrease_;
  const double raised = std::min(10 * s.rho, rho_max_);
  if (!stalled || !(raised > s.rho)) return false;
  s.nu *= raised / s.rho;
  s.rho = raised;
  return true;
}

// ---- data and initialisation ----

template <typename T>
AdmmData<T> admm_columns(const LabelledImages& data, std::int64_t count, std::uint64_t seed) {
  if (count < 1 || count > data.count)
    throw InputError("admm: sample count = " + std::to_string(count) + ": must be in [1, " +
                     std::to_string(data.count) + "]");
  std::vector<I64> order(static_cast<std::size_t>(data.count));
  for (I64 i = 0; i < data.count; ++i) order[static_cast<std::size_t>(i)] = i;
  if (seed != 0 || count != data.count) {
    std::mt19937_64 rng(seed);
    order = shuffled_indices(data.count, rng);
  }
  const I64 pixels = data.rows * data.cols;
  AdmmData<T> out{Tensor<T>::zeros({pixels, count}), Tensor<T>::zeros({kFashionMnistClasses, count}), {}};
  for (I64 j = 0; j < count; ++j) {
    const I64 src = order[static_cast<std::size_t>(j)];
    for (I64 i = 0; i < pixels; ++i) out.x[i * count + j] = static_cast<T>(data.images[src * pixels + i]);
    const std::int32_t c = data.labels[static_cast<std::size_t>(src)];
    out.labels[c * count + j] = T{1};
    out.classes.push_back(c);
  }
  return out;
}

template <typename T>
AdmmNetwork<T> cold_start(const Tensor<T>& x, const Tensor<T>& labels,
                          const std::vector<std::int64_t>& widths, std::uint64_t seed, Backend& backend) {
  if (widths.size() < 2)
    throw InputError("admm: widths has " + std::to_string(widths.size()) +
                     " entries: a network needs at least 2 (one layer)");
  for (std::size_t i = 0; i < widths.size(); ++i)
    if (widths[i] < 1)
      throw InputError("admm: widths[" + std::to_string(i) + "] = " + std::to_string(widths[i]) +
                       ": must be >= 1");
  if (x.rank() != 2 || x.dim(0) != widths.front() || x.dim(1) < 1)
    throw InputError("admm: input must be [" + std::to_string(widths.front()) + ", N] with N >= 1");
  if (labels.rank() != 2 || labels.dim(0) != widths.back() || labels.dim(1) != x.dim(1))
    throw InputError("admm: labels must be [" + std::to_string(widths.back()) + ", " +
                     std::to_string(x.dim(1)) + "]");
  std::mt19937_64 rng(seed);
  AdmmNetwork<T> net;
  net.labels = labels;
  const I64 n = x.dim(1);
  Tensor<T> p = x;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    AdmmLayer<T> layer;
    layer.W = normal_tensor<T>({widths[l + 1], widths[l]}, 0.1, rng);
    layer.b = normal_tensor<T>({widths[l + 1]}, 0.1, rng);
    layer.wp = Tensor<T>::zeros({widths[l + 1], n});
    matmul(backend, layer.W, Transpose::kNo, p, Transpose::kNo, layer.wp, T{1}, T{0});
    layer.p = std::move(p);
    if (l + 2 < widths.size()) {
      layer.z = add_bias(layer.wp, layer.b, false);
      layer.q = add_bias(layer.wp, layer.b, true);
      layer.u = Tensor<T>::zeros(layer.z.shape());
      p = layer.q;
    } else {
      layer.z = labels;  // +1 on the true class, −1 elsewhere
      for (I64 i = 0; i < layer.z.size(); ++i) layer.z[i] = labels[i] > T{0} ? T{1} : T{-1};
    }
    net.layers.push_back(std::move(layer));
  }
  return net;
}

template <typename T>
AdmmNetwork<T> warm_start_deeper(const AdmmNetwork<T>& shallow, int extra, Backend& backend) {
  if (extra < 0) throw InputError("admm: extra layers = " + std::to_string(extra) + ": must be >= 0");
  const std::size_t count = shallow.layers.size();
  if (extra > 0 && count < 2)
    throw InputError("admm: warm start needs a hidden layer to repeat; the network has " +
                     std::to_string(count) + " layer");
  if (extra == 0) return shallow;
  AdmmNetwork<T> net;
  net.labels = shallow.labels;
  net.layers.assign(shallow.layers.begin(), shallow.layers.end() - 1);
  const AdmmLayer<T>& out = shallow.layers.back();
  Tensor<T> p = out.p;  // what the output layer read: the coupling with u_{L-2} keeps holding
  const I64 width = p.dim(0);
  for (int e = 0; e < extra; ++e) {
    AdmmLayer<T> layer;
    layer.W = Tensor<T>::zeros({width, width});
    for (I64 i = 0; i < width; ++i) layer.W[i * width + i] = T{1};
    layer.b = Tensor<T>::zeros({width});
    layer.wp = p;
    layer.z = p;
    layer.q = add_bias(p, layer.b, true);
    layer.u = Tensor<T>::zeros(p.shape());
    layer.p = std::move(p);
    p = layer.q;
    net.layers.push_back(std::move(layer));
  }
  AdmmLayer<T> last = out;
  last.p = std::move(p);
  matmul(backend, last.W, Transpose::kNo, last.p, Transpose::kNo, last.wp, T{1}, T{0});
  net.layers.push_back(std::move(last));
  return net;
}

// ---- evaluation ----

template <typename T>
Tensor<T> forward_logits(const AdmmNetwork<T>& net, const Tensor<T>& x, Backend& backend) {
  Tensor<T> a = x;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const AdmmLayer<T>& layer = net.layers[l];
    Tensor<T> z = Tensor<T>::zeros({layer.W.dim(0), a.dim(1)});
    matmul(backend, layer.W, Transpose::kNo, a, Transpose::kNo, z, T{1}, T{0});
    a = add_bias(std::move(z), layer.b, l + 1 < net.layers.size());
  }
  return a;
}

template <typename T>
double accuracy(const AdmmNetwork<T>& net, const Tensor<T>& x, const std::vector<std::int32_t>& classes,
                Backend& backend) {
  const Tensor<T> logits = forward_logits(net, x, backend);
  const I64 rows = logits.dim(0), n = logits.dim(1);
  STRATA_ASSERT(static_cast<I64>(classes.size()) == n, "admm: one class per column");
  I64 correct = 0;
  for (I64 j = 0; j < n; ++j) {
    I64 best = 0;
    for (I64 c = 1; c < rows; ++c)
      if (logits[c * n + j] > logits[best * n + j]) best = c;
    correct += best == classes[static_cast<std::size_t>(j)] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

template <typename T>
double mean_cross_entropy(const AdmmNetwork<T>& net, const Tensor<T>& x, const Tensor<T>& labels,
                          Backend& backend) {
  const Tensor<T> logits = forward_logits(net, x, backend);
  STRATA_ASSERT(labels.shape() == logits.shape(), "admm: labels do not match the logits");
  return cross_entropy_sum(logits, labels) / static_cast<double>(logits.dim(1));
}

template <typename T>
AdmmResidual residual(const AdmmNetwork<T>& net, const AdmmSettings& s) {
  AdmmResidual r;
  double activation = 0, dual = 0, weights = 0;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const AdmmLayer<T>& layer = net.layers[l];
    r.fit += sum_squares(fit_residual(layer));
    weights += sum_squares(layer.W);
    if (l + 1 == net.layers.size()) {
      r.loss = cross_entropy_sum(layer.z, net.labels);
      continue;
    }
    const Tensor<T>& p_next = net.layers[l + 1].p;
    for (I64 i = 0; i < layer.q.size(); ++i) {
      const double h = static_cast<double>(layer.q[i]) - relu(static_cast<double>(layer.z[i]));
      const double d = static_cast<double>(p_next[i]) - layer.q[i];
      activation += h * h;
      r.coupling += d * d;
      dual += layer.u[i] * d;
    }
  }
  r.objective =
      r.loss + s.weight_decay / 2 * weights + s.nu / 2 * (r.fit + activation) + dual + s.rho / 2 * r.coupling;
  return r;
}

// ---- explicit instantiations ----

#define STRATA_ADMM_INSTANTIATE(T)                                                                          \
  template BacktrackResult update_p(AdmmLayer<T>&, const Tensor<T>&, const Tensor<T>&, const AdmmSettings&, \
                                    Backend&);                                                              \
  template BacktrackResult update_W(AdmmLayer<T>&, const AdmmSettings&, Backend&);                          \
  template void update_b(AdmmLayer<T>&);                                                                    \
  template void update_z_hidden(AdmmLayer<T>&, const AdmmSettings&);                                        \
  template int update_z_output(AdmmLayer<T>&, const Tensor<T>&, const AdmmSettings&);                       \
  template void update_q(AdmmLayer<T>&, const Tensor<T>&, const AdmmSettings&);                             \
  template void update_u(AdmmLayer<T>&, const Tensor<T>&, const AdmmSettings&);                             \
  template void update_layer_backward(AdmmLayer<T>&, const BackwardInputs<T>&, const AdmmSettings&,         \
                                      Backend&);                                                            \
  template void update_layer_forward(AdmmLayer<T>&, const Tensor<T>&, const AdmmSettings&);                 \
  template double p_objective(const AdmmLayer<T>&, const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,    \
                              const AdmmSettings&, Backend&);                                               \
  template double w_objective(const AdmmLayer<T>&, const Tensor<T>&, const AdmmSettings&, Backend&);        \
  template double z_hidden_objective(const AdmmLayer<T>&, const Tensor<T>&, const Tensor<T>&,               \
                                     const AdmmSettings&);                                                  \
  template double z_output_objective(const AdmmLayer<T>&, const Tensor<T>&, const Tensor<T>&,               \
                                     const AdmmSettings&);                                                  \
  template AdmmTraffic iterate_serial(AdmmNetwork<T>&, const AdmmSettings&, Backend&);                      \
  template AdmmTraffic iterate_parallel(AdmmNetwork<T>&, const AdmmSettings&, Backend&, bool);              \
  template std::vector<std::int8_t> quantize(const Tensor<T>&, const QuantGrid&);                           \
  template Tensor<T> dequantize(const std::vector<std::int8_t>&, const Shape&, const QuantGrid&);           \
  template AdmmData<T> admm_columns(const LabelledImages&, std::int64_t, std::uint64_t);                    \
  template AdmmNetwork<T> cold_start(const Tensor<T>&, const Tensor<T>&, const std::vector<std::int64_t>&,  \
                                     std::uint64_t, Backend&);                                              \
  template AdmmNetwork<T> warm_start_deeper(const AdmmNetwork<T>&, int, Backend&);                          \
  template Tensor<T> forward_logits(const AdmmNetwork<T>&, const Tensor<T>&, Backend&);                     \
  template double accuracy(const AdmmNetwork<T>&, const Tensor<T>&, const std::vector<std::int32_t>&,       \
                           Backend&);                                                                       \
  template double mean_cross_entropy(const AdmmNetwork<T>&, const Tensor<T>&, const Tensor<T>&, Backend&);  \
  template AdmmResidual residual(const AdmmNetwork<T>&, const AdmmSettings&);

STRATA_ADMM_INSTANTIATE(float)
STRATA_ADMM_INSTANTIATE(double)
#undef STRATA_ADMM_INSTANTIATE

}  // namespace strata::real
