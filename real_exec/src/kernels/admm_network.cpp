// The initialisation, data preparation, adaptive ρ and evaluation of kernels/admm.hpp (the
// per-layer updates are in admm.cpp). Equations cite pdADMM (Wang, Chai, Cheng & Zhao, ICDM
// 2020) and its public code.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "admm_math.hpp"
#include "strata/real/kernels/admm.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using admm_detail::add_bias;
using admm_detail::cross_entropy_sum;
using admm_detail::fit_residual;
using admm_detail::I64;
using admm_detail::matmul;
using admm_detail::relu;
using admm_detail::require_positive;
using admm_detail::sum_squares;

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

}  // namespace

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
    matmul(backend, layer.W, Transpose::no, p, Transpose::no, layer.wp, T{1}, T{0});
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
  matmul(backend, last.W, Transpose::no, last.p, Transpose::no, last.wp, T{1}, T{0});
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
    matmul(backend, layer.W, Transpose::no, a, Transpose::no, z, T{1}, T{0});
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

#define STRATA_ADMM_INSTANTIATE(T)                                                                         \
  template AdmmData<T> admm_columns(const LabelledImages&, std::int64_t, std::uint64_t);                   \
  template AdmmNetwork<T> cold_start(const Tensor<T>&, const Tensor<T>&, const std::vector<std::int64_t>&, \
                                     std::uint64_t, Backend&);                                             \
  template AdmmNetwork<T> warm_start_deeper(const AdmmNetwork<T>&, int, Backend&);                         \
  template Tensor<T> forward_logits(const AdmmNetwork<T>&, const Tensor<T>&, Backend&);                    \
  template double accuracy(const AdmmNetwork<T>&, const Tensor<T>&, const std::vector<std::int32_t>&,      \
                           Backend&);                                                                      \
  template double mean_cross_entropy(const AdmmNetwork<T>&, const Tensor<T>&, const Tensor<T>&, Backend&); \
  template AdmmResidual residual(const AdmmNetwork<T>&, const AdmmSettings&);

STRATA_ADMM_INSTANTIATE(float)
STRATA_ADMM_INSTANTIATE(double)
#undef STRATA_ADMM_INSTANTIATE

}  // namespace strata::real
