// Report: what a replay predicts, summarised for people and for sweeps.
//
// Definitions (all per iteration, averaged over the Plan's iterations):
// - iteration time: first task start to last task end of one iteration;
// - per worker: compute = time its compute tasks run (union of intervals); comm = time its
//   communication tasks run, on whichever stream (a blocking one on the compute stream too);
//   exposed comm = comm time during which no compute task runs;
//   idle = iteration time - (compute + exposed comm);
// - bubble fraction: mean over workers of idle / iteration time, the measured idle share of
//   pipeline stages ((p-1)/(m+p-1) for a pipeline without communication);
// - bytes per link class: bytes of flows between slots of one host (intra) and across hosts;
// - peak memory: persistent buffers (those on the device: not Buffer::on_host) plus the largest
//   sum of live allocations (mem_alloc at a task's start, mem_free at its end) on one worker;
// - MFU: the Plan's model FLOPs per iteration (no recomputation) / (iteration time x workers x
//   dense peak of the Plan's dtype);
// - hardware FLOP utilisation (HFU): every FLOP the compute tasks execute (recomputation
//   included, `fixed` tasks left out), each task's at the dense peak of its dtype on its host, /
//   (iteration time x workers with compute tasks). Neither can exceed 1: HFU above 1 is an
//   internal error (assertion), MFU above 1 means the Plan declares more model FLOPs than its
//   tasks execute (InputError naming info/model_flops_per_iteration);
// - energy: per host, idle power over the iteration plus (busy - idle) power times the busy
//   share of its slots' compute streams; cost: price per host-hour x hosts used x time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/sim/platform.hpp"
#include "strata/traces/plan.hpp"
#include "strata/traces/trace.hpp"

namespace strata {
inline namespace sim {

struct WorkerReport {
  WorkerId worker = 0;
  std::string host;
  double compute_s = 0;
  double comm_s = 0;
  double exposed_comm_s = 0;
  double idle_s = 0;
  double peak_memory_bytes = 0;
};

// How the workers were placed when a placement policy chose it (plan_placement.hpp): the
// policy, its estimates (s, before the replay), and what the report compares them with.
struct PlacementReport {
  std::string policy;              // strategy | heft | cpop | peft | minmin | cp | rr
  double estimate_s = 0;           // the placement followed (the strategy's when kept)
  double policy_estimate_s = 0;    // the policy's own placement
  double strategy_estimate_s = 0;  // the strategy's placement
  bool kept_strategy = false;
  double schedule_length_ratio = 0;
  double speedup = 0;            // over the best single slot, serial
  double policy_run_time_s = 0;  // wall time (not part of any comparison of outputs)
};

// Where an iteration goes, per worker (s per iteration, mean over the workers that compute): the
// compute stream's time by kind, each communicator's time not under compute, and the idle time.
// The compute parts sum to Report::compute_s. Communication: sends and receives are the pipeline's
// (pp); a collective within one data-parallel replica (PlanInfo::dp_replicas) is tensor-parallel
// (tp), one across replicas data-parallel (dp; all collectives of a Plan without replicas). The
// three exposed parts are each measured against compute alone, so where two communicators are
// exposed at once their sum exceeds exposed_comm_s.
struct Breakdown {
  double gemm_s = 0;          // linear_* and conv_* tasks
  double attention_s = 0;     // attention_fwd and attention_bwd (the attention core)
  double optimizer_s = 0;     // optimizer_step
  double memory_bound_s = 0;  // every other compute task (norms, activations, residuals, loss, ...)
  double exposed_tp_s = 0;
  double exposed_pp_s = 0;
  double exposed_dp_s = 0;
  double idle_s = 0;  // the bubble: neither compute nor exposed communication
};

// A breakdown as JSON: gemm_s, attention_s, memory_bound_s, optimizer_s, exposed_tp_s,
// exposed_pp_s, exposed_dp_s, bubble_s (the idle time); and back (absent keys read as 0).
nlohmann::json breakdown_to_json(const Breakdown& b);
Breakdown breakdown_from_json(const nlohmann::json& j);

struct Report {
  static constexpr int kSchemaVersion = 1;
  std::string model, strategy, schedule, platform, collectives, network;
  int workers = 0;
  int iterations = 0;
  // Solver iterations in one Plan iteration: the instances of an AMPNet or local-parallelism
  // Plan (docs/solvers.md), 1 otherwise.
  int instances = 1;
  // Epochs (full-graph steps) in one Plan iteration: the local steps zeta of a GIST round
  // (docs/solvers.md); 0 where a Plan does not say.
  int epochs_per_iteration = 0;
  // A GCN on sampled minibatches (fanout): iterations to see every node once as a target; 0: not one.
  std::int64_t iterations_per_epoch = 0;
  std::string fanout;
  // A GCN whose graph is split in parts (graph_step.hpp; 0 parts: not split): its nodes and
  // edges, the parts, the partitioner and the halo rows all parts receive at one aggregation.
  std::int64_t graph_nodes = 0, graph_edges = 0, graph_parts = 0, graph_halo_rows = 0;
  std::string graph_partitioner;
  std::vector<double> iteration_times_s;
  double iteration_time_s = 0;
  double compute_s = 0;  // mean over workers, per iteration
  double comm_s = 0;
  double exposed_comm_s = 0;
  double idle_s = 0;
  double bubble_fraction = 0;
  Breakdown breakdown;
  double bytes_intra_host = 0;  // per iteration
  double bytes_inter_host = 0;
  double peak_memory_bytes = 0;  // max over workers
  double gpu_memory_bytes = 0;   // capacity of the smallest host used (0 = unknown)
  bool fits = true;
  double mfu = 0;  // model FLOP utilisation, in [0, 1]
  double hfu = 0;  // hardware FLOP utilisation, in [0, 1]
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double energy_j = 0;    // per iteration
  double cost_usd = 0;    // per iteration
  std::size_t tasks = 0;  // replayed (a symmetry reduction's representatives')
  std::size_t flows = 0;
  // What a symmetry reduction replayed ("2 of 1024 data-parallel replicas replayed, ..."), or why
  // every replica was ("none (<reason>): ..."); empty where not asked (replay of a Plan, dp 1).
  std::string symmetry;
  std::vector<WorkerReport> per_worker;
  // What was run: the Plan's experiment hash, and the Experiment's canonical JSON when the caller
  // has it (models/experiment.hpp; null for a Plan read from a file). Written with strata's
  // version, so `strata spec --from report.json` recovers the spec.
  std::string experiment_hash;
  nlohmann::json experiment;
  std::optional<PlacementReport> placement;  // set by the CLI when a policy placed the workers
};

// One task's execution on one of its workers, as the replay records it (a collective has one
// per member). Compact: the Trace with ids and host names is built from these only when kept.
struct Span {
  TaskIndex task = 0;
  WorkerId worker = 0;
  double start = 0;  // s
  double end = 0;    // s
};

// Facts the replay gathered that the trace does not hold.
struct ReplayFacts {
  std::vector<int> host_of_worker;
  std::vector<double> peak_dynamic_memory;  // B per worker, from the replay's event order
  double bytes_intra_host = 0;
  double bytes_inter_host = 0;
  std::size_t flows = 0;
  std::string collectives;  // fidelity used
  std::string network;      // model and factors
};

Report make_report(const Plan& plan, const std::vector<Span>& spans, const PlatformSummary& platform,
                   const ReplayFacts& facts);

// The Trace of a replay: one record per span, with ids, kinds and host names, in canonical order.
Trace make_trace(const Plan& plan, const std::vector<Span>& spans, const PlatformSummary& platform,
                 const std::vector<int>& host_of_worker);

nlohmann::json report_to_json(const Report& report);
Report report_from_json(const nlohmann::json& json);
// Human-readable summary, every number with its unit.
std::string format_report(const Report& report);

}  // namespace sim
}  // namespace strata
