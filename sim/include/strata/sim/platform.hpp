// Platform: a SimGrid platform XML file as strata sees it — hosts in natural order, each with
// its HostSpec (models/hardware.hpp) and worker slots, and the network figures the analytical
// model needs.
//
// Natural order: host names compared piece by piece, digit runs as numbers, so node-2 comes
// before node-10 (SimGrid itself sorts by plain string). Worker w is placed, unless a placement
// says otherwise, on the (w mod slots)-th slot of the (w div slots)-th host in that order — so
// the tp ranks of a stage, which strategies number consecutively, share a host.
//
// Loading a platform creates a SimGrid engine, which 3.32 allows once per process: callers that
// need several (explore, tests) run each in a child process (process.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/hardware.hpp"
#include "strata/models/cost/serverless.hpp"
#include "strata/models/schedule/workflow_problem.hpp"

namespace strata {
inline namespace sim {

// Network figures between worker slots, read off the platform's routes.
struct NetworkSummary {
  double intra_bw = 0;        // B/s, bottleneck of the route from the first host to itself
  double intra_latency = 0;   // s, sum of its link latencies
  double inter_bw = 0;        // B/s, bottleneck of the route between the first two hosts
  double inter_latency = 0;   // s
  bool intra_shared = false;  // the intra-host bottleneck link is shared (not FATPIPE)
};

struct PlatformSummary {
  std::string path;
  std::vector<HostSpec> hosts;  // natural order
  NetworkSummary network;
  int total_slots() const;
};

// Compares host names in natural order.
bool natural_less(const std::string& a, const std::string& b);

// Worker → host index for `workers` workers: the natural placement, or the explicit one
// (`hosts_by_worker[w]` names worker w's host). Throws InputError "placement: worker 3: unknown
// host 'x'", "platform.xml: 16 workers need 16 worker slots, the platform has 8", or a host
// over-subscribed by an explicit placement.
std::vector<int> place_workers(const PlatformSummary& platform, int workers,
                               const std::vector<std::string>& hosts_by_worker = {});

// Every host of the platform (natural order) with its speed, and per ordered pair of hosts the
// route's latency and bottleneck bandwidth, for the schedulers (models/schedule). Loads the
// platform in a child process (one SimGrid engine per process). Throws InputError naming the
// file as loading a platform does.
PlatformRoutes platform_routes(const std::string& path);

// The platform's serverless resources (models/cost/serverless.hpp): its function pool (the
// figures of the first function host in natural order, and how many instances the platform
// holds) and its object store, each absent when no host declares one. Read in a child process.
// Throws InputError naming the file as loading a platform does.
struct ServerlessResources {
  std::optional<FunctionPool> pool;
  int instances = 0;                        // function hosts
  std::vector<std::string> function_hosts;  // natural order
  std::optional<ObjectStore> store;         // the first object store (storage_kind object)
  std::string store_host;
  std::optional<ObjectStore> cache;  // the first cache VM (storage_kind=cache)
  std::string cache_host;
};
ServerlessResources serverless_resources(const std::string& path);

// Reads a placement file: JSON {"workers": ["node-0", "node-0", ...]} or one host name per line.
std::vector<std::string> read_placement(const std::string& path);

// The SimGrid platform of the machine a calibration measured (`strata calibrate
// --emit-platform`): one host named after it, `cores` worker slots at the measured fp32 peak per
// core, flops_fp64 and mem_bw properties, and a shared loopback link whose bandwidth and latency
// are the transport's point-to-point β and α, so a send between two workers of the machine takes
// α + bytes·β. Throws InputError naming the calibration file when it has no host or no such
// transport.
std::string one_host_platform_xml(const Calibration& calibration, const std::string& transport);

}  // namespace sim
}  // namespace strata
