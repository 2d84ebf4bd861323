// The kNN graph data set and its kin, for the GCN solvers (GIST, gcn.hpp): undirected graphs in
// CSR (UndirectedGraph; "graph" alone in strata means the Plan's task graph), the GCN-normalised
// adjacency and sparse x dense products with it, and two seeded sources of node-classification
// data sets:
// - a k-nearest-neighbour graph of Fashion-MNIST images (cosine similarity on raw pixels, k
//   neighbours per image, symmetrised), images as node features and their classes as labels;
// - a stochastic block model (Holland, Laskey & Leinhardt 1983) with class-dependent Gaussian
//   features, for graphs of any size in simulation.
//
// Invariants of an UndirectedGraph: row_offsets has node_count + 1 entries, starts at 0 and never
// decreases; every neighbour list is sorted ascending with no duplicates and no self loop; the
// graph is symmetric (j is a neighbour of i exactly when i is a neighbour of j), so every edge
// appears twice in `neighbours`.
// Invariants of a CsrMatrix: the same row_offsets rule; columns sorted within each row and in
// [0, cols); values.size() == columns.size().
// Determinism: every random choice draws raw outputs of a std::mt19937_64 seeded from the
// config (bounded integers by rejection, normals by Box-Muller), never the standard library's
// distributions, whose algorithms each library chooses; so a seed gives one subset, split and
// SBM everywhere (up to the last bit of libm's log in the SBM's geometric skips). A kNN graph
// also depends on the BLAS's float rounding where two similarities tie to within ~1e-7.
// Errors: bad configurations (k < 1, k >= nodes, a subset larger than the data, probabilities
// outside [0, 1], out-of-range edges) throw InputError with one line naming the parameter.
// Ownership: every struct owns its vectors; functions borrow their inputs for the call only.
// Thread safety: functions are reentrant; knn_cosine may start `threads` std::threads of its
// own and joins them before returning.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "strata/real/core/backend.hpp"
#include "strata/real/core/tensor.hpp"
#include "strata/real/data/fashion_mnist.hpp"

namespace strata::real {

// splitmix64(seed ^ splitmix64(stream)): unrelated seeds for the streams of one seeded run (the
// split and the features of a data set, the rounds of GIST), even for neighbouring `stream`s.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream);

struct UndirectedGraph {
  std::int64_t node_count = 0;
  std::vector<std::int64_t> row_offsets = {0};  // node_count + 1
  std::vector<std::int64_t> neighbours;         // 2 * edge_count(), sorted per node

  // Undirected edges (each stored twice).
  std::int64_t edge_count() const { return static_cast<std::int64_t>(neighbours.size()) / 2; }
  std::int64_t degree(std::int64_t node) const { return row_offsets[node + 1] - row_offsets[node]; }
  std::span<const std::int64_t> neighbours_of(std::int64_t node) const;
};

// Builds the undirected simple graph on `node_count` nodes with the given edges: each (u, v)
// adds u-v and v-u; duplicates and self loops are dropped. O(E log E).
// Throws InputError if an endpoint is outside [0, node_count).
UndirectedGraph undirected_graph_from_edges(std::int64_t node_count,
                                            std::span<const std::pair<std::int64_t, std::int64_t>> edges);

template <typename T>
struct CsrMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int64_t> row_offsets = {0};
  std::vector<std::int64_t> columns;
  std::vector<T> values;

  std::int64_t nonzeros() const { return static_cast<std::int64_t>(columns.size()); }
};

// Â = D^-1/2 (A + I) D^-1/2 with D the degree matrix of A + I: Kipf & Welling 2017, eq. 2 (the
// "renormalisation trick"), entry (i, j) = 1 / sqrt((deg i + 1)(deg j + 1)). Symmetric, so the
// backward pass of a GCN layer multiplies by Â itself (Â^T = Â).
template <typename T>
CsrMatrix<T> gcn_normalized_adjacency(const UndirectedGraph& graph);

// Y[rows, width] = A X[cols, width] (row-major, Y overwritten). REQUIRES: x and y do not overlap.
template <typename T>
void spmm(const CsrMatrix<T>& a, std::int64_t width, const T* x, T* y);
// The same with X in two pieces: a column c < own_rows is row c of `own`, any other row
// c - own_rows of `halo` (a graph part's rows of Â over its own rows then its halo, GraphPart in
// kernels/gcn.hpp). Same loop and summation order as spmm.
template <typename T>
void spmm_halo(const CsrMatrix<T>& a, std::int64_t width, std::int64_t own_rows, const T* own, const T* halo,
               T* y);

// ---- k nearest neighbours by cosine similarity ----

// The k most cosine-similar other points of every point, most similar first; ties go to the
// smaller index. `points` is [n, d]. Rows are normalised to unit length (an all-zero row stays
// zero, similarity 0 with everything), then similarities come from one GEMM per block of rows
// against all points (S = X_b X^T through `backend`) and a single pass per row keeps the top k.
// Cost: O(n^2 d) flops in the GEMMs, O(n^2 + n k^2) comparisons in the selection, O(b n)
// memory per thread for a block of b rows (b chosen so a block is <= 64 MiB). Rows are split
// over `threads` std::threads; each row's result does not depend on the split.
// Returns [n * k] neighbour indices, row-major. Throws InputError unless 1 <= k < n.
// REQUIRES: threads >= 1; the backend may be shared by threads (CpuBackend may).
std::vector<std::int64_t> knn_cosine(Backend& backend, const Tensor<float>& points, std::int64_t k,
                                     int threads = 1);

// The symmetrised kNN graph: i-j is an edge if j is among i's k neighbours or i among j's.
// Every node then has >= k neighbours and no self loop.
UndirectedGraph knn_graph(std::int64_t node_count, std::int64_t k, std::span<const std::int64_t> knn);

// ---- node-classification data sets ----

// Disjoint node sets, each sorted ascending.
struct NodeSplit {
  std::vector<std::int64_t> train;
  std::vector<std::int64_t> validation;
  std::vector<std::int64_t> test;
};

// A seeded random split: a uniform permutation of the nodes, the first round(train_fraction n)
// to train, the next round(validation_fraction n) to validation, the rest to test.
// Throws InputError unless both fractions are in [0, 1] and sum to <= 1.
NodeSplit random_node_split(std::int64_t node_count, double train_fraction, double validation_fraction,
                            std::uint64_t seed);

struct NodeDataset {
  UndirectedGraph graph;
  Tensor<float> features;            // [node_count, feature_dim]
  std::vector<std::int32_t> labels;  // node_count classes in [0, classes)
  std::int64_t classes = 0;
  NodeSplit split;
  std::vector<std::int64_t> source_index;  // per node, its row in the data it was drawn from
};

struct KnnDatasetConfig {
  std::int64_t subset_size = 10000;  // images drawn without replacement; 0 takes all of them
  std::int64_t k = 10;
  std::uint64_t seed = 1;  // draws the subset, then the split
  double train_fraction = 0.6;
  double validation_fraction = 0.1;
  int threads = 1;  // for knn_cosine
};

// All 70,000 Fashion-MNIST images: the training split, then the test split.
LabelledImages load_fashion_mnist_all();

// Shifts and scales each feature to zero mean and unit variance over the training nodes (a
// feature constant there is only shifted), as GIST's code does with scikit-learn's
// StandardScaler. Measured on the 10,000-node Fashion-MNIST kNN graph: on raw pixels in [0, 1]
// a 784-256-256-10 GCN needed ~3x the Adam steps to reach 82.7 % test accuracy, and GIST with
// m = 4 ended 6 points lower after 200 steps.
void standardize_features(NodeDataset& data);

// The kNN graph data set over a seeded subset of `images`: nodes are the chosen images in
// ascending order of their index in `images` (source_index), features their pixels, labels
// their classes. Throws InputError if the subset is larger than the data or k is out of range.
NodeDataset knn_image_dataset(Backend& backend, const LabelledImages& images, const KnnDatasetConfig& config);

// ---- stochastic block model ----

// n nodes in `classes` contiguous blocks of near-equal size (node i in block
// floor(i * classes / n)); each intra-block pair is an edge with probability p_in, each
// inter-block pair with p_out, independently. Features: a per-class mean drawn once from
// N(0, mean_scale^2 I), plus per-node N(0, noise^2 I) noise, so classes are separable to a
// degree set by mean_scale / noise.
struct SbmConfig {
  std::int64_t nodes = 1000;
  std::int64_t classes = 4;
  double p_in = 0.01;
  double p_out = 0.001;
  std::int64_t feature_dim = 32;
  double mean_scale = 1.0;
  double noise = 1.0;
  std::uint64_t seed = 1;
  double train_fraction = 0.6;
  double validation_fraction = 0.1;

  // p_in and p_out that give each node the expected numbers of intra- and inter-block
  // neighbours (degree_in / (block size - 1), degree_out / (nodes - block size)).
  static SbmConfig from_expected_degrees(std::int64_t nodes, std::int64_t classes, double degree_in,
                                         double degree_out);
};

// The expected number of undirected edges and the expected intra-block share of them.
double sbm_expected_edges(const SbmConfig& config);
double sbm_expected_intra_fraction(const SbmConfig& config);

// O(nodes + edges) expected time: within each block pair, the gaps between successive edges in
// the list of candidate pairs are geometric, so only the edges are drawn (Batagelj & Brandes
// 2005, "Efficient generation of large random networks", algorithm G(n,p)), never all n^2 pairs.
// Throws InputError on nodes < 1, classes outside [1, nodes], p outside [0, 1], feature_dim < 1.
NodeDataset stochastic_block_model(const SbmConfig& config);

// ---- A task for a graph that comes without data ----

// Node classification on `graph` (a generated one: the power-law graph of a split GCN Plan):
// features N(0, 1) [nodes, feature_dim]; node i's label the largest of its `classes` scores
// (ÂX V)_i for a seeded teacher V ~ N(0, 1) [feature_dim, classes] (Â as
// gcn_normalized_adjacency, the first ties first), so a GCN can learn it; split 60/10/30 % as
// random_node_split. O(nnz feature_dim + nodes feature_dim classes).
// Throws InputError unless feature_dim >= 1 and 2 <= classes.
NodeDataset teacher_node_dataset(UndirectedGraph graph, std::int64_t feature_dim, std::int64_t classes,
                                 std::uint64_t seed);

}  // namespace strata::real
