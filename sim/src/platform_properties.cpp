#include "platform_properties.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>
#include <vector>

#include "platform_units.hpp"
#include "strata/models/cost/bus_bandwidth.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/cost/serverless.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace sim {
namespace {

// strata's host properties (models/cost/hardware.hpp) and the ones SimGrid 3.32 itself reads:
// host_energy (wattage_per_state, wattage_off), link_energy (wattage_range, watt_range,
// wattage_off), link_energy_wifi (control_duration, wifi_watt_values), the file system plugin
// (remote_disk, size, mount, content), ns-3 wifi (wifi_distance, access_point), host_dvfs.
constexpr std::array<std::string_view, 9> kStrataNames = {"gpus",       "flops_fp32", "flops_bf16",
                                                          "flops_fp16", "flops_fp64", "mem_bw",
                                                          "gpu_memory", "pcie_bw",    "price_per_hour"};
constexpr std::array<std::string_view, 14> kSimGridNames = {"wattage_per_state",
                                                            "wattage_off",
                                                            "wattage_range",
                                                            "watt_range",
                                                            "control_duration",
                                                            "wifi_watt_values",
                                                            "remote_disk",
                                                            "size",
                                                            "mount",
                                                            "content",
                                                            "wifi_distance",
                                                            "access_point",
                                                            "plugin/dvfs/governor",
                                                            "plugin/dvfs/sampling-rate"};
// Names near strata's that are figures of their own, which strata does not read: accepted as
// annotations (an A100's TF32 or an H100's FP8 peak is commonly noted beside the others).
constexpr std::array<std::string_view, 6> kAnnotations = {"flops_tf32", "flops_fp8",  "flops_int8",
                                                          "flops_fp4",  "flops_int4", "flops_fp6"};

// Watts and prices: no unit in the file; bounds far beyond any machine (a DGX H100 draws
// 1.02e4 W at most and rents for about 1e2 USD an hour).
constexpr Range kWatts = {0.0, 1e9, true, "W"};
constexpr Range kPrice = {0.0, 1e6, true, "per node-hour"};

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// A plain number, the whole string (strtod syntax), within `range`.
std::string check_plain(const std::string& text, const Range& range, double& value) {
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return "'" + text + "' is not a number";
  if (errno == ERANGE) return "'" + text + "' is out of the range of double precision";
  return check_range(text, value, range);
}

// SimGrid's host_energy syntax: per pstate "idle:busy" or "idle:epsilon:all_cores", pstates
// separated by commas, one group per pstate of the host (SimGrid asserts the counts match).
std::string check_wattage(const std::string& value, std::size_t pstates) {
  std::size_t groups = 0;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = value.find(',', start);
    const std::string group = value.substr(start, comma == std::string::npos ? comma : comma - start);
    ++groups;
    const auto fields = static_cast<std::size_t>(std::count(group.begin(), group.end(), ':')) + 1;
    if (fields < 2 || fields > 3)
      return "pstate " + std::to_string(groups - 1) + ": '" + group +
             "' is not idle:busy or idle:epsilon:all_cores (watts)";
    std::size_t field_start = 0;
    for (std::size_t f = 0; f < fields; ++f) {
      const std::size_t colon = group.find(':', field_start);
      double watts = 0;
      const std::string problem = check_plain(
          group.substr(field_start, colon == std::string::npos ? colon : colon - field_start), kWatts, watts);
      if (!problem.empty()) return "pstate " + std::to_string(groups - 1) + ": " + problem;
      field_start = colon + 1;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (groups != pstates)
    return std::to_string(groups) + " pstates of watts for a host of " + std::to_string(pstates) +
           " speeds (one idle:...:busy group per speed)";
  return "";
}

// A models reader's complaint "host 'h': property 'key': problem" without what precedes the problem.
std::string problem_of(const InputError& e, const std::string& key) {
  const std::string what = e.what();
  const std::string marker = "property '" + key + "': ";
  const std::size_t at = what.find(marker);
  return at == std::string::npos ? what : what.substr(at + marker.size());
}

// Reads one strata property alone with models' reader (the cost model's own parsing, units
// included) and returns its value; `problem` gets the reader's complaint.
double read_with_models(const std::string& key, const std::string& value, std::string& problem) {
  try {
    const HostSpec spec = host_spec_from_properties("h", {{key, value}}, 1.0, 1);
    if (key == "gpus") return spec.slots;
    if (key == "flops_fp32") return spec.flops_fp32;
    if (key == "flops_bf16") return spec.flops_bf16;
    if (key == "flops_fp16") return spec.flops_fp16;
    if (key == "flops_fp64") return spec.flops_fp64;
    if (key == "mem_bw") return spec.mem_bw;
    if (key == "gpu_memory") return spec.gpu_memory;
    if (key == "pcie_bw") return spec.pcie_bw;
    return spec.price_per_hour;
  } catch (const InputError& e) {
    // "host 'h': property 'key': <problem>"
    problem = problem_of(e, key);
    return 0;
  }
}

// Range of each strata property. A figure the platform does not know is left out (the cost
// model then has a fallback: hardware.hpp); a zero is refused, naming the property, as a zero link
// bandwidth is: taken as "unknown" it silently changed predictions (a gpt2-small run 30 % faster
// with mem_bw="0"). A price of 0 is a price (hardware already paid for).
Range range_of_property(const std::string& key) {
  if (key == "mem_bw") return {1.0, 1e18, false, "B/s"};
  if (key == "gpu_memory") return {1.0, 1e18, false, "B"};
  if (key == "pcie_bw") return {1.0, 1e18, false, "B/s"};
  if (key == "price_per_hour") return kPrice;
  Range r = range_of(Dimension::speed);
  r.zero_ok = false;
  return r;
}

// A function pool's or object store's property alone, read by models' reader; its complaint
// without the "host 'h': property 'k': " prefix the checker adds itself.
std::string check_serverless_property(const std::string& key, const std::string& value) {
  try {
    if (key.rfind("storage_", 0) == 0) {
      object_store_from_properties("h", {{"storage_connection_bw", "1"}, {key, value}});
    } else {
      std::map<std::string, std::string> p = {{"function_memory_mb", "128-10240"}};
      p[key] = value;
      function_pool_from_properties("h", p, 1.0);
    }
  } catch (const InputError& e) {
    return problem_of(e, key);
  }
  return "";
}

// The fabric properties (models/cost/bus_bandwidth.hpp), for near-miss hints.
const std::vector<std::string>& fabric_property_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"fabric_intra", "fabric_inter"};
    for (std::string_view c : {"allreduce", "allgather", "reduce_scatter", "sendrecv"})
      for (std::string_view side : {"_intra", "_inter"})
        n.push_back(std::string("busbw_").append(c).append(side));
    return n;
  }();
  return names;
}

// A fabric property alone, read by models' reader; its complaint without the prefix.
std::string check_fabric_property(const std::string& key, const std::string& value) {
  try {
    fabric_from_properties("h", {{key, value}}, GpuType::none, key.ends_with("_inter"));
  } catch (const InputError& e) {
    return problem_of(e, key);
  }
  return "";
}

}  // namespace

std::string near_miss_hint(const std::string& key) {
  auto known = [&](std::string_view name) { return name == key; };
  if (is_fabric_property(key)) return "";
  if (std::ranges::any_of(kStrataNames, known) || std::ranges::any_of(kSimGridNames, known) ||
      std::ranges::any_of(kAnnotations, known) || std::ranges::any_of(serverless_property_names(), known))
    return "";
  std::string_view best;
  std::size_t best_distance = 3;
  auto consider = [&](std::string_view name) {
    if (equal_ignoring_case(name, key)) {
      best = name;
      best_distance = 0;
      return;
    }
    const std::size_t limit = std::min(name.size(), key.size()) <= 4 ? 1 : 2;
    const std::size_t d = edit_distance(key, name);
    if (d <= limit && d < best_distance) {
      best = name;
      best_distance = d;
    }
  };
  for (std::string_view name : kStrataNames) consider(name);
  for (std::string_view name : kSimGridNames) consider(name);
  for (std::string_view name : serverless_property_names()) consider(name);
  for (std::string_view name : fabric_property_names()) consider(name);
  return best.empty() ? "" : "unknown property; did you mean '" + std::string(best) + "'?";
}

std::string check_property_name(const std::string& key) { return near_miss_hint(key); }

std::string check_host_property(const std::string& key, const std::string& value, std::size_t pstates) {
  if (key == "wattage_per_state") return check_wattage(value, pstates);
  if (key == "wattage_off") {
    double watts = 0;
    return check_plain(value, kWatts, watts);
  }
  if (std::ranges::find(serverless_property_names(), key) != serverless_property_names().end())
    return check_serverless_property(key, value);
  if (is_fabric_property(key)) return check_fabric_property(key, value);
  if (std::ranges::find(kStrataNames, key) == kStrataNames.end()) return near_miss_hint(key);
  std::string problem;
  const double parsed = read_with_models(key, value, problem);
  if (!problem.empty()) return problem;
  if (key == "gpus") return "";  // the reader checks it is an integer in 1..10^6
  return check_range(value, parsed, range_of_property(key));
}

}  // namespace sim
}  // namespace strata
