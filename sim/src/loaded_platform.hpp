// LoadedPlatform: a platform file loaded into this process's SimGrid engine (internal to sim/).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simgrid_compat.hpp"
#include "strata/models/cost/serverless.hpp"
#include "strata/sim/platform.hpp"

namespace strata {
inline namespace sim {

// Network model settings; they must be applied before the platform is loaded.
struct NetworkConfig {
  std::string model = "LV08";  // SimGrid network/model
  bool ideal_factors = true;   // latency-factor = bandwidth-factor = 1
  bool crosstraffic = false;   // network/crosstraffic
};
// The engine's hosts in natural order (platform.hpp).
std::vector<simgrid::s4u::Host*> natural_hosts(const simgrid::s4u::Engine& engine);

struct NetworkOptions;
// The SimGrid settings of a replay's network options (replay.hpp).
NetworkConfig network_config(const NetworkOptions& options);

// Checks the network model and the platform file (platform_check.hpp), then loads the platform
// once in a child process with its output kept from the terminal, so that whatever SimGrid
// aborts on becomes one InputError line naming the file. Remembered per process (and so in
// the children forked after): a platform is verified once per file version and settings.
void verify_platform(const std::string& path, const NetworkConfig& network);

// The process's SimGrid engine with `path` loaded and `network` applied, and nothing else
// checked or asked of it (LoadedPlatform asks for routes SimGrid may crash on). For readers that
// need no host-to-itself route (platform_routes); check_platform_file first.
std::unique_ptr<simgrid::s4u::Engine> load_platform_engine(const std::string& path,
                                                           const NetworkConfig& network);

class LoadedPlatform {
 public:
  enum class Verify : std::uint8_t { yes, no };  // no: only in verify_platform's own child

  // Verifies the platform (verify_platform), then creates the process's SimGrid engine (quiet
  // logs), applies `network`, loads `path`. Throws InputError naming the file for any problem.
  // `function_memory_mb` > 0: the worker hosts are the function pool's instances, each a
  // function of that many MB (function_host_spec); InputError when the pool does not offer it.
  LoadedPlatform(const std::string& path, const NetworkConfig& network, Verify verify = Verify::yes,
                 double function_memory_mb = 0);
  ~LoadedPlatform();
  LoadedPlatform(const LoadedPlatform&) = delete;
  LoadedPlatform& operator=(const LoadedPlatform&) = delete;

  const PlatformSummary& summary() const { return summary_; }
  simgrid::s4u::Host* host(int index) const { return hosts_[static_cast<std::size_t>(index)]; }
  // The index (for host()) of the platform's first object store, after the summary's hosts; -1
  // when it has none.
  int store() const { return store_; }
  // The same for the first cache VM (a store with storage_kind=cache), -1 without one.
  int cache() const { return cache_; }
  // With the workers in functions: the first VM (a host of worker slots, none of which a
  // worker uses), a parameter server's host, after the store and cache; -1 otherwise.
  int server() const { return server_; }
  // The host spec of any index: a worker host's (summary().hosts) or an appended host's.
  const HostSpec& spec(int index) const;
  // The function pool the workers run in (function_memory_mb > 0): its first instance's.
  const std::optional<FunctionPool>& pool() const { return pool_; }
  // The function pool's instances when the workers run on worker slots (for the route check).
  const std::vector<simgrid::s4u::Host*>& function_hosts() const { return function_hosts_; }
  simgrid::s4u::Engine& engine() { return *engine_; }

  // Whether a host's speed or state may change during the run: the file attaches availability
  // or state profiles (`speed_file`, `availability_file`, `state_file`, `trace_connect`), or
  // is not an XML file strata can read. Conservative: any such attribute anywhere counts.
  bool has_host_profiles() const { return host_profiles_; }

  // Route latency (s) between two hosts; cached.
  double latency(int from, int to);

 private:
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<simgrid::s4u::Host*> hosts_;
  PlatformSummary summary_;
  std::map<std::pair<int, int>, double> latency_;
  bool host_profiles_ = true;
  int store_ = -1, cache_ = -1, server_ = -1;
  std::vector<HostSpec> appended_specs_;  // the store's, cache's and server's, in index order
  std::optional<FunctionPool> pool_;
  std::vector<simgrid::s4u::Host*> function_hosts_;
};

}  // namespace sim
}  // namespace strata
