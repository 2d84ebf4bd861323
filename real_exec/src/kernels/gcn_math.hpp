// Internal to gcn.cpp and gist.cpp (not installed): what the GCN and GIST halves both use.
// See strata/real/kernels/gcn.hpp for the model, GIST and their error policy.
#pragma once

#include <string>

#include "strata/traces/error.hpp"

namespace strata::real::gcn_detail {

[[noreturn]] inline void bad_input(const std::string& what, const std::string& problem) {
  throw InputError(input_error_message(what, "", problem));
}

}  // namespace strata::real::gcn_detail
