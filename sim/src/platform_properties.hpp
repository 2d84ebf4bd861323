// The properties a platform file gives its hosts and links, checked before SimGrid loads it
// (internal to sim/).
//
// strata's own host properties (models/cost/hardware.hpp, platforms/README.md) are read with
// the reader the cost model uses, then range-checked. A property name strata does not know is
// accepted (users annotate their files), unless it is a near miss of a name strata or SimGrid
// reads: a misspelled `flops_bf16` would otherwise be dropped silently and change every result.
#pragma once

#include <cstddef>
#include <string>

namespace strata {
inline namespace sim {

// Checks one property of a host or of a cluster (whose properties every host of it gets);
// `pstates` is the number of speeds the host has. Returns the problem, or "" when valid.
std::string check_host_property(const std::string& key, const std::string& value, std::size_t pstates);

// Checks the name of a property of any other element (link, zone, disk): near misses only.
std::string check_property_name(const std::string& key);

// "did you mean 'flops_bf16'?" when `key` is a near miss of a known name: case-insensitively
// equal, or at most 2 edits away (1 for names of 4 characters or fewer, so that a short
// annotation such as "cpu" is not taken for "gpus"), counting a swap of two neighbouring
// letters as one edit. "" when `key` is a known name or not near one.
std::string near_miss_hint(const std::string& key);

}  // namespace sim
}  // namespace strata
