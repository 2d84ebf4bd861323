// json_stream: JSON read as a stream of SAX events (nlohmann::json::sax_parse), so that a large
// file never becomes one DOM.
//
// stream_json_file hands the elements of chosen top-level arrays (a Plan's "buffers" and "tasks")
// to a callback one at a time, each as a small DOM that is dropped afterwards; every other member
// of the top-level object is kept and returned. Memory is one element plus what the callback keeps.
//
// What a reader takes from an input is bounded: a regular file is read up to the size it had when
// opened; anything else (a pipe, a FIFO, /dev/stdin, a device such as /dev/zero) has no size and is
// read up to kMaxNonRegularInputBytes, beyond which reading stops with one line. A malformed
// document is one line with line:column, as read_json_file reports it (json_io.hpp).
//
// Out of memory: the DOMs being built are taken apart element by element before std::bad_alloc
// goes on, because nlohmann::json's destructor (noexcept) allocates a stack to free a large
// container and would otherwise terminate the process.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strata {
inline namespace traces {

// 4 GiB: about ten times a 10^6-task Plan file (420 MB).
inline constexpr std::uint64_t kMaxNonRegularInputBytes = std::uint64_t{4} << 30;

// Called for element `index` of the streamed array `array`; `root` is the top-level object as read
// so far (members that came before the array, streamed arrays standing as []).
using JsonElementHandler = std::function<void(std::string_view array, std::size_t index,
                                              const nlohmann::json& element, const nlohmann::json& root)>;

// Reads `path`; the elements of each top-level array named in `streamed` go to `on_element` and
// that array stands as [] in the returned document. With no names, returns the whole document.
// Throws InputError on an unreadable file, malformed JSON, or an input over its bound.
nlohmann::json stream_json_file(const std::string& path, const std::vector<std::string_view>& streamed,
                                const JsonElementHandler& on_element,
                                std::uint64_t max_non_regular_bytes = kMaxNonRegularInputBytes);

// The same over text in memory; errors name `source`.
nlohmann::json stream_json_text(std::string_view text, const std::string& source,
                                const std::vector<std::string_view>& streamed,
                                const JsonElementHandler& on_element);

// "1.93 GB of address space in use" (from /proc/self/statm; "" where unknown): the figure an
// out-of-memory message gives, since the limits that bite (ulimit -v) count address space.
std::string address_space_in_use();

// What this process can still allocate, in bytes: the smaller of the system's MemAvailable
// (/proc/meminfo) and the headroom under the address-space limit (ulimit -v) over what is mapped
// now; UINT64_MAX where neither is known.
std::uint64_t memory_available_bytes();

// Frees `value` one leaf at a time, so that nothing is allocated while memory is short.
void dismantle_json(nlohmann::json& value) noexcept;

}  // namespace traces
}  // namespace strata
