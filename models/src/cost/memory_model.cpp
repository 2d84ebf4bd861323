// Memory model (see memory_model.hpp for the accounting and its sources).
#include "strata/models/cost/memory_model.hpp"

#include <algorithm>
#include <string>

#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

// ZeRO, section 3.1: mixed-precision Adam keeps fp16 parameters and gradients (2 + 2 B) and an
// fp32 copy of the parameters, momentum and variance (K = 12 B). Pure fp32 or fp64 training has
// no master copy. SGD with momentum keeps one state tensor instead of Adam's two.
BytesPerParam bytes_per_param(Optimizer optimizer, DType dtype) {
  const double b = bytes_per_element(dtype);
  return {b, b, optimizer_state_bytes_per_param(optimizer, dtype)};
}

double microbatch_size(const Model& model, const StrategyConfig& config) {
  return static_cast<double>(effective_global_batch(model, config)) / config.dp /
         static_cast<double>(microbatch_count(config));
}

std::vector<std::size_t> stage_layers(const Model& model, const std::vector<int>& cuts, int stage) {
  STRATA_ASSERT(stage >= 0 && static_cast<std::size_t>(stage) + 1 < cuts.size(),
                "stage " + std::to_string(stage) + " outside the partition");
  const int first = cuts[static_cast<std::size_t>(stage)];
  const int last = cuts[static_cast<std::size_t>(stage) + 1];
  std::vector<std::size_t> layers;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const int block = model.layers[i].block;
    if (block >= first && block < last) layers.push_back(i);
  }
  return layers;
}

double worker_params(const Model& model, const StrategyConfig& config, const std::vector<int>& cuts,
                     int stage) {
  double params = 0;
  for (std::size_t i : stage_layers(model, cuts, stage)) {
    const Layer& layer = model.layers[i];
    params += is_split(layer) ? layer.params / config.tp : layer.params;
  }
  return params;
}

namespace {

// Microbatches whose activations stage `stage` holds at its peak.
double microbatches_in_flight(const StrategyConfig& config, int stage) {
  const std::int64_t m = microbatch_count(config);
  if (config.schedule == PipelineSchedule::gpipe) return static_cast<double>(m);
  return static_cast<double>(std::min<std::int64_t>(m, config.pp - stage));
}

MemoryBreakdown stage_memory(const Model& model, const StrategyConfig& config, const std::vector<int>& cuts,
                             int stage) {
  STRATA_ASSERT(stage >= 0 && stage < config.pp, "stage outside [0, pp)");
  const BytesPerParam per_param = bytes_per_param(config.optimizer, config.dtype);
  const double params = worker_params(model, config, cuts, stage);
  double saved = 0;  // elements per sample on this worker
  for (std::size_t i : stage_layers(model, cuts, stage)) {
    const Layer& layer = model.layers[i];
    saved += is_split(layer) ? layer.saved_elems / config.tp : layer.saved_elems;
  }
  MemoryBreakdown m;
  m.params = params * per_param.params;
  m.grads = params * per_param.grads;
  m.optimizer = params * per_param.optimizer;
  m.activations = saved * microbatch_size(model, config) * bytes_per_element(config.dtype) *
                  microbatches_in_flight(config, stage);
  m.total = m.params + m.grads + m.optimizer + m.activations;
  return m;
}

}  // namespace

MemoryBreakdown worker_memory(const Model& model, const StrategyConfig& config, int stage) {
  return stage_memory(model, config, partition_blocks(model, config.pp), stage);
}

double peak_worker_memory(const Model& model, const StrategyConfig& config) {
  const std::vector<int> cuts = partition_blocks(model, config.pp);
  double peak = 0;
  for (int s = 0; s < config.pp; ++s) peak = std::max(peak, stage_memory(model, config, cuts, s).total);
  return peak;
}

}  // namespace models
}  // namespace strata
