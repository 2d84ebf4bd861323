// The strata subcommands: each registers itself on the app and runs when selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/sim/explore.hpp"
#include "strata/traces/results_store.hpp"

namespace strata::cli {

// Returns the action to run after parsing if the subcommand was chosen.
using Action = std::function<int()>;

void add_models_command(CLI::App& app, Action& action);
void add_plan_command(CLI::App& app, Action& action);
void add_simulate_command(CLI::App& app, Action& action);
void add_trace_export_command(CLI::App& app, Action& action);
// explore under mpirun: runs the sweep on every rank of the MPI job with that rank's shards and
// returns the exit status (strata's executable in a build with MPI: explore_over_mpi); empty in
// strata-sim and builds without MPI, where explore started by mpirun is refused in one line.
using OverMpi = std::function<int(const std::function<int(const ExploreShards&)>&)>;
void add_explore_command(CLI::App& app, Action& action, OverMpi over_mpi = {});
// The sweep on the ranks of the MPI job this process belongs to (cli/real_run.cpp).
int explore_over_mpi(const std::function<int(const ExploreShards&)>& sweep);
void add_validate_published_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_compare_solvers_command(CLI::App& app, Action& action);
void add_spec_command(CLI::App& app, Action& action);
void add_schedule_command(CLI::App& app, Action& action);
void add_hybrid_command(CLI::App& app, Action& action);
void add_partition_command(CLI::App& app, Action& action);
void add_query_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
void add_jobs_command(CLI::App& app, Action& action);
// search's real trials (accuracy source `real`): the test accuracy after each epoch of an
// Experiment trained on this machine, kept in and reused from the store (strata's executable:
// train_curve in cli/real_run.hpp); empty in strata-sim, where `real` is refused in one line.
using CurveTrainer = std::function<std::vector<double>(const Experiment&, int, ResultsStore*,
                                                       const std::function<void(int)>&)>;
// search's pbt over real trials: the test accuracy after the last epoch of a lineage (each
// segment's Experiment and the epochs trained under it, a segment's model resuming the one before
// it), trained on this machine (train_lineage in cli/real_run.hpp).
using LineageTrainer = std::function<double(const std::vector<std::pair<Experiment, int>>&)>;
void add_search_command(CLI::App& app, Action& action, CurveTrainer trainer = {},
                        LineageTrainer lineage = {});

// α–β of a real_exec transport measured on this machine: "threads" in this process; "mpi" in
// two OpenMPI processes launched with mpirun (a build with MPI). Throws InputError.
TransportCalibration measure_transport_calibration(const std::string& transport);
// `strata calibrate -o F --mpi-probe` under `mpirun -np 2`: measures the MPI transport, rank 0
// writes its figures to F. Returns the exit status.
int run_mpi_probe(const std::string& output);

// True when stderr is a terminal: progress is shown only then.
bool progress_wanted();
// True when this process was started by mpirun (OpenMPI's or a PMI launcher's environment).
bool launched_by_mpirun();

}  // namespace strata::cli
