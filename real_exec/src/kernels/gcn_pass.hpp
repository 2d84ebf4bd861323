// Internal to real_exec (not installed): one GCN forward/backward pass with its scratch space,
// shared by the kernels of gcn.cpp and the reference drivers of reference/gcn_train.cpp, so
// that both run the same arithmetic. See strata/real/kernels/gcn.hpp for the model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "strata/real/kernels/gcn.hpp"
#include "strata/real/kernels/kernels.hpp"
#include "strata/traces/error.hpp"

namespace strata::real::gcn_detail {

// Reallocates only when the shape changes, so training steps reuse their buffers.
template <typename T>
void ensure_shape(Tensor<T>& t, const Shape& shape) {
  if (t.shape() != shape) t = Tensor<T>::zeros(shape);
}

template <typename T>
void ensure_like(GcnParameters<T>& out, const GcnParameters<T>& like) {
  out.layer_norm = like.layer_norm;
  out.weights.resize(like.weights.size());
  out.biases.resize(like.biases.size());
  for (std::size_t l = 0; l < like.weights.size(); ++l) {
    ensure_shape(out.weights[l], like.weights[l].shape());
    ensure_shape(out.biases[l], like.biases[l].shape());
  }
}

template <typename T>
void add_bias_rows(std::int64_t n, std::int64_t width, const T* bias, T* z) {
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < width; ++j) z[i * width + j] += bias[j];
  }
}

// Non-affine layer normalisation of each row in place (Ba et al. 2016, eq. 4, without gain and
// bias): x <- (x - mean) / sqrt(var + eps); inv_std[i] keeps 1 / sqrt(var + eps) for backward.
template <typename T>
void layer_norm_rows(std::int64_t n, std::int64_t width, T* x, T* inv_std) {
  constexpr double kEps = 1e-5;  // PyTorch's default
  for (std::int64_t i = 0; i < n; ++i) {
    T* row = x + i * width;
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < width; ++j) mean += row[j];
    mean /= static_cast<double>(width);
    for (std::int64_t j = 0; j < width; ++j) var += (row[j] - mean) * (row[j] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(width) + kEps);
    for (std::int64_t j = 0; j < width; ++j) row[j] = static_cast<T>((row[j] - mean) * inv);
    inv_std[i] = static_cast<T>(inv);
  }
}

// Back through ReLU(LayerNorm(z)) in place, from the normalised y and the gradient d at the
// ReLU's output: d <- d [y > 0], then dz = inv_std (d - mean(d) - y mean(d y)) with layer norm.
template <typename T>
void relu_norm_backward(std::int64_t n, std::int64_t width, const T* y, const T* inv_std, bool norm, T* d) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T* yr = y + i * width;
    T* dr = d + i * width;
    double mean_d = 0, mean_dy = 0;
    for (std::int64_t j = 0; j < width; ++j) {
      dr[j] = yr[j] > T{0} ? dr[j] : T{0};
      mean_d += dr[j], mean_dy += dr[j] * yr[j];
    }
    if (!norm) continue;
    const auto md = static_cast<T>(mean_d / static_cast<double>(width));
    const auto mdy = static_cast<T>(mean_dy / static_cast<double>(width));
    for (std::int64_t j = 0; j < width; ++j) dr[j] = inv_std[i] * (dr[j] - md - yr[j] * mdy);
  }
}

// The activations and scratch space of one forward/backward pass, kept across steps (one buffer
// per layer, so shapes never change between steps). Layer 0 reads the propagated features ÂX,
// so it needs no SpMM in either direction.
template <typename T>
class GcnPass {
 public:
  // Fills normed_ (per hidden layer: its normalised pre-activation, or the pre-activation
  // itself without layer norm), hidden_ (its ReLU), inv_std_ and logits_.
  const Tensor<T>& forward(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params) {
    const std::int64_t n = data.node_count(), layers = params.layers();
    const Tensor<T>& x = data.propagated_features;
    STRATA_ASSERT(layers >= 1 && x.dim(0) == n && params.weights[0].dim(0) == x.dim(1),
                  "GCN input width does not match the features");
    resize(layers);
    for (std::int64_t l = 0; l < layers; ++l) {
      const std::int64_t in = params.weights[l].dim(0), out = params.weights[l].dim(1);
      const bool last = l + 1 == layers;
      Tensor<T>& z = last ? logits_ : normed_[l];
      ensure_shape(z, {n, out});
      const LinearShape shape{n, in, out};
      const T* no_bias = nullptr;
      if (l == 0) {
        linear_forward(backend, shape, x.data(), params.weights[0].data(), no_bias, z.data());
      } else {
        ensure_shape(product_[l], {n, out});
        linear_forward(backend, shape, hidden_[l - 1].data(), params.weights[l].data(), no_bias,
                       product_[l].data());
        spmm(data.adjacency, out, product_[l].data(), z.data());
      }
      add_bias_rows(n, out, params.biases[l].data(), z.data());
      if (last) break;
      ensure_shape(inv_std_[l], {n});
      if (params.layer_norm) layer_norm_rows(n, out, z.data(), inv_std_[l].data());
      ensure_shape(hidden_[l], {n, out});
      relu_forward(n * out, z.data(), hidden_[l].data());
    }
    return logits_;
  }

  T loss_and_gradients(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params,
                       GcnParameters<T>& grads) {
    forward(backend, data, params);
    ensure_like(grads, params);
    const std::int64_t n = data.node_count(), layers = params.layers();
    const T loss = loss_gradient(data, dz_[layers - 1]);
    for (std::int64_t l = layers - 1; l >= 0; --l) {
      const std::int64_t in = params.weights[l].dim(0), out = params.weights[l].dim(1);
      const Tensor<T>& dz = dz_[l];
      // db = column sums of dZ; dP = Â^T dZ = Â dZ (Â symmetric); dW = H^T dP; dH = dP W^T.
      T* db = grads.biases[l].data();
      std::fill(db, db + out, T{0});
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = 0; j < out; ++j) db[j] += dz[i * out + j];
      }
      const LinearShape shape{n, in, out};
      T* no_bias = nullptr;
      if (l == 0) {  // Z_0 = (ÂX) W_0 + b_0
        linear_backward_weight(backend, shape, data.propagated_features.data(), dz.data(),
                               grads.weights[0].data(), no_bias, false);
        break;
      }
      spmm(data.adjacency, out, dz.data(), product_[l].data());
      linear_backward_weight(backend, shape, hidden_[l - 1].data(), product_[l].data(),
                             grads.weights[l].data(), no_bias, false);
      ensure_shape(dz_[l - 1], {n, in});
      linear_backward_data(backend, shape, product_[l].data(), params.weights[l].data(), dz_[l - 1].data(),
                           false);
      relu_norm_backward(n, in, normed_[l - 1].data(), inv_std_[l - 1].data(), params.layer_norm,
                         dz_[l - 1].data());
    }
    return loss;
  }

 private:
  void resize(std::int64_t layers) {
    const auto count = static_cast<std::size_t>(layers);
    normed_.resize(count - 1), hidden_.resize(count - 1), inv_std_.resize(count - 1);
    product_.resize(count), dz_.resize(count);
  }

  // Softmax cross-entropy over the training rows of logits_; writes dL/dlogits to `dlogits`.
  T loss_gradient(const GcnData<T>& data, Tensor<T>& dlogits) {
    const std::vector<std::int64_t>& train = data.split.train;
    const auto rows = static_cast<std::int64_t>(train.size());
    const std::int64_t classes = logits_.dim(1);
    STRATA_ASSERT(rows > 0, "GCN loss over an empty training set");
    gathered_.resize(static_cast<std::size_t>(rows * classes));
    probs_.resize(gathered_.size());
    labels_.resize(train.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy_n(logits_.data() + train[r] * classes, classes, gathered_.data() + r * classes);
      labels_[r] = data.labels[train[r]];
    }
    const T loss =
        softmax_cross_entropy_forward(rows, classes, gathered_.data(), labels_.data(), probs_.data());
    softmax_cross_entropy_backward(rows, classes, probs_.data(), labels_.data(), gathered_.data());
    ensure_shape(dlogits, logits_.shape());
    dlogits.fill(T{0});
    for (std::int64_t r = 0; r < rows; ++r) {
      std::copy_n(gathered_.data() + r * classes, classes, dlogits.data() + train[r] * classes);
    }
    return loss;
  }

  std::vector<Tensor<T>> normed_, hidden_, inv_std_, product_, dz_;
  Tensor<T> logits_;
  std::vector<T> gathered_, probs_;
  std::vector<std::int32_t> labels_;
};

}  // namespace strata::real::gcn_detail
