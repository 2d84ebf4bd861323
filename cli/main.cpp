// strata: a simulator and performance model of parallel deep-learning training.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>
#include <string_view>
#include <system_error>

#include "commands.hpp"
#ifndef STRATA_SIM_ONLY
#include "real_run.hpp"
#endif
#include "file_flags.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/outputs.hpp"
#include "strata/traces/trace.hpp"

namespace strata::cli {

bool progress_wanted() { return ::isatty(STDERR_FILENO) != 0; }

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

namespace {

// A CLI11 message on one line.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// A message on one line whatever it quotes: a control character a user's value carried ("--model
// 'a<newline>b'") is shown escaped (\n, \t, \xNN), never as a line break.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (b < 0x20 || b == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

// Runs the chosen subcommand: its output paths checked before any work, its outputs staged while
// it runs and committed together when it returns (strata/traces/outputs.hpp).
int run(const CLI::App& app, const Action& action) {
  if (!action) return 0;
  OutputSet outputs;
  for (const CLI::App* cmd : app.get_subcommands()) add_file_flags(*cmd, outputs);
  outputs.check();
  if (outputs.writes_stdout()) {
    // stdout carries the output alone: the command's own messages go to stderr.
    std::cout.flush();
    std::fflush(stdout);
    const int data = ::dup(STDOUT_FILENO);
    if (data < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw InputError("-: cannot set up stdout");
    outputs.set_stdout_descriptor(data);
  }
  int status = 0;
  {
    StagingScope staging(outputs);
    status = action();
  }
  std::cout.flush();
  std::fflush(stdout);
  outputs.commit();
  return status;
}

}  // namespace
}  // namespace strata::cli

int main(int argc, char** argv) {
  strata::install_interrupt_handlers();
  CLI::App app{"strata: what-if simulation of parallel deep-learning training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata " + std::string(strata::strata_version()));
  strata::cli::Action action;
  strata::cli::add_models_command(app, action);
  strata::cli::add_plan_command(app, action);
  strata::cli::add_simulate_command(app, action);
  strata::cli::add_trace_export_command(app, action);
#if STRATA_HAVE_MPI
  strata::cli::add_explore_command(app, action, strata::cli::explore_over_mpi);
#else
  strata::cli::add_explore_command(app, action);
#endif
  strata::cli::add_validate_published_command(app, action);
  strata::cli::add_spec_command(app, action);
  strata::cli::add_schedule_command(app, action);
  strata::cli::add_partition_command(app, action);
  strata::cli::add_hybrid_command(app, action);
  strata::cli::add_query_command(app, action);
  strata::cli::add_report_command(app, action);
  strata::cli::add_jobs_command(app, action);
#ifndef STRATA_SIM_ONLY
  strata::cli::add_search_command(app, action, strata::cli::train_curve, strata::cli::train_lineage);
#else
  strata::cli::add_search_command(app, action);
#endif
#ifndef STRATA_SIM_ONLY  // strata-sim (cli/CMakeLists.txt) has the simulator's subcommands alone
  strata::cli::add_run_command(app, action);
  strata::cli::add_calibrate_command(app, action);
  strata::cli::add_validate_command(app, action);
  strata::cli::add_compare_solvers_command(app, action);
#endif
  if (argc == 2 && std::string_view(argv[1]) == "--file-flags") {  // for tests and tools; not in --help
    std::cout << strata::cli::file_flags_json(app).dump(2) << "\n";
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string what = strata::cli::one_line(e.what());
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-')
      what = "unknown command '" + std::string(argv[1]) + "' (strata --help lists them)";
    std::cerr << "strata: error: " << what << "\n";
    return 1;
  }
  try {
    return strata::cli::run(app, action);
  } catch (const strata::InputError& e) {
    std::cerr << "strata: error: " << strata::cli::printable(e.what()) << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the command was given that the file system refuses (a symlink loop, a name too long).
    const std::string path = e.path1().empty() ? std::string("file system") : e.path1().string();
    std::cerr << "strata: error: " << strata::cli::one_line(path + ": " + e.code().message()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // Out of memory outside the readers (which name the file): lowering, replay or training.
    // Nothing is committed. The limit that bites is usually the address space (ulimit -v).
    rlimit limit{};
    char why[96] = "";
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      std::snprintf(why, sizeof why, " under an address-space limit of %.2f GB (ulimit -v)",
                    static_cast<double>(limit.rlim_cur) / 1e9);
    std::fprintf(stderr, "strata: error: %s: out of memory%s; try a smaller model, strategy or Plan\n",
                 app.get_subcommands().front()->get_name().c_str(), why);
    return 1;
  } catch (const std::system_error& e) {
    // A thread or a resource the system would not give (EAGAIN, ENOMEM): out of memory or of
    // threads, the user's limits (ulimit -v, -u) rather than a bug.
    if (e.code() != std::errc::resource_unavailable_try_again && e.code() != std::errc::not_enough_memory) {
      std::cerr << "strata: internal error: " << strata::cli::printable(e.what()) << "\n";
      return 2;
    }
    std::cerr << "strata: error: " << app.get_subcommands().front()->get_name()
              << ": out of memory or threads (" << strata::cli::printable(e.code().message())
              << "); try a smaller model, strategy or Plan\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "strata: internal error: " << strata::cli::printable(e.what()) << "\n";
    return 2;
  }
}
