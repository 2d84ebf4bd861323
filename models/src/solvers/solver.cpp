// Solver names, their --set keys and checks, and the dispatch to each solver's lowering.
#include "strata/models/solvers/solver.hpp"

#include <algorithm>
#include <array>
#include <variant>

#include "solver_pipeline.hpp"
#include "strata/models/experiment.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr std::array<std::string_view, 9> kSolverNames = {
    "backprop", "ampnet", "local", "dladmm", "pdadmm", "pdadmm-g-q", "gist", "block-admm", "serial-parallel"};

}  // namespace

std::string_view to_string(Solver solver) { return kSolverNames[static_cast<std::size_t>(solver)]; }

std::optional<Solver> parse_solver(std::string_view name) {
  for (std::size_t i = 0; i < kSolverNames.size(); ++i)
    if (kSolverNames[i] == name) return static_cast<Solver>(i);
  return std::nullopt;
}

const std::vector<std::string>& solver_names() {
  static const std::vector<std::string> names(kSolverNames.begin(), kSolverNames.end());
  return names;
}

std::string_view to_string(LocalVariant variant) {
  switch (variant) {
    case LocalVariant::greedy:
      return "greedy";
    case LocalVariant::chunked:
      return "chunked";
    case LocalVariant::overlapping:
      return "overlapping";
  }
  return "?";
}

SolverConfig parse_solver_config(Solver solver, std::map<std::string, std::string>& sets) {
  Experiment e;
  e.solver.solver = solver;
  e.model = "gcn";  // a SolverConfig knows no model: the graph keys, which only gcn takes, parse too
  for (auto it = sets.begin(); it != sets.end();) {
    if (!is_solver_key(it->first, solver)) {
      ++it;
      continue;
    }
    apply_set(e, it->first, it->second);
    it = sets.erase(it);
  }
  return e.solver;
}

bool is_solver_key(const std::string& key, Solver solver) {
  for (const SetKey& k : set_keys())
    if (k.name == key && k.section == SetSection::solver)
      return std::find(k.solvers.begin(), k.solvers.end(), solver) != k.solvers.end();
  return false;
}

bool is_solver_key(const std::string& key) {
  for (const SetKey& k : set_keys())
    if (k.name == key && k.section == SetSection::solver) return true;
  return false;
}

namespace {

// One block per worker; correction_period divides the Plan's instances (so that the period holds
// from one Plan run to the next); downsample divides the height and width of every block's output
// that crosses to the next worker.
void check_serial_parallel(const Model& model, int stages, int blocks, const SolverConfig& solver) {
  const std::size_t n = model.layers.size();
  if (n < 2 || model.layers[n - 1].op != LayerOp::loss)
    throw InputError("--solver serial-parallel: model " + model.name +
                     " ends in no loss, and the hybrid's last block trains on it");
  if (stages > blocks)
    throw InputError("--solver serial-parallel: " + std::to_string(stages) + " workers but model " +
                     model.name + " has only " + std::to_string(blocks) +
                     " layer groups (one block per worker)");
  if (solver.instances % solver.correction_period != 0)
    throw InputError("--set correction_period=" + std::to_string(solver.correction_period) +
                     ": must divide --set instances=" + std::to_string(solver.instances) +
                     " (the Plan's minibatches repeat from one run to the next)");
  if (solver.downsample == 1) return;
  const std::vector<int> block_of = solvers::stage_of_layers(model, stages);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (block_of[i] == block_of[i + 1]) continue;
    const FeatureMap map = feature_map(model, i);
    const std::string at = "--set downsample=" + std::to_string(solver.downsample) + ": block " +
                           std::to_string(block_of[i]) + " of model " + model.name + " ends in layer " +
                           model.layers[i].name;
    if (map.height == 1 && map.width == 1)
      throw InputError(at + ", a vector of " + std::to_string(map.channels) +
                       " values, not a feature map (downsampling pools height and width)");
    if (map.height % solver.downsample != 0 || map.width % solver.downsample != 0)
      throw InputError(at + ", whose " + std::to_string(map.height) + "x" + std::to_string(map.width) +
                       " feature map the factor does not divide");
  }
}

}  // namespace

FeatureMap feature_map(const Model& model, std::size_t i) {
  STRATA_ASSERT(i < model.layers.size(), "feature_map: no layer " + std::to_string(i));
  for (std::size_t j = i + 1; j-- > 0;) {
    const Layer& l = model.layers[j];
    const auto get = [&l](const char* key) -> std::int64_t {
      const auto it = l.shape.find(key);
      const std::int64_t* v = it == l.shape.end() ? nullptr : std::get_if<std::int64_t>(&it->second);
      return v != nullptr ? *v : 0;
    };
    if (l.op == LayerOp::conv) return {get("c_out"), get("h_out"), get("w_out")};
    if (l.op == LayerOp::pool) return {get("channels"), get("h_out"), get("w_out")};
    if (l.op == LayerOp::linear || l.op == LayerOp::aggregate || l.op == LayerOp::loss)
      return {static_cast<std::int64_t>(model.layers[i].out_elems), 1, 1};
  }
  return {static_cast<std::int64_t>(model.layers[i].out_elems), 1, 1};
}

int solver_stages(const StrategyConfig& config) { return config.pp > 1 ? config.pp : config.workers(); }

void check_solver(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const std::string name(to_string(solver.solver));
  if (solver.solver == Solver::backprop) {
    if (model.family == "gcn" && !solver.fanout.empty())
      check_sampled_gcn(model, config, solver);
    else if (model.family == "gcn" && config.dp > 1)
      check_partitioned_gcn(model, config);
    else
      check_strategy(model, config);
    return;
  }
  if (config.compression != Compression::none) {
    const bool admm = solver.solver == Solver::dladmm || solver.solver == Solver::pdadmm ||
                      solver.solver == Solver::pdadmm_g_q;
    throw InputError(
        "--set compression=" + std::string(to_string(config.compression)) + ": --solver " + name +
        (admm ? " is gradient-free (ADMM): it has no gradients to compress"
              : " exchanges no data-parallel gradients; compression applies to backprop's allreduce"));
  }
  if (const std::string option = memory_option_set(config); !option.empty())
    throw InputError(option + ": a backprop memory option; --solver " + name + " lowers its own tasks");
  if (config.tp > 1 || (config.pp > 1 && config.dp > 1))
    throw InputError("--solver " + name +
                     ": spreads layers over workers itself; give --workers N or --strategy pp=N, not " +
                     config.to_string());
  const int stages = solver_stages(config);
  const int blocks = model.num_blocks_or_layers();
  switch (solver.solver) {
    case Solver::ampnet:
      if (stages > blocks)
        throw InputError("--solver ampnet: " + std::to_string(stages) + " workers but model " + model.name +
                         " has only " + std::to_string(blocks) + " layer groups");
      break;
    case Solver::local: {
      // Each chunk but the last trains on a head from its output to the class scores.
      const std::size_t n = model.layers.size();
      if (n < 2 || model.layers[n - 1].op != LayerOp::loss || model.layers[n - 2].out_elems <= 0)
        throw InputError("--solver local: model " + model.name +
                         " ends in no loss over class scores, and local parallelism trains every chunk on "
                         "a loss of its own over them");
      // strata's auxiliary head is dense over a whole sample (make_mlp): over a sequence of tokens
      // it would be a (seq x hidden) by (seq x vocab) matrix, 4e13 parameters for gpt2-small.
      if (model.seq > 1)
        throw InputError("--solver local: model " + model.name + " is a sequence model (" +
                         std::to_string(model.seq) +
                         " tokens per sample); strata's local heads map a whole sample to its class scores, "
                         "not each token to the vocabulary");
      if (solver.chunks > blocks)
        throw InputError("--set chunks: " + std::to_string(solver.chunks) + " chunks but model " +
                         model.name + " has only " + std::to_string(blocks) + " layer groups");
      const int chunks = solver.local_variant == LocalVariant::greedy ? blocks : solver.chunks;
      if (stages > chunks)
        throw InputError("--solver local: " + std::to_string(stages) + " workers but only " +
                         std::to_string(chunks) + " chunks (each worker runs at least one; --set chunks=N)");
      break;
    }
    case Solver::dladmm:
    case Solver::pdadmm:
    case Solver::pdadmm_g_q: {
      const auto layers = static_cast<int>(admm_widths(model).size()) - 1;
      if (stages > layers)
        throw InputError("--solver " + name + ": " + std::to_string(stages) + " workers but model " +
                         model.name + " has only " + std::to_string(layers) +
                         " layers (one worker holds at least one)");
      break;
    }
    case Solver::gist:
      check_gist(model, config, solver);
      break;
    case Solver::block_admm: {
      const std::size_t n = model.layers.size();
      if (n < 2 || model.layers[n - 1].op != LayerOp::loss)
        throw InputError("--solver block-admm: model " + model.name +
                         " ends in no loss, and Block-ADMM's last block trains on it");
      const int b = block_admm_blocks(config, solver);
      if (b > blocks)
        throw InputError("--set blocks: " + std::to_string(b) + " blocks but model " + model.name +
                         " has only " + std::to_string(blocks) +
                         " layer groups (a block holds at least one)");
      if (stages > b)
        throw InputError("--solver block-admm: " + std::to_string(stages) + " workers but only " +
                         std::to_string(b) + " blocks (each worker runs at least one; --set blocks=N)");
      break;
    }
    case Solver::serial_parallel:
      check_serial_parallel(model, stages, blocks, solver);
      break;
    default:
      break;
  }
  if (config.iterations < 1) throw InputError("--iterations: must be >= 1");
}

Plan lower_solver(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  check_solver(model, config, solver);
  auto with_temporaries = [](Plan plan) {
    add_temporaries(plan);
    return plan;
  };
  switch (solver.solver) {
    case Solver::backprop:
      if (model.family == "gcn" && !solver.fanout.empty())
        return with_temporaries(lower_sampled_gcn(model, config, solver));
      if (model.family == "gcn" && config.dp > 1)
        return with_temporaries(lower_partitioned_gcn(model, config, solver));
      if (model.family == "gcn") {
        Plan plan = lower(model, config);
        set_graph_parameters(plan, model, nullptr);
        return plan;
      }
      return lower(model, config);
    case Solver::ampnet:
      return with_temporaries(lower_ampnet(model, config, solver));
    case Solver::local:
      return with_temporaries(lower_local(model, config, solver));
    case Solver::dladmm:
    case Solver::pdadmm:
    case Solver::pdadmm_g_q:
      return with_temporaries(lower_admm(model, config, solver));
    case Solver::gist:
      return with_temporaries(lower_gist(model, config, solver));
    case Solver::block_admm:
      return with_temporaries(lower_block_admm(model, config, solver));
    case Solver::serial_parallel:
      return with_temporaries(lower_serial_parallel(model, config, solver));
  }
  throw InputError("--solver " + std::string(to_string(solver.solver)) + ": no Plan lowering in this build");
}

}  // namespace models
}  // namespace strata
