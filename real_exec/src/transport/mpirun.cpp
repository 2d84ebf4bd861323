#include "strata/real/transport/mpirun.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "strata/traces/error.hpp"

extern char** environ;

namespace strata::real {

int run_mpirun(int processes, const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv_text{"mpirun", "-q", "--oversubscribe", "-np", std::to_string(processes),
                                     program};
  if (::geteuid() == 0) argv_text.insert(argv_text.begin() + 1, "--allow-run-as-root");
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_text.size() + 1);
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawnp(&pid, "mpirun", nullptr, nullptr, argv.data(), environ) != 0)
    throw InputError("--transport mpi: cannot start mpirun (install openmpi-bin)");
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string self_executable() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

}  // namespace strata::real
