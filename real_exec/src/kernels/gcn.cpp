// GCN forward/backward with SpMM + GEMM, and the Adam update; GIST's per-site steps are in gist.cpp,
// the training loops in reference/gcn_train.cpp.
#include "strata/real/kernels/gcn.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "gcn_math.hpp"
#include "gcn_pass.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using gcn_detail::bad_input;
using gcn_detail::ensure_like;
using gcn_detail::GcnPass;

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
GcnData<T> make_gcn_data(const NodeDataset& dataset) {
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

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                   \
  template struct GcnParameters<T>;                                                             \
  template GcnParameters<T> init_gcn<T>(const std::vector<std::int64_t>&, std::uint64_t, bool); \
  template GcnData<T> make_gcn_data<T>(const NodeDataset&);                                     \
  template Tensor<T> gcn_logits<T>(Backend&, const GcnData<T>&, const GcnParameters<T>&);       \
  template double gcn_accuracy<T>(Backend&, const GcnData<T>&, const GcnParameters<T>&,         \
                                  std::span<const std::int64_t>);                               \
  template T gcn_loss_and_gradients<T>(Backend&, const GcnData<T>&, const GcnParameters<T>&,    \
                                       GcnParameters<T>&);                                      \
  template void adam_update<T>(const AdamConfig&, const GcnParameters<T>&, GcnAdamState<T>&,    \
                               GcnParameters<T>&);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

template <typename T>
std::vector<GraphPart<T>> split_graph(const GcnData<T>& data, std::span<const std::int32_t> partition,
                                      int parts) {
  const CsrMatrix<T>& a = data.adjacency;
  const std::int64_t n = a.rows;
  if (static_cast<std::int64_t>(partition.size()) != n || parts < 1)
    throw InputError("graph split: " + std::to_string(partition.size()) + " part labels for " +
                     std::to_string(n) + " nodes in " + std::to_string(parts) + " parts");
  std::vector<GraphPart<T>> out(static_cast<std::size_t>(parts));
  std::vector<std::int64_t> local(static_cast<std::size_t>(n));  // a node's row in its part
  for (std::int64_t u = 0; u < n; ++u) {
    const std::int32_t p = partition[static_cast<std::size_t>(u)];
    if (p < 0 || p >= parts)
      throw InputError("graph split: node " + std::to_string(u) + " is in part " + std::to_string(p) +
                       ", outside [0, " + std::to_string(parts) + ")");
    std::vector<std::int64_t>& nodes = out[static_cast<std::size_t>(p)].nodes;
    local[static_cast<std::size_t>(u)] = static_cast<std::int64_t>(nodes.size());
    nodes.push_back(u);
  }
  for (const std::int64_t u : data.split.train)
    out[static_cast<std::size_t>(partition[static_cast<std::size_t>(u)])].train.push_back(
        local[static_cast<std::size_t>(u)]);
  // seen[v] == p: v already among part p's halo; slot[v]: its column in part p's matrix.
  std::vector<std::int32_t> seen(static_cast<std::size_t>(n), -1);
  std::vector<std::int64_t> slot(static_cast<std::size_t>(n), 0);
  for (int p = 0; p < parts; ++p) {
    GraphPart<T>& part = out[static_cast<std::size_t>(p)];
    std::vector<std::vector<std::int64_t>> from(static_cast<std::size_t>(parts));  // halo nodes by part
    for (const std::int64_t u : part.nodes)
      for (std::int64_t e = a.row_offsets[u]; e < a.row_offsets[u + 1]; ++e) {
        const std::int64_t v = a.columns[e];
        const std::int32_t q = partition[static_cast<std::size_t>(v)];
        if (q == p || seen[static_cast<std::size_t>(v)] == p) continue;
        seen[static_cast<std::size_t>(v)] = p;
        from[static_cast<std::size_t>(q)].push_back(v);
      }
    part.halo_start.assign(1, 0);
    for (int q = 0; q < parts; ++q) {
      std::vector<std::int64_t>& halo = from[static_cast<std::size_t>(q)];
      std::sort(halo.begin(), halo.end());
      std::vector<std::vector<std::int64_t>>& sends = out[static_cast<std::size_t>(q)].sends;
      sends.resize(static_cast<std::size_t>(parts));
      std::vector<std::int64_t>& rows = sends[static_cast<std::size_t>(p)];
      rows.clear();
      for (std::size_t i = 0; i < halo.size(); ++i) {
        slot[static_cast<std::size_t>(halo[i])] =
            part.rows() + part.halo_start.back() + static_cast<std::int64_t>(i);
        rows.push_back(local[static_cast<std::size_t>(halo[i])]);
      }
      part.halo_start.push_back(part.halo_start.back() + static_cast<std::int64_t>(halo.size()));
    }
    CsrMatrix<T>& m = part.adjacency;
    m.rows = part.rows();
    m.cols = part.rows() + part.halo_rows();
    std::int64_t nnz = 0;
    for (const std::int64_t u : part.nodes) nnz += a.row_offsets[u + 1] - a.row_offsets[u];
    m.columns.reserve(static_cast<std::size_t>(nnz));
    m.values.reserve(static_cast<std::size_t>(nnz));
    m.row_offsets.reserve(part.nodes.size() + 1);
    for (const std::int64_t u : part.nodes) {
      for (std::int64_t e = a.row_offsets[u]; e < a.row_offsets[u + 1]; ++e) {
        const std::int64_t v = a.columns[e];
        m.columns.push_back(partition[static_cast<std::size_t>(v)] == p ? local[static_cast<std::size_t>(v)]
                                                                        : slot[static_cast<std::size_t>(v)]);
        m.values.push_back(a.values[e]);
      }
      m.row_offsets.push_back(m.nonzeros());
    }
  }
  return out;
}

template std::vector<GraphPart<float>> split_graph<float>(const GcnData<float>&,
                                                          std::span<const std::int32_t>, int);
template std::vector<GraphPart<double>> split_graph<double>(const GcnData<double>&,
                                                            std::span<const std::int32_t>, int);

}  // namespace strata::real
