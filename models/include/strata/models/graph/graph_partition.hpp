// Graph partitioning for distributed GCN training (DESIGN.md, models: a GCN's graph split over
// workers): the nodes of a CsrGraph (synthetic_graph.hpp) to k parts, and what a split costs.
// A worker that holds a part aggregates over its nodes' neighbours at every graph convolution, so
// each cut edge is feature traffic: the part needs the rows of its halo, the distinct nodes of
// other parts adjacent to its own, from their owners (once per layer, forward and backward).
//
// Methods:
// - metis: METIS 5.1's multilevel k-way partitioning (Karypis & Kumar, "A fast and high quality
//   multilevel scheme for partitioning irregular graphs", SIAM J. Sci. Comput. 20(1), 1998;
//   "Multilevel k-way partitioning scheme for irregular graphs", JPDC 48(1), 1998), through
//   Debian's libmetis-dev: METIS_PartGraphKway with the edge-cut objective and METIS's default
//   load imbalance (ufactor 30: the largest part within 1.03 x the mean, as far as METIS can),
//   options[METIS_OPTION_SEED] from `seed` (METIS takes 31 bits of it: its low 32 bits xor its
//   high 32, as a non-negative int32). Its idx_t is 32 bits, so graphs beyond 2^31 - 1 nodes or
//   adjacency entries (2 x edges) are refused. k = 1 puts every node in part 0 without METIS.
//   Without libmetis-dev at build time (metis_available() false) the method throws InputError.
// - streaming: Fennel (Tsourakakis, Gkantsidis, Radunovic & Vojnovic, "FENNEL: Streaming graph
//   partitioning for massive scale graphs", WSDM 2014), one pass over the nodes in id order:
//   node v goes to the part i that maximises |N(v) ∩ S_i| - α γ |S_i|^(γ-1) (the paper's greedy
//   assignment, the marginal cost of c(x) = α x^γ), among the parts with |S_i| < ν n / k, with the paper's
//   settings γ = 1.5, α = sqrt(k) m / n^1.5 (α = m k^(γ-1) / n^γ) and load cap ν = 1.1; so the
//   largest part has at most ceil(1.1 n / k) nodes. Ties go to the smaller part, then the lower
//   index. Deterministic: `seed` is not used. O(m + n k) time, O(n + k) memory.
//
// A partition is a vector of n part ids in [0, k). REQUIRES of every function: a CsrGraph's
// invariants (they hold by construction). Errors: a bad parameter throws InputError with one line
// naming it, its value and the problem, e.g. "partition: k=0 must be >= 1".
// Measured (g++ 12 -O3, one core of a 2-core machine shared with a build; power-law graphs of
// mean degree 16, β = 2.5, k = 8), at 10^5 / 10^6 / 10^7 edges: metis 0.14 / 2.0 / 40 s (cut 0.66
// of the edges, imbalance 1.03), streaming 0.001 / 0.012 / 0.19 s (cut 0.61 to 0.64, imbalance
// 1.10), partition_stats 0.001 / 0.02 / 0.16 s. METIS grows faster than m there: a random
// power-law graph has no small cut to find (a random assignment cuts 0.875), and its hubs slow the
// coarsening; on a planted SBM of the same sizes it takes 0.02 / 0.5 / 13 s and finds the planted
// cut.
// Thread safety: streaming and the statistics are reentrant. METIS keeps its state thread-local,
// but for the length of a call installs process-wide SIGABRT and SIGTERM handlers (GKlib's
// gk_sigtrap), so concurrent metis calls are not relied on.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "strata/models/graph/synthetic_graph.hpp"

namespace strata {
inline namespace models {

enum class PartitionMethod : std::uint8_t { metis, streaming };
std::string_view to_string(PartitionMethod method);                            // metis | streaming
std::optional<PartitionMethod> parse_partition_method(std::string_view name);  // metis | streaming

// Whether this build links METIS (CMake found libmetis-dev).
bool metis_available();

// The part of each node, in [0, k). Throws InputError unless 1 <= k <= graph.nodes(), or (metis)
// when the graph is too large for METIS's 32-bit ids, METIS is not in this build, or METIS fails.
// Costs: streaming O(m + n k); metis as METIS's multilevel scheme takes (measured above).
std::vector<std::int32_t> partition_graph(const CsrGraph& graph, int k, PartitionMethod method,
                                          std::uint64_t seed);

// The edges whose ends lie in different parts. O(n + m).
// Throws InputError unless parts has graph.nodes() entries, all >= 0.
std::int64_t edge_cut(const CsrGraph& graph, const std::vector<std::int32_t>& parts);

struct PartStats {
  std::int64_t nodes = 0;
  std::int64_t internal_edges = 0;  // both ends in the part
  std::int64_t cut_edges = 0;       // one end in the part, the other in another part
  std::int64_t halo = 0;            // distinct nodes of other parts adjacent to a node of the part
};

struct PartitionStats {
  std::vector<PartStats> parts;  // k entries
  std::int64_t edge_cut = 0;     // = half the sum of the parts' cut_edges
  std::int64_t halo = 0;         // the parts' halos summed: feature rows fetched per exchange
  std::int64_t max_part_nodes = 0;
  double imbalance = 0;  // max_part_nodes / (n / k); 1 is perfect balance
};

// The figures above. O(n + m + k) time, O(k) memory beyond the result. Throws InputError unless
// k >= 1 and parts has graph.nodes() entries, each in [0, k).
PartitionStats partition_stats(const CsrGraph& graph, const std::vector<std::int32_t>& parts, int k);

}  // namespace models
}  // namespace strata
