// strata's error policy, shared by every layer.
//
// - InputError: bad input from outside (a file, a flag, a Plan built by a user). Its message is
//   one line naming the file (or flag), the place in it and the problem, e.g.
//   `plan.json: /tasks/12/flops: negative value -3`. Readers and the CLI throw it; only main()
//   turns it into an exit status.
// - STRATA_ASSERT: an invariant inside strata. A failure is a bug in strata, not in the input;
//   it throws std::logic_error with the source location so tests can observe it.
#pragma once

#include <stdexcept>
#include <string>

namespace strata {
inline namespace traces {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds "where: place: problem" with empty parts omitted.
std::string input_error_message(const std::string& where, const std::string& place,
                                const std::string& problem);

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& message);

}  // namespace traces
}  // namespace strata

#define STRATA_ASSERT(cond, message)                                               \
  do {                                                                             \
    if (!(cond)) ::strata::assertion_failed(#cond, __FILE__, __LINE__, (message)); \
  } while (false)
