#include "strata/real/core/process_memory.hpp"

#include <fstream>
#include <string>

namespace strata::real {

std::int64_t process_peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      std::int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace strata::real
