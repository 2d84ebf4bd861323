// Graph partitioning: see graph_partition.hpp.
#include "strata/models/graph/graph_partition.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strata/traces/error.hpp"

#ifdef STRATA_WITH_METIS
#include <metis.h>
#endif

namespace strata {
inline namespace models {
namespace {

// Fennel's settings (Tsourakakis et al. 2014, as in their experiments): the cost exponent and the
// load cap.
constexpr double kFennelGamma = 1.5;
constexpr double kFennelLoadCap = 1.1;

[[noreturn]] void bad_partition(const std::string& problem) { throw InputError("partition: " + problem); }

// k = 0: any part id >= 0.
void check_parts(const CsrGraph& graph, const std::vector<std::int32_t>& parts, int k) {
  if (static_cast<std::int64_t>(parts.size()) != graph.nodes())
    bad_partition("parts has " + std::to_string(parts.size()) +
                  " entries for nodes=" + std::to_string(graph.nodes()));
  for (std::size_t v = 0; v < parts.size(); ++v)
    if (parts[v] < 0 || (k > 0 && parts[v] >= k))
      bad_partition("parts[" + std::to_string(v) + "]=" + std::to_string(parts[v]) +
                    (k > 0 ? " must be in [0, " + std::to_string(k) + ")" : std::string(" must be >= 0")));
}

#ifdef STRATA_WITH_METIS
static_assert(sizeof(idx_t) == 4, "Debian's METIS 5.1 has 32-bit ids (IDXTYPEWIDTH 32)");

std::string metis_status(int status) {
  switch (status) {
    case METIS_ERROR_INPUT:
      return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY:
      return "METIS_ERROR_MEMORY";
    default:
      return "METIS_ERROR " + std::to_string(status);
  }
}

std::vector<std::int32_t> metis_parts(const CsrGraph& graph, int k, std::uint64_t seed) {
  constexpr std::int64_t kIdxMax = INT32_MAX;
  const auto entries = static_cast<std::int64_t>(graph.adjacency().size());
  if (graph.nodes() > kIdxMax || entries > kIdxMax)
    bad_partition(
        "method metis takes at most 2^31 - 1 nodes and adjacency entries (32-bit idx_t), got nodes=" +
        std::to_string(graph.nodes()) + " and " + std::to_string(entries) + " entries (2 x edges)");
  std::vector<idx_t> xadj(graph.offsets().size());
  std::transform(graph.offsets().begin(), graph.offsets().end(), xadj.begin(),
                 [](std::int64_t x) { return static_cast<idx_t>(x); });
  std::vector<idx_t> adjncy(graph.adjacency().begin(), graph.adjacency().end());  // METIS wants them mutable
  idx_t nvtxs = static_cast<idx_t>(graph.nodes()), ncon = 1, nparts = k, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
  options[METIS_OPTION_SEED] = static_cast<idx_t>((seed ^ (seed >> 32)) & 0x7fffffffU);
  std::vector<idx_t> part(static_cast<std::size_t>(graph.nodes()));
  const int status = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr, nullptr,
                                         &nparts, nullptr, nullptr, options, &objval, part.data());
  if (status != METIS_OK)
    bad_partition("METIS_PartGraphKway failed with " + metis_status(status) +
                  " for nodes=" + std::to_string(graph.nodes()) + ", edges=" + std::to_string(graph.edges()) +
                  ", k=" + std::to_string(k));
  return {part.begin(), part.end()};
}
#endif

// Fennel's one pass (graph_partition.hpp).
std::vector<std::int32_t> fennel_parts(const CsrGraph& graph, int k) {
  const auto n = static_cast<double>(graph.nodes());
  const double alpha =
      std::sqrt(static_cast<double>(k)) * static_cast<double>(graph.edges()) / std::pow(n, 1.5);
  const double cap = kFennelLoadCap * n / k;
  const auto parts = static_cast<std::size_t>(k);
  std::vector<std::int32_t> part(static_cast<std::size_t>(graph.nodes()), -1);
  std::vector<std::int64_t> size(parts, 0);
  std::vector<double> penalty(parts, 0.0);   // α γ |S_i|^(γ-1), updated as S_i grows
  std::vector<std::int64_t> near(parts, 0);  // |N(v) ∩ S_i| for the node being placed
  std::vector<std::int32_t> touched;
  for (std::int32_t v = 0; v < graph.nodes(); ++v) {
    for (std::int32_t u : graph.neighbours(v)) {
      const std::int32_t p = part[u];
      if (p >= 0 && near[p]++ == 0) touched.push_back(p);
    }
    std::size_t best = parts;
    double best_score = 0;
    for (std::size_t i = 0; i < parts; ++i) {
      if (static_cast<double>(size[i]) >= cap) continue;
      const double score = static_cast<double>(near[i]) - penalty[i];
      if (best == parts || score > best_score || (score == best_score && size[i] < size[best])) {
        best = i;
        best_score = score;
      }
    }
    STRATA_ASSERT(best < parts, "Fennel: every part full (cap " + std::to_string(cap) + ")");
    part[v] = static_cast<std::int32_t>(best);
    ++size[best];
    penalty[best] = alpha * kFennelGamma * std::pow(static_cast<double>(size[best]), kFennelGamma - 1);
    for (std::int32_t p : touched) near[p] = 0;
    touched.clear();
  }
  return part;
}

}  // namespace

std::string_view to_string(PartitionMethod method) {
  switch (method) {
    case PartitionMethod::metis:
      return "metis";
    case PartitionMethod::streaming:
      return "streaming";
  }
  return "?";
}

std::optional<PartitionMethod> parse_partition_method(std::string_view name) {
  if (name == "metis") return PartitionMethod::metis;
  if (name == "streaming") return PartitionMethod::streaming;
  return std::nullopt;
}

bool metis_available() {
#ifdef STRATA_WITH_METIS
  return true;
#else
  return false;
#endif
}

std::vector<std::int32_t> partition_graph(const CsrGraph& graph, int k, PartitionMethod method,
                                          std::uint64_t seed) {
  if (k < 1) bad_partition("k=" + std::to_string(k) + " must be >= 1");
  if (k > graph.nodes())
    bad_partition("k=" + std::to_string(k) + " must be <= nodes=" + std::to_string(graph.nodes()));
  if (method == PartitionMethod::streaming) return fennel_parts(graph, k);
#ifdef STRATA_WITH_METIS
  if (k == 1) return std::vector<std::int32_t>(static_cast<std::size_t>(graph.nodes()), 0);
  return metis_parts(graph, k, seed);
#else
  (void)seed;
  bad_partition(
      "method metis needs METIS, and libmetis-dev was not installed when strata was built (install it, then "
      "re-run cmake)");
#endif
}

std::int64_t edge_cut(const CsrGraph& graph, const std::vector<std::int32_t>& parts) {
  check_parts(graph, parts, 0);
  std::int64_t cut = 0;
  for (std::int32_t u = 0; u < graph.nodes(); ++u)
    for (std::int32_t v : graph.neighbours(u))
      if (v > u && parts[u] != parts[v]) ++cut;
  return cut;
}

PartitionStats partition_stats(const CsrGraph& graph, const std::vector<std::int32_t>& parts, int k) {
  if (k < 1) bad_partition("k=" + std::to_string(k) + " must be >= 1");
  check_parts(graph, parts, k);
  PartitionStats out;
  out.parts.resize(static_cast<std::size_t>(k));
  // seen[q] == u: u is already counted in part q's halo.
  std::vector<std::int32_t> seen(static_cast<std::size_t>(k), -1);
  for (std::int32_t u = 0; u < graph.nodes(); ++u) {
    PartStats& own = out.parts[parts[u]];
    ++own.nodes;
    for (std::int32_t v : graph.neighbours(u)) {
      const std::int32_t q = parts[v];
      if (q == parts[u]) {
        if (v > u) ++own.internal_edges;
        continue;
      }
      ++own.cut_edges;  // each cut edge is seen once from each end, each time for its own part
      if (v > u) ++out.edge_cut;
      if (seen[q] != u) {
        seen[q] = u;
        ++out.parts[q].halo;
      }
    }
  }
  for (const PartStats& p : out.parts) {
    out.halo += p.halo;
    out.max_part_nodes = std::max(out.max_part_nodes, p.nodes);
  }
  const double mean = static_cast<double>(graph.nodes()) / k;
  out.imbalance = mean > 0 ? static_cast<double>(out.max_part_nodes) / mean : 0.0;
  return out;
}

}  // namespace models
}  // namespace strata
