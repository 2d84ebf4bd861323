// Platform files and network models checked before SimGrid sees them (internal to sim/).
//
// SimGrid 3.32 aborts the process (xbt_assert, "The Impossible Did Happen") or silently
// computes nonsense on some user input: a link of 0 B/s, a NaN or negative bandwidth or latency,
// a cluster of 0 cores, an unknown network model. strata therefore reads the file itself first
// (a SAX pass with expat over SimGrid's DTD 4.1 elements) and checks every numeric attribute
// SimGrid parses, in SimGrid's own syntax (platform_units.hpp), and every property
// (platform_properties.hpp). What cannot be checked up front (routing, topology parameters,
// included files, profiles, a platform given as a shared library) is tried by loading the
// platform once in a child process, whose death becomes one line (loaded_platform.cpp).
#pragma once

#include <string>
#include <vector>

namespace strata {
inline namespace sim {

// The largest number of hosts a platform may declare (hosts, cluster and cabinet radicals,
// peers): 10^5, ten times the largest GPU clusters built so far; beyond it SimGrid's platform
// alone takes gigabytes and minutes to build.
constexpr long long kMaxPlatformHosts = 100000;

// Checks the file at `path`. Throws InputError with one line, e.g.
// `p.xml:12: link 'l0' attribute bandwidth: '0Bps' is zero; it must be positive`.
// A path ending in .so or .dylib (a platform as a shared library, which SimGrid runs) is only
// checked to be a readable regular file.
void check_platform_file(const std::string& path);

// The network models of SimGrid 3.32 as Debian builds it (with SMPI, without ns-3) that strata
// can use (not Constant, which has no routes).
const std::vector<std::string>& network_models();

// Throws InputError "--network-model: unknown network model 'Bogus' (known: ...)".
void check_network_model(const std::string& model);

}  // namespace sim
}  // namespace strata
