// Symmetry reduction (docs/simulator.md "Symmetry reduction"; internal to sim/): whether a
// data-parallel Plan can be replayed with the tasks of a few representative replicas only, and
// how many. The reduced replay lowers StrategyConfig::symmetric_replicas replicas; each
// data-parallel collective runs over them with the whole group's chunk sizes and ring steps
// (collectives.hpp), so every host of the representatives sends and receives what a host of the
// whole run does, on links that carry the same flows.
//
// Exactness conditions, every one checked (a full replay, with the reason, when one fails):
// - the Plan: backprop on a non-graph model, data-parallel collectives by ring or hierarchical
//   ring (halving-doubling, trees and hubs mix ranks across hosts unevenly), no gradient
//   compression, the natural placement (worker w on the w-th slot);
// - the hosts the workers use: one spec (speed, slots, memory, power, price), the same number of
//   workers on each, no speed or state profiles, no function pool;
// - their network: flat. Every route between two of them is the sender's own links, any number
//   of FATPIPE links (each flow gets their whole bandwidth, however many cross them), and the
//   receiver's own links; every host's own links (and its loopback) are alike, and no link is two
//   hosts' own. Checked on O(hosts) routes: for every host its routes to the next 1, 2, 3 and
//   hosts/2 hosts (natural order), against links found as the common part of two routes;
// - a period: a replica fills whole hosts (its workers a multiple of the workers per host) or
//   whole hosts hold whole replicas; the representatives are two hosts' worth of replicas (or two
//   replicas), and they divide dp.
// Then one period of hosts meets the next exactly as every host meets its ring neighbour in the
// whole run: the replay's times, per-worker figures and per-host link bytes are the whole run's.
#pragma once

#include <string>
#include <vector>

#include "loaded_platform.hpp"
#include "strata/models/experiment.hpp"

namespace strata {
inline namespace sim {

struct SymmetryChoice {
  int replicas = 0;    // data-parallel replicas to lower (StrategyConfig::symmetric_replicas); 0: all
  std::string reason;  // why the replay is full; empty when reduced or when dp is 1
};

// What the configuration alone allows (no platform): an empty string when its Plan may be
// reduced, else why not.
std::string symmetry_refused(const Model& model, const StrategyConfig& config, Solver solver);

// The reduction of `dp` replicas (symmetry_refused returned "") on `platform` with the workers on
// `host_of` (place_workers' natural placement of all dp replicas).
SymmetryChoice choose_symmetry(int dp, const LoadedPlatform& platform, const std::vector<int>& host_of);

// Tensor-parallel symmetry reduction (StrategyConfig::symmetric_tp): the tasks of two of each
// stage's tp ranks, each standing for tp / 2; a flow between hosts stands for tp / 2 alike flows
// of the ranks left out, which cross the same links at the same times (every worker of a stage
// does the same, on the same host). Exact when, besides the configuration (an even tp of 4 or
// more for every stage, ring collectives, backprop, no gradient compression, no replica
// reduction):
// - every stage's tp ranks are on one host;
// - a flow inside a host shares no link with another flow: the host's route to itself is FATPIPE
//   links only (or there is none: a memory copy), so fewer flows there change nothing;
// - between hosts every flow is a representative's, scaled alike: max-min sharing gives a flow of
//   c times the bytes c times the rate of one, so every link carries what the whole run's do;
// - the hosts' compute is not shared (no speed or state profiles, a core per worker), no
//   function pool.
// What the configuration alone allows: "" when it may be reduced, else why not.
std::string tp_symmetry_refused(const StrategyConfig& config, Solver solver);
// The ranks to lower (2), or 0 and the reason, on `platform` with the workers on `host_of`.
SymmetryChoice choose_tp_symmetry(int tp, const LoadedPlatform& platform, const std::vector<int>& host_of);

}  // namespace sim
}  // namespace strata
