#include "symmetry.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "strata/models/zoo/zoo.hpp"

namespace strata {
inline namespace sim {
namespace {

using simgrid::s4u::Link;

// What a link gives a flow: bandwidth, latency and sharing.
using LinkSignature = std::tuple<double, double, int>;

LinkSignature signature(const Link* link) {
  return {link->get_bandwidth(), link->get_latency(), static_cast<int>(link->get_sharing_policy())};
}

bool is_fatpipe(const Link* link) { return link->get_sharing_policy() == Link::SharingPolicy::FATPIPE; }

struct Route {
  std::vector<const Link*> own;          // links that are not FATPIPE, sorted by address
  std::vector<LinkSignature> signature;  // of every link, sorted
  double latency = 0;
};

Route route(const simgrid::s4u::Host* from, const simgrid::s4u::Host* to) {
  std::vector<Link*> links;
  Route r;
  from->route_to(to, links, &r.latency);
  for (const Link* l : links) {
    r.signature.push_back(signature(l));
    if (!is_fatpipe(l)) r.own.push_back(l);
  }
  std::sort(r.own.begin(), r.own.end());
  std::sort(r.signature.begin(), r.signature.end());
  return r;
}

std::vector<const Link*> common(const std::vector<const Link*>& a, const std::vector<const Link*>& b) {
  std::vector<const Link*> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<LinkSignature> signatures(const std::vector<const Link*>& links) {
  std::vector<LinkSignature> out;
  out.reserve(links.size());
  for (const Link* l : links) out.push_back(signature(l));
  std::sort(out.begin(), out.end());
  return out;
}

bool same_spec(const HostSpec& a, const HostSpec& b) {
  return a.slots == b.slots && a.flops_fp32 == b.flops_fp32 && a.flops_bf16 == b.flops_bf16 &&
         a.flops_fp16 == b.flops_fp16 && a.flops_fp64 == b.flops_fp64 && a.mem_bw == b.mem_bw &&
         a.gpu_memory == b.gpu_memory && a.pcie_bw == b.pcie_bw && a.price_per_hour == b.price_per_hour &&
         a.watts_idle == b.watts_idle && a.watts_busy == b.watts_busy && a.gpu == b.gpu;
}

// Empty when the network between `hosts` (in natural order, at least 4) is flat (symmetry.hpp);
// else what is not.
std::string flat_network_refusal(const std::vector<simgrid::s4u::Host*>& hosts) {
  const std::size_t n = hosts.size();
  auto at = [&](std::size_t i) { return hosts[i % n]; };
  // Every host's routes to the next host and the one after, each asked of SimGrid once: they give
  // a host's own links out (its two routes) and in (the routes of the two hosts before it).
  std::vector<Route> next(n), after_next(n);
  for (std::size_t i = 0; i < n; ++i) {
    next[i] = route(at(i), at(i + 1));
    after_next[i] = route(at(i), at(i + 2));
  }
  std::vector<std::vector<const Link*>> up(n), down(n);
  for (std::size_t i = 0; i < n; ++i) {
    up[i] = common(next[i].own, after_next[i].own);
    down[i] = common(next[(i + n - 1) % n].own, after_next[(i + n - 2) % n].own);
  }
  std::unordered_map<const Link*, std::size_t> owner;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto* side : {&up[i], &down[i]})
      for (const Link* l : *side)
        if (auto [it, added] = owner.emplace(l, i); !added && it->second != i)
          return "link '" + std::string(l->get_cname()) + "' carries the traffic of hosts " +
                 hosts[it->second]->get_name() + " and " + hosts[i]->get_name();
  const Route& first = next[0];
  const Route loop = route(at(0), at(0));
  const std::vector<LinkSignature> up0 = signatures(up[0]), down0 = signatures(down[0]);
  for (std::size_t i = 0; i < n; ++i) {
    if (signatures(up[i]) != up0 || signatures(down[i]) != down0)
      return "host " + hosts[i]->get_name() + "'s links differ from " + hosts[0]->get_name() + "'s";
    const Route self = route(at(i), at(i));
    if (self.signature != loop.signature || self.latency != loop.latency)
      return "host " + hosts[i]->get_name() + "'s route to itself differs from " + hosts[0]->get_name() +
             "'s";
    for (std::size_t k : {std::size_t{1}, std::size_t{2}, std::size_t{3}, n / 2}) {
      const Route r = k == 1 ? next[i] : k == 2 ? after_next[i] : route(at(i), at(i + k));
      std::vector<const Link*> ends = up[i];
      ends.insert(ends.end(), down[(i + k) % n].begin(), down[(i + k) % n].end());
      std::sort(ends.begin(), ends.end());
      ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
      std::vector<const Link*> own = r.own;
      own.erase(std::unique(own.begin(), own.end()), own.end());
      if (own != ends || r.signature != first.signature || r.latency != first.latency)
        return "the route " + hosts[i]->get_name() + " -> " + at(i + k)->get_name() +
               " crosses links other than the two hosts' own and FATPIPE ones, or differs from " +
               hosts[0]->get_name() + " -> " + hosts[1]->get_name() + "'s";
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    for (const auto* side : {&up[i], &down[i]})
      for (const Link* l : *side)
        if (l->get_sharing_policy() != Link::SharingPolicy::SHARED &&
            l->get_sharing_policy() != Link::SharingPolicy::SPLITDUPLEX)
          return "link '" + std::string(l->get_cname()) + "' is neither SHARED nor SPLITDUPLEX";
  return "";
}

// Why the hosts do not run alike workers alike (speed or state profiles, functions), or "".
std::string varying_hosts(const LoadedPlatform& platform) {
  if (platform.has_host_profiles()) return "the platform has speed or state profiles";
  if (platform.pool()) return "the workers run in functions";
  return "";
}

}  // namespace

std::string symmetry_refused(const Model& model, const StrategyConfig& config, Solver solver) {
  if (config.dp < 2) return "one data-parallel replica";
  if (solver != Solver::backprop)
    return "solver " + std::string(to_string(solver)) + " (only backprop's replicas are reduced)";
  if (model.family == "gcn") return "a GCN's replicas hold different parts of the graph";
  if (config.dp_algo != CollectiveAlgo::ring && config.dp_algo != CollectiveAlgo::hierarchical)
    return "dp_algo " + std::string(to_string(config.dp_algo)) +
           " pairs ranks across hosts unevenly (ring and hierarchical are reduced)";
  if (config.compression != Compression::none) return "gradient compression";
  return "";
}

std::string tp_symmetry_refused(const StrategyConfig& config, Solver solver) {
  if (config.tp < 4 || config.tp % 2 != 0) return "tensor parallelism of fewer than 4 ranks, or odd";
  if (!config.stage_tp.empty()) return "per-stage tensor-parallel degrees";
  if (solver != Solver::backprop)
    return "solver " + std::string(to_string(solver)) + " (only backprop's ranks are reduced)";
  if (config.tp_algo != CollectiveAlgo::ring) return "tp_algo " + std::string(to_string(config.tp_algo));
  if (config.dp > 1 && config.dp_algo != CollectiveAlgo::ring)
    return "dp_algo " + std::string(to_string(config.dp_algo));
  if (config.compression != Compression::none) return "gradient compression";
  if (config.lowered_replicas != 0) return "a forced replica reduction";
  return "";
}

SymmetryChoice choose_tp_symmetry(int tp, const LoadedPlatform& platform, const std::vector<int>& host_of) {
  SymmetryChoice none;
  none.reason = varying_hosts(platform);
  if (!none.reason.empty()) return none;
  std::map<int, int> workers_on;
  for (std::size_t w = 0; w < host_of.size(); ++w) {
    ++workers_on[host_of[w]];
    if (host_of[w] != host_of[w - w % static_cast<std::size_t>(tp)]) {
      none.reason = "a stage's " + std::to_string(tp) + " tensor-parallel ranks span hosts";
      return none;
    }
  }
  for (const auto& [h, count] : workers_on) {
    const simgrid::s4u::Host* host = platform.host(h);
    if (host->get_core_count() < count) {
      none.reason = "host " + host->get_name() + " shares its cores among its workers";
      return none;
    }
    std::vector<Link*> links;
    double latency = 0;
    host->route_to(host, links, &latency);
    for (const Link* l : links)
      if (!is_fatpipe(l)) {
        none.reason = platform.summary().path + ": host " + host->get_name() +
                      "'s route to itself crosses link '" + l->get_cname() + "', which is not FATPIPE";
        return none;
      }
  }
  return SymmetryChoice{2, ""};
}

SymmetryChoice choose_symmetry(int dp, const LoadedPlatform& platform, const std::vector<int>& host_of) {
  SymmetryChoice none;
  none.reason = varying_hosts(platform);
  if (!none.reason.empty()) return none;
  const auto workers = static_cast<int>(host_of.size());
  const int per_replica = workers / dp;
  // The natural placement fills hosts in order: the hosts used, and the workers on each.
  std::vector<int> used;
  std::vector<int> count;
  for (int h : host_of) {
    if (used.empty() || used.back() != h) {
      if (!used.empty() && h < used.back()) {
        none.reason = "the workers are not placed in host order";
        return none;
      }
      used.push_back(h);
      count.push_back(0);
    }
    ++count.back();
  }
  const int per_host = count.front();
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (count[i] != per_host) {
      none.reason = "host " + platform.summary().hosts[static_cast<std::size_t>(used[i])].name + " holds " +
                    std::to_string(count[i]) + " workers, host " +
                    platform.summary().hosts[static_cast<std::size_t>(used[0])].name + " " +
                    std::to_string(per_host);
      return none;
    }
    const HostSpec& spec = platform.summary().hosts[static_cast<std::size_t>(used[i])];
    if (!same_spec(spec, platform.summary().hosts[static_cast<std::size_t>(used[0])])) {
      none.reason = "host " + spec.name + " differs from host " +
                    platform.summary().hosts[static_cast<std::size_t>(used[0])].name;
      return none;
    }
  }
  int replicas = 0;
  if (per_replica % per_host == 0)
    replicas = 2;
  else if (per_host % per_replica == 0)
    replicas = 2 * (per_host / per_replica);
  if (replicas == 0) {
    none.reason = "a replica's " + std::to_string(per_replica) + " workers neither fill whole hosts of " +
                  std::to_string(per_host) + " nor divide them";
    return none;
  }
  if (dp <= replicas || dp % replicas != 0) {
    none.reason = "dp " + std::to_string(dp) + " is not a multiple of the " + std::to_string(replicas) +
                  " replicas that make two hosts' period, above them";
    return none;
  }
  std::vector<simgrid::s4u::Host*> hosts;
  hosts.reserve(used.size());
  for (int h : used) hosts.push_back(platform.host(h));
  if (std::string flat = flat_network_refusal(hosts); !flat.empty()) {
    none.reason = platform.summary().path + ": " + flat;
    return none;
  }
  return SymmetryChoice{replicas, ""};
}

}  // namespace sim
}  // namespace strata
