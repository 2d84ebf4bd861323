// The reference drivers of reference/gcn_train.hpp: full-batch GCN training and GIST rounds,
// built from the kernels of kernels/gcn.hpp and the one forward/backward pass they share.
#include "strata/real/reference/gcn_train.hpp"

#include <exception>
#include <string>
#include <thread>

#include "../kernels/gcn_math.hpp"
#include "../kernels/gcn_pass.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {

using gcn_detail::bad_input;
using gcn_detail::check_sites;
using gcn_detail::GcnPass;

template <typename T>
std::vector<double> train_gcn(Backend& backend, const GcnData<T>& data, GcnParameters<T>& params,
                              const GcnTrainConfig& config) {
  if (config.steps < 0)
    bad_input("GCN training", "steps = " + std::to_string(config.steps) + " must be >= 0");
  GcnPass<T> pass;
  GcnParameters<T> grads;
  GcnAdamState<T> state;
  std::vector<double> losses;
  for (std::int64_t s = 0; s < config.steps; ++s) {
    losses.push_back(static_cast<double>(pass.loss_and_gradients(backend, data, params, grads)));
    adam_update(config.adam, grads, state, params);
  }
  return losses;
}

template <typename T>
std::vector<double> gist_local_train(Backend& backend, const GcnData<T>& data, GcnParameters<T>& sub,
                                     std::int64_t local_steps, const AdamConfig& adam) {
  if (local_steps < 1) bad_input("GIST", "local steps ζ = " + std::to_string(local_steps) + " must be >= 1");
  return train_gcn(backend, data, sub, GcnTrainConfig{local_steps, adam});
}

void check_gist_config(const GistConfig& config, const std::vector<std::int64_t>& widths) {
  if (config.local_steps < 1) {
    bad_input("GIST", "local steps ζ = " + std::to_string(config.local_steps) + " must be >= 1");
  }
  if (config.rounds < 0) bad_input("GIST", "rounds = " + std::to_string(config.rounds) + " must be >= 0");
  if (widths.size() < 3) bad_input("GIST", "needs a GCN with at least one hidden layer");
  check_sites(config.sites, std::span<const std::int64_t>(widths).subspan(1, widths.size() - 2));
}

template <typename T>
GistRoundResult gist_round(Backend& backend, const GcnData<T>& data, GcnParameters<T>& global,
                           const GistConfig& config, std::int64_t round) {
  const std::vector<std::int64_t> widths = global.widths();
  const std::vector<std::int64_t> hidden(widths.begin() + 1, widths.end() - 1);
  GistRoundResult result;
  result.partition =
      random_hidden_partition(hidden, config.sites, mix_seed(config.seed, static_cast<std::uint64_t>(round)));
  const auto m = static_cast<std::size_t>(config.sites);
  std::vector<GcnParameters<T>> subs(m);
  std::vector<std::vector<double>> losses(m);
  std::vector<std::exception_ptr> errors(m);
  for (std::size_t i = 0; i < m; ++i)
    subs[i] = extract_subgcn(global, result.partition, static_cast<std::int64_t>(i));
  auto train_site = [&](std::size_t i) {
    try {
      losses[i] = gist_local_train(backend, data, subs[i], config.local_steps, config.adam);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (config.parallel_sites) {
    std::vector<std::thread> workers;
    for (std::size_t i = 1; i < m; ++i) workers.emplace_back(train_site, i);
    train_site(0);
    for (auto& w : workers) w.join();
  } else {
    for (std::size_t i = 0; i < m; ++i) train_site(i);
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  for (std::size_t i = 0; i < m; ++i) {
    write_back_subgcn(global, result.partition, static_cast<std::int64_t>(i), subs[i]);
    result.site_final_loss.push_back(losses[i].back());
    result.slice_bytes.push_back(subs[i].bytes());
  }
  average_shared<T>(global, subs);
  return result;
}

template <typename T>
std::vector<GistRoundResult> gist_train(Backend& backend, const GcnData<T>& data, GcnParameters<T>& global,
                                        const GistConfig& config) {
  check_gist_config(config, global.widths());
  std::vector<GistRoundResult> rounds;
  for (std::int64_t r = 0; r < config.rounds; ++r)
    rounds.push_back(gist_round(backend, data, global, config, r));
  return rounds;
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                               \
  template std::vector<double> train_gcn<T>(Backend&, const GcnData<T>&, GcnParameters<T>&,                 \
                                            const GcnTrainConfig&);                                         \
  template std::vector<double> gist_local_train<T>(Backend&, const GcnData<T>&, GcnParameters<T>&,          \
                                                   std::int64_t, const AdamConfig&);                        \
  template GistRoundResult gist_round<T>(Backend&, const GcnData<T>&, GcnParameters<T>&, const GistConfig&, \
                                         std::int64_t);                                                     \
  template std::vector<GistRoundResult> gist_train<T>(Backend&, const GcnData<T>&, GcnParameters<T>&,       \
                                                      const GistConfig&);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
