// Experiment: one training run as a value — the model and its hyperparameters, the parallel
// strategy, the solver and its settings, the optimizer, dtype, batch, microbatches, iterations,
// epochs and seed. Every strata command builds one (from `--spec FILE.json`, from flags, or
// both: flags override the file), lower() turns it into the Plan both executors run, and every
// output records it with its hash, so any result can be re-run from itself (docs/experiments.md).
//
// What is not in it: where it runs. The simulator's replay options (platform, collectives,
// calibration) and the real executor's settings (device, transport, precision, pinning) stay
// beside it, in sim/ and real_exec/.
//
// The `--set key=value` table: every key any command accepts, with its type, range, unit, help
// text and the models and solvers that take it, lives here (set_keys()), read by ONE strict
// parser (apply_set): the whole string must parse, numbers must be finite and in range, and a
// key the model or solver does not take is refused in one line naming the keys it does take.
//
// JSON (schema_version 1, "format": "strata-experiment"):
//   {"schema_version":1, "format":"strata-experiment",
//    "model": {"name":"gpt3-13b", <model keys given: layers, hidden, ...>},
//    "strategy": {"dp","tp","pp","schedule","bucket_mb","dp_algo","tp_algo","replicas",
//                 memory options where not default: "recompute","recompute_method",
//                 "recompute_blocks","sequence_parallel","zero","offload","interleave","ddp",
//                 "flash_attention", "compression", "topk_ratio", "powersgd_rank", "framework",
//                 and where they differ from its preset "tp_comm", "p2p", "p2p_scatter_gather"},
//    "solver": {"name":"backprop", <the keys of that solver>},
//    "optimizer": {"kind","lr","momentum","beta1","beta2","eps"},
//    "dtype", "global_batch", "microbatches", "iterations", "epochs", "seed"}
// experiment_from_json refuses unknown fields, wrong types and out-of-range values with one line naming
// the JSON pointer (`s.json: /strategy/dp: expected an integer`), and a newer schema_version.
//
// Canonical form (canonical_json): every field present with the defaults filled in (dtype "auto"
// resolved by the model's family, the optimizer's learning rate by default_learning_rate()),
// model keys only where given, keys sorted, numbers printed by nlohmann::json (shortest
// round-trip). experiment_hash() is FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
// 0x100000001b3) over canonical_json().dump(), as 16 lower-case hex digits: it depends on
// nothing but the spec's content.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/optimizer.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace models {

struct Experiment {
  static constexpr int kSchemaVersion = 1;

  std::string model;       // zoo preset (`strata models`); required by lower()
  ModelParameters params;  // the preset's hyperparameters that were changed
  int dp = 1, tp = 1, pp = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  double bucket_mb = 25;  // DP gradient bucket (MB, 10^6 B); 0 = one bucket per block
  CollectiveAlgo dp_algo = CollectiveAlgo::ring;
  CollectiveAlgo tp_algo = CollectiveAlgo::ring;
  int replicas = 0;  // DP replicas lowered (0 = all; StrategyConfig::lowered_replicas)
  // Memory options (StrategyConfig has their meaning). In the JSON and the canonical form only
  // where they differ from these defaults, so that the hash of an experiment without them is
  // the one it had before they existed.
  Recompute recompute = Recompute::none;
  RecomputeMethod recompute_method = RecomputeMethod::uniform;
  int recompute_blocks = 1;
  bool sequence_parallel = false;
  int zero = 0;
  bool offload = false;
  int interleave = 1;
  // Blocks per pipeline stage (StrategyConfig::stage_cuts); unset: the default cut.
  std::optional<std::vector<std::int64_t>> stage_blocks;
  // Tensor-parallel degree per pipeline stage (StrategyConfig::stage_tp); unset: tp everywhere.
  std::optional<std::vector<std::int64_t>> stage_tp;
  // The framework's behaviours (StrategyConfig has their meaning). `framework` is a preset: setting
  // it sets the four below to framework_behaviour(*framework); a key given beside it overrides
  // its item (apply_sets and the JSON reader apply the preset first). In the JSON each item only
  // where it differs from the preset (the newest framework's when none is named).
  std::optional<Framework> framework;
  DdpMode ddp = DdpMode::overlap;
  TpComm tp_comm = TpComm::async;
  P2pMode p2p = P2pMode::async;
  bool p2p_scatter_gather = false;
  bool flash_attention = false;
  Compression compression = Compression::none;  // the DP gradients' codec (docs/compression.md)
  double topk_ratio = 0.01;
  int powersgd_rank = 4;
  SolverConfig solver;  // solver.solver names it; the other fields are its settings
  Optimizer optimizer = Optimizer::adam;
  std::optional<double> learning_rate;  // unset: default_learning_rate()
  double momentum = 0;
  AdamConfig adam;                // betas and eps (its learning_rate is not used)
  std::optional<DType> dtype;     // unset ("auto"): bf16 for GPT, fp32 otherwise
  std::int64_t global_batch = 0;  // samples per iteration; 0 = the model's default
  std::int64_t microbatches = 0;  // per replica and iteration; 0 = pp
  int iterations = 1;             // iterations in the Plan
  int epochs = 5;                 // passes over the data of a real run (strata run)
  std::int64_t seed = 0;

  int workers() const { return dp * tp * pp; }
  bool operator==(const Experiment&) const = default;
};

// ---- the --set table ----

enum class SetKeyType : std::uint8_t {
  integer,     // whole number in [min, max]
  count,       // positive 32-bit whole number (model sizes)
  count_list,  // comma-separated positive whole numbers, at least min_count of them
  real,        // finite number in [min, max] (min exclusive when min_exclusive)
  choice,      // one of `choices`
};
std::string_view to_string(SetKeyType type);  // int | int | int list | real | enum

enum class SetSection : std::uint8_t { model, strategy, solver, optimizer };
std::string_view to_string(SetSection section);

struct SetKey {
  std::string name;
  SetKeyType type = SetKeyType::integer;
  SetSection section = SetSection::model;
  double min = 0, max = 0;     // integer, real
  bool min_exclusive = false;  // real: > min rather than >= min
  bool max_exclusive = false;  // real: < max rather than <= max
  std::size_t min_count = 1;   // count_list
  std::string max_reason;      // said instead of "must be <= max" when set
  std::vector<std::string> choices;
  std::string choice_noun;  // "algorithm", "variant": "unknown algorithm 'x' (known: ...)"
  std::string unit;         // "" for a pure number
  std::string help;
  std::vector<Solver> solvers;      // section solver: the solvers that take it
  std::vector<std::string> models;  // section solver: the models that take it (empty: every model)
  // Not empty: the JSON leaves the key out when its value prints as this (the memory options).
  std::string quiet_default;
};

// Every key, in the order `strata spec --help` lists them.
const std::vector<SetKey>& set_keys();

// The keys an experiment of `model` under `solver` accepts, sorted by name.
std::vector<std::string> accepted_keys(const std::string& model, Solver solver);

// Models (`model` section) or solvers (`solver` section) that take `key`, or "every model/solver".
std::string key_scope(const SetKey& key);

// Parses `value` for `key` and stores it in `e` (the one parser of every --set). Throws
// InputError with one line: an unknown key ("--set foo: unknown key for model 'mlp' with solver
// 'backprop' (known: ...)"), or a value that does not parse or is out of range.
void apply_set(Experiment& e, const std::string& key, const std::string& value);
// "key=value"; InputError for a pair without '='.
void apply_set(Experiment& e, const std::string& pair);
// Several "key=value" pairs: a `framework` preset first, then the others in their order, so that
// an item given beside a preset overrides it wherever it stands in the list.
void apply_sets(Experiment& e, const std::vector<std::string>& pairs);
// The value of `key` in `e` as --set would write it, or "" when unset (for override messages).
std::string set_value_text(const Experiment& e, const std::string& key);

// The table as text: one block per key with type, range, unit, takers and help.
std::string set_keys_help();

// ---- JSON, canonical form, hash ----

nlohmann::json to_json(const Experiment& e);  // every field, as given (unset stays unset)
// Throws InputError "<source>: <pointer>: <problem>".
Experiment experiment_from_json(const nlohmann::json& doc, const std::string& source);
Experiment read_experiment(const std::string& path);

// Defaults filled in (throws InputError for an unknown model).
Experiment resolved(const Experiment& e);
nlohmann::json canonical_json(const Experiment& e);  // to_json(resolved(e)), keys sorted
std::string experiment_hash(const Experiment& e);    // 16 hex digits
std::uint64_t fnv1a64(std::string_view bytes);

// ---- to a Plan ----

Model model_of(const Experiment& e);  // InputError "--model: required" when unset
StrategyConfig strategy_of(const Experiment& e, const Model& model);
OptimizerSettings optimizer_of(const Experiment& e);  // learning rate defaulted
// The one way a Plan is made from a model: make_model + strategy + the solver's lowering, with
// plan.info.experiment_hash set. Throws InputError.
Plan lower(const Experiment& e);
// The same with a symmetry reduction: the tasks of only `symmetric_replicas` data-parallel
// replicas, or of only `symmetric_tp` tensor-parallel ranks of each stage
// (StrategyConfig::symmetric_replicas, symmetric_tp; sim/ decides when that is exact); 0: none.
Plan lower(const Experiment& e, int symmetric_replicas, int symmetric_tp = 0);

}  // namespace models
}  // namespace strata
