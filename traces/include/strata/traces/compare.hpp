// Predicted against measured: the Traces of one Plan from the simulator and from real runs,
// compared task by task (the ids are the Plan's, so they match one to one).
//
// A task's duration in a Trace is end − start of its record on its lowest-numbered participant
// (a collective has one record per rank; they share one start and end in both executors). With
// several measured runs (iterations of the same Plan), a task's measured duration is the median
// of its durations over the runs, which keeps one preempted run from counting.
//
// Relative error of a task = (predicted − measured) / measured. Per kind: the median and the
// 90th percentile (nearest rank) of |relative error|, and the total predicted and measured
// seconds. Cost: O(n log n) in the records.
#pragma once

#include <string>
#include <vector>

#include "strata/traces/trace.hpp"

namespace strata {
inline namespace traces {

struct TaskComparison {
  std::string id;
  TaskKind kind = TaskKind::fixed;
  WorkerId worker = 0;
  double predicted_s = 0;         // s
  double measured_s = 0;          // s (median over runs)
  double relative_error() const;  // (predicted − measured) / measured; 0 when both are 0
};

struct KindComparison {
  TaskKind kind = TaskKind::fixed;
  std::size_t tasks = 0;
  double median_abs_error = 0;  // of |relative error|, a fraction
  double p90_abs_error = 0;     // fraction
  double predicted_total_s = 0;
  double measured_total_s = 0;
};

struct TraceComparison {
  std::vector<TaskComparison> tasks;  // by id
  std::vector<KindComparison> kinds;  // by kind, kinds present only
  // Over compute tasks only (communication is judged by the iteration time).
  double compute_median_abs_error = 0;
  double compute_p90_abs_error = 0;

  // The `count` tasks with the largest |relative error| (ties by id).
  std::vector<TaskComparison> worst(std::size_t count) const;
};

// REQUIRES: `measured` not empty. Throws InputError when the task ids of the Traces differ
// (naming the first id found in one and not in the other): they are not runs of the same Plan.
TraceComparison compare_traces(const Trace& predicted, const std::vector<Trace>& measured);

// Predicted (x) against measured (y) duration of every task, log-log, one colour per kind, with
// the line y = x and a band of ±`band` (fraction) around it; the title on top. Deterministic.
// What a validation ran and measured (strata validate), beside its TraceComparison.
struct ValidationRun {
  std::string model, strategy, schedule, transport, device;
  int workers = 0;
  int iterations = 0;              // measured iterations
  double predicted_s = 0;          // simulated iteration time (s)
  std::vector<double> measured_s;  // each measured iteration (s); at least one
  nlohmann::json experiment;       // canonical spec (null for a Plan file)
  std::string experiment_hash;
};

// Median, 10th and 90th percentile (nearest rank on the sorted list) of the measured times.
struct MeasuredSpread {
  double median = 0, p10 = 0, p90 = 0;
};
MeasuredSpread measured_spread(const std::vector<double>& seconds);

// The validation report `strata validate --json` writes: the run, predicted against measured
// iteration time, and the per-kind errors of `comparison`; with strata's version and the
// experiment, so `strata spec --from` re-creates the run.
nlohmann::ordered_json validation_json(const ValidationRun& run, const TraceComparison& comparison);

std::string comparison_svg(const TraceComparison& comparison, const std::string& title, double band = 0.15);

}  // namespace traces
}  // namespace strata
