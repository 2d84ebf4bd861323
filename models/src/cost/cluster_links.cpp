// Links of the closed-form estimate (see cluster_links.hpp).
#include "cluster_links.hpp"

#include <algorithm>

namespace strata {
inline namespace models {
namespace links {

// Ranks are placed in order, host.slots per host (strategy.hpp's rank numbering), and every
// ring runs in rank order (as the lowering lists a collective's group).
namespace {

bool same_host(long a, long b, int slots) { return a / slots == b / slots; }

// The per-flow link of a communication that crosses hosts, when `flows` flows leave each host
// at once: a host's NIC carries inter_bw x slots (inter_bw is one GPU's share when all send at
// once), shared among them. A ring whose consecutive members can sit on one host also has
// intra-host hops, and each ring step waits for its slowest hop.
Link crossing_link(const ClusterSpec& c, long flows, bool intra_hops) {
  const int slots = c.host.slots;
  const auto sharing = static_cast<double>(std::clamp<long>(flows, 1, slots));
  Link link{c.inter_bw * slots / sharing, c.inter_latency, c.host.fabric_inter.get()};
  if (intra_hops) {
    link.bw = std::min(link.bw, c.intra_bw);
    link.latency = std::max(link.latency, c.intra_latency);
  }
  return link;
}

Link intra(const ClusterSpec& c) { return {c.intra_bw, c.intra_latency, c.host.fabric_intra.get()}; }

}  // namespace

// A tp group is ranks [k tp, (k + 1) tp): crossing if any group straddles two hosts; its ring
// then leaves each host by one flow.
Link tp_link(const StrategyConfig& config, const ClusterSpec& cluster) {
  const int slots = cluster.host.slots;
  for (long first = 0; first < config.workers(); first += config.tp)
    if (!same_host(first, first + config.tp - 1, slots)) return crossing_link(cluster, 1, slots > 1);
  return intra(cluster);
}

// Stage s -> s + 1 of a replica moves from rank r to r + tp, the tp ranks at once.
Link pp_link(const StrategyConfig& config, const ClusterSpec& cluster) {
  const int slots = cluster.host.slots;
  for (long replica = 0; replica < config.dp; ++replica) {
    for (long s = 0; s + 1 < config.pp; ++s) {
      const long first = (replica * config.pp + s) * config.tp;
      for (long r = first; r < first + config.tp; ++r)
        if (!same_host(r, r + config.tp, slots)) return crossing_link(cluster, config.tp, false);
    }
  }
  return intra(cluster);
}

// A dp group is ranks r0 + d pp tp: with ranks filled in order it stays on one host exactly
// when all workers do. Crossing, each (stage, tp rank) group leaves a host by one flow; the tp
// groups of a stage reduce together, and `stages` stages' allreduces overlap in time.
Link dp_link(const StrategyConfig& config, const ClusterSpec& cluster, int stages) {
  if (config.workers() <= cluster.host.slots) return intra(cluster);
  const long stride = static_cast<long>(config.pp) * config.tp;
  return crossing_link(cluster, static_cast<long>(config.tp) * stages, stride < cluster.host.slots);
}

}  // namespace links
}  // namespace models
}  // namespace strata
