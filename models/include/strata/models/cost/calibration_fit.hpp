// Calibration fitting: turns what the real executor measured on a machine (real_exec's
// calibrate/ produces these samples) into the Calibration the cost model reads (cost_model.hpp),
// so that `strata simulate --calibration` predicts what `strata run` measures. Measuring lives
// in real_exec; fitting lives here, beside the model it fits, so the simulator and its tests
// need no real executor.
//
// Tasks (fit_calibration): the host's peaks are raised to the fastest rate any task reached
// (a kernel on cache-resident data beats the DRAM triad), so every efficiency is in (0, 1].
// GEMM-like kinds (linear, conv, attention, ADMM's layer update) get a FLOP efficiency and
// memory efficiency 1; the other kinds a memory efficiency and FLOP efficiency 1. Then neither
// roof of a task exceeds its measured time, and its predicted time is its measured time up to
// the spread of its key. Keys are kind/dtype/shape (each measured shape: the median over its
// tasks), kind/dtype/decade (for shapes near the measured ones) and kind/dtype (the median over
// all the kind's tasks), the shape being the FLOPs of a task that has any and its bytes
// otherwise, as CostModel::compute_time looks tasks up. Every compute kind gets the one-worker
// dispatch overhead plus the task floor as its per-task overhead; the efficiencies are fitted to
// what is left of each task's time.
// Transports (fit_transport): α + β·bytes per operation by least squares weighted by 1/time²,
// so that each message size counts by its relative error and α is not left to the largest
// messages; α and β are clamped at 0.
//
// Functions are pure: same samples, same Calibration (std::map keys, medians).
#pragma once

#include <string>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace models {

// The peak rates of one worker slot (a CPU core, or a GPU).
struct MachinePeaks {
  std::string host;      // gethostname
  int cores = 0;         // hardware threads usable as worker slots
  double gemm_fp32 = 0;  // FLOP/s, one core
  double gemm_fp64 = 0;  // FLOP/s, one core
  double triad_bw = 0;   // B/s, one core
};

// One compute task as measured inside a real training iteration.
struct TaskSample {
  std::string plan;  // the Plan's model and strategy
  std::string id;    // task id
  TaskKind kind = TaskKind::fixed;
  DType dtype = DType::fp32;
  double flops = 0;    // FLOP
  double bytes = 0;    // B read + written
  double seconds = 0;  // median kernel time
};

// What the executor adds to every task beyond its kernel.
struct DispatchOverhead {
  double same_thread_s = 0;  // s per task beyond its kernel, one worker
  double handoff_s = 0;      // s per task when each task wakes the other worker's thread
  double task_floor_s = 0;   // s, the 10th percentile time of a near-empty task: the executor's floor
                             // (tens of ns on a CPU; a GPU's launch and stream synchronize)
};

// One message size of one transport operation.
struct TransportSample {
  std::string transport;
  std::string op;      // "p2p" or "allreduce" (fitted); an object store's "put", "get", "remove" too
  double bytes = 0;    // B per message (allreduce: the reduced buffer)
  double seconds = 0;  // median
};

// α–β per op from the samples of one transport (2-rank allreduce).
// REQUIRES: at least two samples with positive time for each of "p2p" and "allreduce".
TransportCalibration fit_transport(const std::vector<TransportSample>& samples);

// The Calibration of a host from its peaks, its measured tasks and its dispatch overhead.
// REQUIRES: tasks not empty.
Calibration fit_calibration(const MachinePeaks& peaks, const std::vector<TaskSample>& tasks,
                            const DispatchOverhead& dispatch);

}  // namespace models
}  // namespace strata
