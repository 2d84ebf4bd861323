// strata models: the zoo with parameters, FLOPs and activations.
#include <cstdio>

#include "commands.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata::cli {

void add_models_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("models", "list the model zoo with parameters, FLOPs and activations");
  cmd->callback([&action] {
    action = [] {
      std::printf("%-12s %-9s %12s %16s %16s %8s %18s\n", "model", "family", "params(M)", "fwd GFLOP/sample",
                  "model FLOP/token", "tokens", "activations(MB/sample)");
      for (const std::string& name : zoo_names()) {
        Model m = make_model(name);
        const int bytes = m.family == "gpt" ? 2 : 4;
        std::printf("%-12s %-9s %12.3f %16.4f %16.4g %8lld %18.3f\n", m.name.c_str(), m.family.c_str(),
                    m.params() / 1e6, m.fwd_flops_per_sample() / 1e9, m.model_flops_per_token(),
                    static_cast<long long>(m.seq), m.activation_elems_per_sample() * bytes / 1e6);
      }
      std::printf("activations: elements kept for backward, at bf16 for GPT and fp32 otherwise\n");
      return 0;
    };
  });
}

}  // namespace strata::cli
