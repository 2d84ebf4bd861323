#include "strata/traces/error.hpp"

namespace strata {
inline namespace traces {

std::string input_error_message(const std::string& where, const std::string& place,
                                const std::string& problem) {
  std::string out = where;
  for (const std::string* part : {&place, &problem}) {
    if (part->empty()) continue;
    if (!out.empty()) out += ": ";
    out += *part;
  }
  return out;
}

void assertion_failed(const char* expr, const char* file, int line, const std::string& message) {
  throw std::logic_error(std::string("strata invariant violated at ") + file + ":" + std::to_string(line) +
                         ": " + expr + ": " + message);
}

}  // namespace traces
}  // namespace strata
