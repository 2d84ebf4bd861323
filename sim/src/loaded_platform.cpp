#include "loaded_platform.hpp"

#include <sys/stat.h>
#include <xbt/log.h>

#include <simgrid/kernel/routing/ClusterZone.hpp>
#include <simgrid/kernel/routing/StarZone.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "platform_check.hpp"
#include "strata/models/cost/bus_bandwidth.hpp"
#include "strata/models/cost/serverless.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace sim {
namespace {

std::map<std::string, std::string> properties_of(const simgrid::s4u::Host* host) {
  std::map<std::string, std::string> out;
  if (const auto* props = host->get_properties())
    for (const auto& [k, v] : *props) out[k] = v;
  return out;
}

// Bottleneck bandwidth and total latency of the route between two hosts.
void route_figures(const simgrid::s4u::Host* a, const simgrid::s4u::Host* b, double& bw, double& latency,
                   bool& shared) {
  std::vector<simgrid::s4u::Link*> links;
  latency = 0;
  a->route_to(b, links, &latency);
  bw = std::numeric_limits<double>::infinity();
  shared = false;
  for (const auto* link : links) {
    if (link->get_bandwidth() < bw) {
      bw = link->get_bandwidth();
      shared = link->get_sharing_policy() != simgrid::s4u::Link::SharingPolicy::FATPIPE;
    }
  }
}

bool mentions_profiles(const std::string& path) {
  if (path.size() < 4 || path.compare(path.size() - 4, 4, ".xml") != 0) return true;
  note_input(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return true;
  std::ostringstream text;
  text << in.rdbuf();
  const std::string xml = text.str();
  for (const char* marker : {"speed_file", "availability_file", "state_file", "trace_connect"})
    if (xml.find(marker) != std::string::npos) return true;
  return false;
}

// Creates the process's SimGrid engine (quiet logs: strata reports errors itself, one line
// each), applies `network` and loads `path`, SimGrid's exceptions turned into one line.
std::unique_ptr<simgrid::s4u::Engine> load_engine(const std::string& path, const NetworkConfig& network) {
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char name[] = "strata";
  char* argv[] = {name, nullptr};
  // SimGrid's first engine installs its own SIGINT handler, which calls exit() in the middle of a
  // simulation (static destructors under running actors: a segfault). The process keeps the
  // handlers it had (strata's: temporaries removed, one line, the signal's default action).
  struct sigaction previous_int {};
  struct sigaction previous_term {};
  ::sigaction(SIGINT, nullptr, &previous_int);
  ::sigaction(SIGTERM, nullptr, &previous_term);
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
  simgrid::s4u::Engine::set_config("network/model:" + network.model);
  simgrid::s4u::Engine::set_config(std::string("network/crosstraffic:") + (network.crosstraffic ? "1" : "0"));
  if (network.ideal_factors && network.model == "LV08") {
    simgrid::s4u::Engine::set_config("network/latency-factor:1");
    simgrid::s4u::Engine::set_config("network/bandwidth-factor:1");
    // No TCP window cap (4 MiB / 2·latency): RDMA fabrics are not window-limited.
    simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  }
  try {
    engine->load_platform(path);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    // SimGrid's messages already name the file and line; keep them on one line.
    throw InputError(what.find(path) != std::string::npos ? what : input_error_message(path, "", what));
  }
  return engine;
}

// What identifies a verified platform: the file (device, inode, size, time of change) and the
// network settings. A file changed since is checked again.
std::string verified_key(const std::string& path, const NetworkConfig& network) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return path + '\n' + network.model + (network.ideal_factors ? "/ideal" : "") +
         (network.crosstraffic ? "/crosstraffic" : "") + '\n' + std::to_string(st.st_dev) + ':' +
         std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) + ':' +
         std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
}

std::set<std::string>& verified_platforms() {
  static std::set<std::string> verified;
  return verified;
}

// Every ordered pair of hosts, a host with itself included, must have a route: SimGrid aborts
// on a transfer over an empty route of no latency ("no connecting path"), which a Full zone
// missing a <route> gives, and on asking a Full zone for a route it lacks. Checking every pair
// is quadratic (10^10 queries at 10^5 hosts), so hosts stand for one another where routing
// makes them alike: inside a zone whose routes SimGrid computes (a cluster and the zones derived
// from it: fat-tree, torus, dragonfly; a star) every host reaches the zone's gateway the same
// way, so its first host stands for all; in a zone of declared routes (Full, Floyd, Dijkstra,
// ...) every host stands for itself. Every ordered pair of these representatives is asked, so
// routes between zones (which go through their gateways) are asked once per pair of zones. At
// most kRouteCheckQueries queries: beyond that (over 4,096 hosts in zones of declared routes,
// whose file would hold millions of <route> elements) the first representatives are checked.
constexpr std::size_t kRouteCheckQueries = std::size_t{1} << 24;

bool computes_its_routes(const simgrid::s4u::NetZone* zone) {
  const auto* impl = zone->get_impl();
  return dynamic_cast<const simgrid::kernel::routing::ClusterZone*>(impl) != nullptr ||
         dynamic_cast<const simgrid::kernel::routing::StarZone*>(impl) != nullptr;
}

std::vector<std::size_t> route_representatives(const LoadedPlatform& platform) {
  std::vector<std::size_t> out;
  std::set<const simgrid::s4u::NetZone*> seen;
  const std::size_t n = platform.summary().hosts.size();
  for (std::size_t i = 0; i < n; ++i) {
    const simgrid::s4u::NetZone* zone = platform.host(static_cast<int>(i))->get_englobing_zone();
    if (computes_its_routes(zone) && !seen.insert(zone).second) continue;
    out.push_back(i);
  }
  const auto most = static_cast<std::size_t>(std::sqrt(static_cast<double>(kRouteCheckQueries)));
  if (out.size() > most) out.resize(most);
  return out;
}

void check_routes(const std::string& path, const LoadedPlatform& platform) {
  const std::vector<std::size_t> reps = route_representatives(platform);
  std::vector<simgrid::s4u::Link*> links;
  // Not a host to itself: a platform may give none (a Full zone without such routes), and the
  // replay copies through memory there instead of asking SimGrid (replay.cpp, start_comm).
  for (std::size_t a : reps)
    for (std::size_t b : reps) {
      if (a == b) continue;
      links.clear();
      double latency = 0;
      platform.host(static_cast<int>(a))->route_to(platform.host(static_cast<int>(b)), links, &latency);
      if (links.empty() && latency <= 0)
        throw InputError(input_error_message(path, "",
                                             "no route from host '" + platform.summary().hosts[a].name +
                                                 "' to host '" + platform.summary().hosts[b].name +
                                                 "' (SimGrid aborts on a transfer between them)"));
    }
  // The object store and the cache VM: storage and cache collectives send to them from worker
  // slots and function instances (the first of each zone whose routes SimGrid computes, every
  // one elsewhere) and back.
  std::vector<simgrid::s4u::Host*> hubs;
  for (int hub : {platform.store(), platform.cache()})
    if (hub >= 0) hubs.push_back(platform.host(hub));
  if (hubs.empty()) return;
  std::vector<simgrid::s4u::Host*> ends;
  for (std::size_t a : reps) ends.push_back(platform.host(static_cast<int>(a)));
  std::set<const simgrid::s4u::NetZone*> seen;
  for (simgrid::s4u::Host* f : platform.function_hosts())
    if (!computes_its_routes(f->get_englobing_zone()) || seen.insert(f->get_englobing_zone()).second)
      ends.push_back(f);
  for (simgrid::s4u::Host* store : hubs)
    for (simgrid::s4u::Host* h : ends)
      for (const auto& [from, to] : {std::pair{h, store}, std::pair{store, h}}) {
        links.clear();
        double latency = 0;
        from->route_to(to, links, &latency);
        if (links.empty() && latency <= 0)
          throw InputError(input_error_message(
              path, "",
              "no route from host '" + from->get_name() + "' to host '" + to->get_name() + "' (the " +
                  (store == hubs.front() && platform.store() >= 0 ? "object store" : "cache") +
                  "'s transfers would abort SimGrid)"));
      }
}

}  // namespace

void verify_platform(const std::string& path, const NetworkConfig& network) {
  check_network_model(network.model);
  const std::string key = verified_key(path, network);
  if (!key.empty() && verified_platforms().count(key)) return;
  check_platform_file(path);
  // The child builds what strata reads of a platform too (host figures, routes): SimGrid
  // crashes on some routings only when a route is asked for (a Full zone without a route from a
  // host to itself). It leaves through _exit, so its engine is never destroyed.
  run_in_quiet_child(
      [&] {
        static std::unique_ptr<LoadedPlatform> loaded;
        loaded = std::make_unique<LoadedPlatform>(path, network, LoadedPlatform::Verify::no);
        check_routes(path, *loaded);
        return std::string();
      },
      path + ": SimGrid cannot load this platform");
  if (!key.empty()) verified_platforms().insert(key);
}

LoadedPlatform::LoadedPlatform(const std::string& path, const NetworkConfig& network, Verify verify,
                               double function_memory_mb) {
  if (verify == Verify::yes) verify_platform(path, network);
  engine_ = load_engine(path, network);
  host_profiles_ = mentions_profiles(path);
  // Function-pool instances and object stores (models/cost/serverless.hpp) are no worker slots:
  // the schedulers reach them through the serverless model, not the placement. Workers placed
  // on functions (function_memory_mb > 0) have the pool's instances as their hosts instead, each
  // a function of that memory: its vCPU share of the speed, its memory.
  summary_.path = path;
  const bool on_functions = function_memory_mb > 0;
  simgrid::s4u::Host *store = nullptr, *cache = nullptr, *server = nullptr;
  HostSpec server_spec;
  try {
    for (simgrid::s4u::Host* h : natural_hosts(*engine_)) {
      const std::map<std::string, std::string> p = properties_of(h);
      if (is_storage_host(p)) {
        simgrid::s4u::Host*& first = object_store_from_properties(h->get_name(), p).cache ? cache : store;
        if (first == nullptr) first = h;
        continue;
      }
      if (is_function_host(p) != on_functions) {
        if (!on_functions) function_hosts_.push_back(h);
        if (on_functions && server == nullptr) {
          server = h;
          server_spec = host_spec_from_properties(h->get_name(), p, h->get_speed(), h->get_core_count());
        }
        continue;
      }
      HostSpec spec = host_spec_from_properties(h->get_name(), p, h->get_speed(), h->get_core_count());
      if (on_functions) {
        const FunctionPool pool = function_pool_from_properties(h->get_name(), p, h->get_speed());
        check_memory_offered(pool, function_memory_mb, "--function-memory");
        spec = function_host_spec(spec, pool, function_memory_mb);
        if (!pool_) pool_ = pool;
      }
      hosts_.push_back(h);
      summary_.hosts.push_back(spec);
    }
  } catch (const InputError& e) {
    throw InputError(input_error_message(path, "", e.what()));  // "host 'x': property ...": name the file
  }
  if (on_functions && hosts_.empty())
    throw InputError(input_error_message(path, "", "no function pool (a host with function_memory_mb)"));
  if (hosts_.empty()) throw InputError(input_error_message(path, "", "platform has no host"));
  NetworkSummary& net = summary_.network;
  route_figures(hosts_[0], hosts_[0], net.intra_bw, net.intra_latency, net.intra_shared);
  if (hosts_.size() > 1) {
    bool ignored = false;
    route_figures(hosts_[0], hosts_[1], net.inter_bw, net.inter_latency, ignored);
  } else {
    net.inter_bw = net.intra_bw;
    net.inter_latency = net.intra_latency;
  }
  // Bus-bandwidth curves a host's properties give are fractions of these links (bus_bandwidth.hpp).
  for (HostSpec& spec : summary_.hosts)
    for (const bool inter : {false, true}) {
      std::shared_ptr<const Fabric>& fabric = inter ? spec.fabric_inter : spec.fabric_intra;
      std::string problem;
      fabric = resolve_platform_fabric(fabric, inter, inter ? net.inter_bw : net.intra_bw, problem);
      if (!problem.empty())
        throw InputError(input_error_message(path, "host " + quote_for_message(spec.name), problem));
    }
  // After the workers' hosts: no worker is placed on them.
  auto append = [this](simgrid::s4u::Host* h, HostSpec spec, int& index) {
    if (h == nullptr) return;
    index = static_cast<int>(hosts_.size());
    hosts_.push_back(h);
    spec.name = h->get_name();
    appended_specs_.push_back(std::move(spec));
  };
  append(store, HostSpec{}, store_);  // a store or cache runs no kernel
  append(cache, HostSpec{}, cache_);
  append(server, server_spec, server_);
}

const HostSpec& LoadedPlatform::spec(int index) const {
  const auto i = static_cast<std::size_t>(index);
  return i < summary_.hosts.size() ? summary_.hosts[i] : appended_specs_[i - summary_.hosts.size()];
}

std::vector<simgrid::s4u::Host*> natural_hosts(const simgrid::s4u::Engine& engine) {
  std::vector<simgrid::s4u::Host*> hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) {
    return natural_less(a->get_name(), b->get_name());
  });
  return hosts;
}

NetworkConfig network_config(const NetworkOptions& options) {
  NetworkConfig c;
  c.model = options.model;
  c.ideal_factors = !options.simgrid_factors;
  c.crosstraffic = options.simgrid_factors;
  return c;
}

std::unique_ptr<simgrid::s4u::Engine> load_platform_engine(const std::string& path,
                                                           const NetworkConfig& network) {
  return load_engine(path, network);
}

LoadedPlatform::~LoadedPlatform() = default;

double LoadedPlatform::latency(int from, int to) {
  auto key = std::make_pair(from, to);
  auto it = latency_.find(key);
  if (it != latency_.end()) return it->second;
  std::vector<simgrid::s4u::Link*> links;
  double lat = 0;
  host(from)->route_to(host(to), links, &lat);
  latency_.emplace(key, lat);
  return lat;
}

}  // namespace sim
}  // namespace strata
