// strata: a simulator and performance model of parallel deep-learning training.
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "strata/traces/error.hpp"

namespace strata::cli {
bool progress_wanted() { return ::isatty(STDERR_FILENO) != 0; }
}  // namespace strata::cli

int main(int argc, char** argv) {
  CLI::App app{"strata: what-if simulation of parallel deep-learning training"};
  app.require_subcommand(1);
  strata::cli::Action action;
  strata::cli::add_models_command(app, action);
  strata::cli::add_plan_command(app, action);
  strata::cli::add_simulate_command(app, action);
  strata::cli::add_trace_export_command(app, action);
  strata::cli::add_explore_command(app, action);
  strata::cli::add_spec_command(app, action);
#ifndef STRATA_SIM_ONLY  // strata-sim (cli/CMakeLists.txt) has the simulator's subcommands alone
  strata::cli::add_run_command(app, action);
  strata::cli::add_calibrate_command(app, action);
  strata::cli::add_validate_command(app, action);
  strata::cli::add_compare_solvers_command(app, action);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return action ? action() : 0;
  } catch (const strata::InputError& e) {
    std::cerr << "strata: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "strata: internal error: " << e.what() << "\n";
    return 2;
  }
}
