// The reference drivers of GCN and GIST training: full-batch Adam (train_gcn) and GIST's rounds
// (the paper's Algorithm 1, see strata/real/kernels/gcn.hpp), built from the kernels there. They
// serve as test oracles: a GCN or GIST Plan run through the Interpreter (train/gcn_plan.hpp) must
// give their weights to rounding (gcn_plan_test.cpp).
//
// Determinism: round r partitions with mix_seed(GistConfig::seed, r); sites run on std::threads
// (parallel_sites) give results identical to sites run in sequence.
// Errors: bad hyperparameters (m < 1, m larger than a hidden width, ζ < 1, rounds or steps < 0)
// throw InputError with one line. Ownership: functions borrow their arguments for the call.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/real/core/backend.hpp"
#include "strata/real/kernels/gcn.hpp"
#include "strata/real/kernels/kernels.hpp"

namespace strata::real {

struct GcnTrainConfig {
  std::int64_t steps = 100;
  AdamConfig adam{.learning_rate = 0.01};
};

// Full-batch Adam from a fresh optimizer state; returns the training loss before each step.
template <typename T>
std::vector<double> train_gcn(Backend& backend, const GcnData<T>& data, GcnParameters<T>& params,
                              const GcnTrainConfig& config);

// ζ local Adam steps on the sub-GCN with a fresh optimizer state; returns the loss before each.
template <typename T>
std::vector<double> gist_local_train(Backend& backend, const GcnData<T>& data, GcnParameters<T>& sub,
                                     std::int64_t local_steps, const AdamConfig& adam);

struct GistConfig {
  std::int64_t sites = 2;         // m
  std::int64_t local_steps = 10;  // ζ
  std::int64_t rounds = 20;
  AdamConfig adam{.learning_rate = 0.01};
  std::uint64_t seed = 1;       // round r partitions with mix_seed(seed, r)
  bool parallel_sites = false;  // one std::thread per site instead of one after another
};

// Throws InputError with one line if config is unusable for a GCN of these widths.
void check_gist_config(const GistConfig& config, const std::vector<std::int64_t>& widths);

struct GistRoundResult {
  HiddenPartition partition;
  std::vector<double> site_final_loss;    // per site, the loss before its last local step
  std::vector<std::int64_t> slice_bytes;  // per site, the bytes sent each way
};

// One round (steps 1-4 of kernels/gcn.hpp's GIST) on `global`. REQUIRES: check_gist_config passed.
template <typename T>
GistRoundResult gist_round(Backend& backend, const GcnData<T>& data, GcnParameters<T>& global,
                           const GistConfig& config, std::int64_t round);

// config.rounds rounds; checks the config first. Returns each round's result.
template <typename T>
std::vector<GistRoundResult> gist_train(Backend& backend, const GcnData<T>& data, GcnParameters<T>& global,
                                        const GistConfig& config);

}  // namespace strata::real
