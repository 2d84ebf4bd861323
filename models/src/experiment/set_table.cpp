// The --set table (every key any command accepts) and its one strict text parser.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>

#include "set_table.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace detail {
namespace {

constexpr double kMaxInt = 1e9;
const std::vector<std::string> kTpAlgorithmNames = {"ring", "tree", "halving_doubling", "hierarchical"};
// The data-parallel exchange: every algorithm of traces/task.hpp, the object store's, the cache
// VM's and the parameter server's too (docs/serverless.md).
std::vector<std::string> dp_algorithm_names() {
  std::vector<std::string> names;
  for (auto a = static_cast<int>(CollectiveAlgo::ring);
       a <= static_cast<int>(CollectiveAlgo::parameter_server); ++a)
    names.emplace_back(to_string(static_cast<CollectiveAlgo>(a)));
  return names;
}
const std::vector<std::string> kAlgorithmNames = dp_algorithm_names();
const std::vector<Solver> kAdmmSolvers = {Solver::dladmm, Solver::pdadmm, Solver::pdadmm_g_q};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

SetKey model_count(std::string name, std::string unit, std::string help) {
  SetKey k;
  k.name = std::move(name), k.type = SetKeyType::count, k.section = SetSection::model;
  k.min = 1, k.max = std::numeric_limits<std::int32_t>::max();
  k.unit = std::move(unit), k.help = std::move(help);
  return k;
}

SetKey integer(std::string name, SetSection section, double min, std::string unit, std::string help,
               std::vector<Solver> solvers = {}) {
  SetKey k;
  k.name = std::move(name), k.type = SetKeyType::integer, k.section = section;
  k.min = min, k.max = kMaxInt, k.unit = std::move(unit), k.help = std::move(help);
  k.solvers = std::move(solvers);
  return k;
}

SetKey real(std::string name, SetSection section, double min, bool min_exclusive, double max,
            bool max_exclusive, std::string unit, std::string help, std::vector<Solver> solvers = {}) {
  SetKey k;
  k.name = std::move(name), k.type = SetKeyType::real, k.section = section;
  k.min = min, k.min_exclusive = min_exclusive, k.max = max, k.max_exclusive = max_exclusive;
  k.unit = std::move(unit), k.help = std::move(help), k.solvers = std::move(solvers);
  return k;
}

SetKey choice(std::string name, SetSection section, std::vector<std::string> choices, std::string noun,
              std::string help, std::vector<Solver> solvers = {}) {
  SetKey k;
  k.name = std::move(name), k.type = SetKeyType::choice, k.section = section;
  k.choices = std::move(choices), k.choice_noun = std::move(noun), k.help = std::move(help);
  k.solvers = std::move(solvers);
  return k;
}

std::vector<SetKey> make_table() {
  std::vector<SetKey> t;
  t.push_back(model_count("layers", "layers", "transformer blocks (gpt), fixed layers (anchor-96)"));
  t.push_back(model_count("hidden", "units", "hidden width (gpt); must divide by heads"));
  t.push_back(model_count("heads", "heads", "attention heads (gpt)"));
  t.push_back(model_count("seq", "tokens", "sequence length (gpt)"));
  t.push_back(model_count("vocab", "tokens", "vocabulary size (gpt)"));
  SetKey sizes;
  sizes.name = "sizes", sizes.type = SetKeyType::count_list, sizes.section = SetSection::model;
  sizes.min = 1, sizes.max = std::numeric_limits<std::int32_t>::max(), sizes.min_count = 2;
  sizes.unit = "units", sizes.help = "layer widths, input first, e.g. 784,256,10 (mlp, gcn)";
  t.push_back(sizes);
  t.push_back(model_count("image", "pixels", "side of the square input image (vision models)"));
  t.push_back(model_count("nodes", "nodes", "graph nodes (gcn)"));
  t.push_back(model_count("avg_degree", "neighbours", "mean neighbours per node (gcn), below nodes"));
  SetKey edges = model_count("edges", "edges", "undirected graph edges (gcn), instead of avg_degree");
  edges.max = 1e15;
  t.push_back(edges);
  SetKey exponent =
      real("exponent", SetSection::model, 2, true, 100, false, "",
           "degree distribution exponent of the power-law graph a partitioned GCN splits (gcn)");
  t.push_back(exponent);
  t.push_back(real("bucket_mb", SetSection::strategy, 0, false, 1e6, false, "MB",
                   "data-parallel gradient bucket (10^6 B); 0 = one bucket per block"));
  t.push_back(choice("dp_algo", SetSection::strategy, kAlgorithmNames, "algorithm",
                     "data-parallel allreduce algorithm"));
  t.push_back(choice("tp_algo", SetSection::strategy, kTpAlgorithmNames, "algorithm",
                     "tensor-parallel allreduce algorithm"));
  t.push_back(integer("replicas", SetSection::strategy, 0, "replicas",
                      "data-parallel replicas lowered (0 = all; the rest assumed identical)"));
  t.push_back(choice("recompute", SetSection::strategy, {"none", "selective", "full"}, "recomputation",
                     "activation recomputation: selective re-runs the attention core, full whole blocks"));
  t.push_back(choice("recompute_method", SetSection::strategy, {"uniform", "block"}, "method",
                     "full recomputation: uniform chunks of recompute_blocks blocks, or the first "
                     "recompute_blocks blocks of each stage (Megatron's --recompute-method)"));
  t.push_back(integer("recompute_blocks", SetSection::strategy, 1, "blocks",
                      "blocks per recomputed chunk (uniform) or recomputed per stage (block)"));
  SetKey sp =
      integer("sequence_parallel", SetSection::strategy, 0, "",
              "Megatron sequence parallelism: 1 = on (TP allreduces become reduce-scatter + all-gather)");
  sp.max = 1, sp.max_reason = "0 (off) or 1 (on)";
  t.push_back(sp);
  SetKey zero = integer("zero", SetSection::strategy, 0, "stage",
                        "ZeRO stage: 1 optimizer states, 2 + gradients, 3 + parameters sharded over dp");
  zero.max = 3, zero.max_reason = "ZeRO stages are 0, 1, 2 and 3";
  t.push_back(zero);
  SetKey offload = integer("offload", SetSection::strategy, 0, "",
                           "1 = optimizer states and step in host memory (ZeRO-Offload; needs zero >= 1)");
  offload.max = 1, offload.max_reason = "0 (off) or 1 (on)";
  t.push_back(offload);
  t.push_back(integer("interleave", SetSection::strategy, 1, "chunks",
                      "model chunks per device for interleaved 1F1B (1 = plain 1F1B)"));
  t.push_back(choice("framework", SetSection::strategy, {"megatron-2021", "megatron-2022", "megatron-core"},
                     "framework",
                     "preset of ddp, tp_comm, p2p and p2p_scatter_gather as that Megatron-LM runs them "
                     "(docs/cost-model.md); keys given beside it override it; none: megatron-core"));
  t.push_back(
      choice("ddp", SetSection::strategy, {"overlap", "after_flush"}, "mode",
             "data-parallel reduction: DDP buckets overlapped with backward, or all after the flush"));
  t.push_back(choice("tp_comm", SetSection::strategy, {"sync", "async"}, "mode",
                     "tensor-parallel collectives: sync on the compute stream, or async beside it (the "
                     "backward all-reduce of dX overlaps the weight-gradient GEMM)"));
  t.push_back(choice("p2p", SetSection::strategy, {"blocking", "async"}, "mode",
                     "pipeline sends and receives: blocking the compute stream until done, or beside it"));
  SetKey scatter = integer("p2p_scatter_gather", SetSection::strategy, 0, "",
                           "1 = each tensor-parallel rank sends 1/t of a pipeline transfer and the "
                           "receiving stage all-gathers it (Megatron-LM's scatter-gather)");
  scatter.max = 1, scatter.max_reason = "0 (off) or 1 (on)";
  t.push_back(scatter);
  SetKey flash = integer("flash_attention", SetSection::strategy, 0, "",
                         "1 = FlashAttention: fused attention core, no s x s activations kept");
  flash.max = 1, flash.max_reason = "0 (off) or 1 (on)";
  t.push_back(flash);
  t.push_back(choice("compression", SetSection::strategy, {"none", "int8", "fp8", "topk", "powersgd"},
                     "codec",
                     "data-parallel gradient compression, with error feedback (docs/compression.md)"));
  t.push_back(real("topk_ratio", SetSection::strategy, 0, true, 1, false, "",
                   "compression=topk: fraction of each gradient bucket's values sent"));
  t.push_back(
      integer("powersgd_rank", SetSection::strategy, 1, "",
              "compression=powersgd: rank r of the factors, at most min(m, n) of every weight matrix"));
  SetKey stage_blocks;
  stage_blocks.name = "stage_blocks", stage_blocks.type = SetKeyType::count_list;
  stage_blocks.section = SetSection::strategy;
  stage_blocks.min = 1, stage_blocks.max = std::numeric_limits<std::int32_t>::max(),
  stage_blocks.min_count = 1;
  stage_blocks.unit = "blocks";
  stage_blocks.help =
      "blocks per pipeline stage, first stage first (pp of them, summing to the model's blocks); "
      "--partition balanced sets it (docs/scheduling.md)";
  t.push_back(stage_blocks);
  SetKey stage_tp = stage_blocks;
  stage_tp.name = "stage_tp";
  stage_tp.unit = "ranks";
  stage_tp.help =
      "tensor-parallel degree per pipeline stage, first stage first (pp of them, each dividing the "
      "heads; replaces tp); --partition balanced sets it with tp > 1 (docs/scheduling.md)";
  t.push_back(stage_tp);
  // The memory options above are written to JSON only where they differ from these defaults.
  const std::map<std::string, std::string> quiet_defaults = {{"recompute", "none"},
                                                             {"recompute_method", "uniform"},
                                                             {"recompute_blocks", "1"},
                                                             {"sequence_parallel", "0"},
                                                             {"zero", "0"},
                                                             {"offload", "0"},
                                                             {"interleave", "1"},
                                                             {"flash_attention", "0"},
                                                             {"compression", "none"},
                                                             {"topk_ratio", "0.01"},
                                                             {"powersgd_rank", "4"}};
  for (SetKey& key : t)
    if (auto it = quiet_defaults.find(key.name); it != quiet_defaults.end()) key.quiet_default = it->second;
  t.push_back(integer("max_active_keys", SetSection::solver, 1, "instances", "AMPNet instances in flight",
                      {Solver::ampnet}));
  t.push_back(integer("min_update_frequency", SetSection::solver, 1, "gradients",
                      "gradients a node accumulates before its step", {Solver::ampnet}));
  t.push_back(integer("instances", SetSection::solver, 1, "instances", "minibatches per Plan",
                      {Solver::ampnet, Solver::local, Solver::block_admm, Solver::serial_parallel}));
  t.push_back(integer("chunks", SetSection::solver, 1, "chunks", "chunks with local heads", {Solver::local}));
  t.push_back(choice("variant", SetSection::solver, {"greedy", "chunked", "overlapping"}, "variant",
                     "local parallelism variant", {Solver::local}));
  t.push_back(real(
      "rho", SetSection::solver, 0, true, 1e12, false, "",
      "ADMM penalty on p = q; block-admm, serial-parallel: per-sample penalty on z_b = "
      "f_b(z_b-1), default 1",
      {Solver::dladmm, Solver::pdadmm, Solver::pdadmm_g_q, Solver::block_admm, Solver::serial_parallel}));
  t.push_back(real("nu", SetSection::solver, 0, true, 1e12, false, "", "ADMM penalty on the layer equations",
                   kAdmmSolvers));
  t.push_back(
      integer("admm_iterations", SetSection::solver, 1, "sweeps", "ADMM sweeps per Plan", kAdmmSolvers));
  SetKey bits =
      integer("quant_bits", SetSection::solver, 1, "bits", "grid of the quantized p", {Solver::pdadmm_g_q});
  bits.max = 8, bits.max_reason = "p is sent as int8, so at most 8 bits";
  t.push_back(bits);
  t.push_back(
      integer("m", SetSection::solver, 1, "sub-GCNs", "sub-GCNs per round, one per worker", {Solver::gist}));
  t.push_back(
      integer("zeta", SetSection::solver, 1, "steps", "full-graph local steps per round", {Solver::gist}));
  // The graph keys stay out of an Experiment's JSON at their defaults: Experiments written
  // before them keep their content hash.
  SetKey parts = integer("parts", SetSection::solver, 1, "parts",
                         "graph parts per sub-GCN, one worker each (workers = m x parts)", {Solver::gist});
  parts.quiet_default = "1";
  t.push_back(parts);
  SetKey partitioner = choice("partitioner", SetSection::solver, {"streaming", "metis"}, "partitioner",
                              "how a split GCN graph is partitioned: Fennel streaming or METIS k-way",
                              {Solver::backprop, Solver::gist});
  partitioner.quiet_default = "streaming";
  partitioner.models = {"gcn"};
  t.push_back(partitioner);
  SetKey sample = integer("sample_nodes", SetSection::solver, 2, "nodes",
                          "largest graph partitioned whole; larger ones are scaled from a sample this size",
                          {Solver::backprop, Solver::gist});
  sample.max = 1 << 26;
  sample.max_reason = "a sample is drawn and partitioned in memory";
  sample.quiet_default = "131072";
  sample.models = {"gcn"};
  t.push_back(sample);
  SetKey fanout;
  fanout.name = "fanout", fanout.type = SetKeyType::count_list, fanout.section = SetSection::solver;
  fanout.min = 1, fanout.max = std::numeric_limits<std::int32_t>::max(), fanout.min_count = 1;
  fanout.unit = "neighbours";
  fanout.help = "GraphSAGE minibatches: neighbours sampled per node at each hop from the targets, e.g. 25,10";
  fanout.solvers = {Solver::backprop};
  fanout.models = {"gcn"};
  t.push_back(fanout);
  t.push_back(integer("blocks", SetSection::solver, 1, "blocks",
                      "blocks joined by auxiliary variables (default: workers)", {Solver::block_admm}));
  t.push_back(integer("inner_steps", SetSection::solver, 1, "steps",
                      "ADMM steps per minibatch (default: blocks)", {Solver::block_admm}));
  t.push_back(real("z_lr", SetSection::solver, 0, true, 1e6, false, "",
                   "step size of the auxiliary variables' proximal update",
                   {Solver::block_admm, Solver::serial_parallel}));
  t.push_back(choice("setting", SetSection::solver, {"online", "batch"}, "setting",
                     "online: z, lambda afresh per minibatch; batch: kept per training sample",
                     {Solver::block_admm}));
  t.push_back(integer("train_samples", SetSection::solver, 1, "samples",
                      "batch setting: training samples the per-sample stores hold",
                      {Solver::block_admm, Solver::serial_parallel}));
  t.push_back(choice("method", SetSection::solver, {"penalty", "al"}, "method",
                     "serial-parallel sub-problems: penalty (duals 0) or al (augmented Lagrangian)",
                     {Solver::serial_parallel}));
  t.push_back(integer("correction_period", SetSection::solver, 1, "minibatches",
                      "a serial forward-backward pass every N minibatches (1: backprop; default 4)",
                      {Solver::serial_parallel}));
  // Out of an Experiment's JSON at its default, as the graph keys: hashes written before it hold.
  SetKey warmup = integer("warmup_epochs", SetSection::solver, 0, "epochs",
                          "strata run: the first N epochs all serial corrections, filling every stored state "
                          "(default 0)",
                          {Solver::serial_parallel});
  warmup.quiet_default = "0";
  t.push_back(warmup);
  t.push_back(integer("downsample", SetSection::solver, 1, "",
                      "auxiliary states cross workers average-pooled over d x d (bytes / d^2; default 1)",
                      {Solver::serial_parallel}));
  t.push_back(real("lr", SetSection::optimizer, 0, false, 1e3, false, "",
                   "learning rate (default 0.01 sgd, 1e-3 adam, 0.01 for a GCN)"));
  t.push_back(real("momentum", SetSection::optimizer, 0, false, 1, true, "", "SGD momentum"));
  t.push_back(real("beta1", SetSection::optimizer, 0, false, 1, true, "", "Adam's first-moment decay"));
  t.push_back(real("beta2", SetSection::optimizer, 0, false, 1, true, "", "Adam's second-moment decay"));
  t.push_back(real("eps", SetSection::optimizer, 0, true, 1, false, "", "Adam's denominator term"));
  return t;
}

// `--set rho` is the per-sample penalty of Block-ADMM and the serial-parallel hybrid, the ADMM
// family's otherwise.
bool per_sample_rho(const Experiment& e) {
  return e.solver.solver == Solver::block_admm || e.solver.solver == Solver::serial_parallel;
}

// How each key reads and writes its field of an Experiment.
struct Access {
  std::function<std::optional<SetValue>(const Experiment&)> get;
  std::function<void(Experiment&, const SetValue&)> put;
};

template <typename T>
Access model_int(std::optional<T> ModelParameters::*field) {
  return {[field](const Experiment& e) -> std::optional<SetValue> {
            const auto& v = e.params.*field;
            return v ? std::optional<SetValue>(static_cast<std::int64_t>(*v)) : std::nullopt;
          },
          [field](Experiment& e, const SetValue& v) {
            e.params.*field = static_cast<T>(std::get<std::int64_t>(v));
          }};
}

template <typename T, typename Owner>
Access number(T Owner::*field, Owner Experiment::*owner) {
  using Stored = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;
  return {[field, owner](const Experiment& e) -> std::optional<SetValue> {
            return SetValue(static_cast<Stored>(e.*owner.*field));
          },
          [field, owner](Experiment& e, const SetValue& v) {
            e.*owner.*field = static_cast<T>(std::get<Stored>(v));
          }};
}

template <typename T>
Access top(T Experiment::*field) {
  using Stored = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;
  return {[field](const Experiment& e) -> std::optional<SetValue> {
            return SetValue(static_cast<Stored>(e.*field));
          },
          [field](Experiment& e, const SetValue& v) { e.*field = static_cast<T>(std::get<Stored>(v)); }};
}

template <typename T>
Access option(T Experiment::*field) {
  return {
      [field](const Experiment& e) -> std::optional<SetValue> {
        return SetValue(static_cast<std::int64_t>(e.*field));
      },
      [field](Experiment& e, const SetValue& v) { e.*field = static_cast<T>(std::get<std::int64_t>(v)); }};
}

template <typename E, typename Parse>
Access option_choice(E Experiment::*field, Parse parse) {
  return {[field](const Experiment& e) -> std::optional<SetValue> {
            return SetValue(std::string(to_string(e.*field)));
          },
          [field, parse](Experiment& e, const SetValue& v) { e.*field = *parse(std::get<std::string>(v)); }};
}

Access algo(CollectiveAlgo Experiment::*field) {
  return {[field](const Experiment& e) -> std::optional<SetValue> {
            return SetValue(std::string(to_string(e.*field)));
          },
          [field](Experiment& e, const SetValue& v) {
            e.*field = *parse_collective_algo(std::get<std::string>(v));
          }};
}

const std::map<std::string, Access>& accessors() {
  static const std::map<std::string, Access> access = [] {
    std::map<std::string, Access> a;
    a["layers"] = model_int(&ModelParameters::layers);
    a["hidden"] = model_int(&ModelParameters::hidden);
    a["heads"] = model_int(&ModelParameters::heads);
    a["seq"] = model_int(&ModelParameters::seq);
    a["vocab"] = model_int(&ModelParameters::vocab);
    a["image"] = model_int(&ModelParameters::image);
    a["nodes"] = model_int(&ModelParameters::nodes);
    a["avg_degree"] = model_int(&ModelParameters::avg_degree);
    a["edges"] = model_int(&ModelParameters::edges);
    a["exponent"] = {[](const Experiment& e) -> std::optional<SetValue> {
                       return e.params.exponent ? std::optional<SetValue>(*e.params.exponent) : std::nullopt;
                     },
                     [](Experiment& e, const SetValue& v) { e.params.exponent = std::get<double>(v); }};
    a["sizes"] = {
        [](const Experiment& e) -> std::optional<SetValue> {
          return e.params.sizes ? std::optional<SetValue>(*e.params.sizes) : std::nullopt;
        },
        [](Experiment& e, const SetValue& v) { e.params.sizes = std::get<std::vector<std::int64_t>>(v); }};
    a["bucket_mb"] = top(&Experiment::bucket_mb);
    a["dp_algo"] = algo(&Experiment::dp_algo);
    a["tp_algo"] = algo(&Experiment::tp_algo);
    a["replicas"] = top(&Experiment::replicas);
    a["recompute"] = option_choice(&Experiment::recompute, parse_recompute);
    a["recompute_method"] = option_choice(&Experiment::recompute_method, parse_recompute_method);
    a["recompute_blocks"] = option(&Experiment::recompute_blocks);
    a["sequence_parallel"] = option(&Experiment::sequence_parallel);
    a["zero"] = option(&Experiment::zero);
    a["offload"] = option(&Experiment::offload);
    a["interleave"] = option(&Experiment::interleave);
    a["stage_blocks"] = {
        [](const Experiment& e) -> std::optional<SetValue> {
          return e.stage_blocks ? std::optional<SetValue>(*e.stage_blocks) : std::nullopt;
        },
        [](Experiment& e, const SetValue& v) { e.stage_blocks = std::get<std::vector<std::int64_t>>(v); }};
    a["stage_tp"] = {
        [](const Experiment& e) -> std::optional<SetValue> {
          return e.stage_tp ? std::optional<SetValue>(*e.stage_tp) : std::nullopt;
        },
        [](Experiment& e, const SetValue& v) { e.stage_tp = std::get<std::vector<std::int64_t>>(v); }};
    a["framework"] = {[](const Experiment& e) -> std::optional<SetValue> {
                        if (!e.framework) return std::nullopt;
                        return SetValue(std::string(to_string(*e.framework)));
                      },
                      [](Experiment& e, const SetValue& v) {
                        e.framework = *parse_framework(std::get<std::string>(v));
                        const FrameworkBehaviour b = framework_behaviour(*e.framework);
                        e.ddp = b.ddp;
                        e.tp_comm = b.tp_comm;
                        e.p2p = b.p2p;
                        e.p2p_scatter_gather = b.p2p_scatter_gather;
                      }};
    a["ddp"] = option_choice(&Experiment::ddp, parse_ddp_mode);
    a["tp_comm"] = option_choice(&Experiment::tp_comm, parse_tp_comm);
    a["p2p"] = option_choice(&Experiment::p2p, parse_p2p_mode);
    a["p2p_scatter_gather"] = option(&Experiment::p2p_scatter_gather);
    a["flash_attention"] = option(&Experiment::flash_attention);
    a["compression"] = option_choice(&Experiment::compression, parse_compression);
    a["topk_ratio"] = top(&Experiment::topk_ratio);
    a["powersgd_rank"] = option(&Experiment::powersgd_rank);
    a["max_active_keys"] = number(&SolverConfig::max_active_keys, &Experiment::solver);
    a["min_update_frequency"] = number(&SolverConfig::min_update_frequency, &Experiment::solver);
    a["instances"] = number(&SolverConfig::instances, &Experiment::solver);
    a["chunks"] = number(&SolverConfig::chunks, &Experiment::solver);
    a["variant"] = {[](const Experiment& e) -> std::optional<SetValue> {
                      return SetValue(std::string(to_string(e.solver.local_variant)));
                    },
                    [](Experiment& e, const SetValue& v) {
                      const std::string& name = std::get<std::string>(v);
                      e.solver.local_variant = name == "greedy"    ? LocalVariant::greedy
                                               : name == "chunked" ? LocalVariant::chunked
                                                                   : LocalVariant::overlapping;
                    }};
    a["rho"] = {[](const Experiment& e) -> std::optional<SetValue> {
                  return SetValue(per_sample_rho(e) ? e.solver.block_rho : e.solver.rho);
                },
                [](Experiment& e, const SetValue& v) {
                  (per_sample_rho(e) ? e.solver.block_rho : e.solver.rho) = std::get<double>(v);
                }};
    // 0 stands for the default that depends on the workers: not written, as a key never given.
    const auto resolved_later = [](int SolverConfig::*field) -> Access {
      return {[field](const Experiment& e) -> std::optional<SetValue> {
                const int v = e.solver.*field;
                return v > 0 ? std::optional<SetValue>(static_cast<std::int64_t>(v)) : std::nullopt;
              },
              [field](Experiment& e, const SetValue& v) {
                e.solver.*field = static_cast<int>(std::get<std::int64_t>(v));
              }};
    };
    a["blocks"] = resolved_later(&SolverConfig::blocks);
    a["inner_steps"] = resolved_later(&SolverConfig::inner_steps);
    a["z_lr"] = number(&SolverConfig::z_lr, &Experiment::solver);
    a["setting"] = {[](const Experiment& e) -> std::optional<SetValue> {
                      return SetValue(std::string(e.solver.batch_setting ? "batch" : "online"));
                    },
                    [](Experiment& e, const SetValue& v) {
                      e.solver.batch_setting = std::get<std::string>(v) == "batch";
                    }};
    a["train_samples"] = number(&SolverConfig::train_samples, &Experiment::solver);
    a["method"] = {[](const Experiment& e) -> std::optional<SetValue> {
                     return SetValue(std::string(e.solver.augmented_lagrangian ? "al" : "penalty"));
                   },
                   [](Experiment& e, const SetValue& v) {
                     e.solver.augmented_lagrangian = std::get<std::string>(v) == "al";
                   }};
    a["correction_period"] = number(&SolverConfig::correction_period, &Experiment::solver);
    a["downsample"] = number(&SolverConfig::downsample, &Experiment::solver);
    a["warmup_epochs"] = number(&SolverConfig::warmup_epochs, &Experiment::solver);
    a["nu"] = number(&SolverConfig::nu, &Experiment::solver);
    a["admm_iterations"] = number(&SolverConfig::admm_iterations, &Experiment::solver);
    a["quant_bits"] = number(&SolverConfig::quant_bits, &Experiment::solver);
    a["m"] = number(&SolverConfig::subnets, &Experiment::solver);
    a["zeta"] = number(&SolverConfig::local_steps, &Experiment::solver);
    a["parts"] = number(&SolverConfig::graph_parts, &Experiment::solver);
    a["sample_nodes"] = number(&SolverConfig::sample_nodes, &Experiment::solver);
    a["fanout"] = {
        [](const Experiment& e) -> std::optional<SetValue> {
          return e.solver.fanout.empty() ? std::nullopt : std::optional<SetValue>(e.solver.fanout);
        },
        [](Experiment& e, const SetValue& v) { e.solver.fanout = std::get<std::vector<std::int64_t>>(v); }};
    a["partitioner"] = {[](const Experiment& e) -> std::optional<SetValue> {
                          return SetValue(std::string(to_string(e.solver.partitioner)));
                        },
                        [](Experiment& e, const SetValue& v) {
                          e.solver.partitioner = *parse_partition_method(std::get<std::string>(v));
                        }};
    a["lr"] = {[](const Experiment& e) -> std::optional<SetValue> {
                 return e.learning_rate ? std::optional<SetValue>(*e.learning_rate) : std::nullopt;
               },
               [](Experiment& e, const SetValue& v) { e.learning_rate = std::get<double>(v); }};
    a["momentum"] = top(&Experiment::momentum);
    a["beta1"] = number(&AdamConfig::beta1, &Experiment::adam);
    a["beta2"] = number(&AdamConfig::beta2, &Experiment::adam);
    a["eps"] = number(&AdamConfig::eps, &Experiment::adam);
    return a;
  }();
  return access;
}

std::string number_text(double v) { return nlohmann::json(v).dump(); }

}  // namespace

std::optional<std::string> preset_text(const Experiment& e, const std::string& key) {
  const FrameworkBehaviour b = framework_behaviour(e.framework.value_or(kNewestFramework));
  if (key == "ddp") return std::string(to_string(b.ddp));
  if (key == "tp_comm") return std::string(to_string(b.tp_comm));
  if (key == "p2p") return std::string(to_string(b.p2p));
  if (key == "p2p_scatter_gather") return b.p2p_scatter_gather ? "1" : "0";
  return std::nullopt;
}

namespace {

// A bound as people write it: 0, 1e+12, 0.5.
std::string bound_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::optional<std::string> range_problem(const SetKey& key, double v, const std::string& shown) {
  switch (key.type) {
    case SetKeyType::count:
    case SetKeyType::count_list:
      if (v < 1 || v > key.max) return "'" + shown + "' is not a positive integer";
      return std::nullopt;
    case SetKeyType::integer:
      if (v < key.min) return "must be >= " + bound_text(key.min) + ", got " + shown;
      if (v > key.max)
        return key.max_reason.empty() ? "must be <= " + bound_text(key.max) + ", got " + shown
                                      : key.max_reason + ", got " + shown;
      return std::nullopt;
    case SetKeyType::real:
      if (!std::isfinite(v)) return "'" + shown + "' is not a finite number";
      if (key.min_exclusive ? !(v > key.min) : !(v >= key.min))
        return std::string("must be ") + (key.min_exclusive ? "> " : ">= ") + bound_text(key.min) + ", got " +
               shown;
      if (key.max_exclusive ? !(v < key.max) : !(v <= key.max))
        return std::string("must be ") + (key.max_exclusive ? "< " : "<= ") + bound_text(key.max) + ", got " +
               shown;
      return std::nullopt;
    case SetKeyType::choice:
      break;
  }
  return std::nullopt;
}

}  // namespace

const SetKey* find_set_key(const std::string& name) {
  for (const SetKey& key : set_keys())
    if (key.name == name) return &key;
  return nullptr;
}

bool key_applies(const SetKey& key, const std::string& model, Solver solver) {
  switch (key.section) {
    case SetSection::model: {
      const std::vector<std::string>& keys = model_keys(model);
      return std::find(keys.begin(), keys.end(), key.name) != keys.end();
    }
    case SetSection::solver:
      return std::find(key.solvers.begin(), key.solvers.end(), solver) != key.solvers.end() &&
             (key.models.empty() ||
              std::find(key.models.begin(), key.models.end(), model) != key.models.end());
    case SetSection::strategy:
    case SetSection::optimizer:
      return true;
  }
  return false;
}

std::optional<SetValue> get_set_value(const Experiment& e, const SetKey& key) {
  return accessors().at(key.name).get(e);
}

std::optional<std::string> put_set_value(Experiment& e, const SetKey& key, const SetValue& value,
                                         const std::string* shown_as) {
  const std::string shown = shown_as != nullptr ? *shown_as : format_set_value(value);
  if (key.type == SetKeyType::choice) {
    const std::string& name = std::get<std::string>(value);
    if (std::find(key.choices.begin(), key.choices.end(), name) == key.choices.end())
      return "unknown " + key.choice_noun + " '" + name + "' (known: " + join(key.choices) + ")";
  } else if (key.type == SetKeyType::count_list) {
    const auto& list = std::get<std::vector<std::int64_t>>(value);
    for (std::int64_t v : list)
      if (auto problem = range_problem(key, static_cast<double>(v), std::to_string(v))) return problem;
    if (list.size() < key.min_count) return "needs at least " + std::to_string(key.min_count) + " values";
  } else {
    const double v = std::holds_alternative<double>(value)
                         ? std::get<double>(value)
                         : static_cast<double>(std::get<std::int64_t>(value));
    if (auto problem = range_problem(key, v, shown)) return problem;
  }
  accessors().at(key.name).put(e, value);
  return std::nullopt;
}

std::string format_set_value(const SetValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return number_text(*d);
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  std::string out;
  for (std::int64_t v : std::get<std::vector<std::int64_t>>(value))
    out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

}  // namespace detail

using detail::SetValue;

std::string_view to_string(SetKeyType type) {
  switch (type) {
    case SetKeyType::integer:
    case SetKeyType::count:
      return "int";
    case SetKeyType::count_list:
      return "int list";
    case SetKeyType::real:
      return "real";
    case SetKeyType::choice:
      return "enum";
  }
  return "?";
}

std::string_view to_string(SetSection section) {
  switch (section) {
    case SetSection::model:
      return "model";
    case SetSection::strategy:
      return "strategy";
    case SetSection::solver:
      return "solver";
    case SetSection::optimizer:
      return "optimizer";
  }
  return "?";
}

const std::vector<SetKey>& set_keys() {
  static const std::vector<SetKey> table = detail::make_table();
  return table;
}

std::vector<std::string> accepted_keys(const std::string& model, Solver solver) {
  std::vector<std::string> keys;
  for (const SetKey& key : set_keys())
    if (detail::key_applies(key, model, solver)) keys.push_back(key.name);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace models
}  // namespace strata
