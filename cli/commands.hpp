// The strata subcommands: each registers itself on the app and runs when selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "strata/models/cost/cost_model.hpp"

namespace strata::cli {

// Returns the action to run after parsing if the subcommand was chosen.
using Action = std::function<int()>;

void add_models_command(CLI::App& app, Action& action);
void add_plan_command(CLI::App& app, Action& action);
void add_simulate_command(CLI::App& app, Action& action);
void add_trace_export_command(CLI::App& app, Action& action);
void add_explore_command(CLI::App& app, Action& action);
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

// α–β of a real_exec transport measured on this machine: "threads" in this process; "mpi" in
// two OpenMPI processes launched with mpirun (a build with MPI). Throws InputError.
TransportCalibration measure_transport_calibration(const std::string& transport);
// `strata calibrate -o F --mpi-probe` under `mpirun -np 2`: measures the MPI transport, rank 0
// writes its figures to F. Returns the exit status.
int run_mpi_probe(const std::string& output);

// True when stderr is a terminal: progress is shown only then.
bool progress_wanted();

}  // namespace strata::cli
