#include "strata/sim/report.hpp"

#include "strata/traces/error.hpp"
#include "strata/traces/units.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace strata {
inline namespace sim {
namespace {

using Interval = std::pair<double, double>;

std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

double total(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& [a, b] : v) s += b - a;
  return s;
}

// Length of the intersection of two sorted, disjoint interval lists.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double s = 0;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    double lo = std::max(a[i].first, b[j].first);
    double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) s += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return s;
}

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Hardware FLOP utilisation: every FLOP the compute tasks execute (recomputation included),
// each at the dense peak of its own dtype on its worker's host, over the time the workers with
// compute tasks had. `fixed` tasks are left out: their duration is given, not priced.
void set_hardware_flops_utilization(Report& r, const Plan& plan, const PlatformSummary& platform,
                                    const std::vector<int>& host_of_worker, std::size_t active) {
  double peak_seconds = 0;  // s the executed FLOPs take at peak
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& task = plan.task(i);
    if (is_communication(task.kind) || task.kind == TaskKind::fixed || task.flops <= 0) continue;
    const auto w = static_cast<std::size_t>(task.worker);
    if (w >= host_of_worker.size()) continue;
    const double peak = platform.hosts[static_cast<std::size_t>(host_of_worker[w])].peak_flops(task.dtype);
    if (peak > 0) peak_seconds += task.flops / peak;
  }
  if (r.iteration_time_s > 0 && active > 0)
    r.hfu =
        peak_seconds / static_cast<double>(r.iterations) / (r.iteration_time_s * static_cast<double>(active));
}

// Neither utilisation can exceed 1 (tolerance: rounding of the replay's clock). The hardware
// one is the cost model's invariant (no task runs above peak, a worker's compute stream runs
// one task at a time): above 1 is strata's bug. MFU above 1 with a sane HFU means the Plan
// declares more model FLOPs than its tasks execute: a hand-written Plan's error, one line.
void check_utilization(const Report& r, const Plan& plan) {
  constexpr double kTolerance = 1e-9;
  STRATA_ASSERT(r.hfu <= 1 + kTolerance,
                "hardware FLOP utilisation " + fmt("%.4g", r.hfu) + " above 1: a task ran faster than peak");
  if (r.mfu <= 1 + kTolerance) return;
  throw InputError(input_error_message(
      "plan", "info/model_flops_per_iteration",
      fmt("%.6g FLOP per iteration", plan.info.model_flops_per_iteration) +
          " is more than its compute tasks can execute in the simulated iteration (MFU would be " +
          fmt("%.1f %%", 100 * r.mfu) + "): give the model FLOPs its tasks execute, without recomputation"));
}

// The breakdown's parts (Breakdown).
constexpr std::size_t kGemm = 0, kAttention = 1, kOptimizer = 2, kMemoryBound = 3, kComputeParts = 4;
constexpr std::size_t kTp = 0, kPp = 1, kDp = 2, kCommParts = 3;

std::size_t compute_part(TaskKind kind) {
  if (is_linear(kind) || is_conv(kind)) return kGemm;
  if (kind == TaskKind::attention_fwd || kind == TaskKind::attention_bwd) return kAttention;
  if (kind == TaskKind::optimizer_step) return kOptimizer;
  return kMemoryBound;
}

// The data-parallel replicas of a backprop Plan: PlanInfo::dp_replicas where the lowering set it,
// else the "dp=N" of its strategy (what a Plan file records); 0 when neither says.
std::size_t data_parallel_replicas(const Plan& plan) {
  if (plan.info.dp_replicas > 0) return static_cast<std::size_t>(plan.info.dp_replicas);
  const std::string& s = plan.info.strategy;
  for (std::size_t at = s.find("dp="); at != std::string::npos; at = s.find("dp=", at + 1)) {
    if (at > 0 && s[at - 1] != ',') continue;
    char* end = nullptr;
    const long dp = std::strtol(s.c_str() + at + 3, &end, 10);
    if (dp > 0 && (*end == ',' || *end == '\0')) return static_cast<std::size_t>(dp);
  }
  return 0;
}

// Sends and receives: the pipeline's; a collective inside one replica of `replica_size` workers:
// tensor-parallel; across replicas, or in a Plan without replicas (replica_size 0): data-parallel.
std::size_t comm_part(const Task& task, std::size_t replica_size) {
  if (!is_collective(task.kind)) return kPp;
  if (replica_size == 0) return kDp;
  const auto replica = [&](WorkerId w) { return static_cast<std::size_t>(w) / replica_size; };
  for (WorkerId w : task.group)
    if (replica(w) != replica(task.group.front())) return kDp;
  return kTp;
}

}  // namespace

Trace make_trace(const Plan& plan, const std::vector<Span>& spans, const PlatformSummary& platform,
                 const std::vector<int>& host_of_worker) {
  // Trace::sort's order — (start, worker, id, stream, end) — on the compact spans, then records
  // built in that order: sorting records moves strings. The replay appends spans as tasks start,
  // so only runs of equal start need the rest of the key; any other input is sorted whole. The
  // key is a total order (ids are unique, a task has one span per worker), so the unstable sort
  // gives Trace::sort's result.
  std::vector<const Span*> order;
  order.reserve(spans.size());
  for (const Span& s : spans) order.push_back(&s);
  auto by_start = [](const Span* a, const Span* b) { return a->start < b->start; };
  auto rest = [&plan](const Span* a, const Span* b) {
    if (a->worker != b->worker) return a->worker < b->worker;
    const Task& ta = plan.task(a->task);
    const Task& tb = plan.task(b->task);
    return std::tie(ta.id, ta.stream, a->end) < std::tie(tb.id, tb.stream, b->end);
  };
  if (!std::is_sorted(order.begin(), order.end(), by_start))
    std::stable_sort(order.begin(), order.end(), by_start);
  for (auto run = order.begin(); run != order.end();) {
    auto end = std::find_if(run, order.end(), [&](const Span* s) { return s->start != (*run)->start; });
    if (end - run > 1) std::sort(run, end, rest);
    run = end;
  }
  Trace trace;
  trace.records.reserve(spans.size());
  for (const Span* span : order) {
    const Span& s = *span;
    const std::string& host =
        platform.hosts[static_cast<std::size_t>(host_of_worker[static_cast<std::size_t>(s.worker)])].name;
    trace.records.push_back(trace_record(plan.task(s.task), s.worker, host, s.start, s.end));
  }
  return trace;
}

Report make_report(const Plan& plan, const std::vector<Span>& spans, const PlatformSummary& platform,
                   const ReplayFacts& facts) {
  Report r;
  r.model = plan.info.model;
  r.experiment_hash = plan.info.experiment_hash;
  r.strategy = plan.info.strategy;
  r.schedule = plan.info.schedule_label();
  if (plan.info.solver == PlanSolver::ampnet || plan.info.solver == PlanSolver::local ||
      plan.info.solver == PlanSolver::block_admm || plan.info.solver == PlanSolver::serial_parallel)
    r.instances = static_cast<int>(std::max<std::int64_t>(1, plan.info.microbatches));
  if (plan.info.solver == PlanSolver::gist) r.epochs_per_iteration = static_cast<int>(plan.info.microbatches);
  // A backprop step on a split graph is one epoch too.
  if (plan.info.parameters.graph_parts > 1 && plan.info.solver == PlanSolver::backprop)
    r.epochs_per_iteration = 1;
  if (!plan.info.parameters.fanout.empty() && plan.info.global_batch > 0) {
    r.fanout = plan.info.parameters.fanout;
    r.iterations_per_epoch = (plan.info.graph_nodes + plan.info.global_batch - 1) / plan.info.global_batch;
  }
  if (plan.info.parameters.graph_parts > 1) {
    r.graph_nodes = plan.info.graph_nodes;
    r.graph_edges = plan.info.parameters.graph_edges;
    r.graph_parts = plan.info.parameters.graph_parts;
    r.graph_halo_rows = plan.info.parameters.halo_rows;
    r.graph_partitioner = plan.info.parameters.partitioner;
  }
  r.platform = platform.path;
  r.collectives = facts.collectives;
  r.network = facts.network;
  r.workers = plan.num_workers();
  r.iterations = std::max(1, plan.num_iterations());
  r.tasks = plan.size();
  r.flows = facts.flows;

  std::vector<Interval> window(
      static_cast<std::size_t>(r.iterations),
      {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()});
  const auto workers = static_cast<std::size_t>(r.workers);
  std::vector<std::vector<Interval>> compute(workers), comm(workers);
  // The breakdown's parts per worker: compute seconds by kind, communication intervals by group.
  std::vector<std::array<double, kComputeParts>> part_s(workers, std::array<double, kComputeParts>{});
  std::vector<std::array<std::vector<Interval>, kCommParts>> part_comm(workers);
  const std::size_t replicas = data_parallel_replicas(plan);
  const std::size_t replica_size = replicas > 0 ? std::max<std::size_t>(1, workers / replicas) : 0;
  for (const Span& span : spans) {
    const Task& task = plan.task(span.task);
    auto& w = window[static_cast<std::size_t>(task.iteration)];
    w.first = std::min(w.first, span.start);
    w.second = std::max(w.second, span.end);
    if (span.end <= span.start) continue;
    // By kind: a communication task on the compute stream (a blocking call) is communication,
    // exposed since the compute stream waits for it.
    const auto worker = static_cast<std::size_t>(span.worker);
    if (is_communication(task.kind)) {
      comm[worker].push_back({span.start, span.end});
      part_comm[worker][comm_part(task, replica_size)].push_back({span.start, span.end});
    } else {
      compute[worker].push_back({span.start, span.end});
      part_s[worker][compute_part(task.kind)] += span.end - span.start;
    }
  }
  // The run starts at 0: the first iteration includes what delays its first task (a cold start).
  if (!window.empty() && window[0].second >= window[0].first)
    window[0].first = std::min(window[0].first, 0.0);
  double sum_iter = 0;
  for (const auto& [a, b] : window) {
    double t = b > a ? b - a : 0;
    r.iteration_times_s.push_back(t);
    sum_iter += t;
  }
  const double n_it = static_cast<double>(r.iterations);
  r.iteration_time_s = sum_iter / n_it;

  std::set<int> hosts_used(facts.host_of_worker.begin(), facts.host_of_worker.end());
  std::map<int, double> busy_by_host;
  double persistent_peak = 0;
  std::vector<double> persistent(workers, 0);
  for (const Buffer& b : plan.buffers())
    if (b.persistent && !b.on_host) persistent[static_cast<std::size_t>(b.worker)] += b.bytes;
  // A symmetry reduction replayed representatives (the first replicas, or the first
  // tensor-parallel ranks of each stage); worker w of the whole run does what its representative
  // did (PlanInfo::representative, which comes first), and the links carry dp / symmetric
  // replicas (tp / symmetric ranks) times the bytes the replayed ones did.
  double byte_scale = 1;
  if (plan.info.symmetric_replicas > 0)
    byte_scale =
        static_cast<double>(plan.info.dp_replicas) / static_cast<double>(plan.info.symmetric_replicas);
  if (plan.info.symmetric_tp > 0)
    byte_scale = static_cast<double>(plan.info.tp_ranks) / static_cast<double>(plan.info.symmetric_tp);
  std::size_t active = 0;
  for (std::size_t w = 0; w < workers; ++w) {
    const int h = facts.host_of_worker[w];
    const auto rep = static_cast<std::size_t>(
        plan.info.representative(static_cast<WorkerId>(w), static_cast<int>(workers)));
    if (rep != w) {
      WorkerReport copy = r.per_worker[rep];
      copy.worker = static_cast<WorkerId>(w);
      copy.host = platform.hosts[static_cast<std::size_t>(h)].name;
      busy_by_host[h] += copy.compute_s;
      r.per_worker.push_back(std::move(copy));
      continue;
    }
    WorkerReport wr;
    wr.worker = static_cast<WorkerId>(w);
    wr.host = platform.hosts[static_cast<std::size_t>(h)].name;
    auto c = merged(std::move(compute[w]));
    auto m = merged(std::move(comm[w]));
    wr.compute_s = total(c) / n_it;
    wr.comm_s = total(m) / n_it;
    wr.exposed_comm_s = (total(m) - overlap(c, m)) / n_it;
    wr.idle_s = std::max(0.0, r.iteration_time_s - wr.compute_s - wr.exposed_comm_s);
    std::array<double, kCommParts> exposed{};
    for (std::size_t p = 0; p < kCommParts; ++p) {
      const auto part = merged(std::move(part_comm[w][p]));
      exposed[p] = (total(part) - overlap(c, part)) / n_it;
    }
    wr.peak_memory_bytes =
        persistent[w] + (w < facts.peak_dynamic_memory.size() ? facts.peak_dynamic_memory[w] : 0);
    persistent_peak = std::max(persistent_peak, wr.peak_memory_bytes);
    busy_by_host[h] += wr.compute_s;
    // Workers without compute tasks (replicas left out by a reduced lowering) are not averaged.
    if (!c.empty()) {
      r.compute_s += wr.compute_s;
      r.comm_s += wr.comm_s;
      r.exposed_comm_s += wr.exposed_comm_s;
      r.idle_s += wr.idle_s;
      Breakdown& b = r.breakdown;
      b.gemm_s += part_s[w][kGemm] / n_it;
      b.attention_s += part_s[w][kAttention] / n_it;
      b.optimizer_s += part_s[w][kOptimizer] / n_it;
      b.memory_bound_s += part_s[w][kMemoryBound] / n_it;
      b.exposed_tp_s += exposed[kTp];
      b.exposed_pp_s += exposed[kPp];
      b.exposed_dp_s += exposed[kDp];
      ++active;
    }
    r.per_worker.push_back(wr);
  }
  const double nw = std::max(1.0, static_cast<double>(active));
  r.compute_s /= nw;
  r.comm_s /= nw;
  r.exposed_comm_s /= nw;
  r.idle_s /= nw;
  for (double* part :
       {&r.breakdown.gemm_s, &r.breakdown.attention_s, &r.breakdown.optimizer_s, &r.breakdown.memory_bound_s,
        &r.breakdown.exposed_tp_s, &r.breakdown.exposed_pp_s, &r.breakdown.exposed_dp_s})
    *part /= nw;
  r.breakdown.idle_s = r.idle_s;
  r.bubble_fraction = r.iteration_time_s > 0 ? r.idle_s / r.iteration_time_s : 0;
  r.bytes_intra_host = facts.bytes_intra_host * byte_scale / n_it;
  r.bytes_inter_host = facts.bytes_inter_host * byte_scale / n_it;
  r.peak_memory_bytes = persistent_peak;

  double min_capacity = std::numeric_limits<double>::infinity();
  double peak_flops = 0;
  for (int h : hosts_used) {
    const HostSpec& spec = platform.hosts[static_cast<std::size_t>(h)];
    if (spec.gpu_memory > 0) min_capacity = std::min(min_capacity, spec.gpu_memory);
    peak_flops +=
        spec.peak_flops(plan.info.dtype) *
        static_cast<double>(std::count(facts.host_of_worker.begin(), facts.host_of_worker.end(), h));
    const double busy_share =
        spec.slots > 0 ? busy_by_host[h] / (spec.slots * std::max(r.iteration_time_s, 1e-300)) : 0;
    r.energy_j += r.iteration_time_s *
                  (spec.watts_idle + (spec.watts_busy - spec.watts_idle) * std::min(1.0, busy_share));
    r.cost_usd += spec.price_per_hour * r.iteration_time_s / 3600.0;
  }
  r.gpu_memory_bytes = std::isfinite(min_capacity) ? min_capacity : 0;
  r.fits = r.gpu_memory_bytes == 0 || r.peak_memory_bytes <= r.gpu_memory_bytes;
  if (r.iteration_time_s > 0) {
    r.samples_per_s = static_cast<double>(plan.info.global_batch) / r.iteration_time_s;
    r.tokens_per_s = r.samples_per_s * static_cast<double>(plan.info.tokens_per_sample);
    if (peak_flops > 0) r.mfu = plan.info.model_flops_per_iteration / (r.iteration_time_s * peak_flops);
  }
  set_hardware_flops_utilization(r, plan, platform, facts.host_of_worker, active);
  check_utilization(r, plan);
  return r;
}

nlohmann::json breakdown_to_json(const Breakdown& b) {
  return {{"gemm_s", b.gemm_s},
          {"attention_s", b.attention_s},
          {"memory_bound_s", b.memory_bound_s},
          {"optimizer_s", b.optimizer_s},
          {"exposed_tp_s", b.exposed_tp_s},
          {"exposed_pp_s", b.exposed_pp_s},
          {"exposed_dp_s", b.exposed_dp_s},
          {"bubble_s", b.idle_s}};
}

Breakdown breakdown_from_json(const nlohmann::json& j) {
  Breakdown b;
  b.gemm_s = j.value("gemm_s", 0.0);
  b.attention_s = j.value("attention_s", 0.0);
  b.memory_bound_s = j.value("memory_bound_s", 0.0);
  b.optimizer_s = j.value("optimizer_s", 0.0);
  b.exposed_tp_s = j.value("exposed_tp_s", 0.0);
  b.exposed_pp_s = j.value("exposed_pp_s", 0.0);
  b.exposed_dp_s = j.value("exposed_dp_s", 0.0);
  b.idle_s = j.value("bubble_s", 0.0);
  return b;
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::ordered_json j;
  j["schema_version"] = Report::kSchemaVersion;
  j["format"] = "strata-report";
  j["model"] = r.model;
  j["strategy"] = r.strategy;
  j["schedule"] = r.schedule;
  j["instances"] = r.instances;
  j["epochs_per_iteration"] = r.epochs_per_iteration;
  if (r.iterations_per_epoch > 0) {
    j["iterations_per_epoch"] = r.iterations_per_epoch;
    j["fanout"] = r.fanout;
  }
  if (r.graph_parts > 0)
    j["graph"] = {{"nodes", r.graph_nodes},
                  {"edges", r.graph_edges},
                  {"parts", r.graph_parts},
                  {"partitioner", r.graph_partitioner},
                  {"halo_rows", r.graph_halo_rows}};
  j["platform"] = r.platform;
  j["collectives"] = r.collectives;
  j["network"] = r.network;
  j["workers"] = r.workers;
  j["iterations"] = r.iterations;
  j["iteration_times_s"] = r.iteration_times_s;
  j["iteration_time_s"] = r.iteration_time_s;
  j["compute_s"] = r.compute_s;
  j["comm_s"] = r.comm_s;
  j["exposed_comm_s"] = r.exposed_comm_s;
  j["idle_s"] = r.idle_s;
  j["bubble_fraction"] = r.bubble_fraction;
  j["breakdown"] = breakdown_to_json(r.breakdown);
  j["bytes_intra_host"] = r.bytes_intra_host;
  j["bytes_inter_host"] = r.bytes_inter_host;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["gpu_memory_bytes"] = r.gpu_memory_bytes;
  j["fits"] = r.fits;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["tokens_per_s"] = r.tokens_per_s;
  j["samples_per_s"] = r.samples_per_s;
  j["energy_j"] = r.energy_j;
  j["cost_usd"] = r.cost_usd;
  j["tasks"] = r.tasks;
  j["flows"] = r.flows;
  if (!r.symmetry.empty()) j["symmetry"] = r.symmetry;
  nlohmann::ordered_json workers = nlohmann::ordered_json::array();
  for (const WorkerReport& w : r.per_worker)
    workers.push_back({{"worker", w.worker},
                       {"host", w.host},
                       {"compute_s", w.compute_s},
                       {"comm_s", w.comm_s},
                       {"exposed_comm_s", w.exposed_comm_s},
                       {"idle_s", w.idle_s},
                       {"peak_memory_bytes", w.peak_memory_bytes}});
  j["per_worker"] = workers;
  j["strata_version"] = strata_version();
  j["experiment_hash"] = r.experiment_hash;
  j["experiment"] = r.experiment;
  if (r.placement) {
    const PlacementReport& p = *r.placement;
    j["placement"] = {{"policy", p.policy},
                      {"estimate_s", p.estimate_s},
                      {"policy_estimate_s", p.policy_estimate_s},
                      {"strategy_estimate_s", p.strategy_estimate_s},
                      {"kept_strategy", p.kept_strategy},
                      {"schedule_length_ratio", p.schedule_length_ratio},
                      {"speedup", p.speedup},
                      {"policy_run_time_s", p.policy_run_time_s}};
  }
  return nlohmann::json::parse(j.dump());
}

Report report_from_json(const nlohmann::json& j) {
  Report r;
  r.model = j.value("model", "");
  r.strategy = j.value("strategy", "");
  r.schedule = j.value("schedule", "");
  r.instances = j.value("instances", 1);
  r.epochs_per_iteration = j.value("epochs_per_iteration", 0);
  r.iterations_per_epoch = j.value("iterations_per_epoch", std::int64_t{0});
  r.fanout = j.value("fanout", "");
  if (j.contains("graph")) {
    const nlohmann::json& g = j.at("graph");
    r.graph_nodes = g.value("nodes", std::int64_t{0});
    r.graph_edges = g.value("edges", std::int64_t{0});
    r.graph_parts = g.value("parts", std::int64_t{0});
    r.graph_partitioner = g.value("partitioner", "");
    r.graph_halo_rows = g.value("halo_rows", std::int64_t{0});
  }
  r.platform = j.value("platform", "");
  r.collectives = j.value("collectives", "");
  r.network = j.value("network", "");
  r.workers = j.value("workers", 0);
  r.iterations = j.value("iterations", 0);
  r.iteration_times_s = j.value("iteration_times_s", std::vector<double>{});
  r.iteration_time_s = j.value("iteration_time_s", 0.0);
  r.compute_s = j.value("compute_s", 0.0);
  r.comm_s = j.value("comm_s", 0.0);
  r.exposed_comm_s = j.value("exposed_comm_s", 0.0);
  r.idle_s = j.value("idle_s", 0.0);
  r.bubble_fraction = j.value("bubble_fraction", 0.0);
  if (const auto b = j.find("breakdown"); b != j.end() && b->is_object())
    r.breakdown = breakdown_from_json(*b);
  r.bytes_intra_host = j.value("bytes_intra_host", 0.0);
  r.bytes_inter_host = j.value("bytes_inter_host", 0.0);
  r.peak_memory_bytes = j.value("peak_memory_bytes", 0.0);
  r.gpu_memory_bytes = j.value("gpu_memory_bytes", 0.0);
  r.fits = j.value("fits", true);
  r.mfu = j.value("mfu", 0.0);
  r.hfu = j.value("hfu", 0.0);
  r.tokens_per_s = j.value("tokens_per_s", 0.0);
  r.samples_per_s = j.value("samples_per_s", 0.0);
  r.energy_j = j.value("energy_j", 0.0);
  r.cost_usd = j.value("cost_usd", 0.0);
  r.tasks = j.value("tasks", std::size_t{0});
  r.flows = j.value("flows", std::size_t{0});
  r.symmetry = j.value("symmetry", "");
  r.experiment_hash = j.value("experiment_hash", "");
  if (j.contains("experiment")) r.experiment = j.at("experiment");
  if (j.contains("placement")) {
    const nlohmann::json& p = j.at("placement");
    r.placement = PlacementReport{p.value("policy", ""),
                                  p.value("estimate_s", 0.0),
                                  p.value("policy_estimate_s", 0.0),
                                  p.value("strategy_estimate_s", 0.0),
                                  p.value("kept_strategy", false),
                                  p.value("schedule_length_ratio", 0.0),
                                  p.value("speedup", 0.0),
                                  p.value("policy_run_time_s", 0.0)};
  }
  return r;
}

std::string format_report(const Report& r) {
  std::string s;
  s += "model " + r.model + ", strategy " + r.strategy + (r.schedule.empty() ? "" : " (" + r.schedule + ")") +
       ", " + std::to_string(r.workers) + " workers on " + r.platform + "\n";
  s += "collectives " + r.collectives + ", network " + r.network + ", " + std::to_string(r.tasks) +
       " tasks, " + std::to_string(r.flows) + " collective flows" +
       (r.symmetry.empty() || r.symmetry.rfind("none", 0) == 0 ? "" : " replayed") + "\n";
  if (!r.symmetry.empty()) s += "symmetry            " + r.symmetry + "\n";
  s += "iteration time      " + format_seconds(r.iteration_time_s) + " (mean of " +
       std::to_string(r.iterations) + " iteration" + (r.iterations == 1 ? "" : "s") + ")\n";
  if (r.instances > 1)
    s += "                    " + format_seconds(r.iteration_time_s / r.instances) +
         " per solver iteration (" + std::to_string(r.instances) + " instances per Plan iteration)\n";
  if (r.epochs_per_iteration > 0)
    s += "epoch time          " + format_seconds(r.iteration_time_s / r.epochs_per_iteration) +
         (r.schedule == "gist"
              ? " (an iteration is one " + r.schedule + " round of " +
                    std::to_string(r.epochs_per_iteration) + " full-graph steps, one epoch each)\n"
              : std::string(" (an iteration is one full-graph step over every part)\n"));
  if (r.iterations_per_epoch > 0)
    s += "epoch time          " +
         format_seconds(r.iteration_time_s * static_cast<double>(r.iterations_per_epoch)) + " (" +
         std::to_string(r.iterations_per_epoch) + " minibatch steps, fan-out " + r.fanout +
         ", each node a target once)\n";
  if (r.graph_parts > 0)
    s += "graph               " + fmt("%.4g nodes, ", static_cast<double>(r.graph_nodes)) +
         fmt("%.4g edges", static_cast<double>(r.graph_edges)) + " in " + std::to_string(r.graph_parts) +
         " parts (" + r.graph_partitioner + "), halo " +
         fmt("%.4g rows", static_cast<double>(r.graph_halo_rows) / static_cast<double>(r.graph_parts)) +
         " per part per aggregation (" +
         fmt("%.1f %%", 100.0 * static_cast<double>(r.graph_halo_rows) /
                            (static_cast<double>(r.graph_parts) * static_cast<double>(r.graph_nodes))) +
         " of the nodes)\n";
  s += "compute per worker  " + format_seconds(r.compute_s) + "\n";
  s += "comm per worker     " + format_seconds(r.comm_s) + ", exposed " + format_seconds(r.exposed_comm_s) +
       "\n";
  s += "idle per worker     " + format_seconds(r.idle_s) + ", bubble " +
       fmt("%.1f %%", 100 * r.bubble_fraction) + "\n";
  const Breakdown& b = r.breakdown;
  s += "by part per worker  GEMM " + format_seconds(b.gemm_s) + ", attention core " +
       format_seconds(b.attention_s) + ", memory-bound " + format_seconds(b.memory_bound_s) + ", optimizer " +
       format_seconds(b.optimizer_s) + "; exposed TP " + format_seconds(b.exposed_tp_s) + ", PP " +
       format_seconds(b.exposed_pp_s) + ", DP " + format_seconds(b.exposed_dp_s) + "\n";
  s += "bytes per iteration " + format_si(r.bytes_intra_host, "B") + " intra-host, " +
       format_si(r.bytes_inter_host, "B") + " inter-host\n";
  s += "peak memory         " + format_bytes(r.peak_memory_bytes) + " per worker" +
       (r.gpu_memory_bytes > 0 ? std::string(r.fits ? " (fits in " : " (does NOT fit in ") +
                                     format_bytes(r.gpu_memory_bytes) + ")"
                               : "") +
       "\n";
  s += "throughput          " + fmt("%.1f tokens/s", r.tokens_per_s) + ", " +
       fmt("%.2f samples/s", r.samples_per_s) + "\n";
  s += "MFU                 " + fmt("%.1f %%", 100 * r.mfu) + " (model FLOPs), hardware FLOP utilisation " +
       fmt("%.1f %%", 100 * r.hfu) + " (every FLOP executed, recomputation included)\n";
  s += "energy              " + format_si(r.energy_j, "J") + " per iteration, cost " +
       fmt("%.3g USD", r.cost_usd) + " per iteration\n";
  if (r.placement) {
    const PlacementReport& p = *r.placement;
    s += "placement           " + p.policy + ": estimate " + format_seconds(p.policy_estimate_s) +
         ", strategy's placement " + format_seconds(p.strategy_estimate_s) +
         (p.policy == "strategy" ? std::string()
          : p.kept_strategy      ? std::string(" (not better: the strategy's placement is kept)")
                                 : std::string(" (the policy's placement is followed)")) +
         "\n";
    s += "                    schedule length ratio " + fmt("%.3f", p.schedule_length_ratio) +
         ", speedup over serial " + fmt("%.2f x", p.speedup) + ", policy run time " +
         format_seconds(p.policy_run_time_s) + "\n";
  }
  return s;
}

}  // namespace sim
}  // namespace strata
