// Trace: what an executor observed (or predicted) for each task of a Plan.
//
// One schema for both executors: the simulator writes a predicted Trace, the real executor a
// measured one; task ids match the Plan's, so the two compare task by task. Times are seconds
// from the start of the run; a collective has one record per participating rank (same id).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {
inline namespace traces {

// strata's version (CMake's PROJECT_VERSION), recorded in every file strata writes.
std::string_view strata_version();

struct TraceRecord {
  std::string id;  // the Plan task id
  TaskKind kind = TaskKind::fixed;
  Stream stream = Stream::compute;
  WorkerId worker = 0;
  std::string host;  // where the worker was placed
  std::int32_t iteration = 0;
  double start = 0;  // s
  double end = 0;    // s
  double bytes = 0;  // B communicated (comm) or moved (compute)
  double flops = 0;  // FLOP
};

// The record of `task` run by `worker` on `host` from `start` to `end` (s): bytes are the
// transfer's payload for communication, the bytes moved for compute. Both executors build their
// records with it, so predicted and measured traces carry the same figures.
TraceRecord trace_record(const Task& task, WorkerId worker, std::string host, double start, double end);

struct Trace {
  std::string executor;              // "sim" or "real"
  std::string source;                // what ran: model and strategy, or the plan file
  std::vector<TraceRecord> records;  // ordered by (start, worker, id)
  // The Experiment that was run (its canonical JSON, models/experiment.hpp) and its hash; null
  // and "" when the Plan came from a file without one.
  nlohmann::json experiment;
  std::string experiment_hash;

  void sort();  // puts records in the canonical order above
};

}  // namespace traces
}  // namespace strata
