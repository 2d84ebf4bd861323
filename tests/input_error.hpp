// What the unit tests share to check bad input: the one-line message of the InputError a call
// throws.
#pragma once

#include <functional>
#include <string>

#include "strata/traces/error.hpp"

namespace strata::test {

// The message of the InputError `f` throws, or "" when it throws none (other exceptions pass).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace strata::test
