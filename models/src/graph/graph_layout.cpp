// Per-part aggregates of a partitioned graph: see graph_layout.hpp.
#include "strata/models/graph/graph_layout.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "strata/traces/error.hpp"
#include "strata/traces/random_draws.hpp"

namespace strata {
inline namespace models {
namespace {

[[noreturn]] void bad_layout(const std::string& problem) { throw InputError("graph layout: " + problem); }

// `total` split in proportion to `weights` (not all 0) by largest remainder: the shares sum to
// total exactly; ties go to the lower index. O(k log k).
std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<std::int64_t>& weights) {
  const double sum = static_cast<double>(std::accumulate(weights.begin(), weights.end(), std::int64_t{0}));
  std::vector<std::int64_t> out(weights.size());
  std::vector<std::pair<double, std::size_t>> rest(weights.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double exact = static_cast<double>(total) * static_cast<double>(weights[i]) / sum;
    out[i] = static_cast<std::int64_t>(std::floor(exact));
    given += out[i];
    rest[i] = {exact - static_cast<double>(out[i]), i};
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; given < total; i = (i + 1) % rest.size(), ++given) ++out[rest[i].second];
  return out;
}

// The power-law graph with its nodes renumbered by a seeded uniform permutation (Fisher–Yates on
// raw draws): the generator numbers nodes by decreasing expected degree, and a streaming
// partitioner reading them in that order packs the hubs together (graph_layout.hpp).
// O(m log m).
CsrGraph shuffled_power_law_graph(std::int64_t nodes, std::int64_t edges, double exponent,
                                  std::uint64_t seed) {
  const CsrGraph ordered = power_law_graph(nodes, edges, exponent, seed);
  std::vector<std::int32_t> label(static_cast<std::size_t>(nodes));
  std::iota(label.begin(), label.end(), 0);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (std::size_t i = label.size(); i > 1; --i) std::swap(label[i - 1], label[uniform_below(i, rng)]);
  std::vector<std::pair<std::int32_t, std::int32_t>> list;
  list.reserve(static_cast<std::size_t>(ordered.edges()));
  for (std::int32_t u = 0; u < ordered.nodes(); ++u)
    for (std::int32_t v : ordered.neighbours(u))
      if (v > u) list.emplace_back(label[static_cast<std::size_t>(u)], label[static_cast<std::size_t>(v)]);
  return CsrGraph::from_edges(nodes, std::move(list));
}

}  // namespace

std::int64_t GraphLayout::halo(int p) const {
  std::int64_t sum = 0;
  for (int q = 0; q < parts; ++q) sum += rows_from(p, q);
  return sum;
}

std::int64_t GraphLayout::total_halo() const {
  return std::accumulate(halo_rows.begin(), halo_rows.end(), std::int64_t{0});
}

std::int64_t GraphLayout::max_part_nodes() const {
  return part_nodes.empty() ? 0 : *std::max_element(part_nodes.begin(), part_nodes.end());
}

std::int64_t GraphLayout::exchanging_pairs() const {
  return std::count_if(halo_rows.begin(), halo_rows.end(), [](std::int64_t r) { return r > 0; });
}

GraphLayout layout_of(const CsrGraph& graph, const std::vector<std::int32_t>& parts, int k) {
  const PartitionStats stats = partition_stats(graph, parts, k);  // checks k and parts
  GraphLayout out;
  out.nodes = out.sample_nodes = graph.nodes();
  out.edges = out.sample_edges = graph.edges();
  out.parts = k;
  out.edge_cut = stats.edge_cut;
  out.part_nodes.resize(static_cast<std::size_t>(k));
  out.part_nnz.resize(static_cast<std::size_t>(k));
  out.halo_rows.assign(static_cast<std::size_t>(k) * static_cast<std::size_t>(k), 0);
  for (int p = 0; p < k; ++p) {
    const PartStats& s = stats.parts[static_cast<std::size_t>(p)];
    out.part_nodes[static_cast<std::size_t>(p)] = s.nodes;
    out.part_nnz[static_cast<std::size_t>(p)] = 2 * s.internal_edges + s.cut_edges + s.nodes;
  }
  // seen[q] == u: u already counted among the rows part q receives (from u's part).
  std::vector<std::int32_t> seen(static_cast<std::size_t>(k), -1);
  for (std::int32_t u = 0; u < graph.nodes(); ++u) {
    const std::int32_t own = parts[static_cast<std::size_t>(u)];
    for (std::int32_t v : graph.neighbours(u)) {
      const std::int32_t q = parts[static_cast<std::size_t>(v)];
      if (q == own || seen[static_cast<std::size_t>(q)] == u) continue;
      seen[static_cast<std::size_t>(q)] = u;
      ++out.halo_rows[static_cast<std::size_t>(q) * static_cast<std::size_t>(k) +
                      static_cast<std::size_t>(own)];
    }
  }
  return out;
}

namespace {

// power_law_layout's checks; returns the nodes of the graph partitioned (a sample's when smaller).
std::int64_t checked_sample_nodes(std::int64_t nodes, std::int64_t edges, const GraphLayoutOptions& options) {
  const std::string n_text = "nodes=" + std::to_string(nodes);
  if (nodes < 2) bad_layout(n_text + " must be >= 2");
  const double most = static_cast<double>(nodes) * (static_cast<double>(nodes) - 1) / 2;
  if (edges < 1 || static_cast<double>(edges) > most)
    bad_layout("edges=" + std::to_string(edges) + " must be in [1, nodes (nodes - 1) / 2] for " + n_text);
  if (options.max_sample_nodes < 2)
    bad_layout("max_sample_nodes=" + std::to_string(options.max_sample_nodes) + " must be >= 2");
  const std::int64_t sample_nodes = std::min(nodes, options.max_sample_nodes);
  if (options.parts < 1 || options.parts > sample_nodes)
    bad_layout("parts=" + std::to_string(options.parts) + " must be in [1, " + std::to_string(sample_nodes) +
               "] (the nodes of the graph partitioned" + (sample_nodes < nodes ? ", a sample" : "") + ")");
  return sample_nodes;
}

}  // namespace

PartitionedGraph power_law_partitioned(std::int64_t nodes, std::int64_t edges,
                                       const GraphLayoutOptions& options) {
  if (checked_sample_nodes(nodes, edges, options) < nodes)
    bad_layout("nodes=" + std::to_string(nodes) + " is more than max_sample_nodes=" +
               std::to_string(options.max_sample_nodes) + ": the graph would be sampled, not drawn whole");
  PartitionedGraph out;
  out.graph = shuffled_power_law_graph(nodes, edges, options.exponent, options.seed);
  out.parts = partition_graph(out.graph, options.parts, options.method, options.seed);
  out.layout = layout_of(out.graph, out.parts, options.parts);
  out.layout.method = options.method;
  return out;
}

GraphLayout power_law_layout(std::int64_t nodes, std::int64_t edges, const GraphLayoutOptions& options) {
  const std::int64_t sample_nodes = checked_sample_nodes(nodes, edges, options);
  if (sample_nodes == nodes) return power_law_partitioned(nodes, edges, options).layout;
  // The sample: same mean degree, at least one edge, at most a complete graph.
  const double ratio = static_cast<double>(sample_nodes) / static_cast<double>(nodes);
  const std::int64_t sample_edges = std::clamp<std::int64_t>(std::llround(static_cast<double>(edges) * ratio),
                                                             1, sample_nodes * (sample_nodes - 1) / 2);
  const CsrGraph graph = shuffled_power_law_graph(sample_nodes, sample_edges, options.exponent, options.seed);
  const GraphLayout sample =
      layout_of(graph, partition_graph(graph, options.parts, options.method, options.seed), options.parts);
  GraphLayout out;
  out.nodes = nodes;
  out.edges = edges;
  out.parts = options.parts;
  out.method = options.method;
  out.sampled = true;
  out.sample_nodes = sample_nodes;
  out.sample_edges = graph.edges();
  out.part_nodes = apportion(nodes, sample.part_nodes);
  std::vector<std::int64_t> entries(sample.part_nnz.size());  // neighbour entries, self loops taken out
  for (std::size_t p = 0; p < entries.size(); ++p) entries[p] = sample.part_nnz[p] - sample.part_nodes[p];
  out.part_nnz = apportion(2 * edges, entries);
  for (std::size_t p = 0; p < entries.size(); ++p) out.part_nnz[p] += out.part_nodes[p];
  const double scale = static_cast<double>(nodes) / static_cast<double>(sample_nodes);
  out.halo_rows.resize(sample.halo_rows.size());
  const auto k = static_cast<std::size_t>(options.parts);
  for (std::size_t i = 0; i < out.halo_rows.size(); ++i)
    out.halo_rows[i] = std::min<std::int64_t>(std::llround(static_cast<double>(sample.halo_rows[i]) * scale),
                                              out.part_nodes[i % k]);
  out.edge_cut = std::llround(static_cast<double>(sample.edge_cut) * static_cast<double>(edges) /
                              static_cast<double>(sample.sample_edges));
  return out;
}

}  // namespace models
}  // namespace strata
