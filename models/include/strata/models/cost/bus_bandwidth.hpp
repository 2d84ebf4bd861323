// Collectives at the bandwidth a fabric achieves: size-dependent bus-bandwidth curves.
//
// A collective library does not run its links at peak: nccl-tests' "bus bandwidth" (busbw,
// NVIDIA/nccl-tests doc/PERFORMANCE.md: the algorithm bandwidth S / t times 2(n-1)/n for an
// allreduce, (n-1)/n for an allgather or reduce-scatter, 1 for a send) climbs with the message
// size from a latency-bound floor to a plateau below the link's figure. A Fabric holds that
// curve per collective; the replay and the closed form divide a collective's bytes on the wire by
// bus_efficiency() (docs/cost-model.md, "Collectives at achieved bandwidth").
//
// Where a curve comes from (first that applies, per host, for the links inside a host and for
// those between hosts):
//   - the host's properties: busbw_<collective>_<intra|inter> = "size:bandwidth ..." pairs
//     (sizes strictly increasing, each bandwidth at most the link's), collective one of
//     allreduce, allgather, reduce_scatter, sendrecv; or fabric_<intra|inter> = the name of a
//     shipped fabric, or "ideal" (links at peak);
//   - for a GPU host, the shipped fabric of its inferred GPU type (hardware.hpp): A100 hosts
//     a100-nvswitch inside, ib-hdr between; H100 hosts h100-nvswitch and ib-ndr;
//   - otherwise none: links at peak (a CPU host; strata calibrate measures its MPI transport).
// The shipped curves are published nccl-tests runs, each cited in bus_bandwidth.cpp with the
// raw table in validation/sources/nccl-tests-busbw.json.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

enum class GpuType : std::uint8_t;

// The collectives a curve is measured for; allgather and reduce_scatter without a curve of
// their own take allreduce's at the same size (same ring chunk S / n per step); a send without
// one runs at the link's peak.
enum class BusCollective : std::uint8_t { allreduce, allgather, reduce_scatter, sendrecv };
inline constexpr int kBusCollectiveCount = 4;
std::string_view to_string(BusCollective collective);

struct BusCurve {
  std::vector<double> bytes;  // message sizes (B), strictly increasing, > 0
  std::vector<double> busbw;  // B/s achieved at each size, > 0
  bool empty() const { return bytes.empty(); }
  // Bus bandwidth at `bytes`: the time per bus byte S / busbw is linear in S between two
  // measured sizes; below the first and above the last size the nearest figure holds.
  double at(double size) const;
};

struct Fabric {
  std::string name;  // a shipped fabric's, or "platform" for curves a platform file gives
  std::array<BusCurve, kBusCollectiveCount> curves;
  // B/s the curve's busbw is a fraction of: the published fabric's per-GPU (inside a node) or
  // per-node (between nodes) link figure, or, for a platform's curves, the platform's link.
  double nominal = 0;
  std::string source;  // citation (shipped) or "host 'x' properties"
};

// The fraction of the link's bandwidth a collective of `kind` over a buffer of `bytes` (the
// Task's comm_bytes; a send's payload) achieves on `fabric`: busbw(bytes) / nominal, at most 1;
// 1 for a null fabric, a kind without a curve, or an unresolved nominal.
double bus_efficiency(const Fabric* fabric, TaskKind kind, double bytes);

// The shipped fabrics, by name: a100-nvswitch, h100-nvswitch, ib-hdr, ib-ndr.
const Fabric* shipped_fabric(std::string_view name);
std::vector<std::string> shipped_fabric_names();

// The shipped fabric a GPU type's hosts get inside a node (inter = false) or between nodes.
const Fabric* inferred_fabric(GpuType gpu, bool inter);

// Reads a host's fabric properties (fabric_intra, fabric_inter, busbw_<collective>_<side>) for
// one side; returns the inferred fabric when it gives none, nullptr for "ideal". A curve the
// properties give has nominal 0 until the platform's link figure resolves it
// (resolve_platform_fabric). Throws InputError "host 'x': property 'k': problem" for an unknown
// fabric name, a malformed pair, a size not above the one before it, a negative or zero figure,
// or both fabric_<side> and a busbw_*_<side> given.
std::shared_ptr<const Fabric> fabric_from_properties(const std::string& host,
                                                     const std::map<std::string, std::string>& properties,
                                                     GpuType gpu, bool inter);

// Checks a platform-given fabric against its link (`link_bw`, B/s: the route inside a host or
// between two hosts) and returns it with that nominal; a shipped fabric comes back unchanged.
// Returns the problem, naming the property, size and figure, in `problem` (empty when sound).
std::shared_ptr<const Fabric> resolve_platform_fabric(std::shared_ptr<const Fabric> fabric, bool inter,
                                                      double link_bw, std::string& problem);

// Whether `key` is one of the properties fabric_from_properties reads.
bool is_fabric_property(std::string_view key);

}  // namespace models
}  // namespace strata
