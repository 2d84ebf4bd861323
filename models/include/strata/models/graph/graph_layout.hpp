// A graph split over workers as a Plan sees it (DESIGN.md, models: a GCN's graph split over
// workers): per-part aggregates, not nodes. A partitioned full-graph GCN Plan
// (solver_graph.cpp) needs, for each part p, its rows, the nonzeros of its rows of Â and, for
// every other part q, how many distinct rows of q its rows touch: the halo rows p receives from
// q at each aggregation (forward: H W's rows; backward: dZ's, Â being symmetric). Those k + k^2
// numbers are the whole graph to the Plan, so a graph of 10^9 nodes costs a Plan what one of 10^3
// does.
//
// Where the numbers come from:
// - layout_of(graph, parts, k): counted exactly on a materialised graph. O(n + m + k^2).
// - power_law_layout(nodes, edges, options): the Chung–Lu power-law graph of synthetic_graph.hpp
//   with those counts, partitioned by options.method. Up to options.max_sample_nodes nodes it is
//   drawn and counted exactly (sampled false), its nodes renumbered by a seeded permutation first:
//   the generator numbers them by decreasing expected degree, and Fennel streaming them in that
//   order packs the hubs into one part (measured: 47 % of the nonzeros in one of 8 parts at 2^18
//   nodes of mean degree 20; 1/8 each after the permutation). Above, a sample is drawn instead: the power-law
//   graph of n_s = max_sample_nodes nodes with the same mean degree (edges scaled by n_s / n,
//   rounded) and exponent, same seed, partitioned into the same k parts; its counts are scaled
//   to the full graph: part sizes by n / n_s, nonzeros by m / m_s (both apportioned by largest
//   remainder, so they sum exactly to n and 2 m; the self loops of Â are added to the rows), halo
//   rows by n / n_s (rounded, at most the source part's rows).
//   Why that holds: in a sparse random graph of a fixed degree distribution, a part of n / k nodes
//   has a size-independent share of its edge ends cut (the partitioner finds no structure that
//   grows with n), and those ends land on a size-independent share of the other parts' nodes, so
//   the halo of a part grows as n. What does change with n is the largest expected degree,
//   sqrt(2 m) (the structural cutoff, synthetic_graph.hpp): the full graph's hubs are larger
//   than the sample's, and which parts take them. Measured (tests/models/graph_layout_test.cpp,
//   exponent 2.5, mean degree 20, 8 parts, streaming, seed 3): a 2^14-node sample scaled to 2^18
//   nodes against the 2^18-node graph itself: total halo +3.2 %, edge cut +0.1 %, the largest
//   part's halo +4.7 % and its nonzeros +13.5 % (Fennel balances nodes, not nonzeros: the parts
//   at its load cap take the hubs, 2.3x the nonzeros of the others in both). A graph with community structure
//   (a real one) cuts far fewer edges under METIS than a Chung–Lu graph, which has none: these layouts are
//   the pessimistic case.
//
// Determinism: the same arguments give the same layout (seeded generators, deterministic
// partitioners; METIS with its seed). Errors: InputError with one line naming the parameter.
// Thread safety: reentrant (METIS: graph_partition.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/models/graph/graph_partition.hpp"
#include "strata/models/graph/synthetic_graph.hpp"

namespace strata {
inline namespace models {

struct GraphLayout {
  std::int64_t nodes = 0;
  std::int64_t edges = 0;  // undirected, self loops not counted
  int parts = 0;
  std::vector<std::int64_t> part_nodes;  // parts entries: the rows each part owns
  std::vector<std::int64_t> part_nnz;    // parts entries: nonzeros of its rows of Â (neighbours + self loop)
  // parts x parts, row-major: halo_rows[p * parts + q] is the number of distinct nodes of part q
  // adjacent to a node of part p (0 for q = p): the rows p receives from q at an aggregation.
  std::vector<std::int64_t> halo_rows;
  std::int64_t edge_cut = 0;  // edges between two parts (scaled when sampled)
  PartitionMethod method = PartitionMethod::streaming;
  bool sampled = false;                             // counted on a smaller sample and scaled (see above)
  std::int64_t sample_nodes = 0, sample_edges = 0;  // the graph counted: the full one unless sampled

  std::int64_t rows_from(int p, int q) const {
    return halo_rows[static_cast<std::size_t>(p) * static_cast<std::size_t>(parts) +
                     static_cast<std::size_t>(q)];
  }
  std::int64_t halo(int p) const;         // rows part p receives at an aggregation, from all parts
  std::int64_t total_halo() const;        // summed over the parts
  std::int64_t max_part_nodes() const;    // the largest part
  std::int64_t exchanging_pairs() const;  // (p, q) with rows_from(p, q) > 0
};

// The exact layout of `graph` split by `parts` into k parts. Throws as partition_stats does.
GraphLayout layout_of(const CsrGraph& graph, const std::vector<std::int32_t>& parts, int k);

struct GraphLayoutOptions {
  int parts = 1;
  PartitionMethod method = PartitionMethod::streaming;
  // The degree distribution's exponent: 2.5 is inside 2 < β < 3, the range most measured
  // scale-free networks fall in (Barabási & Albert, "Emergence of scaling in random networks",
  // Science 286, 1999, and Albert & Barabási, Rev. Mod. Phys. 74, 2002, Table II).
  double exponent = 2.5;
  std::uint64_t seed = 0;
  // The largest graph drawn whole; larger ones are sampled at this many nodes. 2^17: about 1 s
  // to draw and partition at mean degree 50 on one core here (docs/solvers.md).
  std::int64_t max_sample_nodes = std::int64_t{1} << 17;
};

// The layout of a power-law graph of `nodes` nodes and `edges` edges split in options.parts parts
// (see above). Throws InputError unless 2 <= nodes, 1 <= edges <= nodes (nodes - 1) / 2 (a
// simple graph; the counts themselves may exceed what CsrGraph holds when sampled),
// 1 <= parts <= min(nodes, sample nodes) and max_sample_nodes >= 2; and as power_law_graph and
// partition_graph do.
GraphLayout power_law_layout(std::int64_t nodes, std::int64_t edges, const GraphLayoutOptions& options);

// The graph itself where power_law_layout draws it whole (nodes <= options.max_sample_nodes): the
// renumbered power-law graph, its partition and their exact layout, power_law_layout's result
// field for field. What a real run of a split Plan trains on (real_exec/ train/gcn_plan.hpp).
struct PartitionedGraph {
  CsrGraph graph;
  std::vector<std::int32_t> parts;  // per node, its part in [0, layout.parts)
  GraphLayout layout;
};
// Throws as power_law_layout does, and InputError when nodes > options.max_sample_nodes (a sample
// would be drawn: raise max_sample_nodes to draw the graph whole).
PartitionedGraph power_law_partitioned(std::int64_t nodes, std::int64_t edges,
                                       const GraphLayoutOptions& options);

}  // namespace models
}  // namespace strata
