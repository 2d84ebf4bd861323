// Plan: the task graph of a training run, the contract between every part of strata.
//
// A Plan is built by a strategy (models/) or read from JSON (plan_json.hpp), then executed by
// the simulator (sim/) or the real executor (real_exec/). Invariants once validate() passed:
// - task indices are dense, 0..size()-1, in creation order; ids are unique;
// - every dependency names an earlier-or-later existing task, never itself; the graph of data
//   and control dependencies together is acyclic;
// - every worker, peer and group member is in [0, num_workers); sizes are finite and >= 0;
// - communication kinds are on the comm stream, compute kinds on the compute stream.
// Tasks are immutable after validation: executors only read a Plan.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {

// What produced the Plan: enough to reproduce it and to label reports.
struct PlanInfo {
  std::string model;
  std::string strategy;   // e.g. "dp=2,tp=2,pp=2"
  std::string schedule;   // gpipe | 1f1b | none
  std::string optimizer;  // sgd | adam
  DType dtype = DType::fp32;
  std::int64_t global_batch = 0;  // samples per iteration
  std::int64_t microbatches = 1;  // per pipeline, per iteration
  std::int64_t tokens_per_sample = 1;
  double model_flops_per_iteration = 0;  // FLOP, 6N + attention term per token, no recompute
  std::int64_t seed = 0;
  // Content hash of the Experiment the Plan was lowered from (hex, models/experiment.hpp);
  // empty for a Plan built by hand or read from a file that has none.
  std::string experiment_hash;
};

class Plan {
 public:
  Plan() = default;
  explicit Plan(int num_workers) : num_workers_(num_workers) {}

  // REQUIRES: id not already present (checked: InputError).
  TaskIndex add_task(Task task);
  BufferIndex add_buffer(Buffer buffer);
  // Capacity hint for builders that know their size: avoids regrowing the task store and id
  // index (at 10^6 tasks, regrowth dominated lowering).
  void reserve(std::size_t tasks, std::size_t buffers = 0);
  void add_data_dep(TaskIndex producer, TaskIndex consumer);
  void add_control_dep(TaskIndex before, TaskIndex after);

  // Checks every invariant above; throws InputError naming `source` (a file or "plan"), the
  // JSON pointer of the offending task (/tasks/N/...) and the problem.
  void validate(const std::string& source = "plan") const;

  std::size_t size() const { return tasks_.size(); }
  const Task& task(TaskIndex i) const { return tasks_[i]; }
  Task& mutable_task(TaskIndex i) { return tasks_[i]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  const Buffer& buffer(BufferIndex i) const { return buffers_[i]; }

  // Index of the task with this id, or -1.
  long find(const std::string& id) const;

  int num_workers() const { return num_workers_; }
  void set_num_workers(int n) { num_workers_ = n; }
  int num_iterations() const;  // 1 + highest task iteration (0 for an empty plan)

  PlanInfo info;

 private:
  int num_workers_ = 0;
  std::vector<Task> tasks_;
  std::vector<Buffer> buffers_;
  std::unordered_map<std::string, TaskIndex> index_;
};

// Topological order of all tasks (data and control edges), Kahn's algorithm through Boost.Graph.
// Throws InputError naming `source` and one task on a cycle.
std::vector<TaskIndex> topological_order(const Plan& plan, const std::string& source = "plan");

}  // namespace strata
