// Analytical estimate (see analytical.hpp for the model and its limits, docs/memory.md for the
// memory options).
#include "strata/models/cost/analytical.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cluster_links.hpp"
#include "strata/models/cost/host_offload.hpp"
#include "strata/models/cost/memory_model.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

namespace {

using links::Link;

// What one microbatch costs on one stage, and what the stage's DP reduction moves.
struct StageCost {
  double fwd_s = 0;           // compute, one microbatch
  double bwd_s = 0;           // compute, one microbatch: data + weight + recomputed forward
  double bwdw_s = 0;          // the weight-gradient part of bwd_s (ZB-H1's W)
  double tp_fwd_s = 0;        // TP collectives of forward
  double tp_bwd_s = 0;        // TP collectives of backward (and of the recomputed forward)
  double gather_s = 0;        // ZeRO-3: parameter all-gathers not hidden, both phases
  double boundary_bytes = 0;  // activation sent to the next stage, one microbatch
  double flops = 0;           // hardware FLOP of one microbatch, recomputation included
  const Estimator::StageGrads* grads = nullptr;
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
  const std::vector<BlockCost>& blocks;  // LayerCostTable::blocks of this configuration
};

// The sum of `count` collectives whose buffers total `bytes`, each priced at the average buffer:
// exact for the α-β costs alone (affine in the buffer), and for the buffers summed here, which
// are alike (a stage's tensor-parallel collectives; DDP's buckets but the last), also where a
// fabric's efficiency depends on the size.
template <class Time>
double sum_of(const Time& time, double count, double bytes) {
  return count > 0 ? count * time(bytes / count) : 0;
}

// The bandwidth a collective of `kind` over a `bytes` buffer gets on `link`: its peak times the
// fabric's bus efficiency at that size (bus_bandwidth.hpp), as the replay prices its flows. An
// object store, cache or parameter server keeps the link's figure.
double achieved_bw(const Link& link, TaskKind kind, CollectiveAlgo algo, double bytes) {
  if (is_hub_algo(algo)) return link.bw;
  return link.bw * bus_efficiency(link.fabric, kind, bytes);
}

// `count` tensor-parallel collectives of `elems` elements per sample in all (layer_costs.hpp:
// Megatron's f/g operators, Shoeybi et al. 2019, section 3: for a transformer block 2 + 2 of
// microbatch x seq x hidden elements). With sequence parallelism each allreduce becomes a
// reduce-scatter and an all-gather of the same buffer (Korthikanti et al. 2023, section 4.2.2).
double tp_collectives_s(const Context& cx, double count, double elems) {
  const StrategyConfig& c = cx.config;
  if (c.tp <= 1 || count <= 0) return 0;
  const double bytes = elems * cx.microbatch * bytes_per_element(c.dtype);
  const Link l = cx.tp;
  auto one = [&](double b) {
    if (c.sequence_parallel)
      return reduce_scatter_time(c.tp_algo, c.tp, b, achieved_bw(l, TaskKind::reduce_scatter, c.tp_algo, b),
                                 l.latency) +
             allgather_time(c.tp_algo, c.tp, b, achieved_bw(l, TaskKind::allgather, c.tp_algo, b), l.latency);
    return allreduce_time(c.tp_algo, c.tp, b, achieved_bw(l, TaskKind::allreduce, c.tp_algo, b), l.latency);
  };
  return sum_of(one, count, bytes);
}

// With sequence parallelism a column-parallel linear keeps only its 1/t shard of the input, so
// its weight gradient all-gathers the input again in backward (Megatron-LM's
// LinearWithGradAccumulationAndAsyncCommunication.backward; the lowering's bwdw gathers):
// `count` such gathers of `elems` elements per sample in all.
double sp_wgrad_gathers_s(const Context& cx, double count, double elems) {
  const StrategyConfig& c = cx.config;
  if (c.tp <= 1 || count <= 0 || !c.sequence_parallel) return 0;
  const Link l = cx.tp;
  auto one = [&](double b) {
    return allgather_time(c.tp_algo, c.tp, b, achieved_bw(l, TaskKind::allgather, c.tp_algo, b), l.latency);
  };
  return sum_of(one, count, elems * cx.microbatch * bytes_per_element(c.dtype));
}

// ZeRO-3 gathers every block's parameters (a unit, lowering_zero3.cpp) before its forward and
// again before its backward, on the DP group, one unit ahead: the first unit's gather of a
// microbatch's phase waits with the compute, each next one hides behind the current unit's
// compute as far as it lasts. Per microbatch: g + (units - 1) max(0, g - compute / units) in
// each phase, g the gather of one average unit.
double zero3_gather_s(const Context& cx, const StageCost& sc, Link dp) {
  const StrategyConfig& c = cx.config;
  const double units = sc.grads->units;
  if (c.zero < 3 || c.dp <= 1 || units <= 0) return 0;
  // A layer's 16-bit (or fp32) weights are as large as its gradient.
  const double g = allgather_time(
      c.dp_algo, c.dp, sc.grads->layer_bytes / units,
      achieved_bw(dp, TaskKind::allgather, c.dp_algo, sc.grads->layer_bytes / units), dp.latency);
  auto exposed = [&](double compute) { return g + (units - 1) * std::max(0.0, g - compute / units); };
  return exposed(sc.fwd_s) + exposed(sc.bwd_s);
}

// A stage's blocks summed (chunks stage, stage + pp, ... when interleaved), with the forward
// that recomputation re-runs in backward: the attention cores (selective), the checkpointed
// blocks' layers and their forward TP collectives (full, memory_model.hpp's block_recomputed).
StageCost stage_cost(const Context& cx, const std::vector<int>& cuts, int stage,
                     const Estimator::StageGrads& grads) {
  const StrategyConfig& config = cx.config;
  StageCost sc;
  sc.grads = &grads;
  double fwd_count = 0, fwd_elems = 0, bwd_count = 0, bwd_elems = 0, wgrad_count = 0, wgrad_elems = 0;
  double overlap_s = 0;
  for (int c = stage; static_cast<std::size_t>(c) + 1 < cuts.size(); c += config.pp) {
    const int first = cuts[static_cast<std::size_t>(c)];
    for (int b = first; b < cuts[static_cast<std::size_t>(c) + 1]; ++b) {
      const BlockCost& k = cx.blocks[static_cast<std::size_t>(b)];
      sc.fwd_s += k.fwd_s;
      sc.bwd_s += k.bwd_s;
      sc.bwdw_s += k.bwdw_s;
      sc.flops += k.flops;
      fwd_count += k.tp_fwd_count;
      fwd_elems += k.tp_fwd_elems;
      bwd_count += k.tp_bwd_count;
      bwd_elems += k.tp_bwd_elems;
      wgrad_count += k.tp_bwd_count;
      wgrad_elems += k.tp_bwd_elems;
      overlap_s += k.tp_bwd_overlap_s;
      if (config.recompute == Recompute::selective) {
        sc.bwd_s += k.attention_fwd_s;
        sc.flops += k.attention_flops;
      } else if (block_recomputed(config, b, first)) {
        sc.bwd_s += k.checkpointed_fwd_s;
        sc.flops += k.checkpointed_flops;
        bwd_count += k.checkpointed_tp_count;
        bwd_elems += k.checkpointed_tp_elems;
      }
      // With sequence parallelism the stages exchange seq/tp tokens (Megatron-LM's get_tensor_shapes,
      // megatron/core/pipeline_parallel/schedules.py; the lowering's send/fwd carries the same).
      sc.boundary_bytes = k.out_elems * cx.microbatch * bytes_per_element(config.dtype) /
                          (config.sequence_parallel && config.tp > 1 ? config.tp : 1);
    }
  }
  sc.tp_fwd_s = tp_collectives_s(cx, fwd_count, fwd_elems);
  sc.tp_bwd_s = tp_collectives_s(cx, bwd_count, bwd_elems) + sp_wgrad_gathers_s(cx, wgrad_count, wgrad_elems);
  if (tp_dx_overlaps_wgrad(config))  // the dX all-reduces run beside the weight-gradient GEMMs
    sc.tp_bwd_s -= std::min(tp_collectives_s(cx, wgrad_count, wgrad_elems), overlap_s);
  return sc;
}

// Bucket sizes in issue (backward) order, as PyTorch DDP forms them (Li et al., VLDB 2020)
// and the lowering does: whole layers' gradients, a bucket closing once it holds bucket_bytes
// (so a layer larger than that is a bucket of its own), or at every block boundary when
// bucket_bytes = 0. Summarised for dp_cost: count, total and last bucket.
Estimator::StageGrads stage_grads(const Model& model, const StrategyConfig& config,
                                  const std::vector<int>& cuts, int stage) {
  const double grad_bytes = bytes_per_param(config.optimizer, config.dtype).grads;
  Estimator::StageGrads g;
  double bytes = 0;
  bool open = false;
  int block = -1;
  auto close = [&] {
    if (open) {
      g.buckets += 1;
      g.bucket_bytes += bytes;
      g.last_bucket = bytes;
    }
    bytes = 0;
    open = false;
  };
  const std::vector<std::size_t> layers = device_layers(model, config, cuts, stage);
  int unit = -1;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const Layer& layer = model.layers[*it];
    const double params = is_split(layer) ? layer.params / config.tp : layer.params;
    g.params += params;
    if (params <= 0) continue;
    g.layers += 1;
    if (layer.block != unit) g.units += 1;
    unit = layer.block;
    g.layer_bytes += params * grad_bytes;
    const GradMatrix m = grad_matrix(layer, config.tp);
    g.matrix_rows += static_cast<double>(m.rows);
    g.matrix_cols += static_cast<double>(m.cols);
    g.matrix_rest += m.rest;
    if (config.bucket_bytes <= 0 && layer.block != block) close();
    block = layer.block;
    bytes += params * grad_bytes;
    open = true;
    if (config.bucket_bytes > 0 && bytes >= config.bucket_bytes) close();
  }
  close();
  return g;
}

// A compressed bucket of b gradient bytes (docs/compression.md, lowering_compression.cpp): its
// encode (and decode) on the compute stream, priced as the Plan's codec tasks are, then the
// smaller exchange. PowerSGD's P and Q split the bucket as the stage's matrices split its
// gradients. Counted as the bucket's DP time: the codec's compute is not overlapped here.
double compressed_exchange_s(const Context& cx, const Estimator::StageGrads& g, double b, Link link) {
  const StrategyConfig& c = cx.config;
  const double elem = bytes_per_element(c.dtype);
  const double n = c.dp, s = b / elem;
  Task codec;
  codec.kind = TaskKind::compress;
  codec.dtype = c.dtype;
  codec.bytes_read = codec.bytes_written = 2 * b;
  codec.flops = 4 * s;
  switch (c.compression) {
    case Compression::int8:
    case Compression::fp8:
      return cx.cost.compute_time(codec, cx.cluster.host) +
             allreduce_time(c.dp_algo, c.dp, s + 4 * n,
                            achieved_bw(link, TaskKind::allreduce, c.dp_algo, s + 4 * n), link.latency);
    case Compression::topk: {
      const double k = std::ceil(c.topk_ratio * s);
      return 2 * cx.cost.compute_time(codec, cx.cluster.host) +
             allgather_time(c.dp_algo, c.dp, n * k * (elem + 4),
                            achieved_bw(link, TaskKind::allgather, c.dp_algo, n * k * (elem + 4)),
                            link.latency);
    }
    case Compression::powersgd: {
      const double values = g.params > 0 ? s / g.params : 0;  // this bucket's share of the stage
      const double r = c.powersgd_rank;
      codec.flops = 2 * r * s;  // P = M Q, Q = M^T P, P Q^T: one each of encode, project, decode
      return 3 * cx.cost.compute_time(codec, cx.cluster.host) +
             allreduce_time(c.dp_algo, c.dp, values * (r * g.matrix_rows + g.matrix_rest) * elem,
                            achieved_bw(link, TaskKind::allreduce, c.dp_algo,
                                        values * (r * g.matrix_rows + g.matrix_rest) * elem),
                            link.latency) +
             allreduce_time(
                 c.dp_algo, c.dp, values * r * g.matrix_cols * elem,
                 achieved_bw(link, TaskKind::allreduce, c.dp_algo, values * r * g.matrix_cols * elem),
                 link.latency);
    }
    case Compression::none:
      break;
  }
  return allreduce_time(c.dp_algo, c.dp, b, achieved_bw(link, TaskKind::allreduce, c.dp_algo, b),
                        link.latency);
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
// keeps the shard it updates). Under ZB-H1 the window is the last weight-gradient pass alone.
DpCost dp_cost(const Context& cx, const StageCost& sc, Link link) {
  DpCost dp;
  const StrategyConfig& c = cx.config;
  const Estimator::StageGrads& g = *sc.grads;
  if (c.dp <= 1 || g.buckets <= 0) return dp;
  auto one = [&](double b) {
    if (c.compression != Compression::none) return compressed_exchange_s(cx, g, b, link);
    return c.zero >= 1
               ? reduce_scatter_time(c.dp_algo, c.dp, b,
                                     achieved_bw(link, TaskKind::reduce_scatter, c.dp_algo, b), link.latency)
               : allreduce_time(c.dp_algo, c.dp, b, achieved_bw(link, TaskKind::allreduce, c.dp_algo, b),
                                link.latency);
  };
  dp.total_s = sum_of(one, g.buckets, g.bucket_bytes);
  const double overlappable = sum_of(one, g.buckets - 1, g.bucket_bytes - g.last_bucket);
  // ZB-H1 (Qi et al. 2024) runs the last microbatch's weight gradients, which produce the
  // buckets, as a pass of their own after its input gradients: only that pass hides them.
  const double window = c.schedule == PipelineSchedule::zb_h1 ? sc.bwdw_s : sc.backward();
  dp.exposed_s = std::max(0.0, overlappable - window) + one(g.last_bucket);
  if (c.ddp == DdpMode::after_flush) dp.exposed_s = dp.total_s;
  return dp;
}

// The host step's figures (kHostAdamBytesPerParam, kHostMemBwPerGpu) are host_offload.hpp's, which
// the cost model prices a lowered Plan's offloaded step with.

// The optimizer step and what follows it before the next iteration can start.
double optimizer_s(const Context& cx, const StageCost& sc, Link dp) {
  const StrategyConfig& config = cx.config;
  const double params = sc.grads->params;
  const double shard = config.zero >= 1 ? params / config.dp : params;
  const BytesPerParam per_param = bytes_per_param(config.optimizer, config.dtype);
  double t = 0;
  if (config.offload) {
    const double pcie = cx.cluster.host.pcie_bw;
    t = shard * (per_param.grads + per_param.params) / pcie +
        shard * kHostAdamBytesPerParam / kHostMemBwPerGpu;
  } else {
    t = cx.cost.compute_time(optimizer_step_task(cx.model, shard, config.optimizer, config.dtype,
                                                 layer_task_options(config, cx.model).kernels),
                             cx.cluster.host);
  }
  if (config.zero >= 1 && config.zero <= 2)  // the updated parameter shards gathered back
    t += allgather_time(config.dp_algo, config.dp, params * per_param.params,
                        achieved_bw(dp, TaskKind::allgather, config.dp_algo, params * per_param.params),
                        dp.latency);
  return t;
}

void check_cluster(const StrategyConfig& config, const ClusterSpec& cluster) {
  STRATA_ASSERT(config.dp >= 1 && config.tp >= 1 && config.pp >= 1, "dp, tp, pp >= 1");
  STRATA_ASSERT(cluster.host.slots >= 1, "host with no slots");
  if (!config.stage_tp.empty())
    throw InputError("strategy " + config.to_string() +
                     ": per-stage tensor parallelism (--set stage_tp) is not in the closed-form estimate; "
                     "simulate it");
  const long slots = static_cast<long>(cluster.hosts) * cluster.host.slots;
  if (config.workers() > slots)
    throw InputError(input_error_message("strategy " + config.to_string(), "",
                                         "needs " + std::to_string(config.workers()) +
                                             " workers, the cluster has " + std::to_string(slots) +
                                             " slots"));
  if (config.offload && !(cluster.host.pcie_bw > 0))
    throw InputError("--set offload=1: " + missing_pcie_bw(cluster.host.name) +
                     ", which offloaded optimizer states cross");
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
    const Link link = links::dp_link(cx.config, cx.cluster, k);
    double longest = 0;
    for (const StageCost& sc : stages) longest = std::max(longest, dp_cost(cx, sc, link).total_s);
    const int overlapping = t_b > 0 ? 1 + static_cast<int>(longest / t_b) : on_host;
    if (overlapping <= k) break;
    k = std::min(on_host, overlapping);
  }
  return k;
}

// The pipeline's time for m microbatches and its bubble, by schedule. The first microbatch's
// forward walks through every stage and the last one's backward back, the slowest stage runs
// the m - 1 others: m x step(slowest) + the other stages' steps, (p - 1) x step for equal
// stages (Narayanan et al. 2021, section 2.2.1), divided by v when interleaved (section 2.2.2).
// ZB-H1 (Qi et al. 2024, section 3): each of the other stages adds T_F + T_B - T_W, B without W.
void pipeline_time(const StrategyConfig& config, const std::vector<StageCost>& stages,
                   const StageCost& slowest, Estimate& e, double& pipeline) {
  const auto m = static_cast<double>(microbatch_count(config));
  const bool zero_bubble = config.schedule == PipelineSchedule::zb_h1;
  auto added = [&](const StageCost& sc) {
    return zero_bubble ? std::max(0.0, sc.step() - 2 * sc.bwdw_s) : sc.step() / config.interleave;
  };
  double bubble = -added(slowest);
  for (const StageCost& sc : stages) bubble += added(sc);
  bubble = std::max(0.0, bubble);
  pipeline = m * slowest.step() + bubble;
  e.bubble_fraction = pipeline > 0 ? bubble / pipeline : 0;
}

// Tokens per second, MFU (model FLOPs: no recomputation) and HFU (hardware FLOPs of the tasks,
// recomputation counted) of an estimate whose iteration_s is set.
void set_throughput(const Context& cx, const std::vector<StageCost>& stages, Estimate& e) {
  const StrategyConfig& config = cx.config;
  const double tokens =
      static_cast<double>(effective_global_batch(cx.model, config)) * static_cast<double>(cx.model.seq);
  e.tokens_per_s = e.iteration_s > 0 ? tokens / e.iteration_s : 0;
  const double peak = config.workers() * cx.cluster.host.peak_flops(config.dtype);
  e.mfu = peak > 0 ? cx.model.model_flops_per_token() * e.tokens_per_s / peak : 0;
  const auto m = static_cast<double>(microbatch_count(config));
  double flops = 0;  // every worker's hardware FLOP in the iteration
  for (const StageCost& sc : stages) flops += sc.flops * m * config.dp * config.tp;
  e.hfu = peak > 0 && e.iteration_s > 0 ? flops / e.iteration_s / peak : 0;
  STRATA_ASSERT(e.hfu <= 1 + 1e-9,
                "hardware FLOP utilisation above 100 %: " + std::to_string(100 * e.hfu) + " %");
}

// The caches below hold what depends on a few fields of the configuration only; each is bounded
// (an exploration uses a handful of keys; a caller that sweeps more only recomputes).
constexpr std::size_t kMaxCachedKeys = 64;

template <class Map, class Make>
const typename Map::mapped_type& cached(Map& map, const typename Map::key_type& key, const Make& make) {
  if (auto it = map.find(key); it != map.end()) return it->second;
  if (map.size() >= kMaxCachedKeys) map.clear();
  return map.emplace(key, make()).first->second;
}

}  // namespace

Estimator::Estimator(const Model& model, const ClusterSpec& cluster, const CostModel& cost)
    : model_(model), cluster_(cluster), cost_(cost), layers_(model, cluster.host, cost) {}

const std::vector<int>& Estimator::cuts_for(const StrategyConfig& config) {
  return cached(cuts_cache_, {config.pp, config.interleave}, [&] { return chunk_cuts(model_, config); });
}

const std::vector<Estimator::StageGrads>& Estimator::grads_for(const StrategyConfig& config,
                                                               const std::vector<int>& cuts) {
  const auto key = std::make_tuple(config.tp, config.dtype, config.optimizer, config.bucket_bytes, config.pp,
                                   config.interleave);
  return cached(grads_cache_, key, [&] {
    std::vector<StageGrads> out;
    for (int s = 0; s < config.pp; ++s) out.push_back(stage_grads(model_, config, cuts, s));
    return out;
  });
}

const std::vector<BlockMemory>& Estimator::memory_for(const StrategyConfig& config) {
  const auto key = std::make_tuple(config.tp, config.dtype, config.sequence_parallel, config.flash_attention,
                                   config.recompute);
  return cached(memory_cache_, key, [&] { return block_memory(model_, config); });
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
                   links::tp_link(config, cluster),
                   layers_.blocks(microbatch, config.tp, config.dtype, layer_task_options(config, model))};
  const std::vector<int>& cuts = cuts_for(config);
  const std::vector<StageGrads>& grads = grads_for(config, cuts);
  std::vector<StageCost> stages;
  stages.reserve(static_cast<std::size_t>(config.pp));
  for (int s = 0; s < config.pp; ++s)
    stages.push_back(stage_cost(cx, cuts, s, grads[static_cast<std::size_t>(s)]));
  auto slowest_of = [&] {
    return *std::max_element(stages.begin(), stages.end(),
                             [](const StageCost& a, const StageCost& b) { return a.step() < b.step(); });
  };
  const double t_b = slowest_of().backward();
  const Link dp = links::dp_link(config, cluster, overlapping_dp_stages(cx, stages, t_b));
  for (StageCost& sc : stages) sc.gather_s = zero3_gather_s(cx, sc, dp);
  const StageCost slowest = slowest_of();
  const Link pp = links::pp_link(config, cluster);
  Estimate e;
  double exposed_dp_s = 0;
  double tail_s = 0;            // after stage 0's last backward: exposed DP + optimizer step, latest stage
  double slowest_transfer = 0;  // s, the largest boundary's p2p transfer
  for (int s = 0; s < config.pp; ++s) {
    const StageCost& sc = stages[static_cast<std::size_t>(s)];
    const DpCost dc = dp_cost(cx, sc, dp);
    tail_s = std::max(tail_s, dc.exposed_s + optimizer_s(cx, sc, dp) - s * t_b);
    exposed_dp_s = std::max(exposed_dp_s, dc.exposed_s - s * t_b);
    e.dp_comm_s = std::max(e.dp_comm_s, dc.total_s);
    // The first microbatch's activation and the last one's gradient cross this boundary (v
    // times when interleaved).
    if (s + 1 < config.pp) {
      // Scatter-gather (StrategyConfig::p2p_scatter_gather): 1/t over the pipeline link, then an
      // all-gather of the whole tensor over the tensor-parallel one.
      const bool split =
          config.p2p_scatter_gather && !config.sequence_parallel && config.tp > 1 && config.stage_tp.empty();
      const double transfer =
          split
              ? p2p_time(sc.boundary_bytes / config.tp,
                         achieved_bw(pp, TaskKind::send, CollectiveAlgo::ring, sc.boundary_bytes / config.tp),
                         pp.latency) +
                    allgather_time(config.tp_algo, config.tp, sc.boundary_bytes,
                                   achieved_bw(cx.tp, TaskKind::allgather, config.tp_algo, sc.boundary_bytes),
                                   cx.tp.latency)
              : p2p_time(sc.boundary_bytes,
                         achieved_bw(pp, TaskKind::send, CollectiveAlgo::ring, sc.boundary_bytes),
                         pp.latency);
      e.pp_comm_s += 2 * config.interleave * transfer;
      slowest_transfer = std::max(slowest_transfer, transfer);
    }
  }
  const auto m = static_cast<double>(microbatch_count(config));
  // Blocking p2p (StrategyConfig::p2p): every stage's compute also waits for the transfers of
  // the other microbatches, an activation and a gradient of each model chunk, at the same time on
  // every stage: the slowest boundary's.
  if (config.p2p == P2pMode::blocking) e.pp_comm_s += 2 * config.interleave * (m - 1) * slowest_transfer;
  double pipeline = 0;
  pipeline_time(config, stages, slowest, e, pipeline);
  e.compute_s = m * (slowest.fwd_s + slowest.bwd_s);
  e.tp_comm_s = m * (slowest.tp_fwd_s + slowest.tp_bwd_s);
  e.iteration_s = pipeline + e.pp_comm_s + tail_s;
  e.exposed_comm_s = e.tp_comm_s + m * slowest.gather_s + e.pp_comm_s + exposed_dp_s;
  e.peak_memory_bytes = peak_worker_memory(memory_for(config), model, config, cuts);
  e.fits = cluster.host.gpu_memory <= 0 || e.peak_memory_bytes <= cluster.host.gpu_memory;
  set_throughput(cx, stages, e);
  return e;
}

bool tp_dx_overlaps_wgrad(const StrategyConfig& config) {
  return config.tp > 1 && config.tp_comm == TpComm::async && !config.sequence_parallel &&
         config.schedule != PipelineSchedule::zb_h1;
}

void price_estimate(Estimate& e, int workers, const std::vector<HostSpec>& hosts) {
  e.energy_j = 0;
  e.cost_usd = 0;
  const double busy = e.iteration_s > 0 ? std::min(1.0, e.compute_s / e.iteration_s) : 0;
  int left = workers;
  for (const HostSpec& h : hosts) {
    if (left <= 0) break;
    const int used = std::min(left, std::max(1, h.slots));
    left -= used;
    const double share = busy * used / std::max(1, h.slots);
    e.energy_j += e.iteration_s * (h.watts_idle + (h.watts_busy - h.watts_idle) * share);
    e.cost_usd += h.price_per_hour * e.iteration_s / 3600.0;
  }
}

}  // namespace models
}  // namespace strata
