// PlanInfo <-> JSON, every schema version (plan_info_json.hpp).
#include "plan_info_json.hpp"

#include <string>

namespace strata {
inline namespace traces {
namespace plan_json {
namespace {

using OrderedJson = nlohmann::ordered_json;

std::string optional_string(const JsonNode& node, std::string_view key) {
  std::optional<JsonNode> child = node.find(key);
  return child ? child->as_string() : std::string();
}

std::int64_t optional_int(const JsonNode& node, std::string_view key, std::int64_t fallback,
                          std::int64_t min = INT64_MIN) {
  std::optional<JsonNode> child = node.find(key);
  return child ? child->as_int(min) : fallback;
}

OrderedJson parameters_to_json(const SolverParameters& p) {
  OrderedJson j = OrderedJson::object();
  auto put = [&j](const char* key, std::int64_t value) {
    if (value != 0) j[key] = value;
  };
  put("instances", p.instances);
  put("max_active_keys", p.max_active_keys);
  put("min_update_frequency", p.min_update_frequency);
  put("chunks", p.chunks);
  if (p.local_variant != SolverParameters::LocalVariant::none)
    j["local_variant"] = to_string(p.local_variant);
  put("admm_iterations", p.admm_iterations);
  if (p.rho != 0) j["rho"] = p.rho;
  if (p.nu != 0) j["nu"] = p.nu;
  put("quant_bits", p.quant_bits);
  put("subnets", p.subnets);
  put("local_steps", p.local_steps);
  put("blocks", p.blocks);
  put("inner_steps", p.inner_steps);
  put("stored_samples", p.stored_samples);
  if (p.z_lr != 0) j["z_lr"] = p.z_lr;
  put("correction_period", p.correction_period);
  put("downsample", p.downsample);
  put("warmup_epochs", p.warmup_epochs);
  if (!p.method.empty()) j["method"] = p.method;
  put("graph_parts", p.graph_parts);
  put("graph_edges", p.graph_edges);
  if (p.graph_exponent != 0) j["graph_exponent"] = p.graph_exponent;
  if (!p.partitioner.empty()) j["partitioner"] = p.partitioner;
  put("halo_rows", p.halo_rows);
  if (!p.fanout.empty()) j["fanout"] = p.fanout;
  return j;
}

SolverParameters read_parameters(const JsonNode& node) {
  node.reject_unknown_fields({"instances",
                              "max_active_keys",
                              "min_update_frequency",
                              "chunks",
                              "local_variant",
                              "admm_iterations",
                              "rho",
                              "nu",
                              "quant_bits",
                              "subnets",
                              "local_steps",
                              "blocks",
                              "inner_steps",
                              "z_lr",
                              "stored_samples",
                              "correction_period",
                              "downsample",
                              "warmup_epochs",
                              "method",
                              "graph_parts",
                              "graph_edges",
                              "graph_exponent",
                              "partitioner",
                              "halo_rows",
                              "fanout"});
  SolverParameters p;
  p.instances = optional_int(node, "instances", 0, 0);
  p.max_active_keys = optional_int(node, "max_active_keys", 0, 0);
  p.min_update_frequency = optional_int(node, "min_update_frequency", 0, 0);
  p.chunks = optional_int(node, "chunks", 0, 0);
  if (std::optional<JsonNode> v = node.find("local_variant"))
    p.local_variant = read_enum<SolverParameters::LocalVariant>(*v, parse_local_variant, "local variant");
  p.admm_iterations = optional_int(node, "admm_iterations", 0, 0);
  if (std::optional<JsonNode> v = node.find("rho")) p.rho = v->as_size();
  if (std::optional<JsonNode> v = node.find("nu")) p.nu = v->as_size();
  p.quant_bits = optional_int(node, "quant_bits", 0, 0);
  p.subnets = optional_int(node, "subnets", 0, 0);
  p.local_steps = optional_int(node, "local_steps", 0, 0);
  p.blocks = optional_int(node, "blocks", 0, 0);
  p.inner_steps = optional_int(node, "inner_steps", 0, 0);
  p.stored_samples = optional_int(node, "stored_samples", 0, 0);
  if (std::optional<JsonNode> v = node.find("z_lr")) p.z_lr = v->as_size();
  p.correction_period = optional_int(node, "correction_period", 0, 0);
  p.downsample = optional_int(node, "downsample", 0, 0);
  p.warmup_epochs = optional_int(node, "warmup_epochs", 0, 0);
  if (std::optional<JsonNode> v = node.find("method")) {
    p.method = v->as_string();
    if (p.method != "penalty" && p.method != "al")
      v->fail("unknown serial-parallel method " + quote_for_message(p.method) + " (penalty or al)");
  }
  p.graph_parts = optional_int(node, "graph_parts", 0, 0);
  p.graph_edges = optional_int(node, "graph_edges", 0, 0);
  if (std::optional<JsonNode> v = node.find("graph_exponent")) p.graph_exponent = v->as_size();
  if (std::optional<JsonNode> v = node.find("partitioner")) {
    p.partitioner = v->as_string();
    if (p.partitioner != "streaming" && p.partitioner != "metis")
      v->fail("unknown graph partitioner " + quote_for_message(p.partitioner) + " (streaming or metis)");
  }
  p.halo_rows = optional_int(node, "halo_rows", 0, 0);
  if (std::optional<JsonNode> v = node.find("fanout")) p.fanout = v->as_string();
  return p;
}

// The value of `key` in a "k=v,k=v" label, or empty.
std::string label_value(const std::string& label, const std::string& key) {
  std::size_t start = 0;
  while (start < label.size()) {
    std::size_t end = label.find(',', start);
    if (end == std::string::npos) end = label.size();
    const std::string pair = label.substr(start, end - start);
    if (pair.size() > key.size() && pair.compare(0, key.size() + 1, key + "=") == 0)
      return pair.substr(key.size() + 1);
    start = end + 1;
  }
  return {};
}

std::int64_t label_int(const std::string& label, const std::string& key) {
  const std::string v = label_value(label, key);
  try {
    return v.empty() ? 0 : std::stoll(v);
  } catch (const std::exception&) {
    return 0;
  }
}

double label_real(const std::string& label, const std::string& key) {
  const std::string v = label_value(label, key);
  try {
    return v.empty() ? 0 : std::stod(v);
  } catch (const std::exception&) {
    return 0;
  }
}

// Version 1's "schedule" and "strategy" strings -> solver, schedule and parameters.
void legacy_info(const JsonNode& node, PlanInfo& info) {
  const std::string schedule = optional_string(node, "schedule");
  const std::optional<PlanSolver> solver = parse_plan_solver(schedule);
  if (solver && *solver != PlanSolver::backprop) {
    info.solver = *solver;
  } else if (!schedule.empty()) {
    info.schedule = read_enum<PlanSchedule>(node.at("schedule"), parse_plan_schedule, "schedule");
  }
  SolverParameters& p = info.parameters;
  const std::string& s = info.strategy;
  switch (info.solver) {
    case PlanSolver::backprop:
      break;
    case PlanSolver::ampnet:
      p.max_active_keys = label_int(s, "max_active_keys");
      p.min_update_frequency = label_int(s, "min_update_frequency");
      p.instances = label_int(s, "instances");
      break;
    case PlanSolver::local:
      p.chunks = label_int(s, "chunks");
      p.local_variant =
          parse_local_variant(label_value(s, "variant")).value_or(SolverParameters::LocalVariant::none);
      p.instances = label_int(s, "instances");
      break;
    case PlanSolver::dladmm:
    case PlanSolver::pdadmm:
    case PlanSolver::pdadmm_g_q:
      p.rho = label_real(s, "rho");
      p.nu = label_real(s, "nu");
      p.admm_iterations = label_int(s, "iterations");
      if (info.solver == PlanSolver::pdadmm_g_q) p.quant_bits = 8;  // the only grid version 1 lowered
      break;
    case PlanSolver::gist:
      p.subnets = label_int(s, "m");
      p.local_steps = label_int(s, "zeta");
      break;
    case PlanSolver::block_admm:  // after version 1: its parameters are always in "parameters"
    case PlanSolver::serial_parallel:
      break;
  }
}

}  // namespace

OrderedJson info_to_json(const PlanInfo& info) {
  OrderedJson j;
  j["model"] = info.model;
  j["strategy"] = info.strategy;
  j["solver"] = to_string(info.solver);
  j["schedule"] = to_string(info.schedule);
  j["stream_order"] = to_string(info.stream_order);
  if (info.parameters != SolverParameters{}) j["parameters"] = parameters_to_json(info.parameters);
  j["optimizer"] = info.optimizer;
  j["dtype"] = to_string(info.dtype);
  j["global_batch"] = info.global_batch;
  j["microbatches"] = info.microbatches;
  j["tokens_per_sample"] = info.tokens_per_sample;
  if (info.input_elements != 0) j["input_elements"] = info.input_elements;
  if (info.graph_nodes != 0) j["graph_nodes"] = info.graph_nodes;
  j["model_flops_per_iteration"] = info.model_flops_per_iteration;
  j["seed"] = info.seed;
  if (!info.experiment_hash.empty()) j["experiment_hash"] = info.experiment_hash;
  return j;
}

PlanInfo read_info(const JsonNode& node, std::int64_t version) {
  if (version == 1)
    node.reject_unknown_fields({"model", "strategy", "schedule", "optimizer", "dtype", "global_batch",
                                "microbatches", "tokens_per_sample", "model_flops_per_iteration", "seed",
                                "experiment_hash"});
  else if (version == 2)
    node.reject_unknown_fields({"model", "strategy", "solver", "schedule", "parameters", "optimizer", "dtype",
                                "global_batch", "microbatches", "tokens_per_sample", "input_elements",
                                "graph_nodes", "model_flops_per_iteration", "seed", "experiment_hash"});
  else
    node.reject_unknown_fields({"model", "strategy", "solver", "schedule", "stream_order", "parameters",
                                "optimizer", "dtype", "global_batch", "microbatches", "tokens_per_sample",
                                "input_elements", "graph_nodes", "model_flops_per_iteration", "seed",
                                "experiment_hash"});
  PlanInfo info;
  info.model = optional_string(node, "model");
  info.strategy = optional_string(node, "strategy");
  if (version == 1) {
    legacy_info(node, info);
  } else {
    if (std::optional<JsonNode> v = node.find("solver"))
      info.solver = read_enum<PlanSolver>(*v, parse_plan_solver, "solver");
    if (std::optional<JsonNode> v = node.find("schedule"))
      info.schedule = read_enum<PlanSchedule>(*v, parse_plan_schedule, "schedule");
    // Versions 1 and 2 have no stream order: their Plans ran as dataflows (ready).
    if (std::optional<JsonNode> v = node.find("stream_order"))
      info.stream_order = read_enum<StreamOrder>(*v, parse_stream_order, "stream_order");
    if (std::optional<JsonNode> v = node.find("parameters")) info.parameters = read_parameters(*v);
    info.input_elements = optional_int(node, "input_elements", 0, 0);
    info.graph_nodes = optional_int(node, "graph_nodes", 0, 0);
  }
  info.optimizer = optional_string(node, "optimizer");
  if (std::optional<JsonNode> v = node.find("dtype")) info.dtype = read_enum<DType>(*v, parse_dtype, "dtype");
  info.global_batch = optional_int(node, "global_batch", info.global_batch, 0);
  info.microbatches = optional_int(node, "microbatches", info.microbatches, 0);
  info.tokens_per_sample = optional_int(node, "tokens_per_sample", info.tokens_per_sample, 0);
  if (std::optional<JsonNode> v = node.find("model_flops_per_iteration"))
    info.model_flops_per_iteration = v->as_size();
  info.seed = optional_int(node, "seed", info.seed);
  info.experiment_hash = optional_string(node, "experiment_hash");
  return info;
}

std::int64_t legacy_graph_nodes(const Plan& plan) {
  for (const Task& t : plan.tasks())
    if (t.kind == TaskKind::spmm) return t.attr_int("nodes").value_or(0);
  return 0;
}

}  // namespace plan_json
}  // namespace traces
}  // namespace strata
