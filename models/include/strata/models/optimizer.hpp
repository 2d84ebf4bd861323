// The optimizer of a training run: which update rule and its settings, one type for the whole
// tool. The simulator reads only the kind (optimizer_state_bytes_per_param, the optimizer-step
// tasks' attributes); the real executor (real_exec/, which names this type
// real::OptimizerSettings) applies every field.
//
// Defaults are PyTorch's: SGD without momentum, Adam with betas (0.9, 0.999) and eps 1e-8. The
// learning rate an Experiment does not give is default_learning_rate(): 0.01 for SGD, 1e-3 for
// Adam, 0.01 for a GCN (gcn.hpp's Adam step, Kipf & Welling 2017).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {
inline namespace models {

enum class Optimizer : std::uint8_t { sgd, adam };
std::string_view to_string(Optimizer optimizer);                  // sgd | adam
std::optional<Optimizer> parse_optimizer(std::string_view name);  // sgd | adam

// Adam (Kingma & Ba 2015, Algorithm 1, with bias correction). The real executor's kernels take
// it whole; inside OptimizerSettings its learning_rate is ignored (the settings' own wins).
struct AdamConfig {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  // Written out: this header is also compiled as CUDA C++17, without defaulted comparisons.
  friend bool operator==(const AdamConfig& a, const AdamConfig& b) {
    return a.learning_rate == b.learning_rate && a.beta1 == b.beta1 && a.beta2 == b.beta2 && a.eps == b.eps;
  }
};

struct OptimizerSettings {
  Optimizer kind = Optimizer::adam;
  double learning_rate = 1e-3;  // Adam's default; SGD runs usually set 0.01–0.1
  double momentum = 0.0;        // SGD only
  AdamConfig adam;              // betas and eps (learning_rate above wins)
};

// The learning rate of `kind` when none is given; `gcn` for a GCN model (family "gcn").
double default_learning_rate(Optimizer kind, bool gcn = false);

}  // namespace models
}  // namespace strata
