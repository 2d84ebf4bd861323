#include "strata/traces/units.hpp"

#include <cmath>
#include <cstdio>

namespace strata {
inline namespace traces {
namespace {

std::string printf_string(const char* format, double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value, unit);
  return buf;
}

}  // namespace

std::string format_seconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a >= 1) return printf_string("%.3f %s", seconds, "s");
  if (a >= 1e-3) return printf_string("%.3f %s", seconds * 1e3, "ms");
  if (a >= 1e-6) return printf_string("%.3f %s", seconds * 1e6, "µs");
  return printf_string("%.3f %s", seconds * 1e9, "ns");
}

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return printf_string(u == 0 ? "%.0f %s" : "%.2f %s", v, kUnits[u]);
}

std::string format_si(double value, const std::string& unit) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double v = value;
  while (std::fabs(v) >= 1000 && p < 6) {
    v /= 1000;
    ++p;
  }
  return printf_string("%.2f %s", v, (std::string(kPrefixes[p]) + unit).c_str());
}

}  // namespace traces
}  // namespace strata
