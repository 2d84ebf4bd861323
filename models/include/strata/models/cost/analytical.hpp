// Analytical estimate: closed-form iteration time and memory of one parallel configuration.
//
// The fastest of strata's three fidelity levels (DESIGN.md): no Plan, no SimGrid, microseconds
// per configuration, for pruning a large space before replaying its front. In the spirit of
// Calculon (Isaev et al., SC'23): every term is a formula over the same per-layer costs that the
// lowered Plan's tasks get (layer_tasks.hpp + CostModel), so the two levels can be held to each
// other by tests.
//
// The model, per iteration (m microbatches, p = pp stages, v = interleave):
//   t_stage(s)   = F + B of one microbatch on stage s, its TP collectives included:
//                  F = forward + TP collectives of forward; B = backward (data + weight) +
//                  the recomputed forward (selective: the attention core; full: the checkpointed
//                  blocks, their forward TP collectives again) + TP collectives of backward;
//                  with ZeRO-3, the parameter all-gathers of forward and of backward left over
//                  after the phase's compute (prefetch hides them behind the compute of the
//                  layers before: exposed = max(0, Σ gathers - compute), per phase)
//   pipeline     = (m + (p - 1)/v) x max_s t_stage(s)   (GPipe, 1F1B; interleaved 1F1B's bubble
//                  (p - 1)/(v m), Narayanan et al. 2021, section 2.2.2)
//                = m x t_stage + (p - 1) (F + B - W)    (ZB-H1, Qi et al., ICLR 2024, section
//                  3.1: W, the weight-gradient part of B, fills the bubble)
//   pp_comm      = v x Σ_boundaries 2 (α + S_act / B)   (each boundary crossed once forward,
//                                                        once backward on the critical path,
//                                                        v times when interleaved)
//   dp_exposed(s)= the DP gradient reduction (allreduce; reduce-scatter with ZeRO >= 1) left
//                  over after the last microbatch's backward of stage s (dp_cost in
//                  analytical.cpp), or all of it with ddp=after_flush (Megatron's local DDP)
//   optimizer(s) = the step the lowering emits on the worker's parameters (its 1/dp shard with
//                  ZeRO >= 1), timed by the cost model; with offload instead the gradient shard
//                  to the host and the parameter shard back over PCIe (HostSpec::pcie_bw) and
//                  the Adam step on the host CPU (kHostAdamBytesPerParam bytes per parameter at
//                  kHostMemBwPerGpu, host_offload.hpp); with ZeRO-1/2, then the all-gather of the
//                  updated parameters
//   iteration    = pipeline + pp_comm + max_s (dp_exposed(s) + optimizer(s) - s t_b)
// where t_b is one microbatch's backward on the slowest stage: stage s finishes its last
// backward s t_b before stage 0 does. Sequence parallelism replaces each TP allreduce by a
// reduce-scatter and an all-gather of the same buffer (Korthikanti et al. 2023, section 4.2.2).
// Links and streams: as Megatron runs them, the TP, PP and DP (and ZeRO gather) traffic of a
// worker are on separate NCCL communicators that proceed concurrently. The estimate charges TP
// collectives on the critical path (they block the next layer), PP transfers at the pipeline's
// ends, DP traffic overlapped with backward, and lets them share links only within their kind:
// a group within one host uses intra_bw; one that crosses hosts shares each host's NIC
// (inter_bw x slots) among the flows that leave the host at once, one per group with members
// there, since rings run in rank order: a DP ring of 16 GPUs on two 8-GPU hosts leaves each
// host by a single flow; the DP rings of tp ranks of a stage run together, and those of
// different stages only as far as their windows overlap (1 + D / t_b stages, D the reduction).
// TP traffic stays on NVLink when a TP group fits a host, and PP's activations are small next
// to DP's gradients, so the NIC sharing between kinds is not counted (a limit of the model).
// Limits: perfectly balanced overlap assumptions, no kernel-launch gaps beyond the
// calibration's overheads, 1F1B's steady-state p2p round trips assumed hidden behind compute,
// ZeRO-Offload's CPU step not overlapped with the next iteration's forward.
#pragma once

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/cost/layer_costs.hpp"
#include "strata/models/cost/memory_model.hpp"
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
  double bubble_fraction = 0;    // pipeline bubble / pipeline time ((p - 1) / (m + p - 1) for 1F1B)
  double peak_memory_bytes = 0;  // B, peak_worker_memory()
  double tokens_per_s = 0;       // global batch x seq / iteration
  double mfu = 0;                // model FLOP/s / (workers x peak FLOP/s of the dtype)
  double hfu = 0;                // hardware FLOP/s (recomputation counted) / the same peak, <= 1
  bool fits = true;              // peak memory <= host.gpu_memory (true when that is unknown)
  // Per iteration, on the hosts the workers fill in order (the explorer prices them from its
  // platform: price_estimate below); 0 when the hosts give no price or power.
  double energy_j = 0;
  double cost_usd = 0;
};

// Time of one collective over `ranks` ranks, each holding `bytes`, on links of per-flow
// bandwidth `bw` (B/s) and latency `latency` (s); the α-β costs of Thakur, Rabenseifner and
// Gropp (IJHPCA 2005): ring 2(n-1)α + 2(n-1)/n S/B; halving-doubling 2 log2(n) α + 2(n-1)/n S/B;
// tree (reduce then broadcast, unpipelined) 2 ceil(log2 n) (α + S/B). Hierarchical is timed as
// a ring here. 0 for one rank.
double allreduce_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency);

// Reduce-scatter and all-gather of a `bytes` buffer (each rank ends with, or starts from, bytes /
// ranks), Thakur et al.: ring (n-1)α + (n-1)/n S/B, each half a ring allreduce; recursive
// halving (reduce-scatter) and doubling (all-gather) log2(n) α + (n-1)/n S/B; tree and
// hierarchical timed as the ring. 0 for one rank.
double reduce_scatter_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency);
double allgather_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency);

// α + S/B.
double p2p_time(double bytes, double bw, double latency);

// REQUIRES: the configuration passes check_strategy(model, config). Throws InputError when the
// cluster has fewer slots than the configuration has workers, for offload when the host's
// pcie_bw is unknown, and for sequence_parallel and flash_attention, which need the cost model's
// layer tasks to model them (layer_tasks.hpp).
Estimate estimate(const Model& model, const StrategyConfig& config, const ClusterSpec& cluster,
                  const CostModel& cost);

// Whether the backward all-reduces of dX run beside the weight-gradient GEMMs, hidden up to their
// length (BlockCost::tp_bwd_overlap_s), as the lowering's TP stream runs them: tp_comm=async,
// without sequence parallelism (whose weight gradient first gathers its input again) and
// without ZB-H1 (which defers the weight gradients).
bool tp_dx_overlaps_wgrad(const StrategyConfig& config);

// `e`'s energy and money per iteration on `hosts` (a platform's, in natural order): the workers
// fill the hosts in order; each host used draws its idle power plus (busy - idle) times its
// slots' busy share (the estimate's compute time over its iteration, on the slots the workers
// take), as the replay's report does, and costs its price per hour. O(hosts used).
void price_estimate(Estimate& e, int workers, const std::vector<HostSpec>& hosts);

// estimate() for many configurations of one model on one cluster (the explorer's inner loop):
// the layers' task costs are computed once per (microbatch, tp, dtype, layer options) and reused
// (layer_costs.hpp). The model, cluster and cost model must outlive it and stay unchanged. Not
// thread-safe. Gives exactly what estimate() gives.
class Estimator {
 public:
  Estimator(const Model& model, const ClusterSpec& cluster, const CostModel& cost);
  // REQUIRES and throws as estimate().
  Estimate operator()(const StrategyConfig& config);

  // A stage's gradients as its DP reduction and ZeRO-3's gathers see them (analytical.cpp).
  struct StageGrads {
    double params = 0;                                      // per worker, before ZeRO sharding
    double buckets = 0, bucket_bytes = 0, last_bucket = 0;  // DDP buckets: count, bytes, the last's
    double layers = 0, layer_bytes = 0;                     // layers with parameters: count, bytes
    double units = 0;  // blocks with parameters (ZeRO-3 gathers one unit at a time)
    // PowerSGD's view of the gradients (grad_matrix): sums of rows and cols of the weight
    // matrices, and the values sent whole; P holds r·rows + rest values, Q r·cols.
    double matrix_rows = 0, matrix_cols = 0, matrix_rest = 0;
  };

 private:
  const Model& model_;
  const ClusterSpec& cluster_;
  const CostModel& cost_;
  LayerCostTable layers_;
  // chunk_cuts by (pp, interleave); stage gradients by (tp, dtype, optimizer, bucket_bytes, pp,
  // interleave); block_memory by (tp, dtype, sequence_parallel, flash_attention, selective).
  std::map<std::pair<int, int>, std::vector<int>> cuts_cache_;
  std::map<std::tuple<int, DType, Optimizer, double, int, int>, std::vector<StageGrads>> grads_cache_;
  std::map<std::tuple<int, DType, bool, bool, Recompute>, std::vector<BlockMemory>> memory_cache_;
  const std::vector<int>& cuts_for(const StrategyConfig& config);
  const std::vector<StageGrads>& grads_for(const StrategyConfig& config, const std::vector<int>& cuts);
  const std::vector<BlockMemory>& memory_for(const StrategyConfig& config);
};

}  // namespace models
}  // namespace strata
