#include "platform_units.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace strata {
inline namespace sim {
namespace {

using UnitTable = std::map<std::string, double>;

// SimGrid's unit_scale generator: a unit, its value, and its prefixed forms, each prefix 1000
// (base 10) or 1024 (base 2) times the previous one, abbreviated ("k") or spelled ("kilo").
void add_unit(UnitTable& table, const std::string& unit, double value, int base, bool abbreviated) {
  static const std::vector<std::string> kBinary = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"};
  static const std::vector<std::string> kBinaryWords = {"kibi", "mebi", "gibi", "tebi",
                                                        "pebi", "exbi", "zebi", "yobi"};
  static const std::vector<std::string> kDecimal = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
  static const std::vector<std::string> kDecimalWords = {"kilo", "mega", "giga", "tera",
                                                         "peta", "exa",  "zeta", "yotta"};
  const auto& prefixes =
      base == 2 ? (abbreviated ? kBinary : kBinaryWords) : (abbreviated ? kDecimal : kDecimalWords);
  const double step = base == 2 ? 1024.0 : 1000.0;
  table.emplace(unit, value);
  for (const std::string& prefix : prefixes) {
    value *= step;
    table.emplace(prefix + unit, value);
  }
}

UnitTable make_table(Dimension dimension) {
  UnitTable t;
  switch (dimension) {
    case Dimension::speed:
      add_unit(t, "f", 1.0, 10, true);
      add_unit(t, "flops", 1.0, 10, false);
      break;
    case Dimension::bandwidth:
      for (int base : {2, 10}) {
        add_unit(t, "bps", 0.125, base, true);
        add_unit(t, "Bps", 1.0, base, true);
      }
      break;
    case Dimension::size:
      for (int base : {2, 10}) {
        add_unit(t, "b", 0.125, base, true);
        add_unit(t, "B", 1.0, base, true);
      }
      break;
    case Dimension::time:
      t = {{"w", 7 * 24 * 3600.0}, {"d", 24 * 3600.0}, {"h", 3600.0}, {"m", 60.0},  {"s", 1.0},
           {"ms", 1e-3},           {"us", 1e-6},       {"ns", 1e-9},  {"ps", 1e-12}};
      break;
  }
  return t;
}

const UnitTable& table_of(Dimension dimension) {
  static const UnitTable kSpeed = make_table(Dimension::speed);
  static const UnitTable kBandwidth = make_table(Dimension::bandwidth);
  static const UnitTable kTime = make_table(Dimension::time);
  static const UnitTable kSize = make_table(Dimension::size);
  switch (dimension) {
    case Dimension::speed:
      return kSpeed;
    case Dimension::bandwidth:
      return kBandwidth;
    case Dimension::time:
      return kTime;
    case Dimension::size:
      return kSize;
  }
  return kSpeed;
}

const char* default_unit(Dimension dimension) {
  switch (dimension) {
    case Dimension::speed:
      return "f";
    case Dimension::bandwidth:
      return "Bps";
    case Dimension::time:
      return "s";
    case Dimension::size:
      return "B";
  }
  return "";
}

const char* unit_examples(Dimension dimension) {
  switch (dimension) {
    case Dimension::speed:
      return "f, kf, Mf, Gf, Tf, Pf, Ef (or flops, gigaflops, ...)";
    case Dimension::bandwidth:
      return "Bps, kBps, MBps, GBps, TBps, KiBps, GiBps, or bits: bps, Gbps, ...";
    case Dimension::time:
      return "s, ms, us, ns, ps, m, h, d, w";
    case Dimension::size:
      return "B, kB, MB, GB, KiB, GiB, ... or bits: b, Gb, ...";
  }
  return "";
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

Range range_of(Dimension dimension) {
  switch (dimension) {
    case Dimension::speed:
      return {1.0, 1e20, false, "flop/s"};
    case Dimension::bandwidth:
      return {1.0, 1e18, false, "B/s"};
    case Dimension::time:
      return {0.0, 1e3, true, "s"};
    case Dimension::size:
      return {1.0, 1e18, false, "B"};
  }
  return {0, 0, false, ""};
}

std::string with_unit(double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g %s", value, unit);
  return buf;
}

std::string check_range(const std::string& text, double value, const Range& range) {
  const std::string quoted = "'" + text + "'";
  if (std::isnan(value)) return quoted + " is not a number";
  if (value < 0) return quoted + " is negative";
  if (value == 0) return range.zero_ok ? "" : quoted + " is zero; it must be positive";
  if (value < range.min)
    return quoted + " = " + with_unit(value, range.unit) + " is below " + with_unit(range.min, range.unit) +
           ", the smallest strata accepts";
  if (std::isinf(value))
    return quoted + " is infinite; the largest value strata accepts is " + with_unit(range.max, range.unit);
  if (value > range.max)
    return quoted + " = " + with_unit(value, range.unit) + " is above " + with_unit(range.max, range.unit) +
           ", the largest strata accepts";
  return "";
}

Quantity parse_quantity(const std::string& text, Dimension dimension) {
  Quantity q;
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) {
    q.problem = "'" + text + "' is not a number";
    return q;
  }
  if (errno == ERANGE) {
    q.problem = "'" + text + "' is out of the range of double precision";
    return q;
  }
  const std::string unit = *end == '\0' ? default_unit(dimension) : std::string(end);
  const UnitTable& table = table_of(dimension);
  const auto it = table.find(unit);
  if (it == table.end()) {
    q.problem = "'" + text + "' has an unknown unit '" + unit + "' (units: " + unit_examples(dimension) + ")";
    return q;
  }
  q.value = number * it->second;
  q.problem = check_range(text, q.value, range_of(dimension));
  return q;
}

std::vector<Quantity> parse_quantity_list(const std::string& text, Dimension dimension,
                                          const std::string& separators) {
  std::vector<Quantity> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t stop = text.find_first_of(separators, start);
    std::string item = text.substr(start, stop == std::string::npos ? std::string::npos : stop - start);
    if (dimension == Dimension::speed) item = trimmed(item);
    out.push_back(parse_quantity(item, dimension));
    if (stop == std::string::npos) return out;
    start = stop + 1;
  }
}

std::string parse_int(const std::string& text, long long min, long long max, long long& value) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  const std::size_t digits = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == digits || i != text.size()) return "'" + text + "' is not an integer";
  if (i - digits <= 18) value = std::stoll(text);
  if (i - digits > 18 || value < min || value > max)
    return "'" + text + "' is outside " + std::to_string(min) + ".." + std::to_string(max);
  return "";
}

}  // namespace sim
}  // namespace strata
