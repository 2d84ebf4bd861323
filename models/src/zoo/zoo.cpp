// Model totals, the preset table, --set overrides and the synthetic anchor workload.
// The vision presets are built in zoo_vision.cpp, the GPT family in zoo_gpt.cpp.
#include "strata/models/zoo/zoo.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>

#include "strata/traces/error.hpp"

namespace strata {
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

// The --set values given for one model. Construction rejects keys the model does not know,
// so a typo never silently leaves a preset unchanged.
class Overrides {
 public:
  Overrides(const std::string& model, const std::map<std::string, std::string>& values,
            const std::vector<std::string>& known)
      : values_(values) {
    for (const auto& [key, value] : values) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      throw InputError("--set " + key + ": unknown hyperparameter for model '" + model + "' (" +
                       (known.empty() ? std::string("it has none") : "known: " + join(known)) + ")");
    }
  }

  std::int32_t positive_int(const std::string& key, std::int32_t fallback) const {
    auto it = values_.find(key);
    if (it == values_.end()) return fallback;
    return parse_positive(key, it->second, it->second);
  }

  // A comma-separated list of at least `min_count` positive integers, e.g. sizes=784,256,10.
  std::vector<std::int64_t> int_list(const std::string& key, std::vector<std::int64_t> fallback,
                                     std::size_t min_count) const {
    auto it = values_.find(key);
    if (it == values_.end()) return fallback;
    std::vector<std::int64_t> out;
    std::string_view rest = it->second;
    while (true) {
      auto comma = rest.find(',');
      out.push_back(parse_positive(key, it->second, rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (out.size() < min_count)
      fail(key, it->second, "needs at least " + std::to_string(min_count) + " values");
    return out;
  }

  [[noreturn]] static void fail(const std::string& key, const std::string& value,
                                const std::string& problem) {
    throw InputError("--set " + key + "=" + value + ": " + problem);
  }

 private:
  static std::int32_t parse_positive(const std::string& key, const std::string& value,
                                     std::string_view text) {
    std::int64_t number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || number <= 0 ||
        number > std::numeric_limits<std::int32_t>::max())
      fail(key, value, std::string("'").append(text) + "' is not a positive integer");
    return static_cast<std::int32_t>(number);
  }

  const std::map<std::string, std::string>& values_;
};

Model build_gpt(const std::string& name, const Overrides& set, const GptConfig& preset) {
  GptConfig config;
  config.layers = set.positive_int("layers", preset.layers);
  config.hidden = set.positive_int("hidden", preset.hidden);
  config.heads = set.positive_int("heads", preset.heads);
  config.seq = set.positive_int("seq", preset.seq);
  config.vocab = set.positive_int("vocab", preset.vocab);
  if (config.hidden % config.heads != 0)
    Overrides::fail("hidden", std::to_string(config.hidden),
                    "not divisible by heads (" + std::to_string(config.heads) + ")");
  return make_gpt(name, config);
}

// Vision inputs shrink by a fixed factor through the network; `multiple` keeps every
// stride-2 stage exact.
std::int32_t image_side(const Overrides& set, std::int32_t fallback, std::int32_t multiple,
                        std::int32_t minimum, const std::string& model) {
  std::int32_t side = set.positive_int("image", fallback);
  if (side % multiple != 0 || side < minimum)
    Overrides::fail("image", std::to_string(side),
                    model + " needs a multiple of " + std::to_string(multiple) + " of at least " +
                        std::to_string(minimum));
  return side;
}

using Build = Model (*)(const std::string& name, const Overrides& set);

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
       [](const std::string& name, const Overrides& set) {
         return make_mlp(name, set.int_list("sizes", {784, 256, 128, 10}, 2));
       }},
      {"lenet5",
       {"image"},
       [](const std::string&, const Overrides& set) {
         return make_lenet5(image_side(set, 28, 4, 12, "lenet5"));
       }},
      {"vgg16",
       {"image"},
       [](const std::string&, const Overrides& set) {
         return make_vgg16(image_side(set, 224, 32, 32, "vgg16"));
       }},
      {"resnet50",
       {"image"},
       [](const std::string&, const Overrides& set) {
         return make_resnet50(image_side(set, 224, 32, 32, "resnet50"));
       }},
      {"gpt2-small", kGptKeys,
       [](const std::string& name, const Overrides& set) {
         return build_gpt(name, set, {12, 768, 12, 1024, 50257});
       }},
      {"gpt3-1.3b", kGptKeys,
       [](const std::string& name, const Overrides& set) {
         return build_gpt(name, set, {24, 2048, 16, 2048, 50257});
       }},
      // GPT-3's table gives d_model 5140 with 40 heads; 5120 (as Megatron uses) divides evenly.
      {"gpt3-13b", kGptKeys,
       [](const std::string& name, const Overrides& set) {
         return build_gpt(name, set, {40, 5120, 40, 2048, 50257});
       }},
      {"gpt3-175b", kGptKeys,
       [](const std::string& name, const Overrides& set) {
         return build_gpt(name, set, {96, 12288, 96, 2048, 50257});
       }},
      {"anchor-96",
       {"layers"},
       [](const std::string& name, const Overrides& set) {
         return make_anchor(name, set.positive_int("layers", 96));
       }},
      {"gcn",
       {"sizes", "nodes", "avg_degree"},
       [](const std::string& name, const Overrides& set) {
         const GcnConfig preset;
         GcnConfig config;
         config.sizes = set.int_list("sizes", preset.sizes, 2);
         config.nodes = set.positive_int("nodes", static_cast<std::int32_t>(preset.nodes));
         config.avg_degree = set.positive_int("avg_degree", preset.avg_degree);
         if (config.avg_degree >= config.nodes)
           Overrides::fail(
               "avg_degree", std::to_string(config.avg_degree),
               "a node has at most nodes - 1 = " + std::to_string(config.nodes - 1) + " neighbours");
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

Model make_model(const std::string& name, const std::map<std::string, std::string>& overrides) {
  for (const auto& preset : presets()) {
    if (preset.name != name) continue;
    Overrides set(name, overrides, preset.keys);
    return preset.build(name, set);
  }
  throw InputError("unknown model '" + name + "' (known: " + join(zoo_names()) + ")");
}

}  // namespace strata
