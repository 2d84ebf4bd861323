// platform_routes (platform.hpp): the platform's routes read in a child process. Unlike
// LoadedPlatform it never asks for a route from a host to itself: workflow platforms such as
// SimGrid's simulacrum_7_hosts (a Full zone) have none, and a transfer on one host costs nothing.
#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "loaded_platform.hpp"
#include "platform_check.hpp"
#include "strata/sim/platform.hpp"
#include "strata/sim/process.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace sim {

PlatformRoutes platform_routes(const std::string& path) {
  check_platform_file(path);
  const std::string text = run_in_quiet_child(
      [&] {
        const std::unique_ptr<simgrid::s4u::Engine> engine = load_platform_engine(path, NetworkConfig{});
        const std::vector<simgrid::s4u::Host*> hosts = natural_hosts(*engine);
        nlohmann::json j = {{"hosts", nlohmann::json::array()}, {"speed", nlohmann::json::array()}};
        for (const simgrid::s4u::Host* a : hosts) {
          j["hosts"].push_back(a->get_name());
          j["speed"].push_back(a->get_speed());
          nlohmann::json latency = nlohmann::json::array(), bandwidth = nlohmann::json::array();
          for (const simgrid::s4u::Host* b : hosts) {
            std::vector<simgrid::s4u::Link*> links;
            double lat = 0;
            if (a != b) a->route_to(b, links, &lat);
            double bw = std::numeric_limits<double>::max();
            for (const simgrid::s4u::Link* link : links) bw = std::min(bw, link->get_bandwidth());
            latency.push_back(lat);
            bandwidth.push_back(links.empty() ? 1.0 : bw);
          }
          j["latency"].push_back(latency);
          j["bandwidth"].push_back(bandwidth);
        }
        return j.dump();
      },
      path + ": SimGrid cannot load this platform");
  const nlohmann::json j = parse_json_text(text, path);
  PlatformRoutes r;
  r.hosts = j.at("hosts").get<std::vector<std::string>>();
  r.speed = j.at("speed").get<std::vector<double>>();
  r.latency = j.at("latency").get<std::vector<std::vector<double>>>();
  r.bandwidth = j.at("bandwidth").get<std::vector<std::vector<double>>>();
  if (r.hosts.empty()) throw InputError(input_error_message(path, "", "platform has no host"));
  return r;
}

ServerlessResources serverless_resources(const std::string& path) {
  check_platform_file(path);
  const std::string text = run_in_quiet_child(
      [&] {
        const std::unique_ptr<simgrid::s4u::Engine> engine = load_platform_engine(path, NetworkConfig{});
        const std::vector<simgrid::s4u::Host*> hosts = natural_hosts(*engine);
        nlohmann::json j = {{"instances", 0}};
        for (const simgrid::s4u::Host* h : hosts) {
          std::map<std::string, std::string> p;
          if (const auto* props = h->get_properties())
            for (const auto& [k, v] : *props) p[k] = v;
          if (is_function_host(p)) {
            if (j["instances"] == 0)
              j["pool"] = {{"host", h->get_name()}, {"speed", h->get_speed()}, {"properties", p}};
            j["instances"] = j["instances"].get<int>() + 1;
            j["function_hosts"].push_back(h->get_name());
          } else if (is_storage_host(p)) {
            const char* key =
                p.count("storage_kind") != 0 && p["storage_kind"] == "cache" ? "cache" : "store";
            if (!j.contains(key)) j[key] = {{"host", h->get_name()}, {"properties", p}};
          }
        }
        return j.dump();
      },
      path + ": SimGrid cannot load this platform");
  const nlohmann::json j = parse_json_text(text, path);
  ServerlessResources r;
  try {
    r.instances = j.at("instances").get<int>();
    if (j.contains("function_hosts")) r.function_hosts = j["function_hosts"].get<std::vector<std::string>>();
    if (j.contains("pool"))
      r.pool =
          function_pool_from_properties(j["pool"]["host"].get<std::string>(),
                                        j["pool"]["properties"].get<std::map<std::string, std::string>>(),
                                        j["pool"]["speed"].get<double>());
    if (j.contains("store")) {
      r.store_host = j["store"]["host"].get<std::string>();
      r.store = object_store_from_properties(
          r.store_host, j["store"]["properties"].get<std::map<std::string, std::string>>());
    }
    if (j.contains("cache")) {
      r.cache_host = j["cache"]["host"].get<std::string>();
      r.cache = object_store_from_properties(
          r.cache_host, j["cache"]["properties"].get<std::map<std::string, std::string>>());
    }
  } catch (const InputError& e) {
    throw InputError(input_error_message(path, "", e.what()));
  }
  return r;
}

}  // namespace sim
}  // namespace strata
