// What the unit tests share to check bad input: the one-line message of the InputError a call
// throws, and whether they run under AddressSanitizer.
#pragma once

#include <functional>
#include <string>

#include "strata/traces/error.hpp"

// Under AddressSanitizer (the CI's sanitizer build) an address-space limit starves its own
// allocator, and a crash in a child is reported by ASan rather than by the signal.
#if defined(__SANITIZE_ADDRESS__)
#define STRATA_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef STRATA_TEST_UNDER_ASAN
#define STRATA_TEST_UNDER_ASAN 0
#endif

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
