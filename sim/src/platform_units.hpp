// Quantities in a SimGrid platform file, read the way SimGrid 3.32 reads them, and the ranges
// strata accepts them in (internal to sim/).
//
// Syntax (SimGrid 3.32, src/xbt/xbt_parse_units.cpp): the number is read by strtod (so "1e3",
// "0x1p4", and also "nan" and "inf", which strata then refuses), and the rest of the string must
// be exactly one unit of the quantity's table; a bare number takes the default unit. The tables
// are SimGrid's, so what SimGrid accepts is accepted here and nothing else:
//   speed      f, kf, Mf, Gf, Tf, Pf, Ef, Zf, Yf; flops, kiloflops, megaflops, ... yottaflops
//   bandwidth  Bps, kBps ... YBps, KiBps ... YiBps; bps, kbps ... Ybps, Kibps ... Yibps (bits)
//   time       w, d, h, m, s, ms, us, ns, ps
//   size       B, kB ... YB, KiB ... YiB; b, kb ... Yb, Kib ... Yib (bits)
//
// Ranges: every rate is finite and within the physical sanity bounds below, so that no value
// reaches SimGrid's solver that would make a time infinite, zero or NaN.
#pragma once

#include <string>
#include <vector>

namespace strata {
inline namespace sim {

enum class Dimension { speed, bandwidth, time, size };

// Physical sanity bounds. Lower bounds: a device slower than 1 flop/s or 1 B/s takes more than
// a second per flop or byte, which no real machine does; smaller positive values (down to
// 1e-320, below double precision's normal range) make SimGrid's times overflow to infinity.
// Upper bounds: 1e20 flop/s is 10^4 times the fastest accelerator (about 1e16 flop/s dense
// fp8), 1e18 B/s is 10^5 times the fastest link (NVLink 5, 1.8e12 B/s) and is what platform
// files (strata's among them) write for an ideal switch; 1e3 s of latency is beyond any
// network (a geostationary round trip is 0.5 s); 1e18 B is 10^4 times the largest memory of a
// node. Beyond these the value is a typo or a unit mistake, and SimGrid's max-min solver,
// which works to 1e-9 relative precision, would give meaningless times.
struct Range {
  double min;  // smallest accepted positive value (0 itself: see zero_ok)
  double max;
  bool zero_ok;  // latencies, and strata's properties where 0 means "unknown"
  const char* unit;
};
Range range_of(Dimension dimension);

// A quantity read from a string: value in base units (flop/s, B/s, s, B), or the problem.
struct Quantity {
  double value = 0;
  std::string problem;  // empty when valid
};

// Parses `text` as SimGrid does and checks it against range_of(dimension).
Quantity parse_quantity(const std::string& text, Dimension dimension);

// Parses a list separated by any of `separators` (SimGrid's pstate speeds: ","; link
// bandwidths: ";,"), each item as parse_quantity (speeds trimmed first, as SimGrid does).
std::vector<Quantity> parse_quantity_list(const std::string& text, Dimension dimension,
                                          const std::string& separators);

// Checks that `value` (already in base units) lies in `range`; returns the problem or "".
std::string check_range(const std::string& text, double value, const Range& range);

// A strict integer: optional sign, decimal digits only, the whole string, within [min, max].
// SimGrid reads `core`, `pstate` and radicals with std::stoi, which takes "4abc" as 4 and
// aborts on "99999999999"; strata refuses both. Returns the problem or "".
std::string parse_int(const std::string& text, long long min, long long max, long long& value);

// "1e+18" style formatting of a figure with its unit, for messages.
std::string with_unit(double value, const char* unit);

}  // namespace sim
}  // namespace strata
