// Analytical estimate: closed-form iteration time and memory of one parallel configuration.
//
// The fastest of strata's three fidelity levels (DESIGN.md): no Plan, no SimGrid, microseconds
// per configuration, for pruning a large space before replaying its front. In the spirit of
// Calculon (Isaev et al., SC'23): every term is a formula over the same per-layer costs that the
// lowered Plan's tasks get (layer_tasks.hpp + CostModel), so the two levels can be held to each
// other by tests.
//
// The model, per iteration (m microbatches, p = pp stages):
//   t_stage(s)   = forward + backward of one microbatch on stage s + its TP allreduces
//   pipeline     = (m + p - 1) x max_s t_stage(s)          (GPipe and 1F1B alike: same bubble)
//   pp_comm      = Σ_boundaries 2 (α + S_act / B)          (each boundary crossed once forward,
//                                                           once backward on the critical path)
//   dp_exposed(s)= bucketed DP allreduce left over after the last microbatch's backward of
//                  stage s (see dp_cost in analytical.cpp for the overlap assumption)
//   optimizer(s) = the step the lowering emits, timed by the cost model (memory-bound)
//   iteration    = pipeline + pp_comm + max_s (dp_exposed(s) + optimizer(s) - s t_b)
// where t_b is one microbatch's backward on the slowest stage: stage s finishes its last
// backward s t_b before stage 0 does.
// Links: a group within one host uses intra_bw; one that crosses hosts shares each host's NIC
// (inter_bw x slots) among the flows that leave the host at once, one per group with members
// there, since rings run in rank order: a DP ring of 16 GPUs on two 8-GPU hosts leaves each
// host by a single flow; the DP rings of tp ranks of a stage run together, and those of
// different stages only as far as their windows overlap (1 + D / t_b stages, D the allreduce).
// Limits: perfectly balanced overlap assumptions, no contention between the TP, PP and DP
// traffic of one host, no kernel-launch gaps beyond the calibration's overheads, 1F1B's
// steady-state p2p round trips assumed hidden behind compute, gradient accumulation and
// recomputation not modelled.
#pragma once

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata {
inline namespace models {

// A homogeneous cluster: `hosts` hosts like `host`, ranks placed in order, host.slots per host.
struct ClusterSpec {
  HostSpec host;
  int hosts = 1;
  double intra_bw = 0;       // B/s per flow between two slots of one host
  double intra_latency = 0;  // s
  double inter_bw = 0;       // B/s per GPU between hosts, all GPUs of a host sending at once
  double inter_latency = 0;  // s
};

struct Estimate {
  double iteration_s = 0;        // s per training iteration
  double compute_s = 0;          // s of forward + backward on the slowest stage (m microbatches)
  double exposed_comm_s = 0;     // s of communication not hidden behind compute (TP + PP + DP)
  double dp_comm_s = 0;          // s, whole DP allreduce of the slowest stage (overlapped or not)
  double tp_comm_s = 0;          // s of TP allreduces on the slowest stage (all exposed)
  double pp_comm_s = 0;          // s of p2p on the critical path
  double bubble_fraction = 0;    // (p - 1) / (m + p - 1)
  double peak_memory_bytes = 0;  // B, peak_worker_memory()
  double tokens_per_s = 0;       // global batch x seq / iteration
  double mfu = 0;                // model FLOP/s / (workers x peak FLOP/s of the dtype)
  bool fits = true;              // peak memory <= host.gpu_memory (true when that is unknown)
};

// Time of one collective over `ranks` ranks, each holding `bytes`, on links of per-flow
// bandwidth `bw` (B/s) and latency `latency` (s); the α-β costs of Thakur, Rabenseifner and
// Gropp (IJHPCA 2005): ring 2(n-1)α + 2(n-1)/n S/B; halving-doubling 2 log2(n) α + 2(n-1)/n S/B;
// tree (reduce then broadcast, unpipelined) 2 ceil(log2 n) (α + S/B). Hierarchical is timed as
// a ring here. 0 for one rank.
double allreduce_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency);

// α + S/B.
double p2p_time(double bytes, double bw, double latency);

// REQUIRES: the configuration passes check_strategy(model, config). Throws InputError when the
// cluster has fewer slots than the configuration has workers.
Estimate estimate(const Model& model, const StrategyConfig& config, const ClusterSpec& cluster,
                  const CostModel& cost);

}  // namespace models
}  // namespace strata
