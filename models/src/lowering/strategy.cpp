// Strategy configuration: names, parsing, checks against a model, default batch and the
// pipeline partition. The lowering to a Plan is in lowering*.cpp.
#include "strata/models/lowering/strategy.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

bool is_mixed_precision(DType dtype) { return dtype == DType::bf16 || dtype == DType::fp16; }

// Per-replica samples per microbatch a family starts from when no batch is given (see
// default_global_batch).
std::int64_t base_replica_batch(const Model& model) {
  if (model.family == "gcn") return model.graph_nodes;  // full-graph: a step reads every node
  if (model.family == "synthetic") return 1;
  if (model.family == "gpt") return 8;
  return 32;
}

// Parses one positive integer value of --strategy; `item` is the "key=value" text.
int parse_dimension(std::string_view item, std::string_view value) {
  int number = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || number <= 0)
    throw InputError("--strategy '" + std::string(item) + "': '" + std::string(value) +
                     "' is not a positive integer");
  return number;
}

void require_positive(const std::string& what, std::int64_t value) {
  if (value <= 0)
    throw InputError("--strategy: " + what + " must be a positive integer (got " + std::to_string(value) +
                     ")");
}

// Pipeline stages cut between blocks, so blocks are numbered 0, 1, 2, ... in layer order.
void check_blocks_contiguous(const Model& model) {
  int previous = 0;
  for (const Layer& layer : model.layers) {
    if (layer.block != previous && layer.block != previous + 1)
      throw InputError("model " + model.name + ": layer '" + layer.name + "' is in block " +
                       std::to_string(layer.block) + " after block " + std::to_string(previous) +
                       " (blocks must be numbered 0, 1, 2, ... in layer order)");
    previous = layer.block;
  }
}

}  // namespace

std::string_view to_string(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::gpipe:
      return "gpipe";
    case PipelineSchedule::one_f_one_b:
      return "1f1b";
    case PipelineSchedule::zb_h1:
      return "zb-h1";
  }
  return "?";
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::gpipe;
  if (name == "1f1b") return PipelineSchedule::one_f_one_b;
  if (name == "zb-h1") return PipelineSchedule::zb_h1;
  return std::nullopt;
}

std::string_view to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  if (name == "none") return Recompute::none;
  if (name == "selective") return Recompute::selective;
  if (name == "full") return Recompute::full;
  return std::nullopt;
}

std::string_view to_string(RecomputeMethod method) {
  return method == RecomputeMethod::uniform ? "uniform" : "block";
}

std::optional<RecomputeMethod> parse_recompute_method(std::string_view name) {
  if (name == "uniform") return RecomputeMethod::uniform;
  if (name == "block") return RecomputeMethod::block;
  return std::nullopt;
}

std::string_view to_string(DdpMode mode) { return mode == DdpMode::overlap ? "overlap" : "after_flush"; }

namespace {
constexpr std::array<std::string_view, 5> kCompressionNames = {"none", "int8", "fp8", "topk", "powersgd"};
}  // namespace

std::string_view to_string(Compression compression) {
  return kCompressionNames[static_cast<std::size_t>(compression)];
}

std::optional<Compression> parse_compression(std::string_view name) {
  for (std::size_t i = 0; i < kCompressionNames.size(); ++i)
    if (kCompressionNames[i] == name) return static_cast<Compression>(i);
  return std::nullopt;
}

namespace {
constexpr std::array<std::string_view, 2> kTpCommNames = {"sync", "async"};
constexpr std::array<std::string_view, 2> kP2pNames = {"blocking", "async"};
constexpr std::array<std::string_view, 3> kFrameworkNames = {"megatron-2021", "megatron-2022",
                                                             "megatron-core"};

template <typename Enum, std::size_t N>
std::optional<Enum> enum_named(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}
}  // namespace

std::string_view to_string(TpComm mode) { return kTpCommNames.at(static_cast<std::size_t>(mode)); }
std::optional<TpComm> parse_tp_comm(std::string_view name) { return enum_named<TpComm>(kTpCommNames, name); }
std::string_view to_string(P2pMode mode) { return kP2pNames.at(static_cast<std::size_t>(mode)); }
std::optional<P2pMode> parse_p2p_mode(std::string_view name) { return enum_named<P2pMode>(kP2pNames, name); }
std::string_view to_string(Framework framework) {
  return kFrameworkNames.at(static_cast<std::size_t>(framework));
}
std::optional<Framework> parse_framework(std::string_view name) {
  return enum_named<Framework>(kFrameworkNames, name);
}

// Each preset from the Megatron-LM sources (NVIDIA/Megatron-LM history):
// - megatron-2021, tag v2.5: mpu/mappings.py all-reduces on the caller's stream in both
//   directions (the column-parallel backward's after both GEMMs); p2p_communication.py
//   _communicate: batch_isend_irecv, req.wait(), torch.cuda.synchronize(); scatter-gather on by
//   default since 72e4230b (--no-scatter-gather-tensors-in-pipeline); model/distributed.py's
//   local DDP all-reduces the gradients after the pipeline flush (the default --DDP-impl local;
//   examples/sc21 chose torch DDP for its pp = 1 rows, which the published-runs file says per row).
// - megatron-2022, d898a899: the asynchronous dX all-reduce (on by default since 3f652469), the
//   same blocking p2p and scatter-gather, the same local DDP.
// - megatron-core, from 4eeff55d (2023-10-12): --overlap-grad-reduce (2d5220a4) and
//   --overlap-p2p-communication (f9283c5a) on by default, no scatter-gather.
FrameworkBehaviour framework_behaviour(Framework framework) {
  switch (framework) {
    case Framework::megatron_2021:
      return {TpComm::sync, P2pMode::blocking, true, DdpMode::after_flush};
    case Framework::megatron_2022:
      return {TpComm::async, P2pMode::blocking, true, DdpMode::after_flush};
    case Framework::megatron_core:
      break;
  }
  return {TpComm::async, P2pMode::async, false, DdpMode::overlap};
}

std::optional<DdpMode> parse_ddp_mode(std::string_view name) {
  if (name == "overlap") return DdpMode::overlap;
  if (name == "after_flush") return DdpMode::after_flush;
  return std::nullopt;
}

std::string_view to_string(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::adam:
      return "adam";
  }
  return "?";
}

std::optional<Optimizer> parse_optimizer(std::string_view name) {
  if (name == "sgd") return Optimizer::sgd;
  if (name == "adam") return Optimizer::adam;
  return std::nullopt;
}

int StrategyConfig::stage_workers() const {
  if (stage_tp.empty()) return tp * pp;
  int sum = 0;
  for (int degree : stage_tp) sum += degree;
  return sum;
}

std::string StrategyConfig::to_string() const {
  std::string degrees = std::to_string(tp);
  if (!stage_tp.empty()) {
    degrees.clear();
    for (int degree : stage_tp) degrees += (degrees.empty() ? "" : "+") + std::to_string(degree);
  }
  return "dp=" + std::to_string(dp) + ",tp=" + degrees + ",pp=" + std::to_string(pp);
}

void parse_strategy(const std::string& text, StrategyConfig& into) {
  int values[3] = {1, 1, 1};  // dp, tp, pp
  bool seen[3] = {false, false, false};
  static constexpr std::string_view kKeys[3] = {"dp", "tp", "pp"};
  if (text.empty()) throw InputError("--strategy: empty (expected e.g. 'dp=2,tp=2,pp=2')");
  // Refused before any message quotes the text raw, so that every message stays one line.
  for (const unsigned char c : text)
    if (c < 0x20 || c == 0x7f)
      throw InputError("--strategy " + quote_for_message(text) + ": control character in the argument");
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos)
      throw InputError("--strategy '" + text + "': expected key=value items such as 'dp=2'");
    const std::string_view key = item.substr(0, eq);
    const auto* found = std::find(std::begin(kKeys), std::end(kKeys), key);
    if (found == std::end(kKeys))
      throw InputError("--strategy: unknown dimension '" + std::string(key) + "' (known: dp, tp, pp)");
    const auto slot = static_cast<std::size_t>(found - std::begin(kKeys));
    if (seen[slot]) throw InputError("--strategy: dimension '" + std::string(key) + "' given twice");
    seen[slot] = true;
    values[slot] = parse_dimension(item, item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  // Worker ranks are ints (StrategyConfig::workers()).
  const double workers = 1.0 * values[0] * values[1] * values[2];
  if (workers > std::numeric_limits<int>::max())
    throw InputError("--strategy " + quote_for_message(text) + ": " + format_number(workers) +
                     " workers, more than strata numbers (" +
                     std::to_string(std::numeric_limits<int>::max()) + ")");
  into.dp = values[0];
  into.tp = values[1];
  into.pp = values[2];
}

std::int64_t microbatch_count(const StrategyConfig& config) {
  if (config.microbatches > 0) return config.microbatches;
  return config.pp > 1 ? config.pp : 1;
}

// Per replica: the family's base (GPT 8 sequences, synthetic 1 sample, others 32 samples),
// raised to the microbatch count and rounded up to a multiple of it, so the default always
// splits evenly: global = dp * round_up(max(base, m), m).
std::int64_t default_global_batch(const Model& model, const StrategyConfig& config) {
  const std::int64_t m = microbatch_count(config);
  const std::int64_t base = std::max(base_replica_batch(model), m);
  const std::int64_t per_replica = (base + m - 1) / m * m;
  return static_cast<std::int64_t>(std::max(config.dp, 1)) * per_replica;
}

std::int64_t effective_global_batch(const Model& model, const StrategyConfig& config) {
  return config.global_batch > 0 ? config.global_batch : default_global_batch(model, config);
}

double optimizer_state_bytes_per_param(Optimizer optimizer, DType dtype) {
  // Mixed precision keeps an fp32 master copy and fp32 moments (ZeRO, Rajbhandari et al. 2020:
  // 12 B/param for Adam); full precision keeps the moments in the training dtype.
  const bool mixed = is_mixed_precision(dtype);
  const double moment_bytes = mixed ? 4.0 : static_cast<double>(bytes_per_element(dtype));
  const double moments = optimizer == Optimizer::adam ? 2.0 : 1.0;  // m and v; SGD momentum
  return (mixed ? 4.0 : 0.0) + moments * moment_bytes;
}

namespace {

// A GCN step reads all nodes of its graph (zoo_gcn.cpp): splitting them over data-parallel ranks
// needs the neighbours' rows from the other parts, which the solvers' partitioned Plan models
// (lower_partitioned_gcn, solver.hpp) and this lowering does not; nor microbatches.
void check_full_graph(const Model& model, const StrategyConfig& config) {
  const std::string nodes = std::to_string(model.graph_nodes);
  const std::string why =
      "model " + model.name + " trains full-graph (every step reads all " + nodes + " nodes)";
  if (config.dp > 1)
    throw InputError("dp=" + std::to_string(config.dp) + ": " + why +
                     "; split its graph with --solver backprop (the default), which lowers dp=N to N graph "
                     "parts, or --solver gist");
  if (microbatch_count(config) > 1)
    throw InputError(std::to_string(microbatch_count(config)) + " microbatches: " + why +
                     " (give --microbatches 1)");
  if (config.global_batch > 0 && config.global_batch != model.graph_nodes)
    throw InputError("global batch " + std::to_string(config.global_batch) + ": " + why +
                     " (set the graph with --set nodes=N, not --global-batch)");
}

// Gradient compression: of the DP gradients whole (not ZeRO's shards), with parameters that
// make sense (the PowerSGD rank fits every weight matrix, Vogels et al. 2019 section 3).
void check_compression(const Model& model, const StrategyConfig& config) {
  const std::string v = "--set compression=" + std::string(to_string(config.compression));
  if (!(config.topk_ratio > 0 && config.topk_ratio <= 1))
    throw InputError("--set topk_ratio=" + format_number(config.topk_ratio) +
                     ": the fraction of values sent must be in (0, 1]");
  if (config.powersgd_rank < 1)
    throw InputError("--set powersgd_rank=" + std::to_string(config.powersgd_rank) + ": must be >= 1");
  if (config.compression == Compression::none) return;
  if (config.dp < 2)
    throw InputError(v + ": compresses the data-parallel gradient exchange, dp=" + std::to_string(config.dp) +
                     " has none (use dp >= 2)");
  if (config.zero != 0)
    throw InputError(v + ": with --set zero=" + std::to_string(config.zero) +
                     " is not lowered (compression applies to plain data parallelism's allreduce)");
  if (config.compression != Compression::powersgd) return;
  for (const Layer& layer : model.layers) {
    // The widest degree splits a matrix the most.
    int degree = config.tp;
    for (int d : config.stage_tp) degree = std::max(degree, d);
    const GradMatrix g = grad_matrix(layer, degree);
    if (g.rows > 0 && config.powersgd_rank > std::min(g.rows, g.cols))
      throw InputError("--set powersgd_rank=" + std::to_string(config.powersgd_rank) +
                       ": above min(m, n) = " + std::to_string(std::min(g.rows, g.cols)) + " of layer " +
                       layer.name + "'s " + std::to_string(g.rows) + " x " + std::to_string(g.cols) +
                       " gradient");
  }
}

// Per-stage tensor parallelism (--set stage_tp): one degree per stage, each dividing the heads;
// it replaces tp. A pipeline transfer between stages of different degrees carries the whole
// activation to every receiving rank, so neither sequence parallelism (whose activations are
// sharded along the sequence) nor interleaving (whose chunks of one device share its workers)
// goes with it.
void check_stage_tp(const Model& model, const StrategyConfig& config) {
  const std::vector<int>& degrees = config.stage_tp;
  if (degrees.size() != static_cast<std::size_t>(config.pp))
    throw InputError("--set stage_tp: " + std::to_string(degrees.size()) +
                     " degrees given for pp=" + std::to_string(config.pp) + " (one per stage)");
  if (config.tp != 1)
    throw InputError("--set stage_tp: conflicts with tp=" + std::to_string(config.tp) +
                     " in --strategy (stage_tp gives every stage's degree; give one of them)");
  double workers = 0;
  for (std::size_t s = 0; s < degrees.size(); ++s) {
    const int degree = degrees[s];
    const std::string where =
        "--set stage_tp: " + std::to_string(degree) + " (stage " + std::to_string(s) + ")";
    if (degree < 1) throw InputError(where + ": a degree is at least 1");
    if (degree > 1 && model.family != "gpt")
      throw InputError(where + ": tensor parallelism needs a transformer model (gpt*)");
    if (degree > 1 && (model.heads <= 0 || model.heads % degree != 0))
      throw InputError(where + " does not divide the " + std::to_string(model.heads) +
                       " attention heads of " + model.name);
    workers += degree;
  }
  if (workers * config.dp > std::numeric_limits<int>::max())
    throw InputError("--set stage_tp: " + format_number(workers * config.dp) +
                     " workers, more than strata numbers");
  if (config.interleave > 1)
    throw InputError(
        "--set stage_tp: not with interleave (the model chunks of one device share its workers)");
  if (config.sequence_parallel)
    throw InputError(
        "--set stage_tp: not with sequence_parallel (stages of different degrees exchange whole "
        "activations)");
}

// The memory options of StrategyConfig, named by their --set keys.
void check_memory_options(const Model& model, const StrategyConfig& config) {
  check_compression(model, config);
  const int blocks = model.num_blocks_or_layers();
  const bool transformer = model.family == "gpt";
  if (config.recompute == Recompute::selective && !transformer)
    throw InputError("--set recompute=selective: model " + model.name +
                     " has no attention core (selective recomputation re-runs a transformer's attention)");
  if (config.flash_attention && !transformer)
    throw InputError("--set flash_attention=1: model " + model.name + " has no attention core");
  if (config.sequence_parallel && !transformer)
    throw InputError("--set sequence_parallel=1: model " + model.name +
                     " is not a transformer (sequence parallelism splits a transformer's sequence)");
  if (config.zero < 0 || config.zero > 3)
    throw InputError("--set zero=" + std::to_string(config.zero) + ": ZeRO stage must be 0, 1, 2 or 3");
  if (config.zero >= 1 && config.dp < 2)
    throw InputError("--set zero=" + std::to_string(config.zero) +
                     ": ZeRO shards over the data-parallel ranks, dp=" + std::to_string(config.dp) +
                     " has none to shard over (use dp >= 2)");
  if (config.offload && config.zero < 1)
    throw InputError(
        "--set offload=1: needs --set zero=1, 2 or 3 (the optimizer states are sharded, "
        "then offloaded, as ZeRO-Offload does)");
  if (config.interleave < 1)
    throw InputError("--set interleave=" + std::to_string(config.interleave) + ": must be >= 1");
  if (config.recompute_blocks < 1)
    throw InputError("--set recompute_blocks=" + std::to_string(config.recompute_blocks) + ": must be >= 1");
  const std::string v = "--set interleave=" + std::to_string(config.interleave);
  if (config.interleave > 1) {
    if (config.pp < 2) throw InputError(v + ": interleaving needs pipeline parallelism (pp >= 2)");
    if (config.schedule != PipelineSchedule::one_f_one_b)
      throw InputError(v + ": the interleaved schedule is 1F1B's (--schedule 1f1b), not " +
                       std::string(to_string(config.schedule)));
    if (blocks % (config.pp * config.interleave) != 0)
      throw InputError(v + ": the " + std::to_string(blocks) + " blocks of " + model.name +
                       " do not split into pp x interleave = " +
                       std::to_string(config.pp * config.interleave) + " equal model chunks");
    if (microbatch_count(config) % config.pp != 0)
      throw InputError(v + ": the interleaved schedule needs a microbatch count that is a multiple of pp=" +
                       std::to_string(config.pp) + " (got " + std::to_string(microbatch_count(config)) + ")");
  }
  if (config.recompute == Recompute::full) {
    // The fewest blocks a stage (a model chunk when interleaved) holds.
    int fewest = blocks;
    if (config.interleave > 1) {
      fewest = blocks / (config.pp * config.interleave);
    } else if (config.pp <= blocks) {
      const std::vector<int> cuts =
          config.stage_cuts.empty() ? partition_blocks(model, config.pp) : config.stage_cuts;
      for (std::size_t s = 0; s + 1 < cuts.size(); ++s) fewest = std::min(fewest, cuts[s + 1] - cuts[s]);
    }
    if (config.recompute_blocks > fewest)
      throw InputError("--set recompute_blocks=" + std::to_string(config.recompute_blocks) +
                       ": larger than the " + std::to_string(fewest) + " blocks of the smallest " +
                       (config.interleave > 1 ? "model chunk" : "pipeline stage") + " of " + model.name);
  }
}

}  // namespace

std::string memory_option_set(const StrategyConfig& c) {
  const StrategyConfig d;
  auto set = [](const std::string& key, const std::string& value) { return "--set " + key + "=" + value; };
  if (c.recompute != d.recompute) return set("recompute", std::string(to_string(c.recompute)));
  if (c.recompute_method != d.recompute_method)
    return set("recompute_method", std::string(to_string(c.recompute_method)));
  if (c.recompute_blocks != d.recompute_blocks)
    return set("recompute_blocks", std::to_string(c.recompute_blocks));
  if (c.sequence_parallel) return set("sequence_parallel", "1");
  if (c.zero != d.zero) return set("zero", std::to_string(c.zero));
  if (c.offload) return set("offload", "1");
  if (c.interleave != d.interleave) return set("interleave", std::to_string(c.interleave));
  if (c.ddp != d.ddp) return set("ddp", std::string(to_string(c.ddp)));
  if (c.tp_comm != d.tp_comm) return set("tp_comm", std::string(to_string(c.tp_comm)));
  if (c.p2p != d.p2p) return set("p2p", std::string(to_string(c.p2p)));
  if (c.p2p_scatter_gather != d.p2p_scatter_gather) return set("p2p_scatter_gather", "1");
  if (c.flash_attention) return set("flash_attention", "1");
  if (c.compression != d.compression) return set("compression", std::string(to_string(c.compression)));
  if (c.schedule == PipelineSchedule::zb_h1) return "--schedule zb-h1";
  return "";
}

namespace {

// The object-store, cache and parameter-server algorithms (LambdaML's, docs/serverless.md)
// exchange whole data-parallel gradients between functions: an allreduce, nothing sharded,
// compressed or tensor-parallel.
void check_storage_exchange(const StrategyConfig& config) {
  if (is_hub_algo(config.tp_algo))
    throw InputError(
        "--set tp_algo=" + std::string(to_string(config.tp_algo)) +
        ": the store, cache and parameter-server algorithms exchange data-parallel gradients only");
  if (!is_hub_algo(config.dp_algo)) return;
  const std::string flag = "--set dp_algo=" + std::string(to_string(config.dp_algo));
  if (config.zero > 0) throw InputError(flag + ": not with --set zero (the store exchanges whole gradients)");
  if (config.compression != Compression::none)
    throw InputError(flag + ": not with --set compression (the store exchanges the gradients as they are)");
}

}  // namespace

StrategyConfig with_symmetric_replicas(StrategyConfig config, int replicas) {
  if (replicas > 0) {
    config.symmetric_replicas = replicas;
    config.lowered_replicas = 0;
  }
  return config;
}

StrategyConfig with_symmetric_tp(StrategyConfig config, int ranks) {
  if (ranks > 0) config.symmetric_tp = ranks;
  return config;
}

void check_strategy(const Model& model, const StrategyConfig& config) {
  require_positive("dp", config.dp);
  require_positive("tp", config.tp);
  require_positive("pp", config.pp);
  if (config.microbatches < 0)
    throw InputError("microbatches must be positive (got " + std::to_string(config.microbatches) + ")");
  if (config.global_batch < 0)
    throw InputError("global batch must be positive (got " + std::to_string(config.global_batch) + ")");
  if (config.iterations < 1)
    throw InputError("iterations must be positive (got " + std::to_string(config.iterations) + ")");
  if (!(config.bucket_bytes >= 0) || !std::isfinite(config.bucket_bytes))
    throw InputError("gradient bucket size must be a non-negative number of bytes");
  if (config.lowered_replicas < 0 || config.lowered_replicas > config.dp)
    throw InputError("lowered replicas must be in [0, dp] (got " + std::to_string(config.lowered_replicas) +
                     ")");
  if (config.symmetric_replicas != 0 &&
      (config.symmetric_replicas < 2 || config.symmetric_replicas > config.dp ||
       config.lowered_replicas != 0 || config.compression != Compression::none))
    throw InputError("symmetric replicas must be in [2, dp] (got " +
                     std::to_string(config.symmetric_replicas) +
                     "), without lowered replicas or gradient compression");
  if (config.symmetric_tp != 0 &&
      (config.symmetric_tp < 2 || config.symmetric_tp >= config.tp || config.tp % config.symmetric_tp != 0 ||
       !config.stage_tp.empty() || config.symmetric_replicas != 0 || config.lowered_replicas != 0 ||
       config.compression != Compression::none || config.tp_algo != CollectiveAlgo::ring ||
       (config.dp > 1 && config.dp_algo != CollectiveAlgo::ring)))
    throw InputError("symmetric tensor-parallel ranks must be in [2, tp) and divide tp (got " +
                     std::to_string(config.symmetric_tp) +
                     "), with one degree for every stage, ring collectives, no replica reduction and no "
                     "gradient compression");
  if (model.layers.empty()) throw InputError("model " + model.name + " has no layers");
  check_blocks_contiguous(model);

  if (config.tp > 1 && model.family != "gpt")
    throw InputError("tensor parallelism needs a transformer model (gpt*)");
  if (config.tp > 1 && (model.heads <= 0 || model.heads % config.tp != 0))
    throw InputError("tp=" + std::to_string(config.tp) + " does not divide the " +
                     std::to_string(model.heads) + " attention heads of " + model.name);
  const int blocks = model.num_blocks_or_layers();
  if (config.pp > blocks)
    throw InputError("pp=" + std::to_string(config.pp) + " exceeds the " + std::to_string(blocks) +
                     " blocks of " + model.name + " (each pipeline stage needs at least one)");
  if (!config.stage_cuts.empty()) {
    const std::vector<int>& cuts = config.stage_cuts;
    if (cuts.size() != static_cast<std::size_t>(config.pp) + 1)
      throw InputError("--set stage_blocks: " + std::to_string(cuts.size() - 1) +
                       " stages given for pp=" + std::to_string(config.pp) + " (one count per stage)");
    if (cuts.back() != blocks)
      throw InputError("--set stage_blocks: the stages hold " + std::to_string(cuts.back()) + " blocks, " +
                       model.name + " has " + std::to_string(blocks));
    if (config.interleave > 1)
      throw InputError("--set stage_blocks: not with interleave (its chunks are equal)");
  }

  if (!config.stage_tp.empty()) check_stage_tp(model, config);
  check_memory_options(model, config);
  check_storage_exchange(config);

  if (model.family == "gcn") check_full_graph(model, config);
  const std::int64_t batch = effective_global_batch(model, config);
  if (batch % config.dp != 0)
    throw InputError("global batch " + std::to_string(batch) +
                     " is not divisible by dp=" + std::to_string(config.dp));
  const std::int64_t per_replica = batch / config.dp;
  const std::int64_t m = microbatch_count(config);
  if (per_replica % m != 0)
    throw InputError(std::to_string(m) + " microbatches do not divide the per-replica batch of " +
                     std::to_string(per_replica) + " (global batch " + std::to_string(batch) +
                     " / dp=" + std::to_string(config.dp) + ")");
}

// Greedy on prefix sums: boundary k goes to the block edge whose prefix cost is closest to
// k/pp of the total (ties to the earlier edge), leaving at least one block to every stage.
// Cost of a block: its layers' training FLOP per sample; for a model of fixed layers only,
// their forward + backward seconds; for a model with neither, one per block.
std::vector<int> partition_blocks(const Model& model, int pp) {
  const int blocks = model.num_blocks_or_layers();
  STRATA_ASSERT(pp >= 1 && pp <= blocks, "partition_blocks needs 1 <= pp <= blocks");
  std::vector<double> flops(static_cast<std::size_t>(blocks), 0.0);
  std::vector<double> seconds(static_cast<std::size_t>(blocks), 0.0);
  for (const Layer& layer : model.layers) {
    const auto b = static_cast<std::size_t>(std::clamp(layer.block, 0, blocks - 1));
    flops[b] += layer.fwd_flops + layer.bwd_data_flops + layer.bwd_weight_flops;
    seconds[b] += layer.fixed_fwd_s + layer.fixed_bwd_s;
  }
  std::vector<double> prefix(static_cast<std::size_t>(blocks) + 1, 0.0);
  const bool use_flops = std::any_of(flops.begin(), flops.end(), [](double f) { return f > 0; });
  const bool use_seconds = std::any_of(seconds.begin(), seconds.end(), [](double s) { return s > 0; });
  for (int b = 0; b < blocks; ++b) {
    const auto i = static_cast<std::size_t>(b);
    prefix[i + 1] = prefix[i] + (use_flops ? flops[i] : use_seconds ? seconds[i] : 1.0);
  }
  std::vector<int> bounds(static_cast<std::size_t>(pp) + 1, 0);
  bounds.back() = blocks;
  const double total = prefix.back();
  for (int k = 1; k < pp; ++k) {
    const double target = total * k / pp;
    const int lo = bounds[static_cast<std::size_t>(k) - 1] + 1;
    const int hi = blocks - (pp - k);
    int best = lo;
    for (int j = lo + 1; j <= hi; ++j) {
      if (std::abs(prefix[static_cast<std::size_t>(j)] - target) <
          std::abs(prefix[static_cast<std::size_t>(best)] - target))
        best = j;
      if (prefix[static_cast<std::size_t>(j)] > target) break;  // prefixes only grow from here
    }
    bounds[static_cast<std::size_t>(k)] = best;
  }
  return bounds;
}

}  // namespace models
}  // namespace strata
