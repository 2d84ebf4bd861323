// Bus-bandwidth curves (bus_bandwidth.hpp): the shipped fabrics and the platform properties.
#include "strata/models/cost/bus_bandwidth.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "strata/models/cost/hardware.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/units.hpp"

namespace strata {
inline namespace models {
namespace {

// One nccl-tests row as printed: message size (B) and the out-of-place time (us).
struct Row {
  double bytes;
  double time_us;
};

// The busbw nccl-tests prints for a row (doc/PERFORMANCE.md): algbw = S / t, times 2(n-1)/n for
// an allreduce and (n-1)/n for an allgather; computed here from the printed time, which has
// more digits than the printed busbw at small sizes.
BusCurve curve_from_rows(std::span<const Row> rows, BusCollective collective, int ranks) {
  const double n = ranks;
  const double factor = collective == BusCollective::allreduce  ? 2 * (n - 1) / n
                        : collective == BusCollective::sendrecv ? 1.0
                                                                : (n - 1) / n;
  BusCurve curve;
  for (const Row& row : rows) {
    curve.bytes.push_back(row.bytes);
    curve.busbw.push_back(row.bytes / (row.time_us * 1e-6) * factor);
  }
  return curve;
}

// Source: oracle-japan/ocitutorials, the Horovod GPU-cluster tutorial's "NCCL Tests" section
// (validation/sources/nccl-tests-busbw.json, table 1: OCI BM.GPU4.8, one node of 8 x
// A100-SXM4-40GB over NVSwitch; `all_reduce_perf -b 64 -e 10G -f 2 -g 8`), out-of-place times.
// The 40 GB and 80 GB A100 SXM4 share NVLink 3 and the NVSwitch (600 GB/s per GPU, both
// directions: the A100 datasheet), so the curve stands for both.
constexpr Row kA100NvswitchAllreduce[] = {
    {64, 32.01},         {128, 32.01},        {256, 31.75},        {512, 32.21},        {1024, 32.03},
    {2048, 31.77},       {4096, 32.13},       {8192, 32.22},       {16384, 32.48},      {32768, 32.02},
    {65536, 35.4},       {131072, 38.5},      {262144, 45.21},     {524288, 58.96},     {1048576, 76.71},
    {2097152, 112.4},    {4194304, 134.5},    {8388608, 185.8},    {16777216, 245.1},   {33554432, 398.2},
    {67108864, 589.5},   {134217728, 1191.2}, {268435456, 2121.9}, {536870912, 4208.2}, {1073741824, 8166.8},
    {2147483648, 16232}, {4294967296, 32097}, {8589934592, 63929}};

// Source: JingchaoZhang/JingchaoZhang.github.io, _posts/2023-09-11-NCCL test on AKS NDmV4 VM.md
// at da69a42e (table 2 of the JSON): 2 x Azure ND96amsr_A100_v4, 16 ranks, each node 8 x
// A100-SXM4-80GB with 8 HDR 200 Gb/s InfiniBand adapters; `all_reduce_perf -b 8 -e 8G -f 2 -g 1`.
constexpr Row kHdrAllreduce[] = {
    {8, 37.3},           {16, 36.03},         {32, 36.5},          {64, 36.33},         {128, 37.62},
    {256, 38.28},        {512, 38.2},         {1024, 40.92},       {2048, 42.87},       {4096, 41.82},
    {8192, 46.31},       {16384, 58.1},       {32768, 58.73},      {65536, 60.01},      {131072, 63.71},
    {262144, 68.25},     {524288, 80.23},     {1048576, 96.39},    {2097152, 128.6},    {4194304, 148.1},
    {8388608, 211.1},    {16777216, 333.4},   {33554432, 615.6},   {67108864, 932.6},   {134217728, 1672.7},
    {268435456, 3013.5}, {536870912, 5702.0}, {1073741824, 11063}, {2147483648, 21637}, {4294967296, 42758},
    {8589934592, 85129}};

// Source: ZiyanIshani/vpbenchmarking, results/nccl/nccl_singlenode/nccl_allreduce_.txt at
// e55fe749 (table 3 of the JSON): one node of 8 x H100 80GB HBM3 SXM5 over NVSwitch, NCCL 2.24.3,
// `-g 8 -b 8 -e 8G -f 2`. Above 64 MB its busbw exceeds NVLink 4's 450 GB/s per direction
// (NCCL's NVLink SHARP reduces in the switch): the efficiency is then 1.
constexpr Row kH100NvswitchAllreduce[] = {{8, 33.18},
                                          {16, 32.76},
                                          {32, 32.76},
                                          {64, 33.23},
                                          {128, 33.27},
                                          {256, 33.01},
                                          {512, 33.5},
                                          {1024, 33.36},
                                          {2048, 33.44},
                                          {4096, 33.19},
                                          {8192, 33.09},
                                          {16384, 32.95},
                                          {32768, 32.74},
                                          {65536, 33.62},
                                          {131072, 34.26},
                                          {262144, 35.05},
                                          {524288, 36.97},
                                          {1048576, 38.74},
                                          {2097152, 43.23},
                                          {4194304, 55.7},
                                          {8388608, 84.47},
                                          {16777216, 125.88},
                                          {33554432, 200.39},
                                          {67108864, 328.56},
                                          {134217728, 588.39},
                                          {268435456, 1112.19},
                                          {536870912, 2152.91},
                                          {1073741824, 4010.54},
                                          {2147483648, 7918.12},
                                          {4294967296, 15753.1},
                                          {8589934592, 31335.8}};

// Source: the same repository, results/nccl/nccl_multinode/nccl_allreduce_20260224_225706.txt and
// nccl_allgather_20260224_225706.txt at e55fe749 (tables 4 of the JSON): 4 nodes x 8 H100 80GB
// HBM3 SXM5, 32 ranks, NCCL 2.24.3+cuda12.6, over 400 Gb/s NDR InfiniBand; its summary says 3 of
// each node's ports were active, so the plateau may be below a full DGX H100's 8.
constexpr Row kNdrAllreduce[] = {{8, 38.37},
                                 {16, 37.15},
                                 {32, 37.19},
                                 {64, 37.4},
                                 {128, 39.22},
                                 {256, 39.54},
                                 {512, 38.38},
                                 {1024, 39.76},
                                 {2048, 41.11},
                                 {4096, 44.98},
                                 {8192, 53.19},
                                 {16384, 56.41},
                                 {32768, 57.42},
                                 {65536, 60.1},
                                 {131072, 59.27},
                                 {262144, 69.81},
                                 {524288, 79.34},
                                 {1048576, 92.47},
                                 {2097152, 154.66},
                                 {4194304, 160.5},
                                 {8388608, 230.19},
                                 {16777216, 272.07},
                                 {33554432, 373.03},
                                 {67108864, 579.49},
                                 {134217728, 944.74},
                                 {268435456, 2169.01},
                                 {536870912, 3578.6},
                                 {1073741824, 6411.42},
                                 {2147483648, 12681.1},
                                 {4294967296, 25265.5},
                                 {8589934592, 50291.8}};
constexpr Row kNdrAllgather[] = {
    {512, 49.68},         {1024, 52.95},         {2048, 53.87},         {4096, 54.41},
    {8192, 55.14},        {16384, 55.76},        {32768, 54.04},        {65536, 59.51},
    {131072, 64.99},      {262144, 74.53},       {524288, 73.42},       {1048576, 109.53},
    {2097152, 110.75},    {4194304, 193.2},      {8388608, 207.31},     {16777216, 233.04},
    {33554432, 308.95},   {67108864, 390.73},    {134217728, 749.73},   {268435456, 1105.06},
    {536870912, 1817.23}, {1073741824, 3244.99}, {2147483648, 6452.15}, {4294967296, 12851.2},
    {8589934592, 25720.7}};

// Nominal figures (the efficiency's denominator): NVLink 3 on A100, 600 GB/s per GPU both
// directions (A100 datasheet) = 300 GB/s per direction; NVLink 4 on H100 SXM, 900 GB/s (H100
// datasheet) = 450 GB/s; a DGX A100 node's 8 HDR adapters, 8 x 200 Gb/s = 200 GB/s; a DGX H100
// node's 8 NDR ports, 8 x 400 Gb/s = 400 GB/s (DGX A100 and DGX H100 system architecture
// white papers). Between nodes the busbw of a 2-node ring is bounded by the node's adapters
// together: each of NCCL's rings crosses the node boundary on its own adapter.
std::vector<Fabric> build_shipped() {
  std::vector<Fabric> fabrics(4);
  Fabric& a100 = fabrics[0];
  a100.name = "a100-nvswitch";
  a100.nominal = 300e9;
  a100.curves[0] = curve_from_rows(kA100NvswitchAllreduce, BusCollective::allreduce, 8);
  a100.source = "nccl-tests all_reduce_perf, 8 x A100-SXM4-40GB over NVSwitch (oracle-japan/ocitutorials)";
  Fabric& h100 = fabrics[1];
  h100.name = "h100-nvswitch";
  h100.nominal = 450e9;
  h100.curves[0] = curve_from_rows(kH100NvswitchAllreduce, BusCollective::allreduce, 8);
  h100.source =
      "nccl-tests all_reduce_perf, 8 x H100 SXM5 over NVSwitch, NCCL 2.24.3 (ZiyanIshani/vpbenchmarking)";
  Fabric& hdr = fabrics[2];
  hdr.name = "ib-hdr";
  hdr.nominal = 200e9;
  hdr.curves[0] = curve_from_rows(kHdrAllreduce, BusCollective::allreduce, 16);
  hdr.source =
      "nccl-tests all_reduce_perf, 2 x 8 A100-SXM4-80GB over 8 x HDR InfiniBand per node "
      "(JingchaoZhang.github.io, Azure NDmv4)";
  Fabric& ndr = fabrics[3];
  ndr.name = "ib-ndr";
  ndr.nominal = 400e9;
  ndr.curves[0] = curve_from_rows(kNdrAllreduce, BusCollective::allreduce, 32);
  ndr.curves[1] = curve_from_rows(kNdrAllgather, BusCollective::allgather, 32);
  ndr.source =
      "nccl-tests all_reduce_perf and all_gather_perf, 4 x 8 H100 SXM5 over NDR InfiniBand, "
      "NCCL 2.24.3 (ZiyanIshani/vpbenchmarking)";
  return fabrics;
}

const std::vector<Fabric>& shipped() {
  static const std::vector<Fabric> fabrics = build_shipped();
  return fabrics;
}

constexpr std::array<std::string_view, kBusCollectiveCount> kCollectiveNames = {"allreduce", "allgather",
                                                                                "reduce_scatter", "sendrecv"};

std::string side_name(bool inter) { return inter ? "inter" : "intra"; }

[[noreturn]] void fail(const std::string& host, const std::string& key, const std::string& problem) {
  throw InputError(input_error_message("host " + quote_for_message(host), "property '" + key + "'", problem));
}

// "size:bandwidth size:bandwidth ...", separated by spaces or commas.
BusCurve parse_curve(const std::string& host, const std::string& key, const std::string& text) {
  BusCurve curve;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find_first_of(" ,", start), text.size());
    if (end == start) {
      ++start;
      continue;
    }
    const std::string pair = text.substr(start, end - start);
    start = end;
    const std::size_t colon = pair.find(':');
    if (colon == std::string::npos)
      fail(host, key, quote_for_message(pair) + " is not size:bandwidth (e.g. 64MiB:180GBps)");
    const std::optional<double> size = parse_size_text(pair.substr(0, colon));
    const std::optional<double> bw = parse_bandwidth_text(pair.substr(colon + 1));
    if (!size || !(*size > 0))
      fail(host, key, quote_for_message(pair) + ": the size is not a positive size (B, KiB, MB, ...)");
    if (!bw || !(*bw > 0))
      fail(host, key,
           quote_for_message(pair) + ": the bus bandwidth is not a positive bandwidth (GBps, Gbps, ...)");
    if (!curve.bytes.empty() && !(*size > curve.bytes.back()))
      fail(host, key,
           quote_for_message(pair) + ": sizes must increase (" + format_bytes(*size) + " after " +
               format_bytes(curve.bytes.back()) + ")");
    curve.bytes.push_back(*size);
    curve.busbw.push_back(*bw);
  }
  if (curve.empty()) fail(host, key, "no size:bandwidth pair");
  return curve;
}

}  // namespace

std::string_view to_string(BusCollective collective) {
  return kCollectiveNames[static_cast<std::size_t>(collective)];
}

double BusCurve::at(double size) const {
  STRATA_ASSERT(!bytes.empty(), "empty bus-bandwidth curve");
  if (size <= bytes.front()) return busbw.front();
  if (size >= bytes.back()) return busbw.back();
  const auto hi =
      static_cast<std::size_t>(std::upper_bound(bytes.begin(), bytes.end(), size) - bytes.begin());
  const std::size_t lo = hi - 1;
  const double t_lo = bytes[lo] / busbw[lo];
  const double t_hi = bytes[hi] / busbw[hi];
  const double t = t_lo + (t_hi - t_lo) * (size - bytes[lo]) / (bytes[hi] - bytes[lo]);
  return size / t;
}

double bus_efficiency(const Fabric* fabric, TaskKind kind, double bytes) {
  if (fabric == nullptr || !(fabric->nominal > 0) || !(bytes > 0)) return 1;
  const BusCurve* curve = nullptr;
  const auto& c = fabric->curves;
  switch (kind) {
    case TaskKind::allreduce:
      curve = &c[0];
      break;
    case TaskKind::allgather:
      curve = c[1].empty() ? &c[0] : &c[1];
      break;
    case TaskKind::reduce_scatter:
      curve = c[2].empty() ? &c[0] : &c[2];
      break;
    case TaskKind::send:
      curve = &c[3];
      break;
    default:
      return 1;
  }
  if (curve->empty()) return 1;
  return std::min(1.0, curve->at(bytes) / fabric->nominal);
}

const Fabric* shipped_fabric(std::string_view name) {
  for (const Fabric& f : shipped())
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> shipped_fabric_names() {
  std::vector<std::string> names;
  for (const Fabric& f : shipped()) names.push_back(f.name);
  return names;
}

const Fabric* inferred_fabric(GpuType gpu, bool inter) {
  switch (gpu) {
    case GpuType::a100_40gb:
    case GpuType::a100_80gb:
      return shipped_fabric(inter ? "ib-hdr" : "a100-nvswitch");
    case GpuType::h100_sxm:
      return shipped_fabric(inter ? "ib-ndr" : "h100-nvswitch");
    case GpuType::none:
      break;
  }
  return nullptr;
}

bool is_fabric_property(std::string_view key) {
  if (key == "fabric_intra" || key == "fabric_inter") return true;
  if (!key.starts_with("busbw_")) return false;
  for (std::string_view c : kCollectiveNames)
    for (std::string_view side : {"_intra", "_inter"})
      if (key == std::string("busbw_").append(c).append(side)) return true;
  return false;
}

std::shared_ptr<const Fabric> fabric_from_properties(const std::string& host,
                                                     const std::map<std::string, std::string>& properties,
                                                     GpuType gpu, bool inter) {
  const std::string side = side_name(inter);
  auto named = properties.find("fabric_" + side);
  Fabric given;
  given.name = "platform";
  given.source = "host " + quote_for_message(host) + " properties";
  std::string first_curve;
  for (std::size_t c = 0; c < kCollectiveNames.size(); ++c) {
    const std::string key = "busbw_" + std::string(kCollectiveNames[c]) + "_" + side;
    auto it = properties.find(key);
    if (it == properties.end()) continue;
    given.curves[c] = parse_curve(host, key, it->second);
    if (first_curve.empty()) first_curve = key;
  }
  if (named != properties.end()) {
    if (!first_curve.empty())
      fail(host, named->first, "give either a fabric name or " + first_curve + ", not both");
    if (named->second == "ideal") return nullptr;
    const Fabric* f = shipped_fabric(named->second);
    if (f == nullptr) {
      std::string known = "ideal";
      for (const std::string& n : shipped_fabric_names()) known += ", " + n;
      fail(host, named->first,
           "unknown fabric " + quote_for_message(named->second) + " (known: " + known + ")");
    }
    return std::shared_ptr<const Fabric>(std::shared_ptr<const Fabric>{}, f);  // static: not owned
  }
  if (!first_curve.empty()) return std::make_shared<const Fabric>(std::move(given));
  const Fabric* f = inferred_fabric(gpu, inter);
  return f == nullptr ? nullptr : std::shared_ptr<const Fabric>(std::shared_ptr<const Fabric>{}, f);
}

std::shared_ptr<const Fabric> resolve_platform_fabric(std::shared_ptr<const Fabric> fabric, bool inter,
                                                      double link_bw, std::string& problem) {
  problem.clear();
  if (fabric == nullptr || fabric->name != "platform" || fabric->nominal > 0) return fabric;
  for (std::size_t c = 0; c < kCollectiveNames.size(); ++c) {
    const BusCurve& curve = fabric->curves[c];
    for (std::size_t i = 0; i < curve.bytes.size(); ++i)
      if (curve.busbw[i] > link_bw * (1 + 1e-9)) {
        problem = "property 'busbw_" + std::string(kCollectiveNames[c]) + "_" + side_name(inter) +
                  "': " + format_si(curve.busbw[i], "B/s") + " at " + format_bytes(curve.bytes[i]) +
                  " is above the link's " + format_si(link_bw, "B/s") + " (" +
                  (inter ? "between hosts" : "inside a host") + ")";
        return fabric;
      }
  }
  auto resolved = std::make_shared<Fabric>(*fabric);
  resolved->nominal = link_bw;
  return resolved;
}

}  // namespace models
}  // namespace strata
