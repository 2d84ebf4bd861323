// Internal to gcn.cpp, gist.cpp and reference/gcn_train.cpp (not installed): what the GCN and
// GIST halves both use.
// See strata/real/kernels/gcn.hpp for the model, GIST and their error policy.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "strata/traces/error.hpp"

namespace strata::real::gcn_detail {

[[noreturn]] inline void bad_input(const std::string& what, const std::string& problem) {
  throw InputError(input_error_message(what, "", problem));
}

// Throws InputError unless 1 <= sites <= every hidden width.
inline void check_sites(std::int64_t sites, std::span<const std::int64_t> hidden_widths) {
  if (sites < 1) bad_input("GIST", "sites m = " + std::to_string(sites) + " must be >= 1");
  for (std::size_t l = 0; l < hidden_widths.size(); ++l) {
    if (sites > hidden_widths[l]) {
      bad_input("GIST", "sites m = " + std::to_string(sites) + " exceeds hidden layer " + std::to_string(l) +
                            " width " + std::to_string(hidden_widths[l]));
    }
  }
}

}  // namespace strata::real::gcn_detail
