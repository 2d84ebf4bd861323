// What the operating system says this process's memory is: the resident set's high-water mark
// (Linux /proc/self/status VmHWM), the cross-check of the Workspace's own counts — it also holds
// the data set, the libraries, kernel and transport temporaries and the allocator's slack.
#pragma once

#include <cstdint>

namespace strata::real {

// Bytes; 0 where the system does not say (no /proc).
std::int64_t process_peak_rss_bytes();

}  // namespace strata::real
