// What the subcommands that run Plans for real (run, validate, calibrate) share: the Plan they
// run, and the frame of an MPI job.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "flags.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/traces/plan.hpp"
#include "strata/traces/results_store.hpp"
#if STRATA_HAVE_MPI
#include "strata/real/mpi_transport.hpp"
#endif

namespace strata::cli {

// Samples per data-parallel rank (per instance for AMPNet) of a run lowered from flags without
// --global-batch.
inline constexpr std::int64_t kRunBatchPerWorker = 64;

// The version of what a real run computes (kernels, initialisation, data order), part of the
// store key of every real run's row: a search reuses a stored accuracy curve only when it was
// measured by the same numerics. Raise it when a change alters what a run learns.
inline constexpr int kNumericsVersion = 1;

// The settings a real run's row is keyed by (beside its experiment hash and seed): this
// machine, transport, device, precision, init, pinning, CPU share and kNumericsVersion.
std::vector<std::string> real_run_settings(const std::string& transport, const std::string& device,
                                           const std::string& precision, const std::string& init, bool pinned,
                                           double cpu_share);

// The test accuracy after each of `epochs` epochs of `experiment` trained for real on this
// machine (threads, CPU, fp32, unpinned; Fashion-MNIST, backprop Plans), as strata run trains it.
// With a store: a row of the same experiment, seed and settings with at least `epochs` epochs is
// reused; otherwise the run's row (fidelity real, command search) is written with its curve.
// `progress` (may be empty) hears each epoch.
std::vector<double> train_curve(const Experiment& experiment, int epochs, ResultsStore* store,
                                const std::function<void(int)>& progress);

// The test accuracy after the last epoch of `lineage` (search's pbt): the first segment's
// Experiment trained from its initial weights, each later one resuming the model the segments
// before it left (weights, optimizer state and step counts: the Plan's persistent buffers) under
// its own Experiment, epochs numbered on (the data order of epoch e is epoch e's). The state after
// every epoch of every lineage is kept in memory for the process's life, so each epoch trains
// once; lineages are not stored in the results store. Throws InputError when a segment changes
// the model's buffers (only keys that keep the model's shape, such as lr, may be perturbed).
double train_lineage(const std::vector<std::pair<Experiment, int>>& lineage);

// The Plan of --plan (which may leave tasks unplaced: run and validate place them with
// --schedule-policy before anything runs), or lowered from the flags with 64 samples per
// data-parallel rank unless --global-batch says otherwise; refused (InputError) when a kind has
// no real kernel.
Plan plan_to_run(const CommonFlags& flags, const std::string& plan_path);
// The Plan of `experiment`, refused (InputError) when a kind has no real kernel.
Plan plan_to_run(const Experiment& experiment);

// The optimizer of a --plan run: --optimizer and the optimizer keys of --set (lr, momentum,
// beta1, beta2, eps; the Plan fixes everything else), parsed by the experiment's key table.
real::OptimizerSettings plan_optimizer(const CommonFlags& flags, const Plan& plan);

// Throws InputError unless `transport` is threads or mpi.
void check_transport(const std::string& transport);

// Throws InputError unless `device` is cpu, or cuda in a build with the CUDA backend and a GPU
// visible, with the threads transport (every worker of a cuda run is a stream of GPU 0).
void check_device(const std::string& device, const std::string& transport);

// The Trainer's executor for a checked --device: TaskRunner on `cpu`, or the GPU executor.
template <typename T>
real::ExecutorFactory<T> executor_for(const std::string& device, real::Backend& cpu);

// --transport mpi in a build without MPI: one line naming what to install.
[[noreturn]] void throw_no_mpi();

#if STRATA_HAVE_MPI
// Runs `work` on every rank of the MPI job started by mpirun and returns its exit status
// (`processes` 0: any world size). A world of other than `processes` ranks is refused in one line
// from rank 0 ("world size 3 does not match the <what>'s 2 workers (run mpirun -np 2 strata
// <command> ...)"), and every rank returns 1. An exception on one rank is printed there (one line
// naming the rank) and aborts the whole job: returning would leave the other ranks waiting for it
// forever.
int on_mpi_ranks(int processes, const std::string& what, const std::string& command,
                 const std::function<int(const real::MpiSession&)>& work);
#endif

}  // namespace strata::cli
