// Analytical estimate (see analytical.hpp for the model and its limits, docs/memory.md for the
// memory options).
#include "strata/models/cost/analytical.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "strata/models/cost/memory_model.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

namespace {

struct Link {
  double bw;
  double latency;
};

// Ranks are placed in order, host.slots per host (strategy.hpp's rank numbering), and every
// ring runs in rank order (as the lowering lists a collective's group).
bool same_host(long a, long b, int slots) { return a / slots == b / slots; }

// The per-flow link of a communication that crosses hosts, when `flows` flows leave each host
// at once: a host's NIC carries inter_bw x slots (inter_bw is one GPU's share when all send at
// once), shared among them. A ring whose consecutive members can sit on one host also has
// intra-host hops, and each ring step waits for its slowest hop.
Link crossing_link(const ClusterSpec& c, long flows, bool intra_hops) {
  const int slots = c.host.slots;
  const auto sharing = static_cast<double>(std::clamp<long>(flows, 1, slots));
  Link link{c.inter_bw * slots / sharing, c.inter_latency};
  if (intra_hops) {
    link.bw = std::min(link.bw, c.intra_bw);
    link.latency = std::max(link.latency, c.intra_latency);
  }
  return link;
}

Link intra(const ClusterSpec& c) { return {c.intra_bw, c.intra_latency}; }

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

// The weight gradient one layer contributes to the DP reduction.
struct LayerGrad {
  int block;
  double bytes;
};

// What one microbatch costs on one stage, and what the stage's DP reduction moves.
struct StageCost {
  double fwd_s = 0;              // compute, one microbatch
  double bwd_s = 0;              // compute, one microbatch: data + weight + recomputed forward
  double bwdw_s = 0;             // the weight-gradient part of bwd_s (ZB-H1's W)
  double tp_fwd_s = 0;           // TP collectives of forward (and of the recomputed forward)
  double tp_bwd_s = 0;           // TP collectives of backward
  double gather_s = 0;           // ZeRO-3: parameter all-gathers not hidden, both phases
  double boundary_bytes = 0;     // activation sent to the next stage, one microbatch
  double params = 0;             // per worker (before ZeRO sharding)
  double flops = 0;              // hardware FLOP of one microbatch, recomputation included
  std::vector<LayerGrad> grads;  // layers with parameters, in backward order
  double step() const { return fwd_s + bwd_s + tp_fwd_s + tp_bwd_s + gather_s; }
  double backward() const { return bwd_s + tp_bwd_s; }
};

struct Context {
  const Model& model;
  const StrategyConfig& config;
  const ClusterSpec& cluster;
  const CostModel& cost;
  double microbatch;
  Link tp;
  const std::vector<LayerCost>& layers;  // LayerCostTable::costs of this configuration
};

// The layer's tensor-parallel collective (layer_costs.hpp: Megatron's f/g operators, Shoeybi et
// al. 2019, section 3: for a transformer block 2 + 2 of microbatch x seq x hidden elements). With
// sequence parallelism each allreduce becomes a reduce-scatter and an all-gather of the same
// buffer (Korthikanti et al. 2023, section 4.2.2).
double tp_collective_s(const Context& cx, const LayerCost& c) {
  if (cx.config.tp <= 1 || c.tp_elems <= 0) return 0;
  const double bytes = c.tp_elems * cx.microbatch * bytes_per_element(cx.config.dtype);
  const CollectiveAlgo algo = cx.config.tp_algo;
  const int t = cx.config.tp;
  if (cx.config.sequence_parallel)
    return reduce_scatter_time(algo, t, bytes, cx.tp.bw, cx.tp.latency) +
           allgather_time(algo, t, bytes, cx.tp.bw, cx.tp.latency);
  return allreduce_time(algo, t, bytes, cx.tp.bw, cx.tp.latency);
}

// Whether the layer's forward runs again in backward: the attention core with selective
// recomputation, the checkpointed blocks with full recomputation (memory_model.hpp).
bool recomputed(const Context& cx, const std::vector<int>& cuts, int stage, const Layer& layer) {
  if (cx.config.recompute == Recompute::selective) return layer.op == LayerOp::attention;
  return fully_recomputed(cx.model, cx.config, cuts, stage, layer);
}

// ZeRO-3 gathers every layer's parameters before its forward and again before its backward, on
// the DP group; the next layer's gather is prefetched during the current layer's compute, so the
// gathers of a phase hide behind its compute as far as it lasts.
double zero3_gather_s(const Context& cx, const StageCost& sc, Link dp) {
  if (cx.config.zero < 3 || cx.config.dp <= 1) return 0;
  double gathers = 0;  // a layer's 16-bit (or fp32) weights are as large as its gradient
  for (const LayerGrad& grad : sc.grads)
    gathers += allgather_time(cx.config.dp_algo, cx.config.dp, grad.bytes, dp.bw, dp.latency);
  return std::max(0.0, gathers - sc.fwd_s) + std::max(0.0, gathers - sc.bwd_s);
}

StageCost stage_cost(const Context& cx, const std::vector<int>& cuts, int stage) {
  const StrategyConfig& config = cx.config;
  const double grad_bytes = bytes_per_param(config.optimizer, config.dtype).grads;
  StageCost sc;
  for (std::size_t i : device_layers(cx.model, config, cuts, stage)) {
    const Layer& layer = cx.model.layers[i];
    const LayerCost& c = cx.layers[i];
    sc.fwd_s += c.fwd_s;
    sc.bwd_s += c.bwd_s;
    sc.bwdw_s += c.bwdw_s;
    sc.flops += c.fwd_flops + c.bwd_flops;
    const double tp = tp_collective_s(cx, c);
    (c.tp_forward ? sc.tp_fwd_s : sc.tp_bwd_s) += tp;
    if (recomputed(cx, cuts, stage, layer)) {
      sc.bwd_s += c.fwd_s;
      sc.flops += c.fwd_flops;
      if (c.tp_forward) sc.tp_bwd_s += tp;
    }
    const double params = is_split(layer) ? layer.params / config.tp : layer.params;
    sc.params += params;
    if (params > 0) sc.grads.push_back({layer.block, params * grad_bytes});
    sc.boundary_bytes = layer.out_elems * cx.microbatch * bytes_per_element(config.dtype);
  }
  std::reverse(sc.grads.begin(), sc.grads.end());
  return sc;
}

// Bucket sizes in issue (backward) order, as PyTorch DDP forms them (Li et al., VLDB 2020)
// and the lowering does: whole layers' gradients, a bucket closing once it holds bucket_bytes
// (so a layer larger than that is a bucket of its own), or at every block boundary when
// bucket_bytes = 0.
std::vector<double> buckets(const StageCost& sc, double bucket_bytes) {
  std::vector<double> out;
  double bytes = 0;
  bool open = false;
  int block = -1;
  auto close = [&] {
    if (open) out.push_back(bytes);
    bytes = 0;
    open = false;
  };
  for (const LayerGrad& grad : sc.grads) {
    if (bucket_bytes <= 0 && grad.block != block) close();
    block = grad.block;
    bytes += grad.bytes;
    open = true;
    if (bucket_bytes > 0 && bytes >= bucket_bytes) close();
  }
  close();
  return out;
}

struct DpCost {
  double total_s = 0;    // every bucket's reduction back to back
  double exposed_s = 0;  // what is left after the last microbatch's backward
};

// Overlap assumption (ddp=overlap): every bucket but the last is produced during the stage's
// last microbatch's backward, and their reductions run back to back on the DP stream while that
// backward proceeds, perfectly hidden up to its length. The last bucket (the stage's first
// layers) is ready only when backward ends, so its reduction is always exposed:
//   exposed = max(0, Σ_{i<k} ar(b_i) - t_bwd) + ar(b_k).
// With one bucket, or a zero-length backward, that is the whole reduction (for a ring
// allreduce, 2 (n - 1) (α + S / (n B))). Earlier microbatches' backwards are not counted as
// overlap: DDP (no_sync) and Megatron reduce gradients once, after the last microbatch. With
// ddp=after_flush nothing overlaps. ZeRO >= 1 reduce-scatters the gradients instead (each rank
// keeps the shard it updates).
DpCost dp_cost(const Context& cx, const StageCost& sc, Link link) {
  DpCost dp;
  if (cx.config.dp <= 1) return dp;
  const std::vector<double> sizes = buckets(sc, cx.config.bucket_bytes);
  const bool sharded = cx.config.zero >= 1;
  double overlappable = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double t =
        sharded ? reduce_scatter_time(cx.config.dp_algo, cx.config.dp, sizes[i], link.bw, link.latency)
                : allreduce_time(cx.config.dp_algo, cx.config.dp, sizes[i], link.bw, link.latency);
    dp.total_s += t;
    if (i + 1 < sizes.size())
      overlappable += t;
    else
      dp.exposed_s = std::max(0.0, overlappable - sc.backward()) + t;
  }
  if (cx.config.ddp == DdpMode::after_flush) dp.exposed_s = dp.total_s;
  return dp;
}

// ZeRO-Offload's step on the host (Ren et al., USENIX ATC'21, section 4): CPU Adam reads the
// fp32 master weights, momentum and variance and the 16-bit gradient and writes the first three
// and the 16-bit weights: (12 + 2) + (12 + 2) = 28 B per parameter, memory-bound.
constexpr double kHostAdamBytesPerParam = 28;
// Host memory bandwidth per GPU: a DGX A100 has two AMD EPYC 7742 (NVIDIA DGX A100 datasheet),
// each with 8 channels of DDR4-3200, 204.8 GB/s (AMD EPYC 7742 product page): 409.6 GB/s for 8
// GPUs, 51.2 GB/s each (a peak: the estimate's host step is a lower bound).
constexpr double kHostMemBwPerGpu = 409.6e9 / 8;

// The optimizer step and what follows it before the next iteration can start.
double optimizer_s(const Context& cx, const StageCost& sc, Link dp) {
  const StrategyConfig& config = cx.config;
  const double shard = config.zero >= 1 ? sc.params / config.dp : sc.params;
  const BytesPerParam per_param = bytes_per_param(config.optimizer, config.dtype);
  double t = 0;
  if (config.offload) {
    const double pcie = cx.cluster.host.pcie_bw;
    t = shard * (per_param.grads + per_param.params) / pcie +
        shard * kHostAdamBytesPerParam / kHostMemBwPerGpu;
  } else {
    t = cx.cost.compute_time(optimizer_step_task(cx.model, shard, config.optimizer, config.dtype),
                             cx.cluster.host);
  }
  if (config.zero >= 1 && config.zero <= 2)  // the updated parameter shards gathered back
    t += allgather_time(config.dp_algo, config.dp, sc.params * per_param.params, dp.bw, dp.latency);
  return t;
}

void check_cluster(const StrategyConfig& config, const ClusterSpec& cluster) {
  STRATA_ASSERT(config.dp >= 1 && config.tp >= 1 && config.pp >= 1, "dp, tp, pp >= 1");
  STRATA_ASSERT(cluster.host.slots >= 1, "host with no slots");
  const long slots = static_cast<long>(cluster.hosts) * cluster.host.slots;
  if (config.workers() > slots)
    throw InputError(input_error_message("strategy " + config.to_string(), "",
                                         "needs " + std::to_string(config.workers()) +
                                             " workers, the cluster has " + std::to_string(slots) +
                                             " slots"));
  if (config.offload && !(cluster.host.pcie_bw > 0))
    throw InputError("--set offload=1: host " + cluster.host.name +
                     " has no pcie_bw (the platform host property giving each GPU's link to host "
                     "memory, B/s), which offloaded optimizer states cross");
  // The cost model's layer tasks do not model these two yet (layer_tasks.hpp).
  if (config.sequence_parallel)
    throw InputError(
        "--set sequence_parallel=1: not modelled by the closed-form estimate of this version of strata");
  if (config.flash_attention)
    throw InputError(
        "--set flash_attention=1: not modelled by the closed-form estimate of this version of strata");
}

// How many stages' DP reductions overlap in time on one host. Stage s's last backward ends
// s x t_b before stage 0's (the last microbatch's gradient walks down the pipeline), and its
// reductions take D from there, so the windows of stages j apart overlap when j t_b < D:
// 1 + floor(D / t_b) stages at once, at most the stages a host holds. D shrinks as fewer
// stages share the NIC; start from 1 and grow to the fixed point.
int overlapping_dp_stages(const Context& cx, const std::vector<StageCost>& stages, double t_b) {
  const int on_host = std::clamp(cx.cluster.host.slots / cx.config.tp, 1, cx.config.pp);
  int k = 1;
  while (k < on_host) {
    const Link link = dp_link(cx.config, cx.cluster, k);
    double longest = 0;
    for (const StageCost& sc : stages) longest = std::max(longest, dp_cost(cx, sc, link).total_s);
    const int overlapping = t_b > 0 ? 1 + static_cast<int>(longest / t_b) : on_host;
    if (overlapping <= k) break;
    k = std::min(on_host, overlapping);
  }
  return k;
}

// The pipeline's time for m microbatches of `slowest` and its bubble, by schedule.
void pipeline_time(const StrategyConfig& config, const StageCost& slowest, Estimate& e, double& pipeline) {
  const auto m = static_cast<double>(microbatch_count(config));
  const double p = config.pp;
  double bubble = (p - 1) / config.interleave * slowest.step();
  if (config.schedule == PipelineSchedule::zb_h1)  // (p - 1)(T_F + T_B - T_W), B without W
    bubble = (p - 1) * std::max(0.0, slowest.step() - 2 * slowest.bwdw_s);
  pipeline = m * slowest.step() + bubble;
  e.bubble_fraction = pipeline > 0 ? bubble / pipeline : 0;
}

}  // namespace

Estimator::Estimator(const Model& model, const ClusterSpec& cluster, const CostModel& cost)
    : model_(model), cluster_(cluster), cost_(cost), layers_(model, cluster.host, cost) {}

const std::vector<int>& Estimator::cuts_for(const StrategyConfig& config) {
  const std::pair<int, int> key{config.pp, config.interleave};
  if (auto it = cuts_cache_.find(key); it != cuts_cache_.end()) return it->second;
  return cuts_cache_.emplace(key, chunk_cuts(model_, config)).first->second;
}

Estimate estimate(const Model& model, const StrategyConfig& config, const ClusterSpec& cluster,
                  const CostModel& cost) {
  return Estimator(model, cluster, cost)(config);
}

Estimate Estimator::operator()(const StrategyConfig& config) {
  const Model& model = model_;
  const ClusterSpec& cluster = cluster_;
  check_cluster(config, cluster);
  const double microbatch = microbatch_size(model, config);
  const Context cx{model,
                   config,
                   cluster,
                   cost_,
                   microbatch,
                   tp_link(config, cluster),
                   layers_.costs(microbatch, config.tp, config.dtype, layer_task_options(config))};
  const std::vector<int>& cuts = cuts_for(config);
  std::vector<StageCost> stages;
  for (int s = 0; s < config.pp; ++s) stages.push_back(stage_cost(cx, cuts, s));
  auto slowest_of = [&] {
    return *std::max_element(stages.begin(), stages.end(),
                             [](const StageCost& a, const StageCost& b) { return a.step() < b.step(); });
  };
  const double t_b = slowest_of().backward();
  const Link dp = dp_link(config, cluster, overlapping_dp_stages(cx, stages, t_b));
  for (StageCost& sc : stages) sc.gather_s = zero3_gather_s(cx, sc, dp);
  const StageCost slowest = slowest_of();
  const Link pp = pp_link(config, cluster);
  Estimate e;
  double exposed_dp_s = 0;
  double tail_s = 0;  // after stage 0's last backward: exposed DP + optimizer step, latest stage
  for (int s = 0; s < config.pp; ++s) {
    const StageCost& sc = stages[static_cast<std::size_t>(s)];
    const DpCost dc = dp_cost(cx, sc, dp);
    tail_s = std::max(tail_s, dc.exposed_s + optimizer_s(cx, sc, dp) - s * t_b);
    exposed_dp_s = std::max(exposed_dp_s, dc.exposed_s - s * t_b);
    e.dp_comm_s = std::max(e.dp_comm_s, dc.total_s);
    // The first microbatch's activation and the last one's gradient cross this boundary (v
    // times when interleaved).
    if (s + 1 < config.pp)
      e.pp_comm_s += 2 * config.interleave * p2p_time(sc.boundary_bytes, pp.bw, pp.latency);
  }
  const auto m = static_cast<double>(microbatch_count(config));
  double pipeline = 0;
  pipeline_time(config, slowest, e, pipeline);
  e.compute_s = m * (slowest.fwd_s + slowest.bwd_s);
  e.tp_comm_s = m * (slowest.tp_fwd_s + slowest.tp_bwd_s);
  e.iteration_s = pipeline + e.pp_comm_s + tail_s;
  e.exposed_comm_s = e.tp_comm_s + m * slowest.gather_s + e.pp_comm_s + exposed_dp_s;
  e.peak_memory_bytes = peak_worker_memory(model, config, cuts);
  e.fits = cluster.host.gpu_memory <= 0 || e.peak_memory_bytes <= cluster.host.gpu_memory;
  const double tokens =
      static_cast<double>(effective_global_batch(model, config)) * static_cast<double>(model.seq);
  e.tokens_per_s = e.iteration_s > 0 ? tokens / e.iteration_s : 0;
  const double peak = config.workers() * cluster.host.peak_flops(config.dtype);
  e.mfu = peak > 0 ? model.model_flops_per_token() * e.tokens_per_s / peak : 0;
  double flops = 0;  // every worker's hardware FLOP in the iteration
  for (const StageCost& sc : stages) flops += sc.flops * m * config.dp * config.tp;
  e.hfu = peak > 0 && e.iteration_s > 0 ? flops / e.iteration_s / peak : 0;
  STRATA_ASSERT(e.hfu <= 1 + 1e-9,
                "hardware FLOP utilisation above 100 %: " + std::to_string(100 * e.hfu) + " %");
  return e;
}

}  // namespace models
}  // namespace strata
