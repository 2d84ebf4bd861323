// Per-part aggregates of a partitioned graph (models/graph/graph_layout.hpp): hand-counted halo
// rows, agreement with partition_stats, the sampled layout of a large graph against the exact
// layout of the same size, exact totals at 10^9 nodes, and one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "../input_error.hpp"
#include "strata/models/graph/graph_layout.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using test::error_of;

std::int64_t sum(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

TEST(GraphLayout, PathSplitInTwoExchangesOneRowEachWay) {
  // 0-1-2-3, parts {0, 0, 1, 1}: part 0 needs node 2, part 1 needs node 1.
  const CsrGraph g = CsrGraph::from_edges(4, {{0, 1}, {1, 2}, {2, 3}});
  const GraphLayout l = layout_of(g, {0, 0, 1, 1}, 2);
  EXPECT_EQ(l.part_nodes, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(l.part_nnz, (std::vector<std::int64_t>{5, 5}));  // degrees 1 + 2, two self loops
  EXPECT_EQ(l.halo_rows, (std::vector<std::int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(l.edge_cut, 1);
  EXPECT_FALSE(l.sampled);
}

TEST(GraphLayout, StarCountsDistinctRowsNotEdges) {
  // Centre 0 in part 0 with leaves 1..4 in part 1 and leaf 5 in part 2; leaves 1 and 2 also
  // joined. Part 1 needs the centre once (four edges to it), part 0 needs all five leaves.
  const CsrGraph g = CsrGraph::from_edges(6, {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 2}});
  const GraphLayout l = layout_of(g, {0, 1, 1, 1, 1, 2}, 3);
  EXPECT_EQ(l.rows_from(1, 0), 1);
  EXPECT_EQ(l.rows_from(0, 1), 4);
  EXPECT_EQ(l.rows_from(0, 2), 1);
  EXPECT_EQ(l.rows_from(2, 0), 1);
  EXPECT_EQ(l.rows_from(1, 2), 0);
  EXPECT_EQ(l.rows_from(2, 1), 0);
  EXPECT_EQ(l.halo(0), 5);
  EXPECT_EQ(l.exchanging_pairs(), 4);
  EXPECT_EQ(l.part_nnz, (std::vector<std::int64_t>{6, 4 + 2 + 4, 2}));
}

TEST(GraphLayout, HalosAgreeWithPartitionStats) {
  const CsrGraph g = power_law_graph(20000, 200000, 2.5, 7);
  const std::vector<std::int32_t> parts = partition_graph(g, 8, PartitionMethod::streaming, 7);
  const PartitionStats stats = partition_stats(g, parts, 8);
  const GraphLayout l = layout_of(g, parts, 8);
  for (int p = 0; p < 8; ++p) {
    EXPECT_EQ(l.halo(p), stats.parts[static_cast<std::size_t>(p)].halo) << "part " << p;
    EXPECT_EQ(l.part_nodes[static_cast<std::size_t>(p)], stats.parts[static_cast<std::size_t>(p)].nodes);
  }
  EXPECT_EQ(l.total_halo(), stats.halo);
  EXPECT_EQ(sum(l.part_nnz), 2 * g.edges() + g.nodes());
  EXPECT_EQ(l.edge_cut, stats.edge_cut);
}

TEST(GraphLayout, SampledLayoutMatchesTheGraphItStandsFor) {
  // 2^18 nodes of mean degree 20: drawn whole, and estimated from a 2^14-node sample.
  const std::int64_t n = std::int64_t{1} << 18, m = n * 10;
  GraphLayoutOptions options;
  options.parts = 8;
  options.seed = 3;
  options.max_sample_nodes = n;
  const GraphLayout exact = power_law_layout(n, m, options);
  options.max_sample_nodes = std::int64_t{1} << 14;
  const GraphLayout sampled = power_law_layout(n, m, options);
  ASSERT_FALSE(exact.sampled);
  ASSERT_TRUE(sampled.sampled);
  EXPECT_EQ(sampled.sample_nodes, std::int64_t{1} << 14);
  EXPECT_EQ(sum(sampled.part_nodes), n);
  EXPECT_EQ(sum(sampled.part_nnz), 2 * m + n);
  const double halo_error =
      static_cast<double>(sampled.total_halo()) / static_cast<double>(exact.total_halo()) - 1;
  const double cut_error = static_cast<double>(sampled.edge_cut) / static_cast<double>(exact.edge_cut) - 1;
  std::printf("halo: exact %lld, sampled %lld (%+.2f %%); cut %+.2f %%\n",
              static_cast<long long>(exact.total_halo()), static_cast<long long>(sampled.total_halo()),
              100 * halo_error, 100 * cut_error);
  EXPECT_LT(std::abs(halo_error), 0.06);
  EXPECT_LT(std::abs(cut_error), 0.06);
  // The busiest part sets a step's time: its nonzeros and its halo.
  auto max_of = [](const GraphLayout& l, auto f) {
    std::int64_t most = 0;
    for (int p = 0; p < l.parts; ++p) most = std::max(most, f(l, p));
    return static_cast<double>(most);
  };
  auto nnz = [](const GraphLayout& l, int p) { return l.part_nnz[static_cast<std::size_t>(p)]; };
  auto halo = [](const GraphLayout& l, int p) { return l.halo(p); };
  EXPECT_LT(std::abs(max_of(sampled, nnz) / max_of(exact, nnz) - 1), 0.15);
  EXPECT_LT(std::abs(max_of(sampled, halo) / max_of(exact, halo) - 1), 0.08);
  for (std::size_t p = 0; p < 8; ++p)
    std::printf("part %zu: nodes %lld / %lld, nnz %lld / %lld, halo %lld / %lld\n", p,
                static_cast<long long>(exact.part_nodes[p]), static_cast<long long>(sampled.part_nodes[p]),
                static_cast<long long>(exact.part_nnz[p]), static_cast<long long>(sampled.part_nnz[p]),
                static_cast<long long>(exact.halo(static_cast<int>(p))),
                static_cast<long long>(sampled.halo(static_cast<int>(p))));
}

TEST(GraphLayout, BillionNodesFromASampleInSeconds) {
  GraphLayoutOptions options;
  options.parts = 64;
  const auto start = std::chrono::steady_clock::now();
  const GraphLayout l = power_law_layout(1'000'000'000, 10'000'000'000, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(l.sampled);
  EXPECT_EQ(sum(l.part_nodes), 1'000'000'000);
  EXPECT_EQ(sum(l.part_nnz), 21'000'000'000);
  for (int p = 0; p < 64; ++p)
    for (int q = 0; q < 64; ++q) EXPECT_LE(l.rows_from(p, q), l.part_nodes[static_cast<std::size_t>(q)]);
  EXPECT_LT(seconds, 20);
}

TEST(GraphLayout, BadInputIsOneLine) {
  GraphLayoutOptions options;
  EXPECT_EQ(error_of([&] { power_law_layout(1, 1, options); }), "graph layout: nodes=1 must be >= 2");
  EXPECT_EQ(error_of([&] { power_law_layout(10, 46, options); }),
            "graph layout: edges=46 must be in [1, nodes (nodes - 1) / 2] for nodes=10");
  options.parts = 0;
  EXPECT_EQ(error_of([&] { power_law_layout(100, 200, options); }),
            "graph layout: parts=0 must be in [1, 100] (the nodes of the graph partitioned)");
  options.parts = 200;
  options.max_sample_nodes = 100;
  EXPECT_EQ(error_of([&] { power_law_layout(1000, 2000, options); }),
            "graph layout: parts=200 must be in [1, 100] (the nodes of the graph partitioned, a sample)");
}

}  // namespace
}  // namespace strata
