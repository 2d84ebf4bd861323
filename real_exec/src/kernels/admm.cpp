// The ADMM updates of admm.hpp. Equations cite pdADMM (Wang, Chai, Cheng & Zhao, ICDM 2020) and
// its public code (github.com/xianggebenben/pdADMM, pdADMM-G); the code was read, not copied.
#include "strata/real/kernels/admm.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "admm_math.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using admm_detail::add_bias;
using admm_detail::cross_entropy_sum;
using admm_detail::fit_residual;
using admm_detail::I64;
using admm_detail::matmul;
using admm_detail::number;
using admm_detail::require_positive;
using admm_detail::softmax_columns;
using admm_detail::sum_squares;

template <typename T>
double squared_distance(const Tensor<T>& x, const Tensor<T>& y) {
  double s = 0;
  for (I64 i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    s += d * d;
  }
  return s;
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
    quantize_into(candidate.data(), d.size(), s.grid, codes.data());
    dequantize_into(codes.data(), d.size(), s.grid, candidate.data());
    for (I64 i = 0; i < d.size(); ++i) d[i] = candidate[i] - layer.p[i];
    const double dd = sum_squares(d);
    if (dd > 0) matmul(backend, layer.W, Transpose::no, d, Transpose::no, wd, T{1}, T{0});
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
  matmul(backend, layer.W, Transpose::yes, r, Transpose::no, g, static_cast<T>(s.nu), T{0});
  const T rho = static_cast<T>(s.rho);
  for (I64 i = 0; i < g.size(); ++i) g[i] += u_prev[i] + rho * (layer.p[i] - q_prev[i]);
  if (s.quantize_p) return update_p_quantized(layer, g, s, backend);

  Tensor<T> wg = Tensor<T>::zeros(layer.wp.shape());
  matmul(backend, layer.W, Transpose::no, g, Transpose::no, wg, T{1}, T{0});
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
  matmul(backend, r, Transpose::no, layer.p, Transpose::yes, grad, static_cast<T>(s.nu),
         static_cast<T>(s.weight_decay));
  Tensor<T> gp = Tensor<T>::zeros(layer.wp.shape());
  matmul(backend, grad, Transpose::no, layer.p, Transpose::no, gp, T{1}, T{0});
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
  matmul(backend, at.W, Transpose::no, p, Transpose::no, at.wp, T{1}, T{0});
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
  matmul(backend, W, Transpose::no, at.p, Transpose::no, at.wp, T{1}, T{0});
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
                                     const AdmmSettings&);

STRATA_ADMM_INSTANTIATE(float)
STRATA_ADMM_INSTANTIATE(double)
#undef STRATA_ADMM_INSTANTIATE

}  // namespace strata::real
