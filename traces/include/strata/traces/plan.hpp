// Plan: the task graph of a training run, the contract between every part of strata.
//
// A Plan is built by a strategy (models/) or read from JSON (plan_json.hpp), then executed by
// the simulator (sim/) or the real executor (real_exec/). Invariants once validate() passed:
// - task indices are dense, 0..size()-1, in creation order; ids are unique;
// - every dependency names an earlier-or-later existing task, never itself; the graph of data
//   and control dependencies together is acyclic;
// - every worker, peer and group member is in [0, num_workers); sizes are finite and >= 0;
//   bytes below 2^53 B, FLOPs below 1e24 FLOP, a fixed task's duration_s below 1e7 s (plan.cpp
//   says why);
// - compute kinds are on the compute stream; communication kinds on the comm stream, or on the
//   compute stream as a blocking call the compute waits for;
// - every recv has exactly one matching send among its data dependencies (from its peer, to its
//   worker; comm_bytes 0 or the send's), and every send exactly one recv;
// - a task reading a non-persistent buffer that some task writes depends, directly or
//   transitively, on one of its writers (plan_checks.hpp).
// Tasks are immutable after validation: executors only read a Plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/traces/error.hpp"
#include "strata/traces/task.hpp"

namespace strata {
inline namespace traces {

// The training algorithm a Plan carries out (models/solvers/solver.hpp lowers each; docs/solvers.md).
// Executors read it from PlanInfo instead of guessing it from task kinds or ids.
enum class PlanSolver : std::uint8_t {
  backprop,
  ampnet,
  local,
  dladmm,
  pdadmm,
  pdadmm_g_q,
  gist,
  block_admm,
  serial_parallel
};
// backprop, ampnet, local, dladmm, pdadmm, pdadmm-g-q, gist, block-admm, serial-parallel
std::string_view to_string(PlanSolver solver);
std::optional<PlanSolver> parse_plan_solver(std::string_view name);
constexpr bool is_admm(PlanSolver solver) {
  return solver == PlanSolver::dladmm || solver == PlanSolver::pdadmm || solver == PlanSolver::pdadmm_g_q;
}

// A backprop Plan's pipeline schedule: none without a pipeline and for every other solver.
// zb_h1: zero-bubble ZB-H1 (Qi et al., ICLR 2024): 1F1B with the weight-gradient tasks deferred
// into the bubbles.
enum class PlanSchedule : std::uint8_t { none, gpipe, one_f_one_b, zb_h1 };
std::string_view to_string(PlanSchedule schedule);  // none, gpipe, 1f1b, zb-h1
std::optional<PlanSchedule> parse_plan_schedule(std::string_view name);

// How each stream of a worker picks its next task (traces/dispatch.hpp).
// ready: the most urgent of its ready tasks (priority, then index), a dataflow: a task that is not
//   ready yet never holds up a later one. The order of a DAG that no framework issues (workflows,
//   the solvers' asynchronous Plans), and of every Plan written before schema version 3.
// issue: its tasks in the order the framework issues them, (priority, then index), one after
//   another, as a CUDA stream runs kernels: a task that is not ready yet holds the stream, and
//   only the dependencies between tasks of different streams (events) let streams overlap. The
//   order the backprop lowering emits (Megatron-LM launches its kernels and NCCL calls in
//   program order).
enum class StreamOrder : std::uint8_t { ready, issue };
std::string_view to_string(StreamOrder order);  // ready, issue
std::optional<StreamOrder> parse_stream_order(std::string_view name);

// The solver's parameters as the Plan was lowered with them (models/ SolverConfig). A field a
// solver does not have stays 0 (none for the variant).
struct SolverParameters {
  // Local parallelism's variant (Laskin et al. 2020, section 3).
  enum class LocalVariant : std::uint8_t { none, greedy, chunked, overlapping };

  std::int64_t instances = 0;             // ampnet, local: minibatches per Plan run
  std::int64_t max_active_keys = 0;       // ampnet: instances in flight
  std::int64_t min_update_frequency = 0;  // ampnet: gradients accumulated before a step
  std::int64_t chunks = 0;                // local
  LocalVariant local_variant = LocalVariant::none;
  std::int64_t admm_iterations = 0;  // dladmm, pdadmm, pdadmm-g-q: sweeps per Plan run
  double rho = 0;                    // ADMM penalty on the coupling p_{l+1} = q_l
  double nu = 0;                     // ADMM penalty on the layer equations
  std::int64_t quant_bits = 0;       // pdadmm-g-q: bits of the grid p is sent on
  std::int64_t subnets = 0;          // gist: m, sub-GCNs per round
  std::int64_t local_steps = 0;      // gist: zeta, full-graph local steps per round
  std::int64_t blocks = 0;           // block-admm: blocks joined by auxiliary variables (rho: its penalty)
  std::int64_t inner_steps = 0;      // block-admm: ADMM steps per minibatch
  double z_lr = 0;                   // block-admm: step size of the auxiliary-variable update
  std::int64_t stored_samples = 0;   // block-admm: rows of its per-sample stores (0: online setting)
  // serial-parallel (rho, z_lr, stored_samples as block-admm's): every correction_period-th
  // minibatch a serial forward-backward pass; what crosses a worker boundary in the parallel
  // phase pooled by downsample x downsample; method penalty or al (augmented Lagrangian).
  std::int64_t correction_period = 0;
  std::int64_t downsample = 0;
  std::int64_t warmup_epochs = 0;  // serial-parallel: a real run's first epochs all corrections
  std::string method;
  // A GCN's graph split over workers (backprop on dp=P, or gist with parts): the parts (per
  // sub-GCN), the graph's edges, the partitioner (streaming | metis) and the halo rows all parts
  // receive at one aggregation. graph_edges > 0 says the graph is the seeded power-law graph of
  // graph_exponent (models/ graph_layout.hpp), split or whole; 0, the kNN image graph.
  std::int64_t graph_parts = 0;
  std::int64_t graph_edges = 0;
  double graph_exponent = 0;
  std::string partitioner;
  std::int64_t halo_rows = 0;
  std::string fanout;  // a GCN on sampled neighbourhoods: per hop from the targets, e.g. "25,10"

  bool operator==(const SolverParameters&) const = default;
};
std::string_view to_string(SolverParameters::LocalVariant variant);  // none, greedy, chunked, overlapping
std::optional<SolverParameters::LocalVariant> parse_local_variant(std::string_view name);

// What produced the Plan: enough to reproduce it, to label reports, and to tell an executor what
// it runs (which solver, with which parameters), so that no executor re-derives it from task ids.
struct PlanInfo {
  std::string model;
  std::string strategy;  // e.g. "dp=2,tp=2,pp=2"; a solver's Plan: its workers and parameters
  PlanSolver solver = PlanSolver::backprop;
  PlanSchedule schedule = PlanSchedule::none;
  StreamOrder stream_order = StreamOrder::ready;
  SolverParameters parameters;
  std::string optimizer;  // sgd | adam
  DType dtype = DType::fp32;
  std::int64_t global_batch = 0;  // samples per iteration
  std::int64_t microbatches = 1;  // per pipeline, per iteration (ampnet, local: instances; gist: zeta)
  std::int64_t tokens_per_sample = 1;
  std::int64_t input_elements = 0;  // of one sample of the model's input (784 for 28x28 images); 0: unknown
  std::int64_t graph_nodes = 0;     // a GCN's graph (one full-graph batch); 0: not a graph model
  double model_flops_per_iteration = 0;  // FLOP, 6N + attention term per token, no recompute
  std::int64_t seed = 0;
  // Content hash of the Experiment the Plan was lowered from (hex, models/experiment.hpp);
  // empty for a Plan built by hand or read from a file that has none.
  std::string experiment_hash;
  // A symmetry reduction (docs/simulator.md): > 0 when the Plan holds the tasks of only its first
  // `symmetric_replicas` of `dp_replicas` data-parallel replicas, each standing for
  // dp_replicas / symmetric_replicas identical ones; num_workers counts every replica's workers.
  // Not part of the Plan format: a reduced Plan exists only inside a replay.
  int symmetric_replicas = 0;
  int dp_replicas = 0;
  // A tensor-parallel symmetry reduction: > 0 when the Plan holds the tasks of only the first
  // `symmetric_tp` of every stage's `tp_ranks` tensor-parallel ranks, each standing for
  // tp_ranks / symmetric_tp alike ones (a worker w stands in for the workers w + i·symmetric_tp
  // of its stage), and a flow between two hosts for that many alike flows. Not in the format.
  int symmetric_tp = 0;
  int tp_ranks = 0;

  // The worker whose tasks a worker of the whole run repeats under a symmetry reduction (itself
  // without one). REQUIRES: w < num_workers.
  WorkerId representative(WorkerId w, int num_workers) const;

  // The label reports have always printed as "schedule": the solver's name, or for backprop the
  // pipeline schedule (none, gpipe, 1f1b, zb-h1).
  std::string schedule_label() const;
  // Whether the Plan trains a GCN over a graph (GIST, or backprop on a GCN).
  bool trains_graph() const { return graph_nodes > 0; }
};

// What Plan::validate and topological_order throw: an InputError (one line, the Plan may come
// from a file) that also says the Plan itself is malformed, so a caller that lowers several
// Plans (compare-solvers) tells a Plan that failed apart from a solver that does not apply.
class InvalidPlanError : public InputError {
 public:
  using InputError::InputError;
};

// The bytes a Plan of `tasks` tasks takes in memory, from the measured figure per task (plan.cpp:
// kPlanBytesPerTask).
double plan_memory_bytes(double tasks);

// Throws InputError when a Plan of at least `tasks` tasks cannot fit the memory this process has
// left (memory_available_bytes()): "the Plan would hold at least 1.2e+10 tasks (12.7 TB), more
// than the 21.3 GB of memory available; ...". Builders call it with a lower bound of their count
// before they build anything.
void check_plan_fits_memory(double tasks);

class Plan {
 public:
  Plan() = default;
  explicit Plan(int num_workers) : num_workers_(num_workers) {}

  // REQUIRES: id not already present (checked: InputError). Each time the task store would grow
  // (a logarithmic number of times), whether as many tasks again fit the memory left: where they
  // do not, std::bad_alloc now (a reader turns it into its own message), rather than the system
  // killing the process later.
  TaskIndex add_task(Task task);
  BufferIndex add_buffer(Buffer buffer);
  // Capacity hint for builders that know their size: avoids regrowing the task store and id
  // index (at 10^6 tasks, regrowth dominated lowering).
  void reserve(std::size_t tasks, std::size_t buffers = 0);
  void add_data_dep(TaskIndex producer, TaskIndex consumer);
  void add_control_dep(TaskIndex before, TaskIndex after);

  // Checks every invariant above; throws InvalidPlanError naming `source` (a file or "plan"), the
  // JSON pointer of the offending task (/tasks/N/...) and the problem.
  void validate(const std::string& source = "plan") const;
  // Each task's fields (workers, streams, dependencies, sizes finite and >= 0) and acyclicity,
  // without the bounds, the point-to-point pairing and the buffer order: for scheduling fixtures
  // (dispatch tests, a send with no receiver) and for tests of an executor's own refusals. An
  // executor runs only Plans that passed validate().
  void validate_graph(const std::string& source = "plan") const;

  std::size_t size() const { return tasks_.size(); }
  const Task& task(TaskIndex i) const { return tasks_[i]; }
  Task& mutable_task(TaskIndex i) { return tasks_[i]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  const Buffer& buffer(BufferIndex i) const { return buffers_[i]; }
  // The coordinates of buffer i's id (task.hpp's grammar), parsed once by add_buffer.
  const TaskCoords& buffer_coords(BufferIndex i) const { return buffer_coords_[i]; }

  // Index of the task with this id, or -1.
  long find(const std::string& id) const;

  int num_workers() const { return num_workers_; }
  void set_num_workers(int n) { num_workers_ = n; }
  // Whether compute tasks may be unplaced (worker -1, no buffers: a generic DAG's task, which a
  // placement policy puts on a worker; models/schedule/plan_placement.hpp). Off by default:
  // validate() then refuses an unplaced task in one line saying how to place it.
  void allow_unplaced(bool allow) { allow_unplaced_ = allow; }
  bool unplaced_allowed() const { return allow_unplaced_; }
  bool has_unplaced() const;
  int num_iterations() const;  // 1 + highest task iteration (0 for an empty plan)

  PlanInfo info;
  // Where the workers run, as a placement policy chose it (models/schedule/plan_placement.hpp):
  // a host name per worker, and the policy's name. Empty: the natural placement (worker w on the
  // platform's w-th slot). The replay follows it unless given another placement.
  std::vector<std::string> placement;
  std::string placement_policy;
  // MB of each serverless function the workers run in (policy "functions": the placement names
  // function-pool hosts, docs/serverless.md); 0: the workers run on worker slots.
  double function_memory_mb = 0;

 private:
  // validate_graph()'s checks; returns a topological order.
  std::vector<TaskIndex> checked_order(const std::string& source) const;

  int num_workers_ = 0;

  bool allow_unplaced_ = false;
  std::vector<Task> tasks_;
  std::vector<Buffer> buffers_;
  std::vector<TaskCoords> buffer_coords_;  // per buffer
  std::unordered_map<std::string, TaskIndex> index_;
};

// Topological order of all tasks (data and control edges), Kahn's algorithm through Boost.Graph.
// Throws InvalidPlanError naming `source` and one task on a cycle.
std::vector<TaskIndex> topological_order(const Plan& plan, const std::string& source = "plan");

}  // namespace traces
}  // namespace strata
