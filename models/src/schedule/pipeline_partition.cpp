// The balanced pipeline cut of a model on a platform (pipeline_partition.hpp).
#include "strata/models/schedule/pipeline_partition.hpp"

#include <algorithm>

#include "strata/models/cost/layer_costs.hpp"
#include "strata/models/cost/memory_model.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

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
  const LayerTaskOptions options = layer_task_options(config);
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
  out.balanced = partition_layers(problem, source);
  for (int s = 0; s < pp; ++s)
    out.stage_blocks.push_back(out.balanced.first[static_cast<std::size_t>(s) + 1] -
                               out.balanced.first[static_cast<std::size_t>(s)]);
  // The default cut, timed by the same stage costs.
  const std::vector<int> cuts = partition_blocks(model, pp);
  Partition uniform;
  uniform.first = cuts;
  for (int s = 0; s < pp; ++s) {
    const auto us = static_cast<std::size_t>(s);
    double time = 0;
    for (int k = cuts[us]; k < cuts[us + 1]; ++k)
      time += problem.stages[us].layer_time_s[static_cast<std::size_t>(k)];
    if (s + 1 < pp) time += problem.layers[static_cast<std::size_t>(cuts[us + 1] - 1)].transfer_s;
    uniform.stage_time_s.push_back(time);
    uniform.bottleneck_s = std::max(uniform.bottleneck_s, time);
  }
  out.default_cut = uniform;
  return out;
}

}  // namespace models
}  // namespace strata
