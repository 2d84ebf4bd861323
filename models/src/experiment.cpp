// Experiment: defaults, canonical form and hash, and lower() — the one way from an experiment to
// a Plan. The --set table is in experiment/set_table.cpp, JSON in experiment/experiment_json.cpp.
#include "strata/models/experiment.hpp"

#include <algorithm>
#include <cstdio>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

double default_learning_rate(Optimizer kind, bool gcn) { return gcn || kind == Optimizer::sgd ? 0.01 : 1e-3; }

Model model_of(const Experiment& e) {
  if (e.model.empty()) throw InputError("--model: required (see `strata models`)");
  return make_preset(e.model, e.params);
}

Experiment resolved(const Experiment& e) {
  Experiment r = e;
  const Model model = model_of(e);
  if (!r.dtype) r.dtype = model.family == "gpt" ? DType::bf16 : DType::fp32;
  if (!r.learning_rate) r.learning_rate = default_learning_rate(r.optimizer, model.family == "gcn");
  return r;
}

nlohmann::json canonical_json(const Experiment& e) { return to_json(resolved(e)); }

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string experiment_hash(const Experiment& e) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a64(canonical_json(e).dump())));
  return hex;
}

StrategyConfig strategy_of(const Experiment& e, const Model& model) {
  StrategyConfig c;
  c.dp = e.dp, c.tp = e.tp, c.pp = e.pp;
  c.schedule = e.schedule;
  c.microbatches = e.microbatches;
  c.global_batch = e.global_batch;
  c.dtype = e.dtype ? *e.dtype : (model.family == "gpt" ? DType::bf16 : DType::fp32);
  c.optimizer = e.optimizer;
  c.seed = e.seed;
  c.iterations = e.iterations;
  c.bucket_bytes = e.bucket_mb * 1e6;
  c.dp_algo = e.dp_algo;
  c.tp_algo = e.tp_algo;
  c.lowered_replicas = e.replicas;
  c.recompute = e.recompute;
  c.recompute_method = e.recompute_method;
  c.recompute_blocks = e.recompute_blocks;
  c.sequence_parallel = e.sequence_parallel;
  c.zero = e.zero;
  c.offload = e.offload;
  c.interleave = e.interleave;
  if (e.stage_blocks) {
    c.stage_cuts.push_back(0);
    for (std::int64_t b : *e.stage_blocks)
      c.stage_cuts.push_back(c.stage_cuts.back() + static_cast<int>(std::min<std::int64_t>(b, 1 << 30)));
  }
  if (e.stage_tp)
    for (std::int64_t degree : *e.stage_tp)
      c.stage_tp.push_back(static_cast<int>(std::min<std::int64_t>(degree, 1 << 30)));
  c.ddp = e.ddp;
  c.tp_comm = e.tp_comm;
  c.p2p = e.p2p;
  c.p2p_scatter_gather = e.p2p_scatter_gather;
  c.framework = e.framework.value_or(kNewestFramework);
  c.flash_attention = e.flash_attention;
  c.compression = e.compression;
  c.topk_ratio = e.topk_ratio;
  c.powersgd_rank = e.powersgd_rank;
  return c;
}

OptimizerSettings optimizer_of(const Experiment& e) {
  const Experiment r = resolved(e);
  OptimizerSettings s;
  s.kind = r.optimizer;
  s.learning_rate = *r.learning_rate;
  s.momentum = r.momentum;
  s.adam = r.adam;
  return s;
}

Plan lower(const Experiment& e) { return lower(e, 0); }

Plan lower(const Experiment& e, int symmetric_replicas, int symmetric_tp) {
  const Model model = model_of(e);
  SolverConfig solver = e.solver;
  Plan plan = lower_solver(
      model,
      with_symmetric_tp(with_symmetric_replicas(strategy_of(e, model), symmetric_replicas), symmetric_tp),
      solver);
  plan.info.experiment_hash = experiment_hash(e);
  return plan;
}

}  // namespace models
}  // namespace strata
