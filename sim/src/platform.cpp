#include "strata/sim/platform.hpp"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "strata/models/schedule/plan_placement.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace sim {

int PlatformSummary::total_slots() const {
  int n = 0;
  for (const HostSpec& h : hosts) n += h.slots;
  return n;
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ei = i;
      std::size_t ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      // Compare digit runs as numbers: strip leading zeros, then by length, then lexically.
      std::size_t zi = i;
      std::size_t zj = j;
      while (zi + 1 < ei && a[zi] == '0') ++zi;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      int cmp = a.compare(zi, ei - zi, b, zj, ej - zj);
      if (cmp != 0) return cmp < 0;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

std::vector<int> place_workers(const PlatformSummary& platform, int workers,
                               const std::vector<std::string>& hosts_by_worker) {
  const int slots = platform.total_slots();
  if (hosts_by_worker.empty()) {
    check_worker_slots(platform.path, workers, slots);
    std::vector<int> out;
    out.reserve(static_cast<std::size_t>(workers));
    for (int h = 0; h < static_cast<int>(platform.hosts.size()) && static_cast<int>(out.size()) < workers;
         ++h)
      for (int s = 0;
           s < platform.hosts[static_cast<std::size_t>(h)].slots && static_cast<int>(out.size()) < workers;
           ++s)
        out.push_back(h);
    return out;
  }
  if (static_cast<int>(hosts_by_worker.size()) != workers)
    throw InputError(input_error_message("placement", "",
                                         "names " + std::to_string(hosts_by_worker.size()) +
                                             " workers, the plan has " + std::to_string(workers)));
  std::map<std::string, int> by_name;
  for (std::size_t h = 0; h < platform.hosts.size(); ++h)
    by_name[platform.hosts[h].name] = static_cast<int>(h);
  std::vector<int> out;
  std::vector<int> used(platform.hosts.size(), 0);
  for (int w = 0; w < workers; ++w) {
    const std::string& name = hosts_by_worker[static_cast<std::size_t>(w)];
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw InputError(
          input_error_message("placement", "worker " + std::to_string(w), "unknown host '" + name + "'"));
    if (++used[static_cast<std::size_t>(it->second)] >
        platform.hosts[static_cast<std::size_t>(it->second)].slots)
      throw InputError(input_error_message(
          "placement", "worker " + std::to_string(w),
          "host '" + name + "' has only " +
              std::to_string(platform.hosts[static_cast<std::size_t>(it->second)].slots) + " worker slots"));
    out.push_back(it->second);
  }
  return out;
}

std::vector<std::string> read_placement(const std::string& path) {
  const std::string text = read_text_file(path, std::uint64_t{64} << 20);
  std::vector<std::string> out;
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError(input_error_message(path, "byte " + std::to_string(e.byte), "parse error"));
    }
    if (!doc.contains("workers") || !doc["workers"].is_array())
      throw InputError(input_error_message(path, "/workers", "missing array of host names"));
    if (doc["workers"].empty()) throw InputError(input_error_message(path, "/workers", "no host names"));
    for (std::size_t i = 0; i < doc["workers"].size(); ++i) {
      if (!doc["workers"][i].is_string())
        throw InputError(input_error_message(path, "/workers/" + std::to_string(i), "not a host name"));
      out.push_back(doc["workers"][i].get<std::string>());
    }
    return out;
  }
  std::string line;
  std::istringstream lines(text);
  while (std::getline(lines, line)) {
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    auto e = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(b, e - b + 1));
  }
  if (out.empty())
    throw InputError(input_error_message(path, "", "no host names (one per line, or {\"workers\": [...]})"));
  return out;
}

std::string one_host_platform_xml(const Calibration& calibration, const std::string& transport) {
  const HostCalibration& h = calibration.host;
  if (h.cores <= 0)
    throw InputError(
        input_error_message(calibration.source, "/host", "no measured host (run strata calibrate)"));
  const auto it = calibration.transports.find(transport);
  if (it == calibration.transports.end())
    throw InputError(input_error_message(calibration.source, "/transports",
                                         "no measurements of transport '" + transport +
                                             "' (run strata calibrate" +
                                             (transport == "mpi" ? " in a build with MPI)" : ")")));
  const TransportCalibration& t = it->second;
  auto num = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  std::string name;
  for (char c : h.name) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '-';
  if (name.empty()) name = "this-machine";
  const double bw = t.p2p_beta_s_per_byte > 0 ? 1 / t.p2p_beta_s_per_byte : 1e15;
  // With the object store of files measured (`files`), the machine also stands for a pool of
  // one-vCPU functions, one per core, and the store (docs/serverless.md).
  const auto files = calibration.transports.find("files");
  const bool serverless = files != calibration.transports.end();
  // With the same store in RAM measured (`cache`), a cache VM `cache` too.
  const auto cache_files = calibration.transports.find("cache");
  const bool cache = serverless && cache_files != calibration.transports.end();
  auto bw_of = [](const TransportCalibration& c) {
    return c.p2p_beta_s_per_byte > 0 ? 1 / c.p2p_beta_s_per_byte : 1e15;
  };
  std::vector<std::string> functions;
  if (serverless)
    for (int c = 0; c < h.cores; ++c) functions.push_back("fn-" + std::to_string(c));
  std::string xml;
  xml += "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  xml +=
      "<!--\n  strata platform of the machine measured by `strata calibrate` (" + calibration.source + "):\n";
  xml += "  one host, " + std::to_string(h.cores) +
         " worker slots (cores), speed = the measured single-core fp32 peak;\n";
  xml += "  loopback = the '" + transport + "' transport's point-to-point alpha and 1/beta.\n";
  if (serverless)
    xml += "  Functions fn-0 .. fn-" + std::to_string(h.cores - 1) +
           ": one per core, a vCPU-equivalent at 1769 MB (AWS Lambda's scale), at most one vCPU\n"
           "  (strata's workers run one thread each); no cold starts, no prices (this machine).\n"
           "  Object store `store`: files in a folder on this machine's disk; its request latency and\n"
           "  per-connection bandwidth are the measured alpha and 1/beta of one PUT or GET.\n";
  if (cache)
    xml +=
        "  Cache VM `cache` (storage_kind=cache): the same files in RAM (/dev/shm), its request\n"
        "  latency and per-connection bandwidth measured the same way (transport `cache`).\n";
  if (serverless) xml += "  A parameter server for functions runs on the host " + name + ", the first VM.\n";
  xml += "-->\n";
  xml += "<platform version=\"4.1\">\n  <zone id=\"" + name + "-zone\" routing=\"Full\">\n";
  auto host = [&](const std::string& id, const std::string& props) {
    xml += "    <host id=\"" + id + "\" speed=\"" + num(h.flops_fp32) + "f\" core=\"" +
           std::to_string(id == name ? h.cores : 1) + "\">\n";
    xml += "      <prop id=\"flops_fp32\" value=\"" + num(h.flops_fp32) + "\"/>\n";
    xml += "      <prop id=\"flops_fp64\" value=\"" + num(h.flops_fp64) + "\"/>\n";
    xml += "      <prop id=\"mem_bw\" value=\"" + num(h.mem_bw) + "\"/>\n";
    xml += props;
    xml += "    </host>\n";
  };
  host(name, "");
  if (serverless) {
    for (const std::string& f : functions)
      host(f,
           "      <prop id=\"function_memory_mb\" value=\"128-1769\"/>\n"
           "      <prop id=\"function_mb_per_vcpu\" value=\"1769\"/>\n"
           "      <prop id=\"function_max_vcpus\" value=\"1\"/>\n"
           "      <prop id=\"function_concurrency\" value=\"" +
               std::to_string(h.cores) + "\"/>\n");
    auto store_host = [&](const std::string& id, const TransportCalibration& c, const std::string& kind) {
      xml += "    <host id=\"" + id + "\" speed=\"1Gf\" core=\"1\">\n";
      if (!kind.empty()) xml += "      <prop id=\"storage_kind\" value=\"" + kind + "\"/>\n";
      xml += "      <prop id=\"storage_request_latency_s\" value=\"" + num(c.p2p_alpha_s) + "\"/>\n";
      xml += "      <prop id=\"storage_connection_bw\" value=\"" + num(bw_of(c)) + "\"/>\n";
      xml += "    </host>\n";
    };
    store_host("store", files->second, "");
    if (cache) store_host("cache", cache_files->second, "cache");
  }
  xml += "    <link id=\"loopback\" bandwidth=\"" + num(bw) + "Bps\" latency=\"" + num(t.p2p_alpha_s) +
         "s\"/>\n";
  if (serverless) {
    // A request pays the store's latency once (its link) and its bytes at a function's
    // connection (the function's link), as hybrid-serverless.xml does; the cache's requests
    // the same over links of their own.
    auto request_links = [&](const std::string& hub, const TransportCalibration& c) {
      for (const std::string& fn : functions)
        xml += "    <link id=\"" + fn + (hub == "store" ? "" : "-" + hub) + "-link\" bandwidth=\"" +
               num(bw_of(c)) + "Bps\" latency=\"0s\" sharing_policy=\"SPLITDUPLEX\"/>\n";
      xml += "    <link id=\"" + hub + "-link\" bandwidth=\"1e15Bps\" latency=\"" + num(c.p2p_alpha_s) +
             "s\" sharing_policy=\"FATPIPE\"/>\n";
    };
    request_links("store", files->second);
    if (cache) request_links("cache", cache_files->second);
  }
  // Every ordered pair of hosts has a route (a host with itself included).
  std::vector<std::string> hosts{name};
  hosts.insert(hosts.end(), functions.begin(), functions.end());
  if (serverless) hosts.push_back("store");
  if (cache) hosts.push_back("cache");
  auto is_hub = [](const std::string& h) { return h == "store" || h == "cache"; };
  auto links_of = [&](const std::string& a, const std::string& b) {
    if (is_hub(a) && is_hub(b))
      return a == b ? "<link_ctn id=\"" + a + "-link\"/>"
                    : "<link_ctn id=\"" + a + "-link\"/><link_ctn id=\"" + b + "-link\"/>";
    if (is_hub(a) || is_hub(b)) {
      const std::string& hub = is_hub(a) ? a : b;
      const std::string& other = is_hub(a) ? b : a;
      if (other == name) return "<link_ctn id=\"loopback\"/><link_ctn id=\"" + hub + "-link\"/>";
      return "<link_ctn id=\"" + other + (hub == "store" ? "" : "-" + hub) + "-link\" direction=\"" +
             (a == hub ? "DOWN" : "UP") + "\"/><link_ctn id=\"" + hub + "-link\"/>";
    }
    return std::string("<link_ctn id=\"loopback\"/>");
  };
  for (const std::string& a : hosts)
    for (const std::string& b : hosts)
      xml += "    <route src=\"" + a + "\" dst=\"" + b + "\" symmetrical=\"NO\">" + links_of(a, b) +
             "</route>\n";
  xml += "  </zone>\n</platform>\n";
  return xml;
}

}  // namespace sim
}  // namespace strata
