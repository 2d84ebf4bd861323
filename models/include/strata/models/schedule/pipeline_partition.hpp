// The balanced pipeline cut of a model on a platform (`--partition balanced`, docs/scheduling.md):
// partition_layers (partition.hpp) fed with the model's blocks as the cost model prices them on
// the hosts each stage runs on.
//
// With the natural placement, stage s runs on the slots of workers (d · pp + s) · tp + t; its
// device is the slowest host among them (the stage waits for its slowest replica). Per block:
// forward and backward of one microbatch at the configuration's tp, dtype and layer options on
// that device (LayerCostTable: the cost model's per-task times, so a calibration's figures are
// used when given); the block's output sent to the next stage over the route between the first
// two stages' hosts (latency + bytes / bandwidth); its parameters' bytes (params, gradients and
// optimizer state per bytes_per_param, divided by tp where split) and its kept activations per
// microbatch, times the microbatches the schedule keeps in flight on the stage
// (microbatches_in_flight: 1F1B pp − s), under the host's GPU memory (none when unknown).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/schedule/partition.hpp"
#include "strata/models/schedule/plan_placement.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata {
inline namespace models {

struct PipelineCut {
  std::vector<std::int64_t> stage_blocks;  // blocks per stage (Experiment::stage_blocks)
  // Per-stage tensor-parallel degrees (Experiment::stage_tp) when the joint search chose
  // degrees other than the strategy's tp; empty otherwise.
  std::vector<int> stage_tp;
  Partition balanced;     // the partitioner's answer, in blocks
  Partition default_cut;  // partition_blocks' cut, timed the same way
};
// REQUIRES: config passes check_strategy with its default cut, pp >= 2. Throws InputError naming
// `source` when the platform has too few slots or no cut fits the memory caps (the stage and the
// bytes missing).
PipelineCut balanced_pipeline_cut(const Model& model, const StrategyConfig& config,
                                  const SlotPlatform& platform, const CostModel& cost,
                                  const std::string& source);

}  // namespace models
}  // namespace strata
