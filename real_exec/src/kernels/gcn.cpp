// GCN forward/backward with SpMM + GEMM, and full-batch Adam; GIST's per-site steps are in gist.cpp.
#include "strata/real/kernels/gcn.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "gcn_math.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using gcn_detail::bad_input;

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

}  // namespace

template <typename T>
std::vector<std::int64_t> GcnParameters<T>::widths() const {
  std::vector<std::int64_t> w;
  if (weights.empty()) return w;
  w.push_back(weights[0].dim(0));
  for (const Tensor<T>& weight : weights) w.push_back(weight.dim(1));
  return w;
}

template <typename T>
std::int64_t GcnParameters<T>::parameter_count() const {
  std::int64_t count = 0;
  for (std::size_t l = 0; l < weights.size(); ++l) count += weights[l].size() + biases[l].size();
  return count;
}

template <typename T>
GcnParameters<T> init_gcn(const std::vector<std::int64_t>& widths, std::uint64_t seed, bool layer_norm) {
  if (widths.size() < 2)
    bad_input("GCN", "needs >= 2 widths (features, ..., classes), got " + std::to_string(widths.size()));
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] < 1)
      bad_input("GCN", "width " + std::to_string(i) + " = " + std::to_string(widths[i]) + " must be >= 1");
  }
  std::mt19937_64 rng(seed);
  GcnParameters<T> params;
  params.layer_norm = layer_norm;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    params.weights.push_back(Tensor<T>::zeros({widths[l], widths[l + 1]}));
    he_normal_init(rng, widths[l], params.weights.back().size(), params.weights.back().data());
    params.biases.push_back(Tensor<T>::zeros({widths[l + 1]}));
  }
  return params;
}

template <typename T>
GcnData<T> make_gcn_data(const GraphDataset& dataset) {
  GcnData<T> data;
  data.adjacency = gcn_normalized_adjacency<T>(dataset.graph);
  const std::vector<float>& values = dataset.features.values();
  const Tensor<T> features(dataset.features.shape(), std::vector<T>(values.begin(), values.end()));
  data.propagated_features = Tensor<T>::zeros(features.shape());
  spmm(data.adjacency, features.dim(1), features.data(), data.propagated_features.data());
  data.labels = dataset.labels;
  data.classes = dataset.classes;
  data.split = dataset.split;
  return data;
}

template <typename T>
Tensor<T> gcn_logits(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params) {
  GcnPass<T> pass;
  return pass.forward(backend, data, params);
}

template <typename T>
double gcn_accuracy(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params,
                    std::span<const std::int64_t> nodes) {
  if (nodes.empty()) return 0.0;
  const Tensor<T> logits = gcn_logits(backend, data, params);
  const std::int64_t classes = logits.dim(1);
  std::int64_t correct = 0;
  for (const std::int64_t node : nodes) {
    const T* row = logits.data() + node * classes;
    correct += std::max_element(row, row + classes) - row == data.labels[node];
  }
  return static_cast<double>(correct) / static_cast<double>(nodes.size());
}

template <typename T>
T gcn_loss_and_gradients(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params,
                         GcnParameters<T>& gradients) {
  GcnPass<T> pass;
  return pass.loss_and_gradients(backend, data, params, gradients);
}

template <typename T>
void adam_update(const AdamConfig& config, const GcnParameters<T>& gradients, GcnAdamState<T>& state,
                 GcnParameters<T>& params) {
  if (state.step == 0) {
    state.m = state.v = GcnParameters<T>{};
    ensure_like(state.m, params);
    ensure_like(state.v, params);
  }
  ++state.step;
  for (std::int64_t l = 0; l < params.layers(); ++l) {
    adam_step(config, state.step, params.weights[l].size(), gradients.weights[l].data(),
              state.m.weights[l].data(), state.v.weights[l].data(), params.weights[l].data());
    adam_step(config, state.step, params.biases[l].size(), gradients.biases[l].data(),
              state.m.biases[l].data(), state.v.biases[l].data(), params.biases[l].data());
  }
}

template <typename T>
std::vector<double> train_gcn(Backend& backend, const GcnData<T>& data, GcnParameters<T>& params,
                              const GcnTrainConfig& config) {
  if (config.steps < 0)
    bad_input("GCN training", "steps = " + std::to_string(config.steps) + " must be >= 0");
  GcnPass<T> pass;
  GcnParameters<T> grads;
  GcnAdamState<T> state;
  std::vector<double> losses;
  for (std::int64_t s = 0; s < config.steps; ++s) {
    losses.push_back(static_cast<double>(pass.loss_and_gradients(backend, data, params, grads)));
    adam_update(config.adam, grads, state, params);
  }
  return losses;
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                   \
  template struct GcnParameters<T>;                                                             \
  template GcnParameters<T> init_gcn<T>(const std::vector<std::int64_t>&, std::uint64_t, bool); \
  template GcnData<T> make_gcn_data<T>(const GraphDataset&);                                    \
  template Tensor<T> gcn_logits<T>(Backend&, const GcnData<T>&, const GcnParameters<T>&);       \
  template double gcn_accuracy<T>(Backend&, const GcnData<T>&, const GcnParameters<T>&,         \
                                  std::span<const std::int64_t>);                               \
  template T gcn_loss_and_gradients<T>(Backend&, const GcnData<T>&, const GcnParameters<T>&,    \
                                       GcnParameters<T>&);                                      \
  template void adam_update<T>(const AdamConfig&, const GcnParameters<T>&, GcnAdamState<T>&,    \
                               GcnParameters<T>&);                                              \
  template std::vector<double> train_gcn<T>(Backend&, const GcnData<T>&, GcnParameters<T>&,     \
                                            const GcnTrainConfig&);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
