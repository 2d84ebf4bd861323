// Seeded synthetic graphs for the GCN training problems (DESIGN.md, models: a GCN's graph, which
// graph_partition.hpp splits over workers so that the cut edges become feature exchange).
//
// CsrGraph is a simple undirected graph in compressed sparse rows: node ids are int32 (the ids
// METIS takes, graph_partition.hpp), offsets int64. real_exec's real::UndirectedGraph
// (knn_graph.hpp) holds the same kind of graph with int64 ids for the real executor's kernels;
// this is the compact form the partitioners read. Invariants, true of every CsrGraph since only
// from_edges and the generators below build one: offsets() has nodes() + 1 entries, starts at 0
// and never decreases; each neighbour list is sorted ascending, with no duplicate and no self
// loop; the graph is symmetric (v is in u's list exactly when u is in v's), so every undirected
// edge appears twice in adjacency() and edges() counts it once. Immutable once built.
//
// Generators (both O(nodes + edges) memory):
// - power_law_graph: Chung–Lu (Chung & Lu, "Connected components in random graphs with given
//   expected degree sequences", Annals of Combinatorics 2002) with the power-law weights of
//   Chung, Lu & Vu ("Eigenvalues of random power law graphs", Annals of Combinatorics 2003, §2):
//   node i in 0..n-1 has expected degree w_i = c (i + i0)^(-1/(β-1)), so that the number of nodes
//   of expected degree >= x falls as x^-(β-1), a degree distribution of exponent β. The largest,
//   w_0, is k_max = min(sqrt(2 edges), n - 1), the structural cutoff beyond which w_i w_j / Σw
//   would exceed 1 (Boguñá, Pastor-Satorras & Vespignani, Eur. Phys. J. B 38, 2004); so c = k_max
//   i0^(1/(β-1)), and i0 is solved (bisection, O(1024) per step) so that Σ w_i = 2 edges exactly.
//   (Chung, Lu & Vu's closed form for c and i0 assumes i0 << n: at β = 2.1, n = 20,000 and mean
//   degree 10 its weights sum to 0.46 x 2 edges, and the graph's degrees overshoot them 2.2x.)
//   Nodes of expected degree >= x: floor(i0 ((k_max / x)^(β-1) - 1)) + 1, for x <= k_max. Edges are
//   drawn as pairs of endpoints, each endpoint node i with probability w_i / Σw from Walker's
//   alias table (Vose's construction, IEEE TSE 17(9), 1991: O(1) per endpoint), self loops and
//   repeated pairs discarded, until exactly `edges` distinct edges are held; node i's degree is
//   then close to w_i (a little below for the hubs, whose pairs repeat most). Cost: O(edges)
//   draws of O(1) each (a hash set of the edges held finds the repeats, a few per cent of the
//   draws below the cutoff), then O(edges log edges) to sort them into the CSR; at most 32 bytes
//   per edge while it runs.
// - sbm_graph: the stochastic block model (Holland, Laskey & Leinhardt, Social Networks 5, 1983)
//   with `communities` planted communities of equal size s: each pair inside a community is an
//   edge with probability p_in = d_in / (s - 1), each pair across two with p_out = d_out /
//   (s (c - 1)), independently, so a node has d_in neighbours inside and d_out outside in
//   expectation. Only the edges are drawn: the gaps between successive edges in a fixed order of
//   the candidate pairs are geometric (Batagelj & Brandes, "Efficient generation of large random
//   networks", Phys. Rev. E 71, 036113, 2005, algorithm G(n,p)); so the edge count of the block
//   pairs is drawn with them and no repeat arises. Nodes are then relabelled by a seeded uniform
//   permutation, so a community is not a range of ids (a streaming partitioner that reads nodes in
//   id order gets no hint). Cost: O(nodes + edges) draws, O(edges log edges) to assemble the CSR.
//
// Determinism: every random choice draws raw outputs of a std::mt19937_64 seeded with `seed`
// (bounded integers by rejection, uniforms in [0, 1) from the top 53 bits), never the standard
// library's distributions, whose algorithms each library chooses; so a seed gives one graph
// everywhere, up to the last bit of libm's pow and log (the weights, the geometric gaps).
// Errors: a bad parameter throws InputError with one line naming it, its value and the problem,
// e.g. "graph: exponent=1.5 must be a finite number > 2 (a finite mean degree)".
// Thread safety: functions are reentrant; a CsrGraph may be read from several threads.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace strata {
inline namespace models {

class CsrGraph {
 public:
  // The largest node count: ids are int32.
  static constexpr std::int64_t kMaxNodes = 2147483647;
  // The largest edge count a generator or from_edges accepts (2^31 - 1; a power-law graph needs
  // up to 32 bytes per edge while it is drawn, 64 GiB; METIS takes at most 2^30 - 1 edges,
  // graph_partition.hpp).
  static constexpr std::int64_t kMaxEdges = 2147483647;

  CsrGraph() = default;  // no nodes

  // The simple graph on `nodes` nodes with these edges, each (u, v) giving u-v and v-u; an edge
  // given twice (in either orientation) is kept once. O(E log E), in place (E = edges.size()).
  // Throws InputError for nodes outside [0, kMaxNodes], more than kMaxEdges edges, an endpoint
  // outside [0, nodes) or a self loop, naming the edge's index.
  static CsrGraph from_edges(std::int64_t nodes, std::vector<std::pair<std::int32_t, std::int32_t>> edges);

  std::int64_t nodes() const { return static_cast<std::int64_t>(offsets_.size()) - 1; }
  std::int64_t edges() const { return static_cast<std::int64_t>(adjacency_.size()) / 2; }
  std::int64_t degree(std::int32_t node) const { return offsets_[node + 1] - offsets_[node]; }
  // REQUIRES: 0 <= node < nodes().
  std::span<const std::int32_t> neighbours(std::int32_t node) const;

  const std::vector<std::int64_t>& offsets() const { return offsets_; }      // nodes() + 1
  const std::vector<std::int32_t>& adjacency() const { return adjacency_; }  // 2 edges(), by node

 private:
  std::vector<std::int64_t> offsets_ = {0};
  std::vector<std::int32_t> adjacency_;
};

// A Chung–Lu power-law graph (see above) with exactly `edges` distinct edges.
// Throws InputError unless 2 <= nodes <= kMaxNodes, 1 <= edges <= min(nodes (nodes - 1) / 2,
// kMaxEdges) and exponent is a finite number > 2 (for a finite mean degree); and when the weights
// repeat the same pairs too often to reach `edges` (a graph nearly as dense as the complete one,
// or an exponent so close to 2 that a few hubs take most draws): after 64 draws per edge asked
// for, or as soon as the share of new edges in the last 65,536 draws says the rest would need
// over 4 times that. (A safety net: as `edges` nears n (n - 1) / 2, 2 edges / k_max nears n, i0
// grows and the weights flatten, and every budget tried reached its count: n up to 2,000 at 50,
// 90, 99 and 100 % of the complete graph, exponents 2.0001 to 10.)
CsrGraph power_law_graph(std::int64_t nodes, std::int64_t edges, double exponent, std::uint64_t seed);

// The expected degrees w_0 >= w_1 >= ... of power_law_graph(nodes, edges, exponent, any seed)
// (see above): w_0 = k_max, Σ w = 2 edges. O(nodes). Throws as power_law_graph does up front.
std::vector<double> power_law_degrees(std::int64_t nodes, std::int64_t edges, double exponent);

struct PlantedGraph {
  CsrGraph graph;
  std::vector<std::int32_t> community;  // of each node, in [0, communities)
  std::int64_t planted_cut = 0;         // edges between two communities
};

// A stochastic block model (see above). Throws InputError unless communities >= 1,
// nodes_per_community >= 2, their product <= kMaxNodes, 0 <= mean_degree_in <=
// nodes_per_community - 1, 0 <= mean_degree_out <= nodes_per_community (communities - 1) (so 0
// with one community), and the expected edge count is <= kMaxEdges.
PlantedGraph sbm_graph(int communities, std::int64_t nodes_per_community, double mean_degree_in,
                       double mean_degree_out, std::uint64_t seed);

}  // namespace models
}  // namespace strata
