// Linear layer, activations, max pooling and softmax cross-entropy. Convolution lives in
// kernels_conv.cpp, optimizers and initialisation in kernels_optim.cpp.
#include "strata/real/kernels/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
template <typename T>
void linear_forward(Backend& backend, const LinearShape& shape, const T* x, const T* w, const T* b, T* y) {
  check_linear_shape(shape);
  const std::int64_t m = shape.batch, k = shape.in_features, n = shape.out_features;
  // Broadcasting the bias into Y first lets the GEMM add X W on top (beta = 1) in one pass.
  if (b != nullptr) {
    for (std::int64_t i = 0; i < m; ++i) std::copy(b, b + n, y + i * n);
  }
  const T beta = b != nullptr ? T{1} : T{0};
  backend.gemm(Transpose::no, Transpose::no, m, n, k, T{1}, x, k, w, n, beta, y, n);
}

template <typename T>
void linear_backward_data(Backend& backend, const LinearShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate) {
  check_linear_shape(shape);
  const std::int64_t m = shape.batch, k = shape.in_features, n = shape.out_features;
  backend.gemm(Transpose::no, Transpose::yes, m, k, n, T{1}, dy, n, w, n, accumulate ? T{1} : T{0}, dx, k);
}

template <typename T>
void linear_backward_weight(Backend& backend, const LinearShape& shape, const T* x, const T* dy, T* dw, T* db,
                            bool accumulate) {
  check_linear_shape(shape);
  const std::int64_t m = shape.batch, k = shape.in_features, n = shape.out_features;
  backend.gemm(Transpose::yes, Transpose::no, k, n, m, T{1}, x, k, dy, n, accumulate ? T{1} : T{0}, dw, n);
  if (db == nullptr) return;
  if (!accumulate) std::fill(db, db + n, T{0});
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) db[j] += dy[i * n + j];
  }
}

template <typename T>
void relu_forward(std::int64_t n, const T* x, T* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > T{0} ? x[i] : T{0};
}

template <typename T>
void relu_backward(std::int64_t n, const T* x, const T* dy, T* dx) {
  for (std::int64_t i = 0; i < n; ++i) dx[i] = x[i] > T{0} ? dy[i] : T{0};
}

template <typename T>
void tanh_forward(std::int64_t n, const T* x, T* y) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

template <typename T>
void tanh_backward(std::int64_t n, const T* y, const T* dy, T* dx) {
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (T{1} - y[i] * y[i]);
}

template <typename T>
void maxpool2x2_forward(const Pool2dShape& shape, const T* x, T* y, std::int64_t* argmax) {
  check_pool2x2_shape(shape);
  const std::int64_t h = shape.height, w = shape.width;
  const std::int64_t oh = shape.out_height(), ow = shape.out_width();
  std::int64_t out = 0;
  for (std::int64_t plane = 0; plane < shape.batch * shape.channels; ++plane) {
    const std::int64_t base = plane * h * w;
    for (std::int64_t r = 0; r < oh; ++r) {
      for (std::int64_t c = 0; c < ow; ++c, ++out) {
        std::int64_t best = base + 2 * r * w + 2 * c;
        for (std::int64_t candidate : {best + 1, best + w, best + w + 1}) {
          if (x[candidate] > x[best]) best = candidate;
        }
        y[out] = x[best];
        argmax[out] = best;
      }
    }
  }
}

template <typename T>
void maxpool2x2_backward(const Pool2dShape& shape, const T* dy, const std::int64_t* argmax, T* dx) {
  std::fill(dx, dx + shape.input_size(), T{0});
  const std::int64_t outputs = shape.output_size();
  // Windows do not overlap (stride 2 = window 2), so every input gets at most one gradient.
  for (std::int64_t i = 0; i < outputs; ++i) dx[argmax[i]] += dy[i];
}

template <typename T>
T softmax_cross_entropy_forward(std::int64_t batch, std::int64_t classes, const T* logits,
                                const std::int32_t* labels, T* probs) {
  check_softmax_shape(batch, classes);
  double total = 0.0;  // summed in double so a large float batch loses no precision
  for (std::int64_t i = 0; i < batch; ++i) {
    const T* row = logits + i * classes;
    T* p = probs + i * classes;
    const std::int32_t label = labels[i];
    STRATA_ASSERT(label >= 0 && label < classes, "label " + std::to_string(label) + " of row " +
                                                     std::to_string(i) + " outside [0, " +
                                                     std::to_string(classes) + ")");
    const T max = *std::max_element(row, row + classes);
    T sum{0};
    for (std::int64_t j = 0; j < classes; ++j) {
      p[j] = std::exp(row[j] - max);
      sum += p[j];
    }
    for (std::int64_t j = 0; j < classes; ++j) p[j] /= sum;
    total += static_cast<double>(std::log(sum) + max - row[label]);
  }
  return static_cast<T>(total / static_cast<double>(batch));
}

template <typename T>
void softmax_cross_entropy_backward(std::int64_t batch, std::int64_t classes, const T* probs,
                                    const std::int32_t* labels, T* dlogits) {
  check_softmax_shape(batch, classes);
  const T inv_batch = T{1} / static_cast<T>(batch);
  for (std::int64_t i = 0; i < batch; ++i) {
    for (std::int64_t j = 0; j < classes; ++j) {
      dlogits[i * classes + j] = probs[i * classes + j] * inv_batch;
    }
    dlogits[i * classes + labels[i]] -= inv_batch;
  }
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                                \
  template void linear_forward<T>(Backend&, const LinearShape&, const T*, const T*, const T*, T*);           \
  template void linear_backward_data<T>(Backend&, const LinearShape&, const T*, const T*, T*, bool);         \
  template void linear_backward_weight<T>(Backend&, const LinearShape&, const T*, const T*, T*, T*, bool);   \
  template void relu_forward<T>(std::int64_t, const T*, T*);                                                 \
  template void relu_backward<T>(std::int64_t, const T*, const T*, T*);                                      \
  template void tanh_forward<T>(std::int64_t, const T*, T*);                                                 \
  template void tanh_backward<T>(std::int64_t, const T*, const T*, T*);                                      \
  template void maxpool2x2_forward<T>(const Pool2dShape&, const T*, T*, std::int64_t*);                      \
  template void maxpool2x2_backward<T>(const Pool2dShape&, const T*, const std::int64_t*, T*);               \
  template T softmax_cross_entropy_forward<T>(std::int64_t, std::int64_t, const T*, const std::int32_t*,     \
                                              T*);                                                           \
  template void softmax_cross_entropy_backward<T>(std::int64_t, std::int64_t, const T*, const std::int32_t*, \
                                                  T*);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
