// HostSpec from SimGrid host properties.
//
// Property values are written the way SimGrid writes its own quantities: a number in C syntax
// ("312e12", "2.039e12") optionally followed by a unit, with SI (k, M, G, T, P, E) or binary
// (Ki, Mi, Gi, Ti, Pi) prefixes, e.g. "312Tf", "2039GBps", "80GiB". The accepted units depend on
// what the property measures, as in SimGrid's platform parser:
//   flops_*     f, flops            (FLOP/s)
//   mem_bw      Bps (bytes/s), bps (bits/s)
//   gpu_memory  B (bytes), b (bits)
//   pcie_bw     Bps (bytes/s), bps (bits/s): one GPU's link to host memory (offload)
//   gpus, price_per_hour, wattage_per_state: plain numbers.
#include "strata/models/cost/hardware.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {

// fp16 and bf16 run on the same tensor cores at the same dense rate on every NVIDIA part since
// Ampere (A100: 312 TFLOP/s for both), so one stands for the other. Without any half-precision
// figure, half precision runs at the fp32 rate (a CPU, or a GPU without tensor cores). Without
// an fp64 figure, fp64 is taken at half the fp32 rate: the ratio of x86 SIMD units (AVX-512 does
// 16 fp32 or 8 fp64 FMA lanes) and of NVIDIA's data-centre GPUs' CUDA cores (V100 15.7 / 7.8
// TFLOP/s). Consumer GPUs are far slower in fp64 (1/32 or 1/64): give flops_fp64 for them.
double HostSpec::peak_flops(DType dtype) const {
  switch (dtype) {
    case DType::fp32:
      return flops_fp32;
    case DType::bf16:
      if (flops_bf16 > 0) return flops_bf16;
      return flops_fp16 > 0 ? flops_fp16 : flops_fp32;
    case DType::fp16:
      if (flops_fp16 > 0) return flops_fp16;
      return flops_bf16 > 0 ? flops_bf16 : flops_fp32;
    case DType::fp64:
      return flops_fp64 > 0 ? flops_fp64 : flops_fp32 / 2;
  }
  return flops_fp32;
}

namespace {

enum class Quantity { plain, flops, bandwidth, size };

struct Unit {
  std::string_view name;
  double factor;
};

// Base units per quantity; bits are converted to bytes.
constexpr std::array<Unit, 2> kFlopsUnits = {{{"flops", 1}, {"f", 1}}};
constexpr std::array<Unit, 2> kBandwidthUnits = {{{"Bps", 1}, {"bps", 0.125}}};
constexpr std::array<Unit, 2> kSizeUnits = {{{"B", 1}, {"b", 0.125}}};
constexpr double kKi = 1024.0;
constexpr std::array<Unit, 13> kPrefixes = {{
    {"", 1},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
    {"Ki", kKi},
    {"Mi", kKi* kKi},
    {"Gi", kKi* kKi* kKi},
    {"Ti", kKi* kKi* kKi* kKi},
    {"Pi", kKi* kKi* kKi* kKi* kKi},
}};

template <std::size_t N>
std::optional<double> unit_factor(std::string_view suffix, const std::array<Unit, N>& units) {
  for (const Unit& unit : units) {
    if (suffix.size() < unit.name.size() || !suffix.ends_with(unit.name)) continue;
    std::string_view prefix = suffix.substr(0, suffix.size() - unit.name.size());
    for (const Unit& p : kPrefixes)
      if (p.name == prefix) return p.factor * unit.factor;
  }
  return std::nullopt;
}

std::optional<double> suffix_factor(std::string_view suffix, Quantity quantity) {
  if (suffix.empty()) return 1.0;
  switch (quantity) {
    case Quantity::plain:
      return std::nullopt;
    case Quantity::flops:
      return unit_factor(suffix, kFlopsUnits);
    case Quantity::bandwidth:
      return unit_factor(suffix, kBandwidthUnits);
    case Quantity::size:
      return unit_factor(suffix, kSizeUnits);
  }
  return std::nullopt;
}

// Parses "number[unit]"; nullopt when malformed (not a number, unknown unit, not finite).
std::optional<double> parse_quantity(std::string_view text, Quantity quantity) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) return std::nullopt;
  std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::optional<double> factor = suffix_factor(suffix, quantity);
  if (!factor) return std::nullopt;
  return value * *factor;
}

// Reads one property of one host, throwing the documented one-line errors.
class PropertyReader {
 public:
  PropertyReader(const std::string& host, const std::map<std::string, std::string>& properties)
      : host_(host), properties_(properties) {}

  std::optional<double> read(const std::string& key, Quantity quantity) const {
    auto it = properties_.find(key);
    if (it == properties_.end()) return std::nullopt;
    std::optional<double> value = parse_quantity(it->second, quantity);
    if (!value) fail(key, "malformed value " + quote_for_message(it->second));
    if (*value < 0) fail(key, "negative value " + quote_for_message(it->second));
    return value;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw InputError(
        input_error_message("host " + quote_for_message(host_), "property '" + key + "'", problem));
  }

  const std::map<std::string, std::string>& properties() const { return properties_; }

 private:
  const std::string& host_;
  const std::map<std::string, std::string>& properties_;
};

int read_slots(const PropertyReader& reader, int cores) {
  std::optional<double> gpus = reader.read("gpus", Quantity::plain);
  if (!gpus) return cores > 0 ? cores : 1;
  if (*gpus < 1 || *gpus != std::floor(*gpus) || *gpus > 1e6)
    reader.fail("gpus",
                "expected a positive integer, got " + quote_for_message(reader.properties().at("gpus")));
  return static_cast<int>(*gpus);
}

// SimGrid's host_energy plugin: "idle:busy" (3.32 also reads "idle:one_core:all_cores", the
// middle value being the power with one core busy), several pstates separated by commas. strata
// takes pstate 0, which SimGrid starts hosts in, its first value as idle and its last as busy.
void read_wattage(const PropertyReader& reader, HostSpec& spec) {
  auto it = reader.properties().find("wattage_per_state");
  if (it == reader.properties().end()) return;
  std::string_view pstate0 = std::string_view(it->second).substr(0, it->second.find(','));
  std::vector<double> watts;
  for (std::size_t start = 0;;) {
    std::size_t colon = pstate0.find(':', start);
    std::size_t length = colon == std::string_view::npos ? std::string_view::npos : colon - start;
    std::optional<double> value = parse_quantity(pstate0.substr(start, length), Quantity::plain);
    if (!value || *value < 0) break;
    watts.push_back(*value);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  const auto fields = static_cast<std::size_t>(std::ranges::count(pstate0, ':')) + 1;
  if (watts.size() != fields || fields < 2 || fields > 3)
    reader.fail("wattage_per_state", "malformed value " + quote_for_message(it->second));
  spec.watts_idle = watts.front();
  spec.watts_busy = watts.back();
}

}  // namespace

std::optional<double> parse_size_text(std::string_view text) { return parse_quantity(text, Quantity::size); }
std::optional<double> parse_bandwidth_text(std::string_view text) {
  return parse_quantity(text, Quantity::bandwidth);
}

// Thresholds between the datasheet figures (A100: 312 TFLOP/s bf16, 40 or 80 GB; H100: 989 SXM,
// 756 PCIe, 80 GB), so a rounded or unit-converted property still lands on its part.
GpuType infer_gpu_type(double flops_bf16, double gpu_memory) {
  constexpr double kHopperBf16 = 600e12;  // FLOP/s, between A100's 312 and H100 PCIe's 756
  constexpr double kSmallA100 = 48e9;     // B, between 40 GiB (42.9e9) and 80 GB
  if (flops_bf16 >= kHopperBf16) return GpuType::h100_sxm;
  if (gpu_memory > 0 && gpu_memory <= kSmallA100) return GpuType::a100_40gb;
  return GpuType::a100_80gb;
}

// Defaults: flops_fp32 is SimGrid's `speed` when absent. A host with no flops_* property at all
// is a plain SimGrid host with one rate for everything, so every dtype gets `speed`. A host
// that names some flops_* leaves the others at 0, and peak_flops() applies its fallbacks
// (fp16 <-> bf16, then fp32; fp64 = fp32 / 2).
HostSpec host_spec_from_properties(const std::string& host,
                                   const std::map<std::string, std::string>& properties, double speed,
                                   int cores) {
  PropertyReader reader(host, properties);
  HostSpec spec;
  spec.name = host;
  spec.slots = read_slots(reader, cores);
  std::optional<double> fp32 = reader.read("flops_fp32", Quantity::flops);
  std::optional<double> bf16 = reader.read("flops_bf16", Quantity::flops);
  std::optional<double> fp16 = reader.read("flops_fp16", Quantity::flops);
  std::optional<double> fp64 = reader.read("flops_fp64", Quantity::flops);
  const bool plain_host = !fp32 && !bf16 && !fp16 && !fp64;
  const double absent = plain_host ? speed : 0.0;
  spec.flops_fp32 = fp32.value_or(speed);
  spec.flops_bf16 = bf16.value_or(absent);
  spec.flops_fp16 = fp16.value_or(absent);
  spec.flops_fp64 = fp64.value_or(absent);
  spec.mem_bw = reader.read("mem_bw", Quantity::bandwidth).value_or(0);
  spec.gpu_memory = reader.read("gpu_memory", Quantity::size).value_or(0);
  spec.pcie_bw = reader.read("pcie_bw", Quantity::bandwidth).value_or(0);
  spec.price_per_hour = reader.read("price_per_hour", Quantity::plain).value_or(0);
  read_wattage(reader, spec);
  if (reader.properties().contains("gpus"))
    spec.gpu = infer_gpu_type(spec.peak_flops(DType::bf16), spec.gpu_memory);
  spec.fabric_intra = fabric_from_properties(host, properties, spec.gpu, false);
  spec.fabric_inter = fabric_from_properties(host, properties, spec.gpu, true);
  return spec;
}

}  // namespace models
}  // namespace strata
