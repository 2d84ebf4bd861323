// Strategies: lowering (model, parallel configuration, batch) to a Plan.
//
// Workers are numbered rank = (dp_rank * pp + pp_stage) * tp + tp_rank, so that the tp ranks of
// one stage are adjacent (placed on one host by the natural placement) and pipeline stages of one
// replica follow each other. Every strategy is a special case of the 3D lowering:
// - data parallel: replicas exchange gradients with allreduce; gradients are grouped into
//   buckets of `bucket_bytes` (PyTorch DDP's default 25 MB; 0 = one bucket per layer block) in
//   backward order, and each bucket's allreduce is issued as soon as the backward tasks that
//   produce it end, so communication overlaps the rest of backward;
// - tensor parallel (Megatron-LM, Shoeybi et al. 2019): column-split then row-split linears,
//   attention split by heads; two allreduces per transformer block in forward (after the
//   attention output projection and after the second MLP linear) and two in backward (on the
//   input gradients of the QKV and first MLP linears);
// - pipeline parallel: blocks cut into pp balanced stages; activations and gradients cross
//   stages as send/recv; schedules GPipe (all forwards, then all backwards) and 1F1B
//   (PipeDream-Flush: p - s warm-up forwards, then one forward one backward) expressed as task
//   priorities and control dependencies, so both executors follow the same order.
// Each iteration ends with grad accumulation over microbatches and an optimizer step per stage.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/models/optimizer.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace models {

enum class PipelineSchedule : std::uint8_t { gpipe, one_f_one_b };
std::string_view to_string(PipelineSchedule schedule);

struct StrategyConfig {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  std::int64_t microbatches = 0;  // per replica and iteration; 0 = pp (or 1 without PP)
  std::int64_t global_batch = 0;  // samples per iteration; 0 = model default
  DType dtype = DType::fp32;
  Optimizer optimizer = Optimizer::adam;
  std::int64_t seed = 0;
  int iterations = 1;
  double bucket_bytes = 25e6;  // DP gradient bucket (B); 0 = one bucket per block
  CollectiveAlgo dp_algo = CollectiveAlgo::ring;
  CollectiveAlgo tp_algo = CollectiveAlgo::ring;
  // Replay reduction for very large configurations: lower the tasks of only the first
  // `lowered_replicas` data-parallel replicas (0 = all). DP bucket allreduces keep their full
  // groups, so every replica's gradient traffic still crosses the network; the replicas left out
  // are assumed to compute exactly as replica 0 (they are identical by construction).
  int lowered_replicas = 0;

  int workers() const { return dp * tp * pp; }
  std::string to_string() const;  // "dp=2,tp=2,pp=2"
};

// Parses "dp=2,tp=2,pp=2" (any subset, any order; missing = 1) into dp/tp/pp of `into`.
// Throws InputError naming the flag and the problem.
void parse_strategy(const std::string& text, StrategyConfig& into);

// Checks the configuration against the model: tp divides heads (GPT), pp <= blocks,
// microbatches divide the per-replica batch, batch divisible by dp. Throws InputError.
void check_strategy(const Model& model, const StrategyConfig& config);

// Default global batch for a model when none is given: dp * round_up(max(base, m), m) with m the
// microbatch count and base the per-replica batch of the family: GPT 8 sequences, synthetic 1
// sample (anchor-96's fixed durations are per microbatch), others 32 samples.
std::int64_t default_global_batch(const Model& model, const StrategyConfig& config);

// Lowers to a validated Plan with PlanInfo filled in.
//
// The Plan (details in models/src/lowering*.cpp): per microbatch m and worker, compute tasks
// `it<i>/dp<d>/pp<s>/tp<t>/mb<m>/{fwd,bwd,bwdw}/<layer>` built by layer_task(); Megatron
// allreduces `it<i>/dp<d>/pp<s>/mb<m>/{fwd,bwd}/<layer>/ar`; pipeline transfers
// `.../mb<m>/{send,recv}/{fwd,bwd}`; DP bucket allreduces `it<i>/pp<s>/tp<t>/ar/b<k>`; one
// optimizer step `it<i>/dp<d>/pp<s>/tp<t>/opt` per worker. Schedules are priorities (slot of
// the stage's sequence, then position in the slot) plus, for 1F1B and for gradient
// accumulation without PP, a control dependency of F(j) on the stage's backward of
// microbatch j - (pp - s). Forward tasks allocate their saved activations, the matching
// backward-data tasks free them. Without PP the schedule is plain accumulation (F0 B0 F1 B1 ...)
// and PlanInfo.schedule is "none".
Plan lower(const Model& model, const StrategyConfig& config);

// The pipeline partition: first block of each stage (size pp + 1, last = blocks), balancing the
// stages' training FLOPs (contiguous, greedy on prefix sums).
std::vector<int> partition_blocks(const Model& model, int pp);

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name);  // gpipe | 1f1b

// Microbatches per replica and iteration: config.microbatches, or pp (1 without PP) when 0.
std::int64_t microbatch_count(const StrategyConfig& config);

// config.global_batch, or default_global_batch() when 0.
std::int64_t effective_global_batch(const Model& model, const StrategyConfig& config);

// Bytes of optimizer state per parameter on top of weights and gradients (ZeRO accounting,
// Rajbhandari et al. 2020): Adam in mixed precision (bf16/fp16) 12 (fp32 master + 2 moments),
// Adam in fp32 8, SGD with momentum 4 in fp32 and 8 in mixed precision (master + momentum).
double optimizer_state_bytes_per_param(Optimizer optimizer, DType dtype);

}  // namespace models
}  // namespace strata
