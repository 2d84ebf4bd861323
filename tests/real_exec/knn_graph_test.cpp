// Graph data (kNN graphs of Fashion-MNIST, stochastic block models, CSR, GCN normalisation) and
// GCN / GIST numerics: gradients by finite differences, partitions, the m = 1 identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>

#include "strata/real/data/knn_graph.hpp"
#include "strata/real/kernels/gcn.hpp"
#include "strata/real/reference/gcn_train.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

const LabelledImages& all_images() {
  static const LabelledImages images = load_fashion_mnist_all();
  return images;
}

// Runs `f`, expects an InputError, and returns its message (which must be one line).
template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

TEST(KnnGraph, MatchesBruteForceCosineTopK) {
  CpuBackend backend;
  KnnDatasetConfig config;
  config.subset_size = 600;
  config.threads = 2;
  const NodeDataset data = knn_image_dataset(backend, all_images(), config);
  const std::int64_t n = data.graph.node_count, d = data.features.dim(1), k = config.k;
  ASSERT_EQ(n, 600);
  const std::vector<std::int64_t> knn = knn_cosine(backend, data.features, k);

  // Reference: cosine similarities in double, sorted by (similarity desc, index asc).
  std::vector<double> unit(data.features.values().begin(), data.features.values().end());
  for (std::int64_t i = 0; i < n; ++i) {
    double norm = 0;
    for (std::int64_t j = 0; j < d; ++j) norm += unit[i * d + j] * unit[i * d + j];
    for (std::int64_t j = 0; j < d; ++j) unit[i * d + j] /= std::sqrt(norm);
  }
  std::int64_t exact_rows = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<double> sim(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) {
      sim[j] = std::inner_product(&unit[i * d], &unit[i * d] + d, &unit[j * d], 0.0);
    }
    std::vector<std::int64_t> order;
    for (std::int64_t j = 0; j < n; ++j) {
      if (j != i) order.push_back(j);
    }
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return sim[a] > sim[b]; });
    std::set<std::int64_t> chosen(knn.begin() + i * k, knn.begin() + (i + 1) * k);
    ASSERT_EQ(static_cast<std::int64_t>(chosen.size()), k) << "node " << i;
    EXPECT_EQ(chosen.count(i), 0u) << "self loop at " << i;
    // Float GEMM and double loops may order near-ties differently: the similarities chosen must
    // be the top k within 1e-5, and the sets must agree exactly wherever the k-th and (k+1)-th
    // similarities are 1e-4 apart.
    std::vector<double> got, want;
    for (std::int64_t j = 0; j < k; ++j) got.push_back(sim[knn[i * k + j]]), want.push_back(sim[order[j]]);
    std::sort(got.rbegin(), got.rend());
    for (std::int64_t j = 0; j < k; ++j) EXPECT_NEAR(got[j], want[j], 1e-5) << "node " << i;
    if (sim[order[k - 1]] - sim[order[k]] > 1e-4) {
      EXPECT_EQ(chosen, std::set<std::int64_t>(order.begin(), order.begin() + k)) << "node " << i;
      ++exact_rows;
    }
  }
  EXPECT_GT(exact_rows, n * 8 / 10);

  // The symmetrised graph: >= k neighbours, no self loop, sorted, symmetric, = union of lists.
  const UndirectedGraph& g = data.graph;
  std::int64_t directed = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto nb = g.neighbours_of(i);
    EXPECT_GE(g.degree(i), k);
    EXPECT_TRUE(std::is_sorted(nb.begin(), nb.end()) && std::adjacent_find(nb.begin(), nb.end()) == nb.end());
    EXPECT_FALSE(std::binary_search(nb.begin(), nb.end(), i));
    for (const std::int64_t j : nb) {
      const auto back = g.neighbours_of(j);
      EXPECT_TRUE(std::binary_search(back.begin(), back.end(), i)) << i << "-" << j;
      const bool listed = std::count(knn.begin() + i * k, knn.begin() + (i + 1) * k, j) +
                          std::count(knn.begin() + j * k, knn.begin() + (j + 1) * k, i);
      EXPECT_TRUE(listed) << i << "-" << j;
    }
    directed += g.degree(i);
  }
  EXPECT_EQ(directed, 2 * g.edge_count());
  // Labels and features are those of the chosen images.
  for (std::int64_t i = 0; i < n; i += 97) {
    EXPECT_EQ(data.labels[i], all_images().labels[data.source_index[i]]);
    EXPECT_EQ(data.features[i * d + 300], all_images().images[data.source_index[i] * d + 300]);
  }
}

TEST(KnnGraph, SeedDecidesSubsetGraphAndSplit) {
  CpuBackend backend;
  KnnDatasetConfig config;
  config.subset_size = 400;
  const NodeDataset a = knn_image_dataset(backend, all_images(), config);
  const NodeDataset b = knn_image_dataset(backend, all_images(), config);
  EXPECT_EQ(a.source_index, b.source_index);
  EXPECT_EQ(a.graph.row_offsets, b.graph.row_offsets);
  EXPECT_EQ(a.graph.neighbours, b.graph.neighbours);
  EXPECT_EQ(a.split.train, b.split.train);
  EXPECT_EQ(a.split.test, b.split.test);
  EXPECT_EQ(a.split.train.size() + a.split.validation.size() + a.split.test.size(), 400u);
  EXPECT_EQ(a.split.train.size(), 240u);
  config.seed = 2;
  const NodeDataset c = knn_image_dataset(backend, all_images(), config);
  EXPECT_NE(a.source_index, c.source_index);
}

TEST(GcnNormalisation, ThreeNodePathByHand) {
  // Path 0-1-2: degrees with self loops 2, 3, 2; entry (i, j) = 1 / sqrt(d_i d_j).
  const std::vector<std::pair<std::int64_t, std::int64_t>> edges = {{0, 1}, {2, 1}, {1, 0}};
  const UndirectedGraph g = undirected_graph_from_edges(3, edges);
  EXPECT_EQ(g.edge_count(), 2);
  const CsrMatrix<double> a = gcn_normalized_adjacency<double>(g);
  EXPECT_EQ(a.row_offsets, (std::vector<std::int64_t>{0, 2, 5, 7}));
  EXPECT_EQ(a.columns, (std::vector<std::int64_t>{0, 1, 0, 1, 2, 1, 2}));
  const double s6 = 1.0 / std::sqrt(6.0);
  const std::vector<double> want = {0.5, s6, s6, 1.0 / 3.0, s6, s6, 0.5};
  for (std::size_t p = 0; p < want.size(); ++p) EXPECT_NEAR(a.values[p], want[p], 1e-15);
  // Â [1, 2, 3]^T by hand; and spmm on two columns at once.
  const std::vector<double> x = {1, 10, 2, 20, 3, 30};
  std::vector<double> y(6);
  spmm(a, 2, x.data(), y.data());
  EXPECT_NEAR(y[0], 0.5 + 2 * s6, 1e-14);
  EXPECT_NEAR(y[2], s6 + 2.0 / 3.0 + 3 * s6, 1e-14);
  EXPECT_NEAR(y[5], 10 * (2 * s6 + 1.5), 1e-13);
}

TEST(StochasticBlockModel, EdgeCountAndIntraFractionMatchExpectation) {
  SbmConfig config = SbmConfig::from_expected_degrees(20000, 4, 8.0, 2.0);
  config.seed = 7;
  const NodeDataset data = stochastic_block_model(config);
  SbmConfig intra_only = config, inter_only = config;
  intra_only.p_out = 0, inter_only.p_in = 0;
  const double mean = sbm_expected_edges(config);
  const double variance = sbm_expected_edges(intra_only) * (1 - config.p_in) +
                          sbm_expected_edges(inter_only) * (1 - config.p_out);
  EXPECT_NEAR(mean, 20000 * 10 / 2.0, 200);  // ~ n (8 + 2) / 2
  const auto edges = static_cast<double>(data.graph.edge_count());
  EXPECT_LT(std::abs(edges - mean), 5 * std::sqrt(variance)) << edges << " vs " << mean;
  std::int64_t intra = 0;
  for (std::int64_t i = 0; i < data.graph.node_count; ++i) {
    for (const std::int64_t j : data.graph.neighbours_of(i)) intra += data.labels[i] == data.labels[j];
  }
  const double fraction = static_cast<double>(intra) / 2 / edges;
  const double want = sbm_expected_intra_fraction(config);
  EXPECT_NEAR(want, 0.8, 1e-3);
  EXPECT_NEAR(fraction, want, 5 * std::sqrt(want * (1 - want) / edges));
  EXPECT_EQ(stochastic_block_model(config).graph.neighbours, data.graph.neighbours);
  // Large and sparse stays cheap: O(edges), not O(n^2) (10^6 nodes, ~3 * 10^6 edges).
  SbmConfig big_config = SbmConfig::from_expected_degrees(1000000, 10, 5.0, 1.0);
  big_config.feature_dim = 2;
  const NodeDataset big = stochastic_block_model(big_config);
  EXPECT_NEAR(static_cast<double>(big.graph.edge_count()), 3e6, 2e4);
}

TEST(StochasticBlockModel, GcnLearnsItsClasses) {
  SbmConfig config = SbmConfig::from_expected_degrees(2000, 4, 6.0, 1.5);
  config.feature_dim = 16;
  config.mean_scale = 0.5;
  const GcnData<float> data = make_gcn_data<float>(stochastic_block_model(config));
  CpuBackend backend;
  GcnParameters<float> params = init_gcn<float>({16, 32, 4}, 3);
  const std::vector<double> losses = train_gcn(backend, data, params, GcnTrainConfig{60});
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  EXPECT_GT(gcn_accuracy(backend, data, params, data.split.test), 0.9);
}

// A tiny GCN in double with random non-zero biases, on an 8-node graph.
struct TinyProblem {
  GcnData<double> data;
  GcnParameters<double> params;
};

TinyProblem tiny_problem(bool layer_norm = false) {
  SbmConfig config = SbmConfig::from_expected_degrees(8, 2, 2.0, 1.0);
  config.feature_dim = 5;
  config.train_fraction = 0.75;
  TinyProblem p{make_gcn_data<double>(stochastic_block_model(config)),
                init_gcn<double>({5, 6, 4, 2}, 11, layer_norm)};
  std::mt19937_64 rng(5);
  for (auto& b : p.params.biases) he_normal_init(rng, 8, b.size(), b.data());
  return p;
}

class GcnGradient : public testing::TestWithParam<bool> {};

TEST_P(GcnGradient, MatchesFiniteDifferencesInDouble) {
  CpuBackend backend;
  TinyProblem p = tiny_problem(GetParam());
  GcnParameters<double> grads;
  gcn_loss_and_gradients(backend, p.data, p.params, grads);
  GcnParameters<double> unused;
  auto loss_at = [&]() { return gcn_loss_and_gradients(backend, p.data, p.params, unused); };
  const double h = 1e-6;
  for (std::int64_t l = 0; l < p.params.layers(); ++l) {
    for (auto [value, grad] : {std::pair{&p.params.weights[l], &grads.weights[l]},
                               std::pair{&p.params.biases[l], &grads.biases[l]}}) {
      double diff2 = 0, sum2 = 0;
      for (std::int64_t i = 0; i < value->size(); ++i) {
        const double saved = (*value)[i];
        (*value)[i] = saved + h;
        const double up = loss_at();
        (*value)[i] = saved - h;
        const double down = loss_at();
        (*value)[i] = saved;
        const double numeric = (up - down) / (2 * h), analytic = (*grad)[i];
        diff2 += (numeric - analytic) * (numeric - analytic);
        sum2 += (numeric + analytic) * (numeric + analytic);
      }
      ASSERT_GT(sum2, 0) << "layer " << l;
      EXPECT_LT(std::sqrt(diff2 / sum2), 1e-6) << "layer " << l;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutLayerNorm, GcnGradient, testing::Bool());

TEST(Gist, PartitionCoversEveryHiddenUnitOnce) {
  const std::vector<std::int64_t> hidden = {10, 7};
  const HiddenPartition p = random_hidden_partition(hidden, 3, 42);
  ASSERT_EQ(p.units.size(), 2u);
  for (std::size_t l = 0; l < hidden.size(); ++l) {
    std::vector<std::int64_t> seen;
    for (const auto& set : p.units[l]) {
      EXPECT_TRUE(std::is_sorted(set.begin(), set.end()));
      EXPECT_GE(static_cast<std::int64_t>(set.size()), hidden[l] / 3);
      EXPECT_LE(static_cast<std::int64_t>(set.size()), hidden[l] / 3 + 1);
      seen.insert(seen.end(), set.begin(), set.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<std::int64_t> all(static_cast<std::size_t>(hidden[l]));
    std::iota(all.begin(), all.end(), std::int64_t{0});
    EXPECT_EQ(seen, all);
  }
  EXPECT_EQ(random_hidden_partition(hidden, 3, 42).units, p.units);
  EXPECT_NE(random_hidden_partition(hidden, 3, 43).units, p.units);
}

TEST(Gist, ExtractAndWriteBackAreExactInverses) {
  TinyProblem p = tiny_problem();
  const HiddenPartition partition = random_hidden_partition(std::vector<std::int64_t>{6, 4}, 2, 9);
  GcnParameters<double> global = p.params;
  std::vector<GcnParameters<double>> subs;
  for (std::int64_t i = 0; i < 2; ++i) subs.push_back(extract_subgcn(global, partition, i));
  // Site 1's middle weight is W_1[S_0^1, S_1^1]; its output layer keeps every class.
  const auto& rows = partition.units[0][1];
  const auto& cols = partition.units[1][1];
  EXPECT_EQ(subs[1].weights[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(subs[1].weights[1][1 * 2 + 0], global.weights[1][rows[1] * 4 + cols[0]]);
  EXPECT_EQ(subs[1].weights[2].shape(), (Shape{2, 2}));
  // Output weights travel times m (inverted-dropout scaling), so sub-GCN logits estimate the global's.
  EXPECT_EQ(subs[1].weights[2][1 * 2 + 1], 2 * global.weights[2][cols[1] * 2 + 1]);
  EXPECT_EQ(subs[0].bytes(), (5 * 3 + 3 + 3 * 2 + 2 + 2 * 2 + 2) * 8);
  for (auto& sub : subs) sub.weights[0].fill(0.0);
  for (std::int64_t i = 0; i < 2; ++i) write_back_subgcn(global, partition, i, subs[i]);
  average_shared<double>(global, subs);
  for (double w : global.weights[0].values()) EXPECT_EQ(w, 0.0);  // the two sites cover all of W_0
  EXPECT_EQ(global.weights[1].values(), p.params.weights[1].values());
  EXPECT_EQ(global.weights[2].values(), p.params.weights[2].values());
  EXPECT_EQ(global.biases[2].values(), p.params.biases[2].values());
}

template <typename T>
void expect_one_site_equals_full_training() {
  CpuBackend backend;
  SbmConfig config = SbmConfig::from_expected_degrees(300, 3, 5.0, 1.0);
  const GcnData<T> data = make_gcn_data<T>(stochastic_block_model(config));
  GcnParameters<T> full = init_gcn<T>({32, 16, 12, 3}, 4);
  GcnParameters<T> gist = full;
  GistConfig gist_config;
  gist_config.sites = 1;
  gist_config.local_steps = 3;
  gist_config.rounds = 1;
  gist_train(backend, data, gist, gist_config);
  train_gcn(backend, data, full, GcnTrainConfig{3, gist_config.adam});
  for (std::int64_t l = 0; l < full.layers(); ++l) {
    EXPECT_EQ(gist.weights[l].values(), full.weights[l].values()) << "layer " << l;
    EXPECT_EQ(gist.biases[l].values(), full.biases[l].values()) << "layer " << l;
  }
}

TEST(Gist, OneSiteEqualsFullTrainingBitwise) {
  expect_one_site_equals_full_training<float>();
  expect_one_site_equals_full_training<double>();
}

TEST(Gist, ParallelSitesEqualSequentialSites) {
  CpuBackend backend;
  const GcnData<float> data = make_gcn_data<float>(stochastic_block_model(SbmConfig{}));
  GcnParameters<float> a = init_gcn<float>({32, 24, 24, 4}, 1);
  GcnParameters<float> b = a;
  GistConfig config;
  config.sites = 3;
  config.rounds = 2;
  const auto rounds = gist_train(backend, data, a, config);
  config.parallel_sites = true;
  gist_train(backend, data, b, config);
  for (std::int64_t l = 0; l < a.layers(); ++l) EXPECT_EQ(a.weights[l].values(), b.weights[l].values());
  EXPECT_EQ(rounds[1].slice_bytes, (std::vector<std::int64_t>{(32 * 8 + 8 + 8 * 8 + 8 + 8 * 4 + 4) * 4,
                                                              (32 * 8 + 8 + 8 * 8 + 8 + 8 * 4 + 4) * 4,
                                                              (32 * 8 + 8 + 8 * 8 + 8 + 8 * 4 + 4) * 4}));
}

TEST(GraphAndGistBadInput, OneClearLineEach) {
  CpuBackend backend;
  const std::vector<std::int64_t> widths = {32, 16, 8, 4};
  GistConfig config;
  config.sites = 0;
  EXPECT_EQ(input_error_of([&] { check_gist_config(config, widths); }), "GIST: sites m = 0 must be >= 1");
  config.sites = 9;
  EXPECT_EQ(input_error_of([&] { check_gist_config(config, widths); }),
            "GIST: sites m = 9 exceeds hidden layer 1 width 8");
  config.sites = 2;
  config.local_steps = 0;
  EXPECT_EQ(input_error_of([&] { check_gist_config(config, widths); }),
            "GIST: local steps ζ = 0 must be >= 1");
  config.local_steps = 1;
  const std::vector<std::int64_t> no_hidden = {32, 4};
  EXPECT_EQ(input_error_of([&] { check_gist_config(config, no_hidden); }),
            "GIST: needs a GCN with at least one hidden layer");
  KnnDatasetConfig knn;
  knn.subset_size = 50;
  knn.k = 0;
  EXPECT_EQ(input_error_of([&] { knn_image_dataset(backend, all_images(), knn); }),
            "kNN graph: k = 0 must be in [1, nodes - 1] with 50 nodes");
  knn.k = 50;
  EXPECT_EQ(input_error_of([&] { knn_image_dataset(backend, all_images(), knn); }),
            "kNN graph: k = 50 must be in [1, nodes - 1] with 50 nodes");
  knn.subset_size = 70001;
  EXPECT_EQ(input_error_of([&] { knn_image_dataset(backend, all_images(), knn); }),
            "kNN data set: subset of 70001 images but the data has 70000");
  SbmConfig sbm;
  sbm.p_in = 1.5;
  EXPECT_EQ(input_error_of([&] { stochastic_block_model(sbm); }),
            "stochastic block model: p_in = 1.500000 outside [0, 1]");
  const std::vector<std::pair<std::int64_t, std::int64_t>> edges = {{0, 1}, {1, 3}};
  EXPECT_EQ(input_error_of([&] { undirected_graph_from_edges(3, edges); }),
            "edge list: edge 1 (1, 3) has a node outside [0, 3)");
}

}  // namespace
}  // namespace strata::real
