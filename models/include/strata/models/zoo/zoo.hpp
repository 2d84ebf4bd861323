// The model zoo: networks as layer graphs with per-layer FLOPs, parameters and activations.
//
// A Model is a sequence of Layers in execution order (residual edges are implicit: a layer's
// input is the previous layer's output). All per-sample figures are for one sample: one image
// for vision models, one sequence of `seq` tokens for GPT. FLOPs count a multiply-add as 2 FLOP.
// Element counts are dtype-free; the strategy multiplies by the dtype's size.
//
// Presets: mlp (784-256-128-10), lenet5, vgg16, resnet50, gpt2-small, gpt3-1.3b, gpt3-13b,
// gpt3-175b, anchor-96 (the synthetic DP workload of README's anchor section), gcn (784-256-256-10
// on a 10,000-node graph of mean degree 20, zoo_gcn.cpp). `--set key=value` overrides a family's
// hyperparameters (gpt: layers, hidden, heads, seq, vocab; mlp: sizes; vision: image,
// batch-independent only; gcn: sizes, nodes, avg_degree).
//
// Conventions every preset follows:
// - Layer names are unique. GPT: "embed", "l<i>/ln1", "l<i>/qkv", "l<i>/attn", "l<i>/proj",
//   "l<i>/res1", "l<i>/ln2", "l<i>/fc1", "l<i>/gelu", "l<i>/fc2", "l<i>/res2", then "lnf",
//   "head", "loss". anchor-96: "l0".."l95". Vision models use the original papers' names
//   ("conv3_2", "fc7", "conv4_1/b" ...).
// - Blocks are contiguous and numbered from 0 in layer order; num_blocks_or_layers() is their
//   count. GPT: block i is transformer layer i; "embed" belongs to block 0 and "lnf", "head",
//   "loss" to block L-1, so a GPT has exactly `layers` blocks. MLP: one block per linear layer
//   (with its activation; the loss goes with the last). LeNet-5 / VGG-16: one block per layer
//   with weights (with its activation and following pool). ResNet-50: stem, 16 bottlenecks,
//   head (18 blocks). anchor-96: one block per layer. GCN: one block per graph convolution
//   "gc<l>" (its "gc<l>/fc", "gc<l>/agg" for l > 0, "gc<l>/relu" but for the last; "loss" goes
//   with the last).
// - FLOPs: linear and conv layers count 2·m·k·n (bias adds omitted); their backward costs the
//   same for the data gradient and again for the weight gradient. The data gradient is kept
//   for the first layer too (frameworks skip it; keeping it matches the 6N convention and
//   keeps every layer alike). The attention core's backward is twice its forward (four matmuls
//   to two), with no weight gradient. Memory-bound layers (norm, activation, pool, residual,
//   loss) carry rough per-element counts; the cost model should time them by bytes.
// - out_elems: elements of the layer's output for one sample (GPT: for all `seq` tokens).
//   saved_elems: what the layer's backward reads that it is the first to keep (see zoo_vision.cpp
//   and zoo_gpt.cpp for the accounting), so activation_elems_per_sample() counts no tensor twice.
// - `shape` attributes are the full, unsplit sizes; tensor parallelism divides them by `split`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

enum class LayerOp : std::uint8_t {
  embedding,    // token + position embedding lookup
  linear,       // dense matmul: attrs m (rows per sample), n (out), k (in)
  conv,         // 2-D convolution: attrs c_in, c_out, h_out, w_out, kh, kw, stride
  attention,    // attention core softmax(QK^T/sqrt(d))V: attrs heads, seq, head_dim
  norm,         // layer norm or batch norm
  activation,   // relu, gelu, tanh
  pool,         // max or average pooling
  loss,         // softmax cross-entropy (with the output projection's logits)
  elementwise,  // residual add
  fixed,        // synthetic layer with given forward/backward durations
  aggregate,    // a GCN's neighbourhood aggregation Â·H: attrs width, nnz_per_node
};
std::string_view to_string(LayerOp op);
// Whether a layer's backward reads its input, so that its saved activations include it
// (linear, conv, norm, embedding; ReLU and tanh keep their output instead).
inline bool keeps_input(LayerOp op) {
  return op == LayerOp::linear || op == LayerOp::conv || op == LayerOp::norm || op == LayerOp::embedding;
}

// How Megatron tensor parallelism splits a layer across tp ranks.
enum class TensorSplit : std::uint8_t {
  replicated,  // every tp rank computes it whole (norms, residuals, small layers)
  column,      // weight split by output columns: no communication in forward
  row,         // weight split by input rows: partial sums, allreduce after forward
  heads,       // attention core split by heads
};
// GPT: qkv, fc1, gelu: column; attn: heads; proj, fc2: row; norms, residuals: replicated;
// embed, head, loss: column (vocab-parallel, Megatron). Note that a vocab-parallel embedding
// ends its forward with an allreduce of seq·hidden (each rank looks up only its vocab slice),
// and the vocab-parallel loss reduces seq-sized partial sums; lowering adds both. Every layer
// of non-GPT models is replicated.

struct Layer {
  std::string name;  // unique in the model, e.g. "l7/qkv", "conv2_1/a"
  LayerOp op = LayerOp::linear;
  std::int32_t block = 0;  // repeating unit (transformer block, conv stage), for PP cuts
  TensorSplit split = TensorSplit::replicated;
  double params = 0;            // parameter count
  double fwd_flops = 0;         // FLOP per sample
  double bwd_data_flops = 0;    // FLOP per sample (gradient w.r.t. the input)
  double bwd_weight_flops = 0;  // FLOP per sample (gradient w.r.t. the weights)
  double out_elems = 0;         // output activation elements per sample
  double saved_elems = 0;       // elements kept from forward for backward, per sample
  // Its backward reads its input, which the layer before keeps (a ReLU's output) and so
  // saved_elems leaves out: a pipeline stage that starts with this layer keeps it itself.
  bool input_kept_before = false;
  double fixed_fwd_s = 0;  // LayerOp::fixed: forward time per microbatch (s)
  double fixed_bwd_s = 0;  // LayerOp::fixed: backward time per microbatch (s)
  Attributes shape;        // op-specific shape attributes (see LayerOp)
};

struct Model {
  std::string name;
  std::string family;  // mlp | lenet | vgg | resnet | gpt | synthetic
  std::vector<Layer> layers;
  std::int64_t seq = 1;    // tokens per sample (1 for vision models)
  double input_elems = 0;  // per sample
  // Transformer shape; zero for other families.
  std::int32_t num_blocks = 0;
  std::int32_t hidden = 0;
  std::int32_t heads = 0;
  std::int32_t vocab = 0;
  // Graph of a GCN (family "gcn"); zero for other families. A sample is a node, and a training
  // step reads all graph_nodes of them (full-graph, full-batch).
  std::int64_t graph_nodes = 0;
  std::int32_t graph_avg_degree = 0;  // mean neighbours per node (self loop not counted)
  // The edges when given (--set edges=E; then 2E / N is the mean degree and graph_avg_degree its
  // rounding); 0: N x graph_avg_degree / 2. See graph_edges_of().
  std::int64_t graph_edges = 0;
  // The exponent of the degree distribution, for the power-law graph a partitioned Plan splits
  // (graph_layout.hpp; --set exponent).
  double graph_exponent = 2.5;

  double params() const;
  double fwd_flops_per_sample() const;
  double train_flops_per_sample() const;       // forward + backward (data + weight)
  double activation_elems_per_sample() const;  // sum of saved_elems
  // Model FLOPs per token (PaLM appendix B): 6N + 12·layers·hidden·seq for GPT, no
  // recomputation; for other families, train_flops_per_sample / seq.
  double model_flops_per_token() const;
  int num_blocks_or_layers() const;  // what PP may cut: blocks (max block + 1)
};

struct GptConfig {
  std::int32_t layers = 12;
  std::int32_t hidden = 768;
  std::int32_t heads = 12;
  std::int32_t seq = 1024;
  std::int32_t vocab = 50257;
};
Model make_gpt(const std::string& name, const GptConfig& config);

// Preset names, in the order `strata models` lists them.
const std::vector<std::string>& zoo_names();

// A preset's hyperparameters an experiment may change (`--set key=value`; the key table is in
// experiment.hpp). Unset fields keep the preset's value.
struct ModelParameters {
  std::optional<std::int32_t> layers, hidden, heads, seq, vocab;  // gpt (anchor-96: layers)
  std::optional<std::vector<std::int64_t>> sizes;                 // mlp, gcn: widths, input first
  std::optional<std::int32_t> image;                              // lenet5, vgg16, resnet50
  std::optional<std::int64_t> nodes;                              // gcn
  std::optional<std::int32_t> avg_degree;                         // gcn
  std::optional<std::int64_t> edges;                              // gcn
  std::optional<double> exponent;                                 // gcn
  bool operator==(const ModelParameters&) const = default;
};

// Builds preset `name` with `params`. Throws InputError for an unknown model ("unknown model 'x'
// (known: ...)"), a parameter the preset does not take, or values that do not fit together
// ("--set hidden=100: not divisible by heads (12)").
Model make_preset(const std::string& name, const ModelParameters& params);

// Builds a preset, applying `overrides` (key=value text, parsed by the experiment's key table).
// Throws InputError for an unknown model, an unknown key ("--set foo: unknown hyperparameter for
// model 'mlp' (known: sizes)") or an invalid value.
Model make_model(const std::string& name, const std::map<std::string, std::string>& overrides = {});

// The ModelParameters keys preset `name` takes, in the order `strata spec --help` lists them.
// Throws InputError for an unknown model.
const std::vector<std::string>& model_keys(const std::string& name);

// Builders behind the presets, for tests and custom models. Sizes must be positive (asserted);
// make_model checks user input first and throws InputError instead.
Model make_mlp(const std::string& name, const std::vector<std::int64_t>& sizes);
Model make_lenet5(std::int32_t image = 28);      // image: side of the square input (multiple of 4, >= 12)
Model make_vgg16(std::int32_t image = 224);      // image: a multiple of 32
Model make_resnet50(std::int32_t image = 224);   // image: a multiple of 32
Model make_resnet152(std::int32_t image = 224);  // image: a multiple of 32
// The CIFAR ResNets of He et al. 2016, section 4.2: depth 6n + 2 (20, 32, 56, 110, 1202), option-A
// shortcuts; image: a multiple of 4 (32: Fashion-MNIST padded, or CIFAR), channels of the input.
Model make_cifar_resnet(std::int32_t depth, std::int32_t image = 32, std::int32_t channels = 1);
// A GCN (Kipf & Welling 2017) of sizes {features, hidden..., classes} on a graph of `nodes`
// nodes of mean degree `avg_degree` (see zoo_gcn.cpp). REQUIRES: >= 2 sizes, all positive.
// `edges` > 0 gives the edge count instead (the mean degree 2 edges / nodes need not be whole).
struct GcnConfig {
  std::vector<std::int64_t> sizes = {784, 256, 256, 10};
  std::int64_t nodes = 10000;
  std::int32_t avg_degree = 20;
  std::int64_t edges = 0;
  double exponent = 2.5;  // graph_layout.hpp's default, cited there
};
Model make_gcn(const std::string& name, const GcnConfig& config);
// A GCN's undirected edges (self loops not counted): graph_edges, or N x avg_degree / 2.
double graph_edges_of(const Model& model);

// ASTRA-sim 2.0's data-parallel comparison workload: `layers` fixed layers, 300 µs forward,
// 600 µs backward and 24 M parameters (a 48 MB bf16 gradient allreduce) each.
Model make_anchor(const std::string& name, std::int32_t layers = 96);

// Building blocks the builders share.
// Y = X·W (+ b) on m rows of k features per sample, n outputs: 2·m·k·n FLOP forward and the
// same for each backward matmul (dX = dY·Wᵀ, dW = Xᵀ·dY). saved_elems = m·k (its input).
Layer make_linear(std::string name, std::int32_t block, std::int64_t m, std::int64_t k, std::int64_t n,
                  bool bias = true);
// A memory-bound layer over `elems` output elements at `flops_per_elem` forward; its data
// backward costs as much as its forward, and its weight backward as much again if it has
// params. out_elems = elems; saved_elems is left 0 for the caller to set.
Layer make_pointwise(std::string name, LayerOp op, std::int32_t block, double elems, double flops_per_elem,
                     double params = 0);

}  // namespace models
}  // namespace strata
