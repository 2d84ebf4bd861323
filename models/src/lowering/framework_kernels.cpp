// Megatron-LM's memory-bound kernels for the tasks of a GPT model (framework_kernels.hpp).
//
// Read from NVIDIA/Megatron-LM at d898a899 (2022-05-25, the code of Korthikanti et al. 2023:
// megatron-2022, and megatron-core) and at tag v2.5 (e269e200, 2021-08-10, the code of
// Narayanan et al. 2021: megatron-2021), with bf16 or fp16 activations, fp32 main gradients and
// the default fusions (bias_gelu_fusion, bias_dropout_fusion, masked_softmax_fusion). Bytes are
// DRAM bytes, each tensor read once per kernel. With E bytes per element and, per rank and
// microbatch, o the task's output elements (the layer's input for the loss), per layer:
//
// ln1, ln2, lnf  forward: the fused LayerNorm kernel, x read, y written (the generic count).
//                backward: d898a899 runs apex's persistent LayerNorm (ln_bwd + finalize: dy and
//                x read once, dx written; h is one of persist_ln_hidden_sizes for every Table 5
//                model and NGC's apex is built with fast_layer_norm), v2.5 Megatron's own three
//                kernels (cuComputePartGradGammaBeta reads dy and x, cuComputeGradGammaBeta,
//                cuComputeGradInput reads them again): 2·o·E or 4·o·E read. ln1 and ln2 add
//                the residual stream's two gradients after it (autograd's InputBuffer: the
//                block input feeds ln1 and the first residual, the first residual's output
//                ln2 and the second): 2·o·E read, o·E written, one kernel.
// qkv            forward: the bias is added out of place after the GEMM (skip_bias_add=False):
//                a pass of o·E read and o·E written. Weight gradient: the bias gradient is a
//                separate reduction of dY (grad_output.sum(dim=0)), o·E read.
// attn           the fused causal softmax reads only the lower triangle (attribute causal).
//                Forward: the context's permute(2,0,1,3).contiguous() copies o. Backward: dQ
//                and dK are scaled by 1/norm_factor after their batched GEMMs (baddbmm's alpha:
//                two passes of o read and written) and concatenated with dV (split's backward
//                is a cat: 3·o read and written). Not with FlashAttention.
// res1, res2     forward: bias_dropout_add_fused_train writes a 1-byte dropout mask besides its
//                output (the generic count has the two inputs and the output). Backward: the
//                fused backward reads dY and the mask and writes dx once (the residual branch's
//                gradient is dY itself, no copy); then the bias gradient of the row-parallel
//                linear before it (proj, fc2: mlp_bias.expand_as's sum_to) reduces dY, o·E read.
// gelu           forward: bias_gelu, as counted. Backward: bias_gelu_back reads dY and the saved
//                input and writes dX, then fc1's bias gradient reduces dX (sum_to): 3·o·E read.
// every weight   fp32 accumulation into main_grad (accumulate_allreduce_grads_in_fp32 is forced
// gradient       on for bf16): d898a899 accumulates in the GEMM's epilogue
//                (gradient_accumulation_fusion, fused_weight_gradient_dense.cu, cublasGemmEx
//                with fp32 C and beta = 1): 4 B read and 4 B written per weight, no launch; v2.5
//                writes the E-byte gradient and adds it in a DDP hook (main_grad.add_): 4 + E
//                read and 4 written per weight, one kernel. The LM head's (tied) weight
//                gradient is accumulated the same way.
// loss           forward: the vocab-parallel cross entropy on fp32 logits: .float() (E read, 4
//                written per logit), then max, subtract, exp, sum, divide (20 B read, 12 B
//                written), six kernels. Backward: the target's entry and the scale in place (4
//                B read and written), the fp32-to-E cast (4 B read, E written), three kernels.
// embed          forward: the word lookup, zeroing the rows outside the rank's vocabulary
//                slice (t > 1), the position lookup, their sum and the dropout with its mask.
//                Backward: dropout's, the masking's, both tables' dense gradients (zero-filled,
//                then scattered into) and their fp32 main_grad adds.
// A forward under full recomputation that runs without gradients writes no dropout masks in
// bias_dropout_add (d898a899): counted as the recomputed forward, 2 of about 150 bytes per
// o·E of a layer too many.
#include "framework_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace strata {
inline namespace models {
namespace {

enum class Role : std::uint8_t {
  none,
  norm_residual,
  norm,
  qkv,
  attn,
  linear,
  head,
  residual,
  gelu,
  loss,
  embed
};

Role role_of(const Layer& layer) {
  const std::string_view name = layer.name;
  const std::size_t slash = name.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? name : name.substr(slash + 1);
  if (last == "ln1" || last == "ln2") return Role::norm_residual;
  if (last == "lnf") return Role::norm;
  if (last == "qkv") return Role::qkv;
  if (last == "attn") return Role::attn;
  if (last == "proj" || last == "fc1" || last == "fc2") return Role::linear;
  if (last == "head") return Role::head;
  if (last == "res1" || last == "res2") return Role::residual;
  if (last == "gelu") return Role::gelu;
  if (last == "loss") return Role::loss;
  if (last == "embed") return Role::embed;
  return Role::none;
}

// A memory-bound task whose bytes are its kernels' traffic. The attribute is left out where it
// changes nothing (one forward kernel: gpu_kernels.cpp adds no saved-tensor read to a forward),
// as a Plan of a trillion-parameter model holds tens of millions of tasks.
void set_kernels(Task& task, double read, double written, std::int64_t kernels) {
  task.bytes_read = read;
  task.bytes_written = written;
  const bool reads_saved = task.kind == TaskKind::norm_bwd || task.kind == TaskKind::activation_bwd ||
                           task.kind == TaskKind::loss_bwd;
  if (kernels > 1 || reads_saved) task.attrs["kernels"] = kernels;
}

// Passes beside a GEMM or attention task (`passes` left out while 0).
void add_passes(Task& task, double bytes, std::int64_t passes) {
  task.attrs["pass_bytes"] = task.attr_real("pass_bytes").value_or(0) + bytes;
  const auto total = task.attr_int("passes").value_or(0) + passes;
  if (total > 0) task.attrs["passes"] = total;
}

// The fp32 main_grad accumulation of a weight gradient of k x n on this rank.
void add_main_grad(Task& task, bool v25, double elem) {
  const double weights = task.attr_real("k").value_or(0) * task.attr_real("n").value_or(0);
  if (weights <= 0) return;
  if (v25)
    add_passes(task, (4 + elem + 4) * weights, 1);
  else
    add_passes(task, 8 * weights, 0);
}

}  // namespace

void apply_framework_kernels(Task& task, const Layer& layer, Phase phase, const TaskElements& elems, int tp,
                             const LayerTaskOptions& options) {
  if (options.kernels == KernelSet::generic) return;
  const Role role = role_of(layer);
  if (role == Role::none) return;
  const bool v25 = options.kernels == KernelSet::megatron_2021;
  const bool forward = phase == Phase::forward;
  const double e = bytes_per_element(task.dtype);
  const double o = elems.output;
  switch (role) {
    case Role::norm_residual:
    case Role::norm: {
      if (forward) break;  // the fused LayerNorm kernel: as counted
      const double gamma_beta = elems.weights * e;
      double read = (v25 ? 4 : 2) * o * e + gamma_beta;
      double written = o * e + gamma_beta;
      std::int64_t kernels = v25 ? 3 : 2;
      if (role == Role::norm_residual) read += 2 * o * e, written += o * e, ++kernels;
      set_kernels(task, read, written, kernels);
      break;
    }
    case Role::qkv:
      if (forward) add_passes(task, 2 * o * e, 1);
      if (phase == Phase::backward_weight) add_passes(task, o * e, 1), add_main_grad(task, v25, e);
      break;
    case Role::linear:
    case Role::head:
      if (phase == Phase::backward_weight) add_main_grad(task, v25, e);
      break;
    case Role::attn:
      if (options.flash_attention) break;
      task.attrs["causal"] = std::int64_t{1};
      if (forward)
        add_passes(task, 2 * o * e, 1);
      else
        add_passes(task, 10 * o * e, 3);
      break;
    case Role::residual:
      if (forward)
        set_kernels(task, 2 * o * e, o * e + o, 1);
      else
        set_kernels(task, 2 * o * e + o, o * e, 2);
      break;
    case Role::gelu:
      if (!forward) set_kernels(task, 3 * o * e, o * e, 2);  // forward: bias_gelu, as counted
      break;
    case Role::loss: {
      const double logits = elems.input;
      if (forward)
        set_kernels(task, logits * e + 20 * logits, 16 * logits, 6);
      else
        set_kernels(task, 8 * logits, 4 * logits + logits * e, 3);
      break;
    }
    case Role::embed: {
      const bool split = tp > 1;
      const double x = o * e;
      if (forward) {
        const double zeroed = split ? x * (tp - 1) / tp : 0;
        set_kernels(task, 5 * x, 4 * x + zeroed + o, split ? 5 : 4);
        break;
      }
      const double hidden = shape_real(layer.shape, "hidden").value_or(0);
      const double tables = shape_real(layer.shape, "vocab").value_or(0) * hidden / tp +
                            shape_real(layer.shape, "seq").value_or(0) * hidden;
      const double masked = split ? x : 0;
      set_kernels(task, 3 * x + o + masked + tables * (4 + e), 3 * x + masked + tables * (e + 4),
                  split ? 8 : 7);
      break;
    }
    case Role::none:
      break;
  }
}

}  // namespace models
}  // namespace strata
