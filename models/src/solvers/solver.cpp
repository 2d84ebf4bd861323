// Solver names, their --set keys and checks, and the dispatch to each solver's lowering.
#include "strata/models/solvers/solver.hpp"

#include <array>
#include <cmath>
#include <functional>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

constexpr std::array<std::string_view, 7> kSolverNames = {"backprop", "ampnet",     "local", "dladmm",
                                                          "pdadmm",   "pdadmm-g-q", "gist"};

std::string flag(const std::string& key) { return "--set " + key; }

// Takes `key` out of `sets` when present and hands its value to `read`.
void take(std::map<std::string, std::string>& sets, const std::string& key,
          const std::function<void(const std::string&)>& read) {
  auto it = sets.find(key);
  if (it == sets.end()) return;
  const std::string value = it->second;
  sets.erase(it);
  read(value);
}

int parse_int(const std::string& key, const std::string& value, int lowest) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw InputError(flag(key) + ": '" + value + "' is not an integer");
  if (v < lowest || v > 1'000'000'000)
    throw InputError(flag(key) + ": must be >= " + std::to_string(lowest) + ", got " + value);
  return static_cast<int>(v);
}

double parse_positive(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw InputError(flag(key) + ": '" + value + "' is not a number");
  if (!(v > 0) || !std::isfinite(v)) throw InputError(flag(key) + ": must be > 0, got " + value);
  return v;
}

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
  SolverConfig c;
  c.solver = solver;
  switch (solver) {
    case Solver::backprop:
      break;
    case Solver::ampnet:
      take(sets, "max_active_keys",
           [&](const std::string& v) { c.max_active_keys = parse_int("max_active_keys", v, 1); });
      take(sets, "min_update_frequency",
           [&](const std::string& v) { c.min_update_frequency = parse_int("min_update_frequency", v, 1); });
      take(sets, "instances", [&](const std::string& v) { c.instances = parse_int("instances", v, 1); });
      break;
    case Solver::local:
      take(sets, "instances", [&](const std::string& v) { c.instances = parse_int("instances", v, 1); });
      take(sets, "chunks", [&](const std::string& v) { c.chunks = parse_int("chunks", v, 1); });
      take(sets, "variant", [&](const std::string& v) {
        if (v == "greedy")
          c.local_variant = LocalVariant::greedy;
        else if (v == "chunked")
          c.local_variant = LocalVariant::chunked;
        else if (v == "overlapping")
          c.local_variant = LocalVariant::overlapping;
        else
          throw InputError(flag("variant") + ": unknown variant '" + v +
                           "' (known: greedy, chunked, overlapping)");
      });
      break;
    case Solver::dladmm:
    case Solver::pdadmm:
    case Solver::pdadmm_g_q:
      take(sets, "rho", [&](const std::string& v) { c.rho = parse_positive("rho", v); });
      take(sets, "nu", [&](const std::string& v) { c.nu = parse_positive("nu", v); });
      take(sets, "admm_iterations",
           [&](const std::string& v) { c.admm_iterations = parse_int("admm_iterations", v, 1); });
      if (solver == Solver::pdadmm_g_q)
        take(sets, "quant_bits", [&](const std::string& v) {
          c.quant_bits = parse_int("quant_bits", v, 1);
          if (c.quant_bits > 8)
            throw InputError(flag("quant_bits") + ": p is sent as int8, so at most 8 bits, got " + v);
        });
      break;
    case Solver::gist:
      take(sets, "m", [&](const std::string& v) { c.subnets = parse_int("m", v, 1); });
      take(sets, "zeta", [&](const std::string& v) { c.local_steps = parse_int("zeta", v, 1); });
      break;
  }
  return c;
}

bool is_solver_key(const std::string& key, Solver solver) {
  std::map<std::string, std::string> one = {{key, "1"}};
  try {
    parse_solver_config(solver, one);
  } catch (const InputError&) {
    return true;  // the solver took the key and refused the value
  }
  return one.empty();
}

bool is_solver_key(const std::string& key) {
  for (std::size_t i = 0; i < kSolverNames.size(); ++i)
    if (is_solver_key(key, static_cast<Solver>(i))) return true;
  return false;
}

int solver_stages(const StrategyConfig& config) { return config.pp > 1 ? config.pp : config.workers(); }

void check_solver(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const std::string name(to_string(solver.solver));
  if (solver.solver == Solver::backprop) {
    check_strategy(model, config);
    return;
  }
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
    default:
      break;
  }
  if (config.iterations < 1) throw InputError("--iterations: must be >= 1");
}

Plan lower_solver(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  check_solver(model, config, solver);
  switch (solver.solver) {
    case Solver::backprop:
      return lower(model, config);
    case Solver::ampnet:
      return lower_ampnet(model, config, solver);
    case Solver::local:
      return lower_local(model, config, solver);
    case Solver::dladmm:
    case Solver::pdadmm:
    case Solver::pdadmm_g_q:
      return lower_admm(model, config, solver);
    case Solver::gist:
      return lower_gist(model, config, solver);
  }
  throw InputError("--solver " + std::string(to_string(solver.solver)) + ": no Plan lowering in this build");
}

}  // namespace strata
