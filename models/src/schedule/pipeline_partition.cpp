// The balanced pipeline cut of a model on a platform (pipeline_partition.hpp).
#include "strata/models/schedule/pipeline_partition.hpp"

#include <algorithm>
#include <optional>

#include "strata/models/cost/analytical.hpp"
#include "strata/models/cost/bus_bandwidth.hpp"
#include "strata/models/cost/layer_costs.hpp"
#include "strata/models/cost/memory_model.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

// The blocks on `degree` tensor-parallel ranks of one host class: each block's forward and
// backward plus its TP collectives over the host's own link (the ranks of a stage sit on one
// host), its output sent to the next stage, its bytes at that degree.
PartitionProblem problem_at(const Model& model, StrategyConfig config, int degree, const HostSpec& host,
                            const SlotPlatform& platform, const CostModel& cost, double transfer_latency,
                            double transfer_bandwidth) {
  config.tp = degree;
  const double microbatch = microbatch_size(model, config);
  const double element = bytes_per_element(config.dtype);
  LayerCostTable table(model, host, cost);
  const std::vector<BlockCost>& costs =
      table.blocks(microbatch, degree, config.dtype, layer_task_options(config, model));
  const std::vector<BlockMemory> memory = block_memory(model, config);
  const double per_param = bytes_per_param(config.optimizer, config.dtype).total();
  // At the host's fabric's achieved bus bandwidth for the buffer (bus_bandwidth.hpp), as the
  // replay and the closed form price them.
  auto collectives = [&](double count, double elems) {
    if (degree <= 1 || count <= 0) return 0.0;
    const double bytes = elems / count * microbatch * element;
    const double bw =
        platform.local_bandwidth * bus_efficiency(host.fabric_intra.get(), TaskKind::allreduce, bytes);
    return count * allreduce_time(config.tp_algo, degree, bytes, bw, platform.local_latency);
  };
  PartitionProblem problem;
  const int blocks = model.num_blocks_or_layers();
  for (int k = 0; k < blocks; ++k) {
    const auto i = static_cast<std::size_t>(k);
    PartitionLayer layer;
    if (i < costs.size()) {
      const BlockCost& b = costs[i];
      const double bwd_collectives = collectives(b.tp_bwd_count, b.tp_bwd_elems);
      layer.time_s = b.fwd_s + b.bwd_s + collectives(b.tp_fwd_count, b.tp_fwd_elems) + bwd_collectives -
                     (tp_dx_overlaps_wgrad(config) ? std::min(bwd_collectives, b.tp_bwd_overlap_s) : 0);
      layer.transfer_s = transfer_latency + b.out_elems * microbatch * element / transfer_bandwidth;
    }
    if (i < memory.size()) {
      layer.static_bytes = memory[i].params * per_param;
      layer.activation_bytes = memory[i].kept * microbatch;
    }
    problem.layers.push_back(layer);
  }
  for (int s = 0; s < config.pp; ++s) {
    PartitionStage stage;
    stage.memory_bytes = host.gpu_memory;
    stage.in_flight = microbatches_in_flight(config, s);
    problem.stages.push_back(stage);
  }
  return problem;
}

// Per-stage tensor-parallel degrees chosen with the cut (partition_layers_and_tp) on alike hosts:
// the degrees dividing the heads, up to a host's slots, within the strategy's pp x tp devices of
// a replica. The default cut is timed at the strategy's tp.
void joint_cut(const Model& model, const StrategyConfig& config, const SlotPlatform& platform,
               const CostModel& cost, const std::string& source, const std::vector<std::size_t>& host_of_slot,
               PipelineCut& out) {
  const HostSpec& host = platform.hosts[host_of_slot[0]];
  const std::size_t next = host_of_slot[static_cast<std::size_t>(config.tp)];
  const double latency =
      next == host_of_slot[0] ? platform.local_latency : platform.latency[host_of_slot[0]][next];
  const double bandwidth =
      next == host_of_slot[0] ? platform.local_bandwidth : platform.bandwidth[host_of_slot[0]][next];
  std::vector<int> degrees;
  std::vector<PartitionProblem> problems;
  for (int k = 1; k <= std::min(host.slots, config.pp * config.tp); ++k) {
    if (model.heads % k != 0) continue;
    degrees.push_back(k);
    problems.push_back(problem_at(model, config, k, host, platform, cost, latency, bandwidth));
  }
  const TpPartition joint = partition_layers_and_tp(degrees, problems, config.pp * config.tp, source);
  const PartitionProblem at_tp =
      problem_at(model, config, config.tp, host, platform, cost, latency, bandwidth);
  out.default_cut = timed_partition(at_tp, partition_blocks(model, config.pp));
  // The joint answer minimises the slowest stage; of two splits as slow, the one whose stages
  // sum to less fills and drains the pipeline sooner: (m − 1) · slowest + Σ stages (1F1B and
  // GPipe alike). The joint split is taken only where that is below the best cut at tp.
  const auto m = static_cast<double>(microbatch_count(config));
  auto pipeline_s = [m](const Partition& p) {
    double sum = 0;
    for (double t : p.stage_time_s) sum += t;
    return (m - 1) * p.bottleneck_s + sum;
  };
  std::optional<Partition> cut_at_tp;
  try {
    cut_at_tp = partition_layers(at_tp, source);
  } catch (const InputError&) {  // only per-stage degrees fit the memory caps
  }
  const bool keep_joint = !cut_at_tp || pipeline_s(joint.partition) < pipeline_s(*cut_at_tp);
  out.balanced = keep_joint ? joint.partition : *cut_at_tp;
  for (std::size_t s = 0; s + 1 < out.balanced.first.size(); ++s)
    out.stage_blocks.push_back(out.balanced.first[s + 1] - out.balanced.first[s]);
  if (keep_joint &&
      std::any_of(joint.degree.begin(), joint.degree.end(), [&](int d) { return d != config.tp; }))
    out.stage_tp = joint.degree;
}

}  // namespace

PipelineCut balanced_pipeline_cut(const Model& model, const StrategyConfig& config,
                                  const SlotPlatform& platform, const CostModel& cost,
                                  const std::string& source) {
  const int pp = config.pp, tp = config.tp, dp = config.dp;
  const int blocks = model.num_blocks_or_layers();
  check_worker_slots(source, config.workers(), platform.total_slots());
  std::vector<std::size_t> host_of_slot;
  for (std::size_t h = 0; h < platform.hosts.size(); ++h)
    for (int k = 0; k < platform.hosts[h].slots; ++k) host_of_slot.push_back(h);
  const double microbatch = microbatch_size(model, config);
  const LayerTaskOptions options = layer_task_options(config, model);
  // Per class of alike hosts: the blocks' forward + backward of one microbatch there.
  std::size_t classes = 0;
  const std::vector<std::size_t> class_of_host = host_classes(platform.hosts, classes);
  std::vector<std::vector<double>> block_time(classes);
  auto times_on = [&](std::size_t h) -> const std::vector<double>& {
    std::vector<double>& t = block_time[class_of_host[h]];
    if (!t.empty()) return t;
    LayerCostTable table(model, platform.hosts[h], cost);
    for (const BlockCost& b : table.blocks(microbatch, tp, config.dtype, options))
      t.push_back(b.fwd_s + b.bwd_s);
    t.resize(static_cast<std::size_t>(blocks), 0.0);
    return t;
  };
  auto total = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum;
  };
  PartitionProblem problem;
  std::vector<std::size_t> stage_host(static_cast<std::size_t>(pp), 0);
  for (int s = 0; s < pp; ++s) {
    double slowest = -1;
    for (int d = 0; d < dp; ++d)
      for (int t = 0; t < tp; ++t) {
        const std::size_t h = host_of_slot[static_cast<std::size_t>((d * pp + s) * tp + t)];
        const double time = total(times_on(h));
        if (time > slowest) slowest = time, stage_host[static_cast<std::size_t>(s)] = h;
      }
    PartitionStage stage;
    stage.layer_time_s = times_on(stage_host[static_cast<std::size_t>(s)]);
    stage.memory_bytes = platform.hosts[stage_host[static_cast<std::size_t>(s)]].gpu_memory;
    stage.in_flight = microbatches_in_flight(config, s);
    problem.stages.push_back(std::move(stage));
  }
  // The activation send between stages, over the route between the first two stages' hosts.
  const std::size_t a = stage_host[0], b = stage_host[1];
  const double latency = a == b ? platform.local_latency : platform.latency[a][b];
  const double bandwidth = a == b ? platform.local_bandwidth : platform.bandwidth[a][b];
  LayerCostTable reference(model, platform.hosts[a], cost);
  const std::vector<BlockCost>& costs = reference.blocks(microbatch, tp, config.dtype, options);
  const std::vector<BlockMemory> memory = block_memory(model, config);
  const double per_param = bytes_per_param(config.optimizer, config.dtype).total();
  const double element = bytes_per_element(config.dtype);
  for (int k = 0; k < blocks; ++k) {
    const auto i = static_cast<std::size_t>(k);
    PartitionLayer layer;
    layer.time_s = problem.stages[0].layer_time_s[i];
    const double out_bytes = i < costs.size() ? costs[i].out_elems * microbatch * element : 0;
    layer.transfer_s = latency + out_bytes / bandwidth;
    if (i < memory.size()) {
      layer.static_bytes = memory[i].params * per_param;
      layer.activation_bytes = memory[i].kept * microbatch;
    }
    problem.layers.push_back(layer);
  }
  PipelineCut out;
  if (config.tp > 1 && !config.sequence_parallel && config.interleave == 1 &&
      std::all_of(host_of_slot.begin(), host_of_slot.begin() + config.workers(),
                  [&](std::size_t h) { return class_of_host[h] == class_of_host[host_of_slot[0]]; })) {
    joint_cut(model, config, platform, cost, source, host_of_slot, out);
    return out;
  }
  out.balanced = partition_layers(problem, source);
  for (int s = 0; s < pp; ++s)
    out.stage_blocks.push_back(out.balanced.first[static_cast<std::size_t>(s) + 1] -
                               out.balanced.first[static_cast<std::size_t>(s)]);
  out.default_cut = timed_partition(problem, partition_blocks(model, pp));
  return out;
}

}  // namespace models
}  // namespace strata
