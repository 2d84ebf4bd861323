// The GPT family: decoder-only transformers with learned position embeddings, pre-layer-norm
// blocks, GELU MLPs of width 4h and an LM head tied to the token embedding (GPT-2 / GPT-3).
//
// Parameters per block: 12h² + 13h (QKV 3h² + 3h, projection h² + h, MLP 8h² + 5h, two layer
// norms 4h); plus vocab·h + seq·h for the embeddings and 2h for the final norm; the head adds
// none (tied). gpt2-small comes to 124,439,808, as published.
//
// Activations (saved_elems) follow Korthikanti et al. 2022, "Reducing Activation Recomputation
// in Large Transformer Models", section 4.1: a block keeps 34·s·h + 5·a·s² bytes per sample
// with 16-bit activations and 1-byte dropout masks. At 2 bytes per element that is
// 17·s·h + 2.5·a·s² elements, spread over the block's layers as the paper itemises it:
// ln1 s·h (its input), qkv s·h, attn 3·s·h (Q, K, V) + 2.5·a·s² (softmax output, its dropout
// mask and output), proj s·h, res1 0.5·s·h (dropout mask), ln2 s·h, fc1 s·h, gelu 4·s·h,
// fc2 4·s·h, res2 0.5·s·h. No flash attention, no recomputation, no sequence parallelism:
// strategies that use them rescale these figures.
#include "strata/models/zoo/zoo.hpp"

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

// Forward FLOP per element of memory-bound layers: rough counts (their time is set by bytes).
constexpr double kNormFlopsPerElem = 5;  // mean, variance, normalize, scale, shift
constexpr double kGeluFlopsPerElem = 8;  // tanh approximation (Hendrycks & Gimpel 2016)
constexpr double kResidualFlopsPerElem = 1;
constexpr double kSoftmaxFlopsPerLogit = 3;  // exp, sum, divide

struct Dims {
  std::int64_t s;  // tokens per sample
  std::int64_t h;  // hidden size
  std::int64_t a;  // attention heads
  std::int64_t v;  // vocabulary
  double sh() const { return static_cast<double>(s) * static_cast<double>(h); }
};

Layer layer_norm(std::string name, std::int32_t block, const Dims& d) {
  Layer layer = make_pointwise(std::move(name), LayerOp::norm, block, d.sh(), kNormFlopsPerElem,
                               2.0 * static_cast<double>(d.h));
  layer.saved_elems = d.sh();
  layer.shape["fn"] = std::string("layer");
  layer.shape["hidden"] = d.h;
  return layer;
}

Layer linear(std::string name, std::int32_t block, const Dims& d, std::int64_t k, std::int64_t n,
             TensorSplit split) {
  Layer layer = make_linear(std::move(name), block, d.s, k, n);
  layer.split = split;
  return layer;
}

// Residual add fused with the dropout before it: keeps the 1-byte dropout mask.
Layer residual(std::string name, std::int32_t block, const Dims& d) {
  Layer layer = make_pointwise(std::move(name), LayerOp::elementwise, block, d.sh(), kResidualFlopsPerElem);
  layer.saved_elems = 0.5 * d.sh();
  return layer;
}

// softmax(QKᵀ/√d)·V over all heads: QKᵀ and AV are 2·s²·h FLOP each forward (softmax left out);
// backward recomputes neither and runs two matmuls per forward matmul.
Layer attention(std::string name, std::int32_t block, const Dims& d) {
  const double s = static_cast<double>(d.s);
  Layer layer;
  layer.name = std::move(name);
  layer.op = LayerOp::attention;
  layer.block = block;
  layer.split = TensorSplit::heads;
  layer.fwd_flops = 4.0 * s * d.sh();
  layer.bwd_data_flops = 2.0 * layer.fwd_flops;
  layer.out_elems = d.sh();
  layer.saved_elems = 3.0 * d.sh() + 2.5 * static_cast<double>(d.a) * s * s;
  layer.shape = {{"heads", d.a}, {"seq", d.s}, {"head_dim", d.h / d.a}};
  return layer;
}

void add_block(Model& model, std::int32_t i, const Dims& d) {
  // Built by append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  const std::string p = std::string("l").append(std::to_string(i)).append("/");
  auto& layers = model.layers;
  layers.push_back(layer_norm(p + "ln1", i, d));
  layers.push_back(linear(p + "qkv", i, d, d.h, 3 * d.h, TensorSplit::column));
  layers.push_back(attention(p + "attn", i, d));
  layers.push_back(linear(p + "proj", i, d, d.h, d.h, TensorSplit::row));
  layers.push_back(residual(p + "res1", i, d));
  layers.push_back(layer_norm(p + "ln2", i, d));
  layers.push_back(linear(p + "fc1", i, d, d.h, 4 * d.h, TensorSplit::column));
  Layer gelu = make_pointwise(p + "gelu", LayerOp::activation, i, 4.0 * d.sh(), kGeluFlopsPerElem);
  gelu.split = TensorSplit::column;  // elementwise on fc1's column shard
  gelu.saved_elems = 4.0 * d.sh();
  gelu.shape["fn"] = std::string("gelu");
  layers.push_back(std::move(gelu));
  layers.push_back(linear(p + "fc2", i, d, 4 * d.h, d.h, TensorSplit::row));  // saves 4·s·h
  layers.push_back(residual(p + "res2", i, d));
}

// Token + position lookup: FLOPs are the position add forward and the scatter-add of the
// gradient into both tables backward; token ids need no gradient.
Layer embedding(const Dims& d) {
  Layer layer;
  layer.name = "embed";
  layer.op = LayerOp::embedding;
  layer.block = 0;
  layer.split = TensorSplit::column;
  layer.params = static_cast<double>(d.v + d.s) * static_cast<double>(d.h);
  layer.fwd_flops = d.sh();
  layer.bwd_weight_flops = 2.0 * d.sh();
  layer.out_elems = d.sh();
  layer.saved_elems = static_cast<double>(d.s) + 0.5 * d.sh();  // token ids, dropout mask
  layer.shape = {{"vocab", d.v}, {"hidden", d.h}, {"seq", d.s}};
  return layer;
}

// Final norm, LM head and loss, in the last block.
void add_output(Model& model, std::int32_t block, const Dims& d) {
  model.layers.push_back(layer_norm("lnf", block, d));
  // Tied to the token embedding: no parameters of its own, but it computes the table's
  // weight gradient (bwd_weight = forward).
  Layer head = make_linear("head", block, d.s, d.h, d.v, /*bias=*/false);
  head.params = 0;
  head.split = TensorSplit::column;
  model.layers.push_back(std::move(head));
  const double logits = static_cast<double>(d.s) * static_cast<double>(d.v);
  Layer loss = make_pointwise("loss", LayerOp::loss, block, logits, kSoftmaxFlopsPerLogit);
  loss.split = TensorSplit::column;           // vocab-parallel cross entropy on the head's shard
  loss.out_elems = static_cast<double>(d.s);  // one loss per token
  loss.saved_elems = logits;                  // softmax probabilities
  loss.shape = {{"classes", d.v}, {"seq", d.s}};
  model.layers.push_back(std::move(loss));
}

}  // namespace

Model make_gpt(const std::string& name, const GptConfig& config) {
  STRATA_ASSERT(
      config.layers > 0 && config.hidden > 0 && config.heads > 0 && config.seq > 0 && config.vocab > 0,
      "GPT hyperparameters must be positive");
  STRATA_ASSERT(config.hidden % config.heads == 0, "GPT hidden must be divisible by heads");
  Model model;
  model.name = name;
  model.family = "gpt";
  model.seq = config.seq;
  model.input_elems = config.seq;  // token ids
  model.num_blocks = config.layers;
  model.hidden = config.hidden;
  model.heads = config.heads;
  model.vocab = config.vocab;
  const Dims d{config.seq, config.hidden, config.heads, config.vocab};
  model.layers.reserve(static_cast<std::size_t>(config.layers) * 10 + 4);
  model.layers.push_back(embedding(d));
  for (std::int32_t i = 0; i < config.layers; ++i) add_block(model, i, d);
  add_output(model, config.layers - 1, d);
  return model;
}

}  // namespace models
}  // namespace strata
