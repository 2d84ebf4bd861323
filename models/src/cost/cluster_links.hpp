// Links of the closed-form estimate (analytical.hpp): the per-flow bandwidth and latency that a
// tensor-, pipeline- or data-parallel group's traffic gets on a homogeneous cluster. Internal to
// models/src/cost.
//
// Ranks are placed in order, host.slots per host (strategy.hpp's rank numbering), and every ring
// runs in rank order (as the lowering lists a collective's group). A group within one host uses
// intra_bw; one that crosses hosts shares each host's NIC (inter_bw x slots) among the flows that
// leave the host at once.
#pragma once

#include "strata/models/cost/analytical.hpp"

namespace strata {
inline namespace models {
namespace links {

struct Link {
  double bw;                       // B/s per flow
  double latency;                  // s
  const Fabric* fabric = nullptr;  // its bus-bandwidth curves (bus_bandwidth.hpp); null: at peak
};

// A tp group is ranks [k tp, (k + 1) tp): crossing if any group straddles two hosts; its ring
// then leaves each host by one flow.
Link tp_link(const StrategyConfig& config, const ClusterSpec& cluster);

// Stage s -> s + 1 of a replica moves from rank r to r + tp, the tp ranks at once.
Link pp_link(const StrategyConfig& config, const ClusterSpec& cluster);

// A dp group is ranks r0 + d pp tp: with ranks filled in order it stays on one host exactly when
// all workers do. Crossing, each (stage, tp rank) group leaves a host by one flow; the tp groups
// of a stage reduce together, and `stages` stages' reductions overlap in time.
Link dp_link(const StrategyConfig& config, const ClusterSpec& cluster, int stages);

}  // namespace links
}  // namespace models
}  // namespace strata
