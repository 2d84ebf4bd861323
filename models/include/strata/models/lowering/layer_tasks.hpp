// Layer tasks: the compute Task that one layer of the zoo becomes for one microbatch.
//
// The one place that turns a Layer (zoo.hpp, per-sample figures) into a Task (kind, FLOP, bytes,
// attributes) for a microbatch on one tensor-parallel rank. The strategy lowering and the
// analytical estimate both call it, so a Plan's tasks and the closed-form model cost the same
// work.
//
// Kinds (LayerOp -> forward / backward data / backward weight):
//   linear      linear_fwd     linear_bwd_data  linear_bwd_weight
//   conv        conv_fwd       conv_bwd_data    conv_bwd_weight
//   attention   attention_fwd  attention_bwd    -
//   embedding   embedding_fwd  embedding_bwd    -   (the table gradient is a scatter-add of dY)
//   norm        norm_fwd       norm_bwd         -   (gamma/beta gradients are tiny)
//   activation  activation_fwd activation_bwd   -
//   pool        pool_fwd       pool_bwd         -
//   loss        loss_fwd       loss_bwd         -
//   elementwise elementwise    elementwise      -
//   fixed       fixed          fixed            -   (attr duration_s = fixed_fwd_s / fixed_bwd_s)
//   aggregate   spmm           spmm             -   (Â is symmetric: dP = Â dZ is the same product)
// An op without a backward-weight kind has one backward task (Phase::backward_data) that
// carries the layer's bwd_data_flops + bwd_weight_flops, so no work is lost.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

enum class Phase : std::uint8_t { forward, backward_data, backward_weight };
std::string_view to_string(Phase phase);  // fwd | bwd | bwdw (the id segments of task.hpp)

TaskKind forward_kind(LayerOp op);
TaskKind backward_data_kind(LayerOp op);
// nullopt: the op's weight gradient (if any) is computed by its backward_data task.
std::optional<TaskKind> backward_weight_kind(LayerOp op);

// Whether the layer's tp split divides its work (false for TensorSplit::replicated).
bool is_split(const Layer& layer);

// Whether the layer has a Phase::backward_weight task: its op has a backward-weight kind and it
// has parameters or weight-gradient FLOPs (a tied weight, as GPT's head, has FLOPs only).
bool has_backward_weight(const Layer& layer);

// Options that change what a layer's task computes and keeps (strategy.hpp's StrategyConfig):
// - sequence_parallel (Korthikanti et al. 2023, section 4.2.2): the replicated layers of a
//   transformer block (TensorSplit::replicated: norms, dropout + residual adds) work on seq / tp
//   tokens of each rank: their FLOPs and activation bytes are divided by tp (not their gamma and
//   beta). The embedding's dropout is part of the embedding task and is not divided.
// - flash_attention (Dao et al. 2022; FlashAttention-2, Dao 2023): the attention core is one
//   fused kernel (attribute flash = 1 on its tasks): forward FLOPs as the unfused core, backward
//   2.5 x forward (it recomputes QK^T), reading Q, K, V instead of the s x s scores, and keeping
//   no s x s activation (saved_elems_per_sample).
// Both default off, today's tasks.
// - kernels: the memory-bound kernels a task counts. generic: one read of each input and one
//   write of each output of the layer's op. megatron_2021 / megatron_2022: the kernels
//   Megatron-LM runs for that layer of a GPT block, its embedding, final norm, head and loss
//   (tag v2.5 / main at d898a899; framework_kernels.cpp lists each with its source): a
//   memory-bound task's bytes become its kernels' (attribute `kernels`, how many), a GEMM or
//   attention task gains the passes the framework runs beside it (attributes `passes`,
//   `pass_bytes`: bias adds and bias-gradient reductions, the attention context's permute, the
//   dQ and dK scaling and their concatenation, the fp32 accumulation of weight gradients), and
//   the attention core's softmax is causal (attribute `causal`).
enum class KernelSet : std::uint8_t { generic, megatron_2021, megatron_2022 };
struct LayerTaskOptions {
  bool sequence_parallel = false;
  bool flash_attention = false;
  KernelSet kernels = KernelSet::generic;
  bool operator==(const LayerTaskOptions&) const = default;
};
// The kernels of `config.framework` for a GPT model (family "gpt"), generic for every other.
// megatron-core counts megatron-2022's kernels (its local transformer layer runs the same fused
// kernels; not checked kernel by kernel).
KernelSet kernel_set(Framework framework);
LayerTaskOptions layer_task_options(const StrategyConfig& config, const Model& model);

// The Task of `layer` in `phase` for a microbatch of `microbatch` samples on one of `tp` tensor
// ranks, in `dtype`. Fills kind, stream (compute), dtype, flops, bytes_read, bytes_written and
// attrs; leaves id, worker, iteration, priority, buffers and dependencies to the caller.
//   flops = phase FLOP per sample x microbatch / (tp if split).
//   bytes = (input + output activations x microbatch + weights) x bytes_per_element(dtype),
//     each divided by tp where Megatron splits it (column linear: output and weights; row
//     linear: input and weights; embedding: the table rows; other split ops: all three).
//     Forward reads input and weights and writes the output; backward data reads dY and
//     weights and writes dX (and dW when it carries the weight gradient); backward weight
//     reads input and dY and writes dW. An embedding's weights are the rows it gathers.
//   attrs: the layer's shape attributes, scaled to the microbatch and the tp rank (linear m
//     multiplied by the microbatch, n divided by tp for column split, k for row split; attention
//     batch = microbatch, heads / tp; conv n = microbatch); fixed: duration_s (the layer's
//     fixed_fwd_s or fixed_bwd_s, divided by tp if split); aggregate: nodes = microbatch,
//     nnz = microbatch x nnz_per_node, width, and bytes of its own (Â's values and indices plus
//     one row of the input gathered per nonzero, layer_tasks.cpp).
// REQUIRES: microbatch > 0, tp >= 1; phase is backward_weight only if backward_weight_kind(op).
Task layer_task(const Layer& layer, Phase phase, double microbatch, int tp, DType dtype,
                const LayerTaskOptions& options = {});

// The backward of a layer whose op has no backward-weight kind (norm, embedding, fixed, ...), as
// two tasks of its backward-data kind: `data` reads dY and the weights and writes dX
// (bwd_data_flops), `weight` reads the input and dY and writes dW (bwd_weight_flops); together
// they carry what layer_task(backward_data) carries. For a solver that must order the two apart:
// AMPNet's input gradient reads a stale weight version while its weight gradient waits for the
// previous step (solver_ampnet.cpp). A fixed layer has one duration and no FLOP split: it stays
// on `data`, and `weight` takes 0 s. REQUIRES: !backward_weight_kind(layer.op).
struct SplitBackward {
  Task data;
  Task weight;
};
SplitBackward split_backward_task(const Layer& layer, double microbatch, int tp, DType dtype,
                                  const LayerTaskOptions& options = {});

// The bytes of an aggregation Â·X (a GCN's spmm) over `rows` rows of Â holding `nnz` nonzeros, X
// `width` values a row: reads every nonzero (value and int32 column) and the row of X it gathers,
// writes the rows. layer_task sets them for the model's mean nonzeros per node; a Plan over a
// split graph (graph_step.hpp) for each part's own.
void set_spmm_bytes(Task& task, double rows, double nnz, double width, double elem);

// layer_task with only the attributes a CostModel reads (fixed layers: duration_s; linear and
// attention: their shape attributes, for the GEMM shapes on GPU hosts), for the analytical
// estimate's inner loop.
Task layer_cost_task(const Layer& layer, Phase phase, double microbatch, int tp, DType dtype,
                     const LayerTaskOptions& options = {});

// A layer's weight gradient on one tp rank as PowerSGD sees it (Vogels et al. 2019, section 3:
// a conv kernel reshaped to c_out x c_in·kh·kw): a rows x cols matrix followed by `rest` values
// sent uncompressed (the bias; everything, rows = cols = 0, for a layer without a matrix: norms).
// Linear k x n (column split: n / tp, row split: k / tp); conv c_out x c_in·kh·kw.
struct GradMatrix {
  std::int64_t rows = 0, cols = 0;
  double rest = 0;
};
GradMatrix grad_matrix(const Layer& layer, int tp);

// Residual adds that run for real (zoo_vision.cpp's basic blocks, option-A shortcuts): the add's
// shape holds span (its block's first layer is `span` layers back), the shortcut's input shape
// skip_c, skip_h, skip_w and its output's c, h, w. Its forward reads, besides its input, the
// block's input (add_skip_read: the extra read and attribute skip = 1); its backward passes dY
// on; and the block's first layer's input-gradient task adds the shortcut's share, reading the
// add's output gradient (add_residual_grad: the extra read last, attributes residual_grad = 1
// and residual_<shape key>). The shortcut takes every stride-th row and column (stride =
// skip_h / h) and pads (c - skip_c) / 2 zero channels on either side. 0: not such an add (GPT's
// residuals and the bottlenecks' adds are priced, not run).
std::int64_t residual_span(const Layer& layer);
inline constexpr int kMaxResidualSpan = 16;  // layers in a residual block, at most
void add_skip_read(Task& add_forward, BufferIndex skip);
void add_residual_grad(Task& input_grad, const Attributes& add_shape, BufferIndex add_output_grad);

// Input activation elements per sample (Layer holds only its output): linear m*k, conv
// c_in*(h_out*stride)*(w_out*stride) when the shape attributes are there; elementwise reads two
// operands of the output's size; otherwise saved_elems (what a layer keeps for backward is its
// input), or out_elems when it saves nothing.
double input_elems(const Layer& layer);

// Activation elements a layer keeps for its backward per sample on one of `tp` tensor ranks,
// for the memory model (16-bit elements: a 1-byte dropout mask counts 0.5). Korthikanti et al.
// 2023 (arXiv:2205.05198), section 4 and eq. 1-2: without tensor parallelism a GPT block keeps
// s·h·(34 + 5·a·s/h) bytes per sample; with tensor parallelism the inputs of the column-parallel
// linears (QKV, fc1), the norms' inputs and the dropout masks of the residual adds stay whole on
// every rank, s·h·(10 + 24/t + 5·a·s/(h·t)); with sequence parallelism too every tensor is
// divided, s·h/t·(34 + 5·a·s/h). Here: a row-split matmul's input, a split non-matmul layer's
// (attention by heads, GELU, vocab-parallel loss) are divided by tp; a column-split matmul's
// input, an embedding's (token ids, dropout mask) and a replicated layer's are not, unless
// options.sequence_parallel divides them all. With options.flash_attention the attention core
// keeps Q, K and V (3·s·h) and the softmax logsumexp, one fp32 value per row and head (a·s fp32
// = 2·a·s 16-bit elements), instead of 3·s·h + 2.5·a·s² (its output O is the projection's saved
// input; the dropout mask is regenerated from the RNG state). REQUIRES: tp >= 1.
double saved_elems_per_sample(const Layer& layer, int tp, const LayerTaskOptions& options = {});

// FlashAttention's softmax statistics per sample of an attention layer (all its heads): the
// logsumexp of every row and head, one fp32 value each, 4·a·s bytes (Dao 2023, "FlashAttention-2",
// algorithm 1: L is the forward's only output besides O). 0 for any other layer.
double flash_statistics_bytes_per_sample(const Layer& layer);

// The optimizer step of a worker holding `params` parameters, as the lowering emits it and the
// analytical model times it: it reads the gradient and the optimizer state and writes the weights
// (mixed-precision Adam 2 + 12 + 2 = 16 B per parameter, ZeRO's accounting), about 10 FLOP per
// parameter for Adam and 2 for SGD. Synthetic models (family "synthetic", e.g. anchor-96) give
// layer durations only, as ASTRA-sim's workload files do: their update costs nothing more.
// Fills kind, stream, dtype, flops, bytes and the "params"/"optimizer" attributes.
// With a Megatron kernel set (and Adam), the step is what Megatron-LM's mixed-precision optimizer
// runs on fp32 main gradients and weights once per iteration (optimizer/optimizer.py
// Float16OptimizerWithFloat16Params.step at d898a899, the same at v2.5): zeroing the gradient
// buffer (4 B per parameter written), the gradient norm for clipping (4 B read), fused Adam
// (weight, gradient, two moments read, 16 B; weight and moments written, 12 B) and the copy of
// the fp32 weights to the model's (4 B read, one element written): 24 B read and 16 B + one
// element written per parameter, four kernels (attribute `kernels`).
Task optimizer_step_task(const Model& model, double params, Optimizer optimizer, DType dtype,
                         KernelSet kernels = KernelSet::generic);

}  // namespace models
}  // namespace strata
