// HostSpec: what the cost and memory models know of a host, independent of SimGrid.
//
// sim/ reads these from a platform's host properties (strata's optional extras, see
// platforms/README.md): gpus, flops_fp32, flops_bf16, flops_fp16, flops_fp64, mem_bw,
// gpu_memory, pcie_bw, price_per_hour, and SimGrid's wattage_per_state. Values are per worker slot
// (one GPU, or one core when the host has no `gpus` property).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "strata/models/cost/bus_bandwidth.hpp"
#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

// The GPU a host's slots are, as the cost model prices kernels (gpu_kernels.hpp). Inferred from a
// host's properties when it has `gpus`: flops_bf16 of 600 TFLOP/s or more is an H100 (989 SXM,
// 756 PCIe; A100 is 312), otherwise an A100, the 40 GB one when gpu_memory is at most 48 GB,
// else (80 GB, or no gpu_memory) the 80 GB one: a GPU host of unknown type gets the shipped
// A100 figures. A host without `gpus` (a CPU host) has none.
enum class GpuType : std::uint8_t { none, a100_40gb, a100_80gb, h100_sxm };
std::string_view to_string(GpuType type);  // none | a100-40gb | a100-80gb | h100-sxm
GpuType infer_gpu_type(double flops_bf16, double gpu_memory);

struct HostSpec {
  std::string name;
  int slots = 1;                // workers the host holds: `gpus`, else its core count
  double flops_fp32 = 0;        // FLOP/s peak per slot
  double flops_bf16 = 0;        // FLOP/s (dense tensor-core peak)
  double flops_fp16 = 0;        // FLOP/s
  double flops_fp64 = 0;        // FLOP/s
  double mem_bw = 0;            // B/s per slot
  double gpu_memory = 0;        // B per slot (0 = unknown: fits is not judged)
  double pcie_bw = 0;           // B/s per slot between GPU and host memory (0 = unknown)
  double price_per_hour = 0;    // currency units per host-hour
  double watts_idle = 0;        // W per host
  double watts_busy = 0;        // W per host, all slots busy
  GpuType gpu = GpuType::none;  // none: CPU host, priced by the roofline alone
  // The bus-bandwidth curves of its links inside the host and to other hosts
  // (bus_bandwidth.hpp); null: links at peak.
  std::shared_ptr<const Fabric> fabric_intra, fabric_inter;

  double peak_flops(DType dtype) const;
};

// A size ("64KiB", "1e6B", "8Mb") or a bandwidth ("300GBps", "200Gbps") written as host
// properties are: a number with an optional unit (SI or binary prefixes; bits become bytes);
// nullopt when malformed, not finite, or of another quantity.
std::optional<double> parse_size_text(std::string_view text);
std::optional<double> parse_bandwidth_text(std::string_view text);

// Builds a HostSpec from properties; `speed` is SimGrid's per-core speed (flop/s), used when a
// flops_* property is absent; `cores` its core count. Throws InputError naming the host and the
// property for a malformed or negative value.
HostSpec host_spec_from_properties(const std::string& host,
                                   const std::map<std::string, std::string>& properties, double speed,
                                   int cores);

}  // namespace models
}  // namespace strata
