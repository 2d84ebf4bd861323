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

// gpipe: all forwards, then all backwards. 1f1b: PipeDream-Flush (Narayanan et al. 2021); with
// interleave = v > 1 it is Megatron's interleaved 1F1B over v model chunks per device. zb_h1:
// zero-bubble ZB-H1 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism"): the backward
// split into input-gradient (B) and weight-gradient (W) tasks, the W tasks filling the bubble at
// 1F1B's activation memory.
enum class PipelineSchedule : std::uint8_t { gpipe, one_f_one_b, zb_h1 };
std::string_view to_string(PipelineSchedule schedule);  // gpipe | 1f1b | zb-h1

// Activation recomputation (Korthikanti et al., MLSys 2023, "Reducing Activation Recomputation in
// Large Transformer Models"): none; selective, the attention core (QK^T, softmax, dropout,
// attention over V) re-run in backward; full, whole transformer blocks re-run from their input
// before their backward, chosen by RecomputeMethod.
enum class Recompute : std::uint8_t { none, selective, full };
std::string_view to_string(Recompute recompute);  // none | selective | full
std::optional<Recompute> parse_recompute(std::string_view name);

// Megatron-LM's --recompute-method, with recompute_blocks as its --recompute-num-layers:
// uniform, the stage's blocks cut into chunks of recompute_blocks blocks, each chunk's input
// kept and the chunk re-run whole (recompute_blocks = 1: every block); block, the first
// recompute_blocks blocks of each stage (of each model chunk when interleaved) re-run one by one,
// the others keep their activations.
enum class RecomputeMethod : std::uint8_t { uniform, block };
std::string_view to_string(RecomputeMethod method);  // uniform | block
std::optional<RecomputeMethod> parse_recompute_method(std::string_view name);

// When the data-parallel gradient reduction runs: overlap, PyTorch DDP's buckets reduced as the
// last microbatch's backward produces them (Li et al., VLDB 2020); after_flush, Megatron's local
// DDP, one reduction of all gradients after the pipeline flush.
enum class DdpMode : std::uint8_t { overlap, after_flush };
std::string_view to_string(DdpMode mode);  // overlap | after_flush
std::optional<DdpMode> parse_ddp_mode(std::string_view name);

// How the framework runs its communication beside the compute (docs/cost-model.md, "The framework
// as an input"). A Plan's streams run in issue order (traces/plan.hpp StreamOrder::issue); these
// choose each communication task's stream.
// tp_comm: sync, every tensor-parallel collective on the compute stream, which waits for it
// (Megatron-LM before September 2021: the backward all-reduce of dX runs after both GEMMs of the
// column-parallel layer); async, on the tensor-parallel communicator's stream, so the backward
// all-reduce of dX overlaps the weight-gradient GEMM (Megatron-LM commit 3f652469, 2021-09-02,
// --no-async-tensor-model-parallel-allreduce to disable). The forward all-reduce blocks the next
// GEMM either way (it reads the reduced activation).
enum class TpComm : std::uint8_t { sync, async };
std::string_view to_string(TpComm mode);  // sync | async
std::optional<TpComm> parse_tp_comm(std::string_view name);
// p2p: blocking, a pipeline send or receive on the compute stream, which waits until it has
// completed (Megatron-LM 2021-2022: batch_isend_irecv, req.wait(), torch.cuda.synchronize());
// async, on its own stream beside the compute (Megatron-Core's --overlap-p2p-communication,
// commit f9283c5a, 2023-05-31).
enum class P2pMode : std::uint8_t { blocking, async };
std::string_view to_string(P2pMode mode);  // blocking | async
std::optional<P2pMode> parse_p2p_mode(std::string_view name);

// A framework's behaviours together (the --set framework= presets). Each names the Megatron-LM
// code it describes; docs/cost-model.md has the table.
enum class Framework : std::uint8_t {
  megatron_2021,  // tag v2.5 (e269e200, 2021-08-10): the code of Narayanan et al., SC'21
  megatron_2022,  // main at d898a899 (2022-05-25): the code of Korthikanti et al., MLSys'23
  megatron_core,  // Megatron-Core from 2023-10 (4eeff55d): overlapped gradient reduce and p2p
};
std::string_view to_string(Framework framework);  // megatron-2021 | megatron-2022 | megatron-core
std::optional<Framework> parse_framework(std::string_view name);
struct FrameworkBehaviour {
  TpComm tp_comm = TpComm::async;
  P2pMode p2p = P2pMode::async;
  bool p2p_scatter_gather = false;
  DdpMode ddp = DdpMode::overlap;
};
// What `framework` does. Without a framework key strata behaves as the newest, megatron-core.
FrameworkBehaviour framework_behaviour(Framework framework);
inline constexpr Framework kNewestFramework = Framework::megatron_core;

// Gradient compression of the data-parallel exchange (docs/compression.md), each lowered as
// codec tasks (TaskKind::compress) around smaller transfers, with error feedback:
// int8 / fp8, every message of a ring allreduce quantized with one scale per ring chunk (int8:
// Dettmers 2016, 8-bit approximations; fp8: e4m3, Micikevicius et al. 2022); topk, each rank's
// largest topk_ratio of its bucket's values sent with their indices and all-gathered (Aji &
// Heafield 2017, with Stich et al. 2018's error feedback); powersgd, rank-r factors P = M Q and
// Q = M^T P allreduced, Q kept from the previous step (Vogels et al., NeurIPS 2019).
enum class Compression : std::uint8_t { none, int8, fp8, topk, powersgd };
std::string_view to_string(Compression compression);  // none | int8 | fp8 | topk | powersgd
std::optional<Compression> parse_compression(std::string_view name);

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
  // Symmetry reduction (docs/simulator.md "Symmetry reduction"): > 0 lowers the tasks and the
  // buffers of only the first `symmetric_replicas` data-parallel replicas, and every data-parallel
  // collective over just them, marked with the whole group's size (the `group_size` attribute:
  // the simulator sizes chunks and ring steps by it). Exact when the replay platform and the
  // placement repeat every `symmetric_replicas` replicas (sim/symmetry.hpp decides); 0: off.
  // Needs 2 <= symmetric_replicas <= dp, no lowered_replicas and no gradient compression.
  int symmetric_replicas = 0;
  // Tensor-parallel symmetry reduction (docs/simulator.md "Symmetry reduction"): > 0 lowers the
  // tasks and buffers of only the first `symmetric_tp` tensor-parallel ranks of every stage, each
  // tensor-parallel collective over just them, marked with the whole group's size, and a flow
  // between two hosts stands for tp / symmetric_tp alike flows (sim/ decides when that is
  // exact: every stage's ranks on one host, whose route to itself shares no link). Needs
  // 2 <= symmetric_tp < tp dividing tp, one degree for every stage, ring collectives and no
  // replica reduction or gradient compression; 0: off.
  int symmetric_tp = 0;
  // Memory reduction (docs/memory.md). The defaults are plain Megatron-LM 3D parallelism without
  // any of them.
  Recompute recompute = Recompute::none;
  RecomputeMethod recompute_method = RecomputeMethod::uniform;
  int recompute_blocks = 1;        // Megatron's --recompute-num-layers (RecomputeMethod)
  bool sequence_parallel = false;  // Megatron-SP: TP allreduce -> reduce-scatter + all-gather
  int zero = 0;                    // ZeRO stage 0-3 (Rajbhandari et al., SC'20)
  bool offload = false;            // optimizer states in host memory (ZeRO-Offload); zero >= 1
  int interleave = 1;              // model chunks (virtual stages) per device; 1 = plain
  // The pipeline's cut: first block of each stage (pp + 1 values, 0 first, the block count
  // last), as the balanced partitioner chooses it (models/schedule/partition.hpp); empty: the
  // default cut, partition_blocks.
  std::vector<int> stage_cuts;
  // Per-stage tensor-parallel degree (pp values; Experiment::stage_tp), as the balanced
  // partitioner chooses it jointly with the cut (partition_layers_and_tp): stage s runs on
  // stage_tp[s] workers of each replica. Empty: every stage runs on tp. With it, tp stays 1.
  std::vector<int> stage_tp;
  DdpMode ddp = DdpMode::overlap;
  TpComm tp_comm = TpComm::async;  // FrameworkBehaviour: the newest framework's by default
  P2pMode p2p = P2pMode::async;
  // Megatron-LM's scatter-gather of pipeline transfers (Narayanan et al. 2021, section 4.1): each
  // tensor-parallel rank sends 1/t of the activation, and the receiving stage all-gathers it
  // over its tensor-parallel group. Only where both stages have t > 1 ranks and no sequence
  // parallelism (which already splits the activation).
  bool p2p_scatter_gather = false;
  // The framework whose kernels a GPT layer's tasks count (layer_tasks.hpp, KernelSet): the
  // --set framework= preset, the newest without one.
  Framework framework = kNewestFramework;
  bool flash_attention = false;  // FlashAttention (Dao et al. 2022): fused, O(s) activations
  // Bandwidth reduction: the DP gradients' codec (needs dp >= 2 and zero = 0).
  Compression compression = Compression::none;
  double topk_ratio = 0.01;  // compression = topk: fraction of each bucket's values sent, (0, 1]
  int powersgd_rank = 4;     // compression = powersgd: r, at most min(m, n) of every weight matrix

  int workers() const { return dp * stage_workers(); }
  // Workers of one replica: tp * pp, or the sum of stage_tp.
  int stage_workers() const;
  // Stage s's tensor-parallel degree: stage_tp[s], or tp.
  int tp_of(int stage) const { return stage_tp.empty() ? tp : stage_tp[static_cast<std::size_t>(stage)]; }
  std::string to_string() const;  // "dp=2,tp=2,pp=2"; per-stage degrees "dp=1,tp=4+2+1+1,pp=4"
};

// Parses "dp=2,tp=2,pp=2" (any subset, any order; missing = 1) into dp/tp/pp of `into`.
// Throws InputError naming the flag and the problem.
void parse_strategy(const std::string& text, StrategyConfig& into);

// Checks the configuration against the model: tp divides heads (GPT), pp <= blocks,
// microbatches divide the per-replica batch, batch divisible by dp; the memory options: zero in
// 0-3, offload only with zero >= 1, recompute_blocks no more than the blocks of a stage (of a
// model chunk when interleaved), interleave = v > 1 only with the 1f1b schedule, pp > 1 and v
// dividing the blocks of every stage (blocks divisible by pp x v), microbatches a multiple of pp
// (Megatron's requirement for the interleaved schedule); compression only with dp >= 2 and
// zero = 0, topk_ratio in (0, 1], powersgd_rank in [1, min(m, n)] of every weight matrix.
// Throws InputError naming the --set key.
void check_strategy(const Model& model, const StrategyConfig& config);

// `config` as a symmetry reduction of `replicas` replicas (symmetric_replicas), which replaces a
// forced reduction (lowered_replicas); `replicas` 0: `config` as it is.
StrategyConfig with_symmetric_replicas(StrategyConfig config, int replicas);
// `config` as a tensor-parallel symmetry reduction of `ranks` ranks per stage; 0: as it is.
StrategyConfig with_symmetric_tp(StrategyConfig config, int ranks);

// The first memory option of `config` that differs from its default, as "--set key=value" (the
// schedule as "--schedule zb-h1"), or "" when none does: solvers other than backprop take none.
std::string memory_option_set(const StrategyConfig& config);

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
// and PlanInfo.schedule is "none". With interleave = v > 1 each pipeline rank runs v model
// chunks in Megatron-LM's interleaved order (docs/plan-format.md).
Plan lower(const Model& model, const StrategyConfig& config);

// Sets each task's mem_temp: the bytes its kernels hold only while it runs, as strata's real
// executor allocates them (lowering_temporaries.cpp lists them: a conv's one-image column
// matrix, a pool's argmax, the loss's probabilities, a staged received message, a compressed
// ring's copy and messages, the gradient codecs' scratch). Every lowering calls it last.
void add_temporaries(Plan& plan);

// The pipeline partition: first block of each stage (size pp + 1, last = blocks), balancing the
// stages' training FLOPs (contiguous, greedy on prefix sums).
std::vector<int> partition_blocks(const Model& model, int pp);

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name);  // gpipe | 1f1b | zb-h1

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
