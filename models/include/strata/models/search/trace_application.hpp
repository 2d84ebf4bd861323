// A training job type measured on a real cluster (DESIGN.md, scheduling: the job level): its step
// time on each placement and its statistical efficiency at each batch size and epoch, from the
// traces Pollux's authors published with their simulator (Qiao et al., "Pollux: Co-adaptive
// Cluster Scheduling for Goodput-Optimized Deep Learning", OSDI 2021; github.com/petuum/adaptdl,
// branch osdi21-artifact, simulator/; Apache-2.0, shipped under validation/pollux/).
//
// A job's progress is counted in Pollux's units: the `progress` column of each validation trace
// (iterations at the initial batch size that the job's statistical efficiency makes equivalent).
// Epoch e ends at progress_at(e), the least progress any measured batch size needed for e epochs,
// and the job completes after max_epochs epochs. While it runs on a placement with atomic batch
// b and g gradient-accumulation steps (batch B = replicas · b · (g + 1)), it advances
//   gain / (step + (step − sync) · g)  progress per second,
//   gain = (var + sqr) / (var / s + sqr),  s = B / init_batch,
// with step and sync the measured step and synchronisation times at (placement, b) and sqr, var
// the measured gradient statistics at (B, epoch), interpolated linearly between the two measured
// batch sizes around B. Step times: a placement measured as such (GPUs per node, up to 4 nodes;
// the rotation that reads smallest) interpolates linearly in the local batch; any other placement
// interpolates piecewise-linearly over the (nodes ≤ 16, replicas, local batch) points of the
// measured placements (averaged per point) and the scalability traces, first in the local batch,
// then in replicas, then in nodes, each clamped to the points measured at the next coarser level.
// Pollux's simulator uses a Delaunay triangulation of the same points there (scipy's
// LinearNDInterpolator); the two agree at every measured point.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace strata {
inline namespace models {

struct StepSample {
  double local_bsz = 0;
  double step_s = 0;  // one optimizer step (compute and synchronisation)
  double sync_s = 0;  // of which gradient synchronisation
};

struct EpochSample {
  double progress = 0;  // Pollux's progress at the end of the epoch
  double grad_sqr = 0;  // gradient statistics during the epoch
  double grad_var = 0;
};

struct TraceApplication {
  std::string name;
  // Measured placements: GPUs per node as digits ("24": 2 GPUs on one node, 4 on another) in the
  // rotation that reads smallest, each a rising list of local batches.
  std::map<std::string, std::vector<StepSample>> placements;
  // (nodes, replicas) -> rising local batches: the measured placements averaged per point, and the
  // scalability traces.
  std::map<std::pair<int, int>, std::vector<StepSample>> grid;
  std::map<int, std::vector<EpochSample>> validation;  // by batch size
  int init_batch = 0, max_batch = 0;                   // default: the least and largest measured
  int min_local_bsz = 0, max_local_bsz = 0;            // default: the placement traces' range
  int max_epochs = 0;                                  // default: the shortest validation trace

  // Step and synchronisation time (s) on `placement` (GPUs per node, any order, zeros ignored).
  std::pair<double, double> step_time(const std::vector<int>& placement, double local_bsz) const;
  // The progress at the end of `epoch` (0 at epoch 0).
  double progress_at(int epoch) const;
  // (grad_sqr, grad_var) during `epoch` (from 0) at batch size `batch`.
  std::pair<double, double> grad_stats(double batch, int epoch) const;
};

// The atomic (per-GPU) batch and accumulation steps of a job of fixed batch `batch` on `replicas`
// GPUs, as Pollux's simulator chooses them: local = ceil(batch / replicas), steps of at most
// max_local_bsz, at least one accumulation step on one GPU above the initial batch, and the atomic
// batch capped so that the whole batch stays within max_batch.
struct AtomicBatch {
  int atomic = 0;
  int accum_steps = 0;
};
AtomicBatch atomic_batch(const TraceApplication& app, int batch, int replicas);

// Overrides read with the traces (a strata-pollux-applications file; docs/search.md).
struct TraceApplicationSettings {
  int max_epochs = 0, max_local_bsz = 0, min_local_bsz = 0, init_batch = 0, max_batch = 0;  // 0: default
};
// Reads DIR/placements.csv, DIR/scalability.csv and DIR/validation-<batch>.csv; throws InputError
// naming the file, line and column of a malformed or missing trace.
TraceApplication read_trace_application(const std::string& dir, const std::string& name,
                                        const TraceApplicationSettings& settings);
// Reads a strata-pollux-applications JSON file: {"format": "strata-pollux-applications",
// "schema_version": 1, "traces": DIR (relative to the file), "applications": {NAME: {settings}}}.
std::map<std::string, TraceApplication> read_trace_applications(const std::string& path);

}  // namespace models
}  // namespace strata
