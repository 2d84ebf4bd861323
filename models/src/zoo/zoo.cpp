// Model totals, the preset table, --set overrides and the synthetic anchor workload.
// The vision presets are built in zoo_vision.cpp, the GPT family in zoo_gpt.cpp.
#include "strata/models/zoo/zoo.hpp"

#include "strata/models/experiment.hpp"

#include <algorithm>
#include <array>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr std::array<std::string_view, 11> kLayerOpNames = {
    "embedding", "linear", "conv",        "attention", "norm",      "activation",
    "pool",      "loss",   "elementwise", "fixed",     "aggregate",
};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

[[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& problem) {
  throw InputError("--set " + key + "=" + value + ": " + problem);
}

// A preset's parameter: the one given, or the preset's own.
template <typename T>
T given_or(const std::optional<T>& given, T preset) {
  return given ? *given : preset;
}

Model build_gpt(const std::string& name, const ModelParameters& set, const GptConfig& preset) {
  GptConfig config;
  config.layers = given_or(set.layers, preset.layers);
  config.hidden = given_or(set.hidden, preset.hidden);
  config.heads = given_or(set.heads, preset.heads);
  config.seq = given_or(set.seq, preset.seq);
  config.vocab = given_or(set.vocab, preset.vocab);
  if (config.hidden % config.heads != 0)
    fail("hidden", std::to_string(config.hidden),
         "not divisible by heads (" + std::to_string(config.heads) + ")");
  return make_gpt(name, config);
}

// Vision inputs shrink by a fixed factor through the network; `multiple` keeps every
// stride-2 stage exact.
std::int32_t image_side(const ModelParameters& set, std::int32_t fallback, std::int32_t multiple,
                        std::int32_t minimum, const std::string& model) {
  std::int32_t side = given_or(set.image, fallback);
  if (side % multiple != 0 || side < minimum)
    fail("image", std::to_string(side),
         model + " needs a multiple of " + std::to_string(multiple) + " of at least " +
             std::to_string(minimum));
  return side;
}

using Build = Model (*)(const std::string& name, const ModelParameters& set);

struct Preset {
  std::string name;
  std::vector<std::string> keys;  // hyperparameters --set may override
  Build build;
};

const std::vector<std::string> kGptKeys = {"layers", "hidden", "heads", "seq", "vocab"};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> kPresets = {
      {"mlp",
       {"sizes"},
       [](const std::string& name, const ModelParameters& set) {
         return make_mlp(name, given_or(set.sizes, std::vector<std::int64_t>{784, 256, 128, 10}));
       }},
      {"lenet5",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_lenet5(image_side(set, 28, 4, 12, "lenet5"));
       }},
      {"vgg16",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_vgg16(image_side(set, 224, 32, 32, "vgg16"));
       }},
      {"resnet50",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_resnet50(image_side(set, 224, 32, 32, "resnet50"));
       }},
      {"resnet152",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_resnet152(image_side(set, 224, 32, 32, "resnet152"));
       }},
      {"resnet20",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_cifar_resnet(20, image_side(set, 32, 4, 8, "resnet20"));
       }},
      {"resnet32",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_cifar_resnet(32, image_side(set, 32, 4, 8, "resnet32"));
       }},
      {"resnet56",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_cifar_resnet(56, image_side(set, 32, 4, 8, "resnet56"));
       }},
      {"resnet110",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_cifar_resnet(110, image_side(set, 32, 4, 8, "resnet110"));
       }},
      {"resnet1202",
       {"image"},
       [](const std::string&, const ModelParameters& set) {
         return make_cifar_resnet(1202, image_side(set, 32, 4, 8, "resnet1202"));
       }},
      {"gpt2-small", kGptKeys,
       [](const std::string& name, const ModelParameters& set) {
         return build_gpt(name, set, {12, 768, 12, 1024, 50257});
       }},
      {"gpt3-1.3b", kGptKeys,
       [](const std::string& name, const ModelParameters& set) {
         return build_gpt(name, set, {24, 2048, 16, 2048, 50257});
       }},
      // GPT-3's table gives d_model 5140 with 40 heads; 5120 (as Megatron uses) divides evenly.
      {"gpt3-13b", kGptKeys,
       [](const std::string& name, const ModelParameters& set) {
         return build_gpt(name, set, {40, 5120, 40, 2048, 50257});
       }},
      {"gpt3-175b", kGptKeys,
       [](const std::string& name, const ModelParameters& set) {
         return build_gpt(name, set, {96, 12288, 96, 2048, 50257});
       }},
      {"anchor-96",
       {"layers"},
       [](const std::string& name, const ModelParameters& set) {
         return make_anchor(name, given_or(set.layers, 96));
       }},
      {"gcn",
       {"sizes", "nodes", "avg_degree", "edges", "exponent"},
       [](const std::string& name, const ModelParameters& set) {
         const GcnConfig preset;
         GcnConfig config;
         config.sizes = given_or(set.sizes, preset.sizes);
         config.nodes = given_or(set.nodes, preset.nodes);
         config.avg_degree = given_or(set.avg_degree, preset.avg_degree);
         if (config.avg_degree >= config.nodes)
           fail("avg_degree", std::to_string(config.avg_degree),
                "a node has at most nodes - 1 = " + std::to_string(config.nodes - 1) + " neighbours");
         config.exponent = given_or(set.exponent, preset.exponent);
         if (set.edges) {
           if (set.avg_degree)
             fail("edges", std::to_string(*set.edges),
                  "give edges or avg_degree, not both (2 edges / nodes is the mean degree)");
           const double most = static_cast<double>(config.nodes) * static_cast<double>(config.nodes - 1) / 2;
           if (static_cast<double>(*set.edges) > most)
             fail("edges", std::to_string(*set.edges),
                  "a simple graph of " + std::to_string(config.nodes) +
                      " nodes has at most nodes (nodes - 1) / 2 edges");
           config.edges = *set.edges;
           config.avg_degree = static_cast<std::int32_t>(std::max<std::int64_t>(
               1, std::llround(2.0 * static_cast<double>(config.edges) / static_cast<double>(config.nodes))));
         }
         return make_gcn(name, config);
       }},
  };
  return kPresets;
}

}  // namespace

std::string_view to_string(LayerOp op) { return kLayerOpNames.at(static_cast<std::size_t>(op)); }

double Model::params() const {
  double total = 0;
  for (const auto& layer : layers) total += layer.params;
  return total;
}

double Model::fwd_flops_per_sample() const {
  double total = 0;
  for (const auto& layer : layers) total += layer.fwd_flops;
  return total;
}

double Model::train_flops_per_sample() const {
  double total = 0;
  for (const auto& layer : layers) total += layer.fwd_flops + layer.bwd_data_flops + layer.bwd_weight_flops;
  return total;
}

double Model::activation_elems_per_sample() const {
  double total = 0;
  for (const auto& layer : layers) total += layer.saved_elems;
  return total;
}

double Model::model_flops_per_token() const {
  if (family != "gpt") return train_flops_per_sample() / static_cast<double>(seq);
  // PaLM (Chowdhery et al. 2022), appendix B: 6N matmul FLOP per token for the weights plus
  // 12·L·h·s for attention scores and values, no recomputation. N = params(), embeddings
  // included: the LM head is tied to the token embedding and its matmul costs 6·vocab·h per
  // token, exactly what counting the table in N adds (the position table over-counts by 6·s·h,
  // under 0.5% for the presets).
  return 6.0 * params() + 12.0 * num_blocks * static_cast<double>(hidden) * static_cast<double>(seq);
}

int Model::num_blocks_or_layers() const {
  std::int32_t last = -1;
  for (const auto& layer : layers) last = std::max(last, layer.block);
  return last + 1;
}

Layer make_linear(std::string name, std::int32_t block, std::int64_t m, std::int64_t k, std::int64_t n,
                  bool bias) {
  STRATA_ASSERT(m > 0 && k > 0 && n > 0, "linear layer " + name + " needs positive m, k, n");
  Layer layer;
  layer.name = std::move(name);
  layer.op = LayerOp::linear;
  layer.block = block;
  layer.params = static_cast<double>(k * n + (bias ? n : 0));
  layer.fwd_flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  layer.bwd_data_flops = layer.fwd_flops;
  layer.bwd_weight_flops = layer.fwd_flops;
  layer.out_elems = static_cast<double>(m * n);
  layer.saved_elems = static_cast<double>(m * k);
  layer.shape = {{"m", m}, {"n", n}, {"k", k}};
  return layer;
}

Layer make_pointwise(std::string name, LayerOp op, std::int32_t block, double elems, double flops_per_elem,
                     double params) {
  Layer layer;
  layer.name = std::move(name);
  layer.op = op;
  layer.block = block;
  layer.params = params;
  layer.fwd_flops = elems * flops_per_elem;
  layer.bwd_data_flops = layer.fwd_flops;
  layer.bwd_weight_flops = params > 0 ? layer.fwd_flops : 0;
  layer.out_elems = elems;
  layer.shape = {{"elems", static_cast<std::int64_t>(elems)}};
  return layer;
}

// ASTRA-sim 2.0 (Won et al. 2023) compares simulators on a data-parallel workload of 96
// identical layers: 300 µs forward, 600 µs backward and a 48 MB gradient allreduce per layer.
// 24 M parameters at 2 bytes (bf16) give those 48 MB (10^6 B); FLOPs and activations are zero
// because the durations are given directly.
Model make_anchor(const std::string& name, std::int32_t layers) {
  STRATA_ASSERT(layers > 0, "anchor needs at least one layer");
  Model model;
  model.name = name;
  model.family = "synthetic";
  model.seq = 1;
  for (std::int32_t i = 0; i < layers; ++i) {
    Layer layer;
    layer.name = std::string("l").append(std::to_string(i));
    layer.op = LayerOp::fixed;
    layer.block = i;
    layer.params = 24e6;
    layer.fixed_fwd_s = 300e-6;
    layer.fixed_bwd_s = 600e-6;
    model.layers.push_back(std::move(layer));
  }
  return model;
}

const std::vector<std::string>& zoo_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& preset : presets()) names.push_back(preset.name);
    return names;
  }();
  return kNames;
}

namespace {

const Preset& preset_of(const std::string& name) {
  for (const auto& preset : presets())
    if (preset.name == name) return preset;
  throw InputError("unknown model '" + name + "' (known: " + join(zoo_names()) + ")");
}

// The keys given in `params` (ModelParameters has no other record of them).
std::vector<std::string> given_keys(const ModelParameters& p) {
  std::vector<std::string> keys;
  const std::pair<const char*, bool> all[] = {
      {"layers", p.layers.has_value()},         {"hidden", p.hidden.has_value()},
      {"heads", p.heads.has_value()},           {"seq", p.seq.has_value()},
      {"vocab", p.vocab.has_value()},           {"sizes", p.sizes.has_value()},
      {"image", p.image.has_value()},           {"nodes", p.nodes.has_value()},
      {"avg_degree", p.avg_degree.has_value()}, {"edges", p.edges.has_value()},
      {"exponent", p.exponent.has_value()}};
  for (const auto& [key, given] : all)
    if (given) keys.emplace_back(key);
  return keys;
}

void check_known(const std::string& model, const std::string& key, const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), key) != known.end()) return;
  throw InputError("--set " + key + ": unknown hyperparameter for model '" + model + "' (" +
                   (known.empty() ? std::string("it has none") : "known: " + join(known)) + ")");
}

}  // namespace

const std::vector<std::string>& model_keys(const std::string& name) { return preset_of(name).keys; }

Model make_preset(const std::string& name, const ModelParameters& params) {
  const Preset& preset = preset_of(name);
  for (const std::string& key : given_keys(params)) check_known(name, key, preset.keys);
  return preset.build(name, params);
}

Model make_model(const std::string& name, const std::map<std::string, std::string>& overrides) {
  const Preset& preset = preset_of(name);
  Experiment e;
  e.model = name;
  for (const auto& [key, value] : overrides) {
    check_known(name, key, preset.keys);
    apply_set(e, key, value);
  }
  return preset.build(name, e.params);
}

}  // namespace models
}  // namespace strata
