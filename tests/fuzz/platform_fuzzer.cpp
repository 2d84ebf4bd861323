// Fuzzes the platform loader (sim/replay.hpp: load_platform_summary, what --platform reads).
// strata's own check of the file (platform_check.hpp: expat, units, ranges, properties) runs in
// this process, as it does in strata before any SimGrid call: it must refuse or pass every input
// without a crash, and most inputs stop there. SimGrid 3.32 keeps one engine per process and may
// abort on input it does not check, so an input that passes the check is loaded in a forked
// child: the child exits 0 when the platform loads or is refused with
// an InputError, 2 when something else is thrown; the parent treats any other end of the child
// (a signal such as SimGrid's abort, an ASan or UBSan report, a hang past kChildSeconds) as a
// finding. The child's coverage would die with it: it copies libFuzzer's coverage counters (the
// __sancov_cntrs section, where -fsanitize=fuzzer-no-link puts strata's counters) into memory
// shared with the parent before it exits, and the parent adds them to libFuzzer's extra counters
// (the __libfuzzer_extra_counters section, which libFuzzer reads after each input), so that the
// search is guided by what the loader did. SimGrid itself is not instrumented.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "fuzz_support.hpp"
#include "platform_check.hpp"
#include "strata/sim/replay.hpp"

// Bounds of the section of inline 8-bit counters, defined (and named) by the linker.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" __attribute__((weak)) std::uint8_t __start___sancov_cntrs[];
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" __attribute__((weak)) std::uint8_t __stop___sancov_cntrs[];

namespace {

constexpr unsigned kChildSeconds = 20;
constexpr std::size_t kExtraCounters = 1 << 16;

// The child's counters, as libFuzzer reads them (cleared before each input).
__attribute__((section("__libfuzzer_extra_counters"), used)) std::uint8_t extra_counters[kExtraCounters];

std::size_t counter_count() {
  return static_cast<std::size_t>(__stop___sancov_cntrs - __start___sancov_cntrs);
}

// The counters' bytes, shared between the parent and its children (mapped once, before the
// first fork).
std::uint8_t* shared_counters() {
  static std::uint8_t* const shared = [] {
    if (counter_count() == 0) return static_cast<std::uint8_t*>(nullptr);
    void* memory =
        ::mmap(nullptr, counter_count(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) strata::fuzz::finding("cannot map the shared coverage counters");
    return static_cast<std::uint8_t*>(memory);
  }();
  return shared;
}

void counters_to_parent() {
  if (shared_counters() != nullptr) std::memcpy(shared_counters(), __start___sancov_cntrs, counter_count());
}

void counters_from_child() {
  const std::uint8_t* shared = shared_counters();
  if (shared == nullptr) return;
  for (std::size_t i = 0; i < counter_count(); ++i)
    if (shared[i] != 0) {
      std::uint8_t& to = extra_counters[i % kExtraCounters];
      to = std::max(to, shared[i]);
    }
}

[[noreturn]] void load_in_child(const std::string& path) {
  ::alarm(kChildSeconds);  // a hang ends as SIGALRM, which the parent reports
  // SimGrid aborts or crashes on some platforms; strata's loader runs it in a child of its own
  // and turns that death into one line. That child would inherit libFuzzer's handlers of these
  // signals, which symbolise a stack trace first (about 10 s with llvm-symbolizer on this
  // binary) and save the input as a crash of its own: the default actions are what strata's own
  // process has. A crash of this child itself still ends it by the signal, which the parent
  // reports as a finding.
  for (const int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  try {
    const strata::PlatformSummary summary = strata::load_platform_summary(path);
    if (summary.hosts.empty()) strata::fuzz::finding("a platform loaded with no host");
  } catch (const strata::InputError& e) {
    strata::fuzz::check_message(e, path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata fuzz finding: exception other than InputError: %s\n", e.what());
    ::_exit(2);
  }
  counters_to_parent();
  ::_exit(0);  // no atexit handlers: they belong to the parent's libFuzzer
}

}  // namespace

// libFuzzer calls this with each input (the name is libFuzzer's).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const strata::fuzz::InputFile file(".xml");
  const std::string& path = file.write(strata::fuzz::as_text(data, size));
  const auto checked = strata::fuzz::read_or_input_error(path, [&] {
    strata::check_platform_file(path);
    return true;
  });
  if (!checked) return 0;  // refused in one line naming the file, before SimGrid
  std::fflush(stderr);
  shared_counters();  // mapped before the first fork
  const pid_t child = ::fork();
  if (child < 0) strata::fuzz::finding("fork failed");
  if (child == 0) load_in_child(path);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    counters_from_child();
    return 0;
  }
  if (WIFSIGNALED(status))
    strata::fuzz::finding("loading the platform killed its process with signal " +
                          std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")");
  strata::fuzz::finding("loading the platform ended its process with status " +
                        std::to_string(WEXITSTATUS(status)));
}
