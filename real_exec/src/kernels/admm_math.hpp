// Internal to admm.cpp and admm_train.cpp (not installed): the small dense helpers both halves
// of admm.hpp's implementation share: double-accumulated sums, softmax, GEMM on tensors, int8 grid.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "strata/real/kernels/admm.hpp"
#include "strata/traces/error.hpp"

namespace strata::real::admm_detail {

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
T relu(T v) {
  return v > T{0} ? v : T{0};
}

// c = alpha op(a) op(b) + beta c, tensors as row-major matrices.
template <typename T>
void matmul(Backend& backend, const Tensor<T>& a, Transpose ta, const Tensor<T>& b, Transpose tb,
            Tensor<T>& c, T alpha, T beta) {
  const I64 m = ta == Transpose::no ? a.dim(0) : a.dim(1);
  const I64 k = ta == Transpose::no ? a.dim(1) : a.dim(0);
  const I64 n = tb == Transpose::no ? b.dim(1) : b.dim(0);
  STRATA_ASSERT((tb == Transpose::no ? b.dim(0) : b.dim(1)) == k, "admm: inner dimensions differ");
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
// in loop"): the hidden z update (z_hidden_row, admm.cpp) measured 27 ms instead of 2.5 ms per
// 256 x 10,000 layer. Nothing here relies on floating-point traps.
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_VECTORIZE_COMPARES __attribute__((optimize("no-trapping-math")))
#else
#define STRATA_VECTORIZE_COMPARES
#endif

inline std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

inline void require_positive(double value, const char* name) {
  if (!(value > 0)) throw InputError("admm: " + std::string(name) + " = " + number(value) + ": must be > 0");
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

}  // namespace strata::real::admm_detail
