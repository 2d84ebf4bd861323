#include "loaded_platform.hpp"

#include <xbt/log.h>
#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "strata/traces/error.hpp"

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return true;
  std::ostringstream text;
  text << in.rdbuf();
  const std::string xml = text.str();
  for (const char* marker : {"speed_file", "availability_file", "state_file", "trace_connect"})
    if (xml.find(marker) != std::string::npos) return true;
  return false;
}

}  // namespace

LoadedPlatform::LoadedPlatform(const std::string& path, const NetworkConfig& network) {
  // Keep SimGrid quiet: strata reports errors itself, one line each.
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char name[] = "strata";
  char* argv[] = {name, nullptr};
  engine_ = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  simgrid::s4u::Engine::set_config("network/model:" + network.model);
  simgrid::s4u::Engine::set_config(std::string("network/crosstraffic:") + (network.crosstraffic ? "1" : "0"));
  if (network.ideal_factors && network.model == "LV08") {
    simgrid::s4u::Engine::set_config("network/latency-factor:1");
    simgrid::s4u::Engine::set_config("network/bandwidth-factor:1");
    // No TCP window cap (4 MiB / 2·latency): RDMA fabrics are not window-limited.
    simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  }
  try {
    engine_->load_platform(path);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    // SimGrid's messages already name the file and line; keep them on one line.
    throw InputError(what.find(path) != std::string::npos ? what : input_error_message(path, "", what));
  }
  host_profiles_ = mentions_profiles(path);
  hosts_ = engine_->get_all_hosts();
  std::sort(hosts_.begin(), hosts_.end(),
            [](const auto* a, const auto* b) { return natural_less(a->get_name(), b->get_name()); });
  if (hosts_.empty()) throw InputError(input_error_message(path, "", "platform has no host"));
  summary_.path = path;
  try {
    for (const auto* h : hosts_)
      summary_.hosts.push_back(
          host_spec_from_properties(h->get_name(), properties_of(h), h->get_speed(), h->get_core_count()));
  } catch (const InputError& e) {
    throw InputError(input_error_message(path, "", e.what()));  // "host 'x': property ...": name the file
  }
  NetworkSummary& net = summary_.network;
  route_figures(hosts_[0], hosts_[0], net.intra_bw, net.intra_latency, net.intra_shared);
  if (hosts_.size() > 1) {
    bool ignored = false;
    route_figures(hosts_[0], hosts_[1], net.inter_bw, net.inter_latency, ignored);
  } else {
    net.inter_bw = net.intra_bw;
    net.inter_latency = net.intra_latency;
  }
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
