// Fuzzes the platform loader (sim/replay.hpp: load_platform_summary, what --platform reads).
// SimGrid 3.32 keeps one engine per process and may abort on input it does not check, so each
// input is loaded in a forked child: the child exits 0 when the platform loads or is refused with
// an InputError, 2 when something else is thrown; the parent treats any other end of the child
// (a signal such as SimGrid's abort, an ASan or UBSan report, a hang past kChildSeconds) as a
// finding. The child's coverage is not fed back to libFuzzer (it dies with the child), so this
// harness mutates its seeds without guidance; docs/fuzzing.md says so.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_support.hpp"
#include "strata/sim/replay.hpp"

namespace {

constexpr unsigned kChildSeconds = 20;

[[noreturn]] void load_in_child(const std::string& path) {
  ::alarm(kChildSeconds);  // a hang ends as SIGALRM, which the parent reports
  try {
    const strata::PlatformSummary summary = strata::load_platform_summary(path);
    if (summary.hosts.empty()) strata::fuzz::finding("a platform loaded with no host");
  } catch (const strata::InputError& e) {
    strata::fuzz::check_message(e, path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata fuzz finding: exception other than InputError: %s\n", e.what());
    ::_exit(2);
  }
  ::_exit(0);  // no atexit handlers: they belong to the parent's libFuzzer
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const strata::fuzz::InputFile file(".xml");
  const std::string& path = file.write(strata::fuzz::as_text(data, size));
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) strata::fuzz::finding("fork failed");
  if (child == 0) load_in_child(path);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFSIGNALED(status))
    strata::fuzz::finding("loading the platform killed its process with signal " +
                          std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")");
  strata::fuzz::finding("loading the platform ended its process with status " +
                        std::to_string(WEXITSTATUS(status)));
}
