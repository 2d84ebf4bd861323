// Numbers for people: every figure strata prints carries its unit, scaled to stay readable.
#pragma once

#include <string>

namespace strata {
inline namespace traces {

// 3 significant digits with s, ms, µs or ns: "12.3 ms".
std::string format_seconds(double seconds);
// Binary multiples: "1.50 GiB".
std::string format_bytes(double bytes);
// Decimal multiples with a unit: format_si(2.5e12, "FLOP/s") = "2.50 TFLOP/s".
std::string format_si(double value, const std::string& unit);

}  // namespace traces
}  // namespace strata
