// libstrata_blas_threads: starts OpenBLAS with one thread.
//
// Debian's OpenBLAS (the pthread build that the libblas alternatives select) starts one thread
// per core while the library is initialised, before main(), and each thread maps a 128 MiB
// buffer at once. Under an address-space limit (ulimit -v 800000) that mapping fails and the
// thread retries it for ever: `strata models` spun at 100 % CPU and printed nothing. strata never
// runs BLAS on several threads (CpuBackend sets one; workers are threads of their own), so the
// library starts with one: OPENBLAS_NUM_THREADS=1, which OpenBLAS reads in its initialiser.
//
// Nothing in the executable runs early enough to set it: its constructors run after every
// library's initialiser, and a .preinit_array function runs before libc's, which then resets
// the environment. So this is a shared library of its own, needed after libopenblas on the link
// line: the dynamic loader initialises it (after libc) before libopenblas. A value the user set
// is replaced too (its threads would be OpenBLAS's own, which hang the same way and which
// CpuBackend stops using anyway) and given back by forget_blas_thread_setting(), called from a
// constructor of the executable once OpenBLAS has read it, so that the environment children see
// is the user's.
#include <cstdlib>
#include <cstring>

namespace {

bool set_here = false;     // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
char user_value[32] = "";  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
bool user_given = false;   // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

[[gnu::constructor]] void start_blas_single_threaded() {
  // Plain arrays: this runs before any C++ static object of this library is built.
  if (const char* given = std::getenv("OPENBLAS_NUM_THREADS")) {
    if (std::strlen(given) >= sizeof user_value) return;  // no thread count: left as it is
    std::strcpy(user_value, given);
    user_given = true;
  }
  set_here = ::setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0;
}

}  // namespace

extern "C" void strata_forget_blas_thread_setting() {
  if (set_here) {
    if (user_given)
      ::setenv("OPENBLAS_NUM_THREADS", user_value, 1);
    else
      ::unsetenv("OPENBLAS_NUM_THREADS");
  }
  set_here = false;
}
