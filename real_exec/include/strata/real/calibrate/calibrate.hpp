// Calibration microbenchmarks: measure this machine as strata's cost model sees it, so that
// `strata simulate --calibration` predicts what `strata run` measures.
//
// What is measured (each in the calling thread, pinned to core 0, OpenBLAS on one thread as in
// real runs; every figure is the median or best of repeated runs after warm-up):
// - peaks: single-core GEMM throughput at 512×512×512 (fp32 and fp64) and STREAM-triad memory
//   bandwidth over three 32 MiB arrays;
// - the zoo's tasks: one-worker training iterations of the zoo's models on Fashion-MNIST at the
//   batch sizes data and pipeline parallelism produce (64 and its microbatches 32 and 16), run
//   by the Plan interpreter as `strata run` runs them, and the solvers' own kinds (ADMM layer
//   updates, graph aggregation) from one-worker ADMM and GCN Plans; each compute task's duration is its
//   median over 20 iterations after 5 warm-up. Timing kernels inside real iterations rather than alone in a
//   loop keeps what a loop hides: inputs just written by another kernel, weights and Adam state evicted by
//   the rest of the iteration. (Alone, the MLP's ReLUs ran 3-5x faster and its Adam step 2x slower than
//   inside an iteration.) Multi-worker effects — two workers sharing the cores, caches and memory bus,
//   transfers, hand-offs — are left to the simulation, which `strata validate` then checks;
// - dispatch: the interpreter's time per task beyond its kernel, on a chain of near-empty tasks
//   of one worker, and on a chain that hands every task to the other worker's thread; and the
//   floor of a task, the 10th percentile time of those near-empty tasks (a GPU's launch and
//   stream synchronize: about 10 us on an H100, which no efficiency can express);
// - transports: point-to-point (send + recv) and 2-rank allreduce times over message sizes from
//   1 KiB to 4 MiB, run as small Plans through the Interpreter and the transport (24 messages
//   per size, the fastest of 3 runs' medians), fitted to α + β·bytes by least squares weighted
//   for relative error.
//
// Fitting the samples into a Calibration is the cost model's business: models/cost/
// calibration_fit.hpp (fit_calibration, fit_transport), whose sample types these functions fill.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "strata/models/cost/calibration_fit.hpp"
#include "strata/models/cost/cost_model.hpp"
#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/real/transport/file_store.hpp"
#include "strata/traces/plan.hpp"

namespace strata::real {

// The sample types and the fits are the cost model's (models/cost/calibration_fit.hpp); named
// here too so that callers of the measurements find them beside them.
using ::strata::DispatchOverhead;
using ::strata::fit_calibration;
using ::strata::fit_transport;
using ::strata::MachinePeaks;
using ::strata::TaskSample;
using ::strata::TransportSample;

// Called with what is being measured as work advances (for a progress line); may be empty.
using Progress = std::function<void(const std::string& what)>;

MachinePeaks measure_peaks(const Progress& progress = {});

// REQUIRES: one-worker Plans, validated, kernels for every kind (check_kernels). Runs in float,
// on the executor `executor` builds (the GPU's, say), or on this host's CPU when it is empty.
std::vector<TaskSample> measure_tasks(const std::vector<Plan>& plans, const LabelledImages& data,
                                      const Progress& progress = {},
                                      const ExecutorFactory<float>& executor = {});

// On the executor `executor` builds (the GPU's), or on this host's CPU when it is empty.
DispatchOverhead measure_dispatch(const ExecutorFactory<float>& executor = {});

// A factory for the transport under test and a runner of a Plan through it: the threads
// transport runs the Plan's two workers as threads of this process; other transports (MPI)
// provide their own. `run_plan` runs the Plan once and returns (start, end) per task, seconds.
using PlanTimer = std::function<std::vector<std::pair<double, double>>(const Plan&)>;
std::vector<TransportSample> measure_transport(const std::string& name, const PlanTimer& run_plan);
PlanTimer thread_plan_timer();
// The object store of files (file_store.hpp) on `medium`: as transport "files" on disk (a fresh
// folder under TMPDIR), as transport "cache" in RAM (/dev/shm, the cache VM's stand-in). "p2p"
// samples are one request, a PUT or a GET (the median of both, per size), "allreduce" samples
// a two-rank storage_allreduce run phase by phase in this thread; "put", "get" and "remove" the
// medians of each alone (remove: the object's folder), which the fit does not use.
std::vector<TransportSample> measure_file_store(Medium medium = Medium::disk);
// Runs the Plan's workers as threads of this process on what `executor` builds (the GPU
// executor's device-to-device copies, say), after one warm-up run.
PlanTimer executor_plan_timer(ExecutorFactory<float> executor);

// The Plans whose tasks `strata calibrate` measures: MLP and LeNet-5 on one worker at batch 64,
// 32 and 16, fp32, Adam; then, on the CPU only, pdADMM's layer updates (784-256-256-10, 2,000
// samples, one sweep) and a full-graph GCN step on 2,000 and 10,000 nodes of the kNN graph
// (spmm; an iteration of 0.1 s or more is measured 5 times after 1 warm-up, not 20 after 5).
std::vector<Plan> zoo_calibration_plans();

}  // namespace strata::real
