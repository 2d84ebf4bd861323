// Trace: what an executor observed (or predicted) for each task of a Plan.
//
// One schema for both executors: the simulator writes a predicted Trace, the real executor a
// measured one; task ids match the Plan's, so the two compare task by task. Times are seconds
// from the start of the run; a collective has one record per participating rank (same id).
#pragma once

#include <string>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {

struct TraceRecord {
  std::string id;      // the Plan task id
  TaskKind kind = TaskKind::fixed;
  Stream stream = Stream::compute;
  WorkerId worker = 0;
  std::string host;    // where the worker was placed
  std::int32_t iteration = 0;
  double start = 0;    // s
  double end = 0;      // s
  double bytes = 0;    // B communicated (comm) or moved (compute)
  double flops = 0;    // FLOP
};

struct Trace {
  std::string executor;  // "sim" or "real"
  std::string source;    // what ran: model and strategy, or the plan file
  std::vector<TraceRecord> records;  // ordered by (start, worker, id)

  void sort();  // puts records in the canonical order above
};

}  // namespace strata
