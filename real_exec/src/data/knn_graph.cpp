// Graphs in CSR, the GCN normalisation, kNN graphs of images and stochastic block models.
#include "strata/real/data/knn_graph.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// A similarity block of at most this many bytes per thread: 64 MiB keeps two threads well inside
// the memory of a laptop even for the 70,000-image graph (240 rows per block there).
constexpr std::int64_t kKnnBlockBytes = std::int64_t{64} << 20;
constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;

// The top 53 bits of one output as a double in [0, 1).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * kTwoToMinus53; }

// Box-Muller on raw outputs (std::normal_distribution's algorithm differs between libraries).
void fill_standard_normal(std::mt19937_64& rng, std::int64_t n, double scale, float* out) {
  for (std::int64_t i = 0; i < n; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform01(rng)));
    const double angle = 2.0 * std::numbers::pi * uniform01(rng);
    out[i] = static_cast<float>(scale * radius * std::cos(angle));
    if (i + 1 < n) out[i + 1] = static_cast<float>(scale * radius * std::sin(angle));
  }
}

[[noreturn]] void bad_input(const std::string& what, const std::string& problem) {
  throw InputError(input_error_message(what, "", problem));
}

Tensor<float> unit_rows(const Tensor<float>& points) {
  Tensor<float> unit = points;
  const std::int64_t n = points.dim(0), d = points.dim(1);
  for (std::int64_t i = 0; i < n; ++i) {
    float* row = unit.data() + i * d;
    double norm2 = 0.0;
    for (std::int64_t j = 0; j < d; ++j) norm2 += static_cast<double>(row[j]) * row[j];
    if (norm2 == 0.0) continue;  // a blank image: similarity 0 with everything
    const auto inv = static_cast<float>(1.0 / std::sqrt(norm2));
    for (std::int64_t j = 0; j < d; ++j) row[j] *= inv;
  }
  return unit;
}

// Keeps the k largest of sims[0..n) except `self`, in one pass. The scan goes by ascending
// index and a candidate must beat the current k-th strictly, so ties keep the smaller index.
void top_k_row(const float* sims, std::int64_t n, std::int64_t self, std::int64_t k, std::vector<float>& best,
               std::int64_t* out) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const float s = sims[j];
    if (j == self || (count == k && !(s > best[k - 1]))) continue;
    std::int64_t pos = count < k ? count++ : k - 1;
    for (; pos > 0 && best[pos - 1] < s; --pos) {
      best[pos] = best[pos - 1];
      out[pos] = out[pos - 1];
    }
    best[pos] = s;
    out[pos] = j;
  }
}

// Draws the edges of one block pair by geometric skipping over its candidate pairs in a fixed
// order: intra-block (a == b) pairs (v, w), w < v, row by row as in Batagelj & Brandes' G(n,p);
// inter-block pairs row-major over [size_a] x [size_b].
void draw_block_pair(std::int64_t start_a, std::int64_t size_a, std::int64_t start_b, std::int64_t size_b,
                     bool same, double p, std::mt19937_64& rng,
                     std::vector<std::pair<std::int64_t, std::int64_t>>& edges) {
  if (p <= 0.0) return;
  const double total = same ? 0.5 * static_cast<double>(size_a) * static_cast<double>(size_a - 1)
                            : static_cast<double>(size_a) * static_cast<double>(size_b);
  // The number of non-edges before the next edge is geometric: floor(log(U) / log(1 - p)).
  // Kept as a double, since for small p it may exceed any pair count; checked before conversion.
  const double log_q = std::log1p(-p);
  auto skip = [&]() { return p >= 1.0 ? 0.0 : std::floor(std::log(1.0 - uniform01(rng)) / log_q); };
  if (same) {
    std::int64_t v = 1, w = -1;
    while (v < size_a) {
      const double gap = skip();
      if (gap >= total) return;
      w += 1 + static_cast<std::int64_t>(gap);
      while (w >= v && v < size_a) {
        w -= v;
        ++v;
      }
      if (v < size_a) edges.emplace_back(start_a + v, start_a + w);
    }
    return;
  }
  std::int64_t index = -1;
  for (;;) {
    const double gap = skip();
    if (gap >= total || static_cast<double>(index + 1) + gap >= total) return;
    index += 1 + static_cast<std::int64_t>(gap);
    edges.emplace_back(start_a + index / size_b, start_b + index % size_b);
  }
}

std::int64_t block_start(std::int64_t block, std::int64_t nodes, std::int64_t classes) {
  return (block * nodes + classes - 1) / classes;  // ceil(block n / c): node i in floor(i c / n)
}

void check_probability(const char* name, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    bad_input("stochastic block model", std::string(name) + " = " + std::to_string(p) + " outside [0, 1]");
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(seed ^ splitmix64(stream));
}

std::span<const std::int64_t> UndirectedGraph::neighbours_of(std::int64_t node) const {
  STRATA_ASSERT(node >= 0 && node < node_count, "node " + std::to_string(node));
  return std::span<const std::int64_t>(neighbours)
      .subspan(static_cast<std::size_t>(row_offsets[node]), static_cast<std::size_t>(degree(node)));
}

UndirectedGraph undirected_graph_from_edges(std::int64_t node_count,
                                            std::span<const std::pair<std::int64_t, std::int64_t>> edges) {
  STRATA_ASSERT(node_count >= 0, "graph of " + std::to_string(node_count) + " nodes");
  UndirectedGraph g;
  g.node_count = node_count;
  std::vector<std::int64_t> count(static_cast<std::size_t>(node_count) + 1, 0);
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto [u, v] = edges[e];
    if (u < 0 || u >= node_count || v < 0 || v >= node_count) {
      bad_input("edge list", "edge " + std::to_string(e) + " (" + std::to_string(u) + ", " +
                                 std::to_string(v) + ") has a node outside [0, " +
                                 std::to_string(node_count) + ")");
    }
    if (u != v) ++count[u + 1], ++count[v + 1];
  }
  // Counting sort into rows, then sort and deduplicate each row: O(n + E log max degree).
  for (std::int64_t i = 0; i < node_count; ++i) count[i + 1] += count[i];
  std::vector<std::int64_t> filled(count.begin(), count.end() - 1);
  std::vector<std::int64_t> raw(static_cast<std::size_t>(count.back()));
  for (const auto& [u, v] : edges) {
    if (u != v) raw[filled[u]++] = v, raw[filled[v]++] = u;
  }
  g.row_offsets.assign(1, 0);
  g.neighbours.reserve(raw.size());
  for (std::int64_t i = 0; i < node_count; ++i) {
    const auto begin = raw.begin() + count[i], end = raw.begin() + count[i + 1];
    std::sort(begin, end);
    g.neighbours.insert(g.neighbours.end(), begin, std::unique(begin, end));
    g.row_offsets.push_back(static_cast<std::int64_t>(g.neighbours.size()));
  }
  return g;
}

template <typename T>
CsrMatrix<T> gcn_normalized_adjacency(const UndirectedGraph& graph) {
  CsrMatrix<T> a;
  a.rows = a.cols = graph.node_count;
  a.columns.reserve(graph.neighbours.size() + static_cast<std::size_t>(graph.node_count));
  a.values.reserve(a.columns.capacity());
  auto inv_sqrt_degree = [&](std::int64_t i) {
    return 1.0 / std::sqrt(static_cast<double>(graph.degree(i) + 1));
  };
  for (std::int64_t i = 0; i < graph.node_count; ++i) {
    const double di = inv_sqrt_degree(i);
    bool diagonal_done = false;
    for (const std::int64_t j : graph.neighbours_of(i)) {
      if (!diagonal_done && j > i) {
        a.columns.push_back(i), a.values.push_back(static_cast<T>(di * di));
        diagonal_done = true;
      }
      a.columns.push_back(j), a.values.push_back(static_cast<T>(di * inv_sqrt_degree(j)));
    }
    if (!diagonal_done) a.columns.push_back(i), a.values.push_back(static_cast<T>(di * di));
    a.row_offsets.push_back(a.nonzeros());
  }
  return a;
}

namespace {

// The rows an aggregation gathers lie anywhere in X: each is a run of `width` values the hardware
// prefetchers cannot guess (they follow strides within a page). Asking for the row kPrefetchAhead
// nonzeros ahead, a cache line at a time, overlaps its fetch with the rows before it.
constexpr std::int64_t kPrefetchAhead = 8;

template <typename T>
void prefetch_row(const T* row, std::int64_t width) {
  const auto* bytes = reinterpret_cast<const char*>(row);
  for (std::int64_t b = 0; b < width * static_cast<std::int64_t>(sizeof(T)); b += 64)
    __builtin_prefetch(bytes + b);
}

// y = A [x; halo] (see spmm_halo), halo unused when own_rows >= A's columns.
template <typename T>
void gather_rows(const CsrMatrix<T>& a, std::int64_t width, std::int64_t own_rows, const T* x, const T* halo,
                 T* y) {
  auto row_of = [&](std::int64_t c) { return c < own_rows ? x + c * width : halo + (c - own_rows) * width; };
  const std::int64_t nnz = a.nonzeros();
  for (std::int64_t i = 0; i < a.rows; ++i) {
    T* out = y + i * width;
    std::fill(out, out + width, T{0});
    for (std::int64_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      if (p + kPrefetchAhead < nnz) prefetch_row(row_of(a.columns[p + kPrefetchAhead]), width);
      const T value = a.values[p];
      const T* in = row_of(a.columns[p]);
      for (std::int64_t c = 0; c < width; ++c) out[c] += value * in[c];
    }
  }
}

}  // namespace

template <typename T>
void spmm(const CsrMatrix<T>& a, std::int64_t width, const T* x, T* y) {
  STRATA_ASSERT(width >= 0, "spmm width " + std::to_string(width));
  gather_rows(a, width, a.cols, x, x, y);
}

template <typename T>
void spmm_halo(const CsrMatrix<T>& a, std::int64_t width, std::int64_t own_rows, const T* own, const T* halo,
               T* y) {
  STRATA_ASSERT(width >= 0 && own_rows >= 0, "spmm width " + std::to_string(width));
  gather_rows(a, width, own_rows, own, halo, y);
}

std::vector<std::int64_t> knn_cosine(Backend& backend, const Tensor<float>& points, std::int64_t k,
                                     int threads) {
  STRATA_ASSERT(points.rank() == 2 && threads >= 1,
                "kNN over a rank-" + std::to_string(points.rank()) + " tensor");
  const std::int64_t n = points.dim(0), d = points.dim(1);
  if (k < 1 || k >= n) {
    bad_input("kNN graph",
              "k = " + std::to_string(k) + " must be in [1, nodes - 1] with " + std::to_string(n) + " nodes");
  }
  const Tensor<float> unit = unit_rows(points);
  const std::int64_t block = std::clamp<std::int64_t>(kKnnBlockBytes / (n * 4), 1, n);
  const std::int64_t blocks = (n + block - 1) / block;
  std::vector<std::int64_t> knn(static_cast<std::size_t>(n * k));
  // Thread t takes blocks t, t + threads, ...; rows are independent, so the split changes nothing.
  auto run = [&](int t) {
    std::vector<float> sims(static_cast<std::size_t>(block * n));
    std::vector<float> best(static_cast<std::size_t>(k));
    for (std::int64_t b = t; b < blocks; b += threads) {
      const std::int64_t first = b * block, rows = std::min(block, n - first);
      backend.gemm(Transpose::no, Transpose::yes, rows, n, d, 1.0f, unit.data() + first * d, d, unit.data(),
                   d, 0.0f, sims.data(), n);
      for (std::int64_t r = 0; r < rows; ++r) {
        top_k_row(sims.data() + r * n, n, first + r, k, best, knn.data() + (first + r) * k);
      }
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(run, t);
  run(0);
  for (auto& w : workers) w.join();
  return knn;
}

UndirectedGraph knn_graph(std::int64_t node_count, std::int64_t k, std::span<const std::int64_t> knn) {
  STRATA_ASSERT(static_cast<std::int64_t>(knn.size()) == node_count * k, "kNN lists of the wrong size");
  std::vector<std::pair<std::int64_t, std::int64_t>> edges;
  edges.reserve(knn.size());
  for (std::int64_t i = 0; i < node_count; ++i) {
    for (std::int64_t j = 0; j < k; ++j) edges.emplace_back(i, knn[i * k + j]);
  }
  return undirected_graph_from_edges(node_count, edges);
}

NodeSplit random_node_split(std::int64_t node_count, double train_fraction, double validation_fraction,
                            std::uint64_t seed) {
  if (!(train_fraction >= 0.0 && validation_fraction >= 0.0 && train_fraction + validation_fraction <= 1.0)) {
    bad_input("node split", "train fraction " + std::to_string(train_fraction) + " and validation fraction " +
                                std::to_string(validation_fraction) + " must be >= 0 and sum to <= 1");
  }
  std::mt19937_64 rng(seed);
  const std::vector<std::int64_t> order = shuffled_indices(node_count, rng);
  const auto n = static_cast<double>(node_count);
  const auto train = static_cast<std::int64_t>(std::llround(train_fraction * n));
  const auto validation =
      std::min(node_count - train, static_cast<std::int64_t>(std::llround(validation_fraction * n)));
  NodeSplit split;
  split.train.assign(order.begin(), order.begin() + train);
  split.validation.assign(order.begin() + train, order.begin() + train + validation);
  split.test.assign(order.begin() + train + validation, order.end());
  for (auto* part : {&split.train, &split.validation, &split.test}) std::sort(part->begin(), part->end());
  return split;
}

LabelledImages load_fashion_mnist_all() {
  LabelledImages all = load_fashion_mnist(DatasetSplit::train);
  const LabelledImages test = load_fashion_mnist(DatasetSplit::test);
  const std::int64_t pixels = all.rows * all.cols;
  std::vector<float> values = all.images.values();
  values.insert(values.end(), test.images.values().begin(), test.images.values().end());
  all.count += test.count;
  all.images = Tensor<float>({all.count, pixels}, std::move(values));
  all.labels.insert(all.labels.end(), test.labels.begin(), test.labels.end());
  return all;
}

NodeDataset knn_image_dataset(Backend& backend, const LabelledImages& images,
                              const KnnDatasetConfig& config) {
  const std::int64_t size = config.subset_size == 0 ? images.count : config.subset_size;
  if (size < 0 || size > images.count) {
    bad_input("kNN data set", "subset of " + std::to_string(config.subset_size) +
                                  " images but the data has " + std::to_string(images.count));
  }
  std::mt19937_64 rng(config.seed);
  std::vector<std::int64_t> chosen = shuffled_indices(images.count, rng);
  chosen.resize(static_cast<std::size_t>(size));
  std::sort(chosen.begin(), chosen.end());
  NodeDataset data;
  gather_batch(images, chosen, data.features, data.labels);
  data.classes = kFashionMnistClasses;
  data.source_index = std::move(chosen);
  data.graph = knn_graph(size, config.k, knn_cosine(backend, data.features, config.k, config.threads));
  data.split =
      random_node_split(size, config.train_fraction, config.validation_fraction, mix_seed(config.seed, 1));
  return data;
}

void standardize_features(NodeDataset& data) {
  const std::vector<std::int64_t>& fit = data.split.train;
  const std::int64_t n = data.features.dim(0), f = data.features.dim(1);
  if (fit.empty()) return;
  float* x = data.features.data();
  for (std::int64_t j = 0; j < f; ++j) {
    double mean = 0, var = 0;
    for (const std::int64_t i : fit) mean += x[i * f + j];
    mean /= static_cast<double>(fit.size());
    for (const std::int64_t i : fit) var += (x[i * f + j] - mean) * (x[i * f + j] - mean);
    const double sd = std::sqrt(var / static_cast<double>(fit.size()));
    const double inv = sd > 1e-12 ? 1.0 / sd : 1.0;
    for (std::int64_t i = 0; i < n; ++i) x[i * f + j] = static_cast<float>((x[i * f + j] - mean) * inv);
  }
}

SbmConfig SbmConfig::from_expected_degrees(std::int64_t nodes, std::int64_t classes, double degree_in,
                                           double degree_out) {
  SbmConfig config;
  config.nodes = nodes;
  config.classes = classes;
  const double block = static_cast<double>(nodes) / static_cast<double>(std::max<std::int64_t>(classes, 1));
  config.p_in = block > 1.0 ? degree_in / (block - 1.0) : 0.0;
  config.p_out = static_cast<double>(nodes) > block ? degree_out / (static_cast<double>(nodes) - block) : 0.0;
  return config;
}

double sbm_expected_edges(const SbmConfig& c) {
  double intra = 0.0, pairs = 0.5 * static_cast<double>(c.nodes) * static_cast<double>(c.nodes - 1);
  for (std::int64_t b = 0; b < c.classes; ++b) {
    const auto s =
        static_cast<double>(block_start(b + 1, c.nodes, c.classes) - block_start(b, c.nodes, c.classes));
    intra += 0.5 * s * (s - 1.0);
  }
  return c.p_in * intra + c.p_out * (pairs - intra);
}

double sbm_expected_intra_fraction(const SbmConfig& c) {
  SbmConfig intra_only = c;
  intra_only.p_out = 0.0;
  const double total = sbm_expected_edges(c);
  return total > 0.0 ? sbm_expected_edges(intra_only) / total : 0.0;
}

NodeDataset stochastic_block_model(const SbmConfig& c) {
  if (c.nodes < 1)
    bad_input("stochastic block model", "nodes = " + std::to_string(c.nodes) + " must be >= 1");
  if (c.classes < 1 || c.classes > c.nodes) {
    bad_input("stochastic block model", "classes = " + std::to_string(c.classes) +
                                            " must be in [1, nodes = " + std::to_string(c.nodes) + "]");
  }
  if (c.feature_dim < 1) {
    bad_input("stochastic block model", "feature_dim = " + std::to_string(c.feature_dim) + " must be >= 1");
  }
  check_probability("p_in", c.p_in);
  check_probability("p_out", c.p_out);
  std::mt19937_64 edge_rng(c.seed);
  std::vector<std::pair<std::int64_t, std::int64_t>> edges;
  edges.reserve(static_cast<std::size_t>(1.1 * sbm_expected_edges(c)) + 16);
  for (std::int64_t a = 0; a < c.classes; ++a) {
    const std::int64_t start_a = block_start(a, c.nodes, c.classes);
    const std::int64_t size_a = block_start(a + 1, c.nodes, c.classes) - start_a;
    for (std::int64_t b = a; b < c.classes; ++b) {
      const std::int64_t start_b = block_start(b, c.nodes, c.classes);
      const std::int64_t size_b = block_start(b + 1, c.nodes, c.classes) - start_b;
      draw_block_pair(start_a, size_a, start_b, size_b, a == b, a == b ? c.p_in : c.p_out, edge_rng, edges);
    }
  }
  NodeDataset data;
  data.graph = undirected_graph_from_edges(c.nodes, edges);
  data.classes = c.classes;
  data.labels.resize(static_cast<std::size_t>(c.nodes));
  data.source_index.resize(static_cast<std::size_t>(c.nodes));
  std::mt19937_64 feature_rng(mix_seed(c.seed, 2));
  std::vector<float> means(static_cast<std::size_t>(c.classes * c.feature_dim));
  fill_standard_normal(feature_rng, c.classes * c.feature_dim, c.mean_scale, means.data());
  data.features = Tensor<float>::zeros({c.nodes, c.feature_dim});
  fill_standard_normal(feature_rng, c.nodes * c.feature_dim, c.noise, data.features.data());
  for (std::int64_t i = 0; i < c.nodes; ++i) {
    const std::int64_t label = i * c.classes / c.nodes;
    data.labels[i] = static_cast<std::int32_t>(label);
    data.source_index[i] = i;
    float* row = data.features.data() + i * c.feature_dim;
    for (std::int64_t f = 0; f < c.feature_dim; ++f) row[f] += means[label * c.feature_dim + f];
  }
  data.split = random_node_split(c.nodes, c.train_fraction, c.validation_fraction, mix_seed(c.seed, 1));
  return data;
}

NodeDataset teacher_node_dataset(UndirectedGraph graph, std::int64_t feature_dim, std::int64_t classes,
                                 std::uint64_t seed) {
  if (feature_dim < 1 || classes < 2)
    bad_input("teacher node data set", "feature_dim = " + std::to_string(feature_dim) + " and classes = " +
                                           std::to_string(classes) + " must be >= 1 and >= 2");
  const std::int64_t n = graph.node_count;
  NodeDataset data;
  data.classes = classes;
  std::mt19937_64 rng(mix_seed(seed, 2));
  data.features = Tensor<float>::zeros({n, feature_dim});
  fill_standard_normal(rng, n * feature_dim, 1.0, data.features.data());
  std::vector<float> teacher(static_cast<std::size_t>(feature_dim * classes));
  fill_standard_normal(rng, feature_dim * classes, 1.0, teacher.data());
  const CsrMatrix<float> a = gcn_normalized_adjacency<float>(graph);
  std::vector<float> row(static_cast<std::size_t>(feature_dim)), score(static_cast<std::size_t>(classes));
  data.labels.resize(static_cast<std::size_t>(n));
  data.source_index.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {  // row i of ÂX, then its scores
    std::fill(row.begin(), row.end(), 0.0F);
    for (std::int64_t e = a.row_offsets[i]; e < a.row_offsets[i + 1]; ++e) {
      const float* x = data.features.data() + a.columns[e] * feature_dim;
      for (std::int64_t f = 0; f < feature_dim; ++f) row[f] += a.values[e] * x[f];
    }
    std::fill(score.begin(), score.end(), 0.0F);
    for (std::int64_t f = 0; f < feature_dim; ++f)
      for (std::int64_t c = 0; c < classes; ++c) score[c] += row[f] * teacher[f * classes + c];
    data.labels[i] = static_cast<std::int32_t>(std::max_element(score.begin(), score.end()) - score.begin());
    data.source_index[i] = i;
  }
  data.graph = std::move(graph);
  data.split = random_node_split(n, 0.6, 0.1, mix_seed(seed, 1));
  return data;
}

template CsrMatrix<float> gcn_normalized_adjacency<float>(const UndirectedGraph&);
template CsrMatrix<double> gcn_normalized_adjacency<double>(const UndirectedGraph&);
template void spmm<float>(const CsrMatrix<float>&, std::int64_t, const float*, float*);
template void spmm<double>(const CsrMatrix<double>&, std::int64_t, const double*, double*);
template void spmm_halo<float>(const CsrMatrix<float>&, std::int64_t, std::int64_t, const float*,
                               const float*, float*);
template void spmm_halo<double>(const CsrMatrix<double>&, std::int64_t, std::int64_t, const double*,
                                const double*, double*);

}  // namespace strata::real
