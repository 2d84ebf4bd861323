#include "platform_check.hpp"

#include <expat.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "platform_properties.hpp"
#include "platform_units.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace sim {
namespace {

// A platform file larger than this is refused before it is read: 10^5 hosts written one element
// each take about 20 MB.
constexpr long long kMaxPlatformBytes = 256LL << 20;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Offset of the first byte that is not part of well-formed UTF-8, or npos.
std::size_t first_invalid_utf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    if (c < 0x80)
      extra = 0;
    else if (c >= 0xC2 && c <= 0xDF)
      extra = 1;
    else if (c >= 0xE0 && c <= 0xEF)
      extra = 2;
    else if (c >= 0xF0 && c <= 0xF4)
      extra = 3;
    else
      return i;
    if (i + extra >= text.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return i;
    // Overlong three- and four-byte forms, surrogates and code points above U+10FFFF.
    const auto c1 = extra > 0 ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 >= 0x90))
      return i;
    i += extra + 1;
  }
  return std::string::npos;
}

std::size_t line_of(const std::string& text, std::size_t offset) {
  return 1 +
         static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

std::string read_platform_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(input_error_message(path, "", std::string("cannot open file: ") + std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    throw InputError(input_error_message(path, "", "is a directory, not a platform file"));
  if (!S_ISREG(st.st_mode))
    throw InputError(
        input_error_message(path, "", "not a regular file (SimGrid reads platforms from files)"));
  if (st.st_size > kMaxPlatformBytes)
    throw InputError(input_error_message(path, "",
                                         std::to_string(st.st_size) + " B is larger than the " +
                                             std::to_string(kMaxPlatformBytes) +
                                             " B strata reads as a platform"));
  note_input(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(input_error_message(path, "", std::string("cannot open file: ") + std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

using Attributes = std::map<std::string, std::string>;

// One SAX pass over the file. The first problem found is kept and the parse stopped: expat is
// C, so nothing is thrown through it.
class PlatformChecker {
 public:
  explicit PlatformChecker(std::string path) : path_(std::move(path)) {}

  void run(const std::string& text) {
    std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate("UTF-8"),
                                                                        &XML_ParserFree);
    if (!parser) throw InputError(input_error_message(path_, "", "cannot create an XML parser"));
    parser_ = parser.get();
    text_ = &text;
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &PlatformChecker::on_start, &PlatformChecker::on_end);
    const auto status = XML_Parse(parser_, text.data(), static_cast<int>(text.size()), XML_TRUE);
    if (!error_.empty()) throw InputError(error_);
    if (status != XML_STATUS_OK)
      throw InputError(
          input_error_message(path_ + ":" + std::to_string(XML_GetCurrentLineNumber(parser_)), "",
                              std::string("XML: ") + XML_ErrorString(XML_GetErrorCode(parser_))));
  }

 private:
  struct Element {
    std::string name;
    std::string id;
    std::size_t pstates = 1;  // speeds of a host or cluster
  };

  static void XMLCALL on_start(void* self, const XML_Char* name, const XML_Char** attrs) {
    Attributes a;
    for (std::size_t i = 0; attrs[i] != nullptr && attrs[i + 1] != nullptr; i += 2)
      a[attrs[i]] = attrs[i + 1];
    static_cast<PlatformChecker*>(self)->start(name, a);
  }
  static void XMLCALL on_end(void* self, const XML_Char* /*name*/) {
    auto* checker = static_cast<PlatformChecker*>(self);
    if (!checker->stack_.empty()) checker->stack_.pop_back();
  }

  // The line of `attribute` in the start tag being read: expat gives the tag's first line only,
  // and a <cluster> often spans several.
  std::size_t attribute_line(const std::string& attribute) const {
    const std::size_t line = XML_GetCurrentLineNumber(parser_);
    const XML_Index offset = XML_GetCurrentByteIndex(parser_);
    if (offset < 0 || text_ == nullptr) return line;
    const auto start = static_cast<std::size_t>(offset);
    const std::size_t end = text_->find('>', start);
    for (std::size_t at = text_->find(attribute, start); at < end; at = text_->find(attribute, at + 1)) {
      std::size_t after = at + attribute.size();
      while (after < end && std::isspace(static_cast<unsigned char>((*text_)[after]))) ++after;
      if (std::isspace(static_cast<unsigned char>((*text_)[at - 1])) && (*text_)[after] == '=')
        return line + static_cast<std::size_t>(std::count(text_->begin() + static_cast<long>(start),
                                                          text_->begin() + static_cast<long>(at), '\n'));
    }
    return line;
  }

  // Keeps the first problem: "p.xml:12: link 'l0' attribute bandwidth: <problem>".
  void report(const Element& e, const std::string& what, const std::string& problem) {
    if (problem.empty() || !error_.empty()) return;
    const std::string attribute_prefix = "attribute ";
    const std::string line = std::to_string(what.rfind(attribute_prefix, 0) == 0
                                                ? attribute_line(what.substr(attribute_prefix.size()))
                                                : XML_GetCurrentLineNumber(parser_));
    error_ = input_error_message(path_ + ":" + line,
                                 e.name + (e.id.empty() ? "" : " '" + e.id + "'") + " " + what, problem);
    XML_StopParser(parser_, XML_FALSE);
  }

  void quantity(const Element& e, const Attributes& a, const std::string& attribute, Dimension d) {
    const auto it = a.find(attribute);
    if (it != a.end()) report(e, "attribute " + attribute, parse_quantity(it->second, d).problem);
  }

  // A list of quantities (pstate speeds, wifi bandwidths); returns how many.
  std::size_t quantities(const Element& e, const Attributes& a, const std::string& attribute, Dimension d,
                         const std::string& separators) {
    const auto it = a.find(attribute);
    if (it == a.end()) return 1;
    const std::vector<Quantity> list = parse_quantity_list(it->second, d, separators);
    for (std::size_t i = 0; i < list.size(); ++i)
      report(e, "attribute " + attribute,
             list[i].problem.empty() || list.size() == 1
                 ? list[i].problem
                 : "item " + std::to_string(i) + " of '" + it->second + "': " + list[i].problem);
    return list.size();
  }

  void integer(const Element& e, const Attributes& a, const std::string& attribute, long long min,
               long long max) {
    const auto it = a.find(attribute);
    if (it == a.end()) return;
    // The DTD writes pstate's default as "0.0" (SimGrid reads it with std::stoi): a zero
    // fraction is accepted there.
    std::string text = it->second;
    const std::size_t dot = text.find('.');
    if (attribute == "pstate" && dot != std::string::npos && dot > 0 &&
        text.find_first_not_of('0', dot + 1) == std::string::npos)
      text.erase(dot);
    long long value = 0;
    report(e, "attribute " + attribute, parse_int(text, min, max, value));
  }

  // "0-99,120,200-203" (SimGrid's explodesRadical): counts the hosts, refusing more than
  // kMaxPlatformHosts in the whole platform before SimGrid would build them.
  void radical(const Element& e, const Attributes& a) {
    const auto it = a.find("radical");
    if (it == a.end()) return;
    const std::string& text = it->second;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = text.find(',', start);
      const std::string group = text.substr(start, comma == std::string::npos ? comma : comma - start);
      const std::size_t dash = group.find('-');
      long long first = 0;
      long long last = 0;
      std::string problem = parse_int(group.substr(0, dash), 0, 2147483647, first);
      if (problem.empty() && dash != std::string::npos)
        problem = parse_int(group.substr(dash + 1), 0, 2147483647, last);
      else
        last = first;
      if (problem.empty() && last < first) problem = "range '" + group + "' is empty";
      if (!problem.empty()) return report(e, "attribute radical", "'" + text + "': " + problem);
      add_hosts(e, "attribute radical", last - first + 1);
      if (comma == std::string::npos) return;
      start = comma + 1;
    }
  }

  void add_hosts(const Element& e, const std::string& what, long long count) {
    hosts_ += count;
    if (hosts_ > kMaxPlatformHosts)
      report(e, what,
             "the platform declares " + std::to_string(hosts_) + " hosts so far, more than the " +
                 std::to_string(kMaxPlatformHosts) + " strata simulates");
  }

  void start(const std::string& name, const Attributes& a) {
    Element e{name, a.count("id") ? a.at("id") : "", 1};
    if (name == "prop") {
      check_prop(a);
    } else if (name == "include" || name == "storage" || name == "storage_type" || name == "mount") {
      // SimGrid 3.32 kills the process on these (xbt_die).
      report(e, "element",
             std::string("<") + name + "> was removed in SimGrid " + (name == "include" ? "3.18" : "3.27") +
                 "; SimGrid 3.32 does not read it");
    } else if (name == "config") {
      // SimGrid applies a <config> after strata has configured the engine (network model,
      // factors, cross traffic), and 3.32 crashes on it then (segmentation fault, even for a
      // valid network/model).
      report(e, "element",
             "<config> sets SimGrid options, which strata sets itself (--network-model, --simgrid-factors); "
             "remove it and use those flags");
    } else if (name == "platform") {
      check_version(e, a);
    } else if (name == "host" || name == "cluster") {
      e.pstates = quantities(e, a, "speed", Dimension::speed, ",");
      integer(e, a, "core", 1, 1000000);
      if (name == "host") {
        add_hosts(e, "element", 1);
        integer(e, a, "pstate", 0, static_cast<long long>(e.pstates) - 1);
      } else {
        check_cluster(e, a);
      }
    } else if (name == "cabinet") {
      radical(e, a);
      quantity(e, a, "speed", Dimension::speed);
      quantity(e, a, "bw", Dimension::bandwidth);
      quantity(e, a, "lat", Dimension::time);
    } else if (name == "peer") {
      add_hosts(e, "element", 1);
      quantity(e, a, "speed", Dimension::speed);
      quantity(e, a, "bw_in", Dimension::bandwidth);
      quantity(e, a, "bw_out", Dimension::bandwidth);
    } else if (name == "link") {
      const std::size_t rates = quantities(e, a, "bandwidth", Dimension::bandwidth, ";,");
      if (rates > 1 && (!a.count("sharing_policy") || a.at("sharing_policy") != "WIFI"))
        report(e, "attribute bandwidth",
               "'" + a.at("bandwidth") + "' lists " + std::to_string(rates) +
                   " bandwidths; only sharing_policy=\"WIFI\" links have several");
      quantity(e, a, "latency", Dimension::time);
    } else if (name == "zone" || name == "AS") {
      check_routing(e, a);
    } else if (name == "backbone") {
      quantity(e, a, "bandwidth", Dimension::bandwidth);
      quantity(e, a, "latency", Dimension::time);
    } else if (name == "disk") {
      quantity(e, a, "read_bw", Dimension::bandwidth);
      quantity(e, a, "write_bw", Dimension::bandwidth);
    }
    stack_.push_back(std::move(e));
  }

  // SimGrid reads the version with std::stod, then rounds 100 times it to a long: NaN or a huge
  // value would be undefined there. It then refuses versions other than 4.x itself.
  void check_version(const Element& e, const Attributes& a) {
    const auto it = a.find("version");
    if (it == a.end()) return;
    char* end = nullptr;
    const double version = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || !(version >= 0 && version < 1e6))
      report(e, "attribute version",
             "'" + it->second + "' is not a platform version (SimGrid 3.32 reads 4.1)");
  }

  // SimGrid 3.32's routings (sg_platf.cpp, compared ignoring case); any other kills it (xbt_die).
  void check_routing(const Element& e, const Attributes& a) {
    const auto it = a.find("routing");
    if (it == a.end()) return;
    std::string lower = it->second;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* known :
         {"full", "floyd", "dijkstra", "dijkstracache", "cluster", "none", "vivaldi", "wifi"})
      if (lower == known) return;
    report(e, "attribute routing",
           "unknown routing '" + it->second +
               "' (SimGrid 3.32 has Full, Floyd, Dijkstra, DijkstraCache, Cluster, None, Vivaldi, Wifi)");
  }

  // SimGrid 3.32 reads topo_parameters as unsigned counts without a check: a negative or zero one
  // (a fat-tree's "2;2,2;1,1;-1,1") makes it allocate without bound. The shapes, per topology:
  // FAT_TREE "levels;down,...;up,...;cables,..." (each list `levels` long), TORUS "x,y,...",
  // DRAGONFLY "groups,links;chassis,links;routers,links;nodes". Every count 1..100000.
  void check_topology(const Element& e, const Attributes& a) {
    const auto topology = a.find("topology");
    if (topology == a.end() || topology->second == "FLAT" || topology->second.empty()) return;
    const auto it = a.find("topo_parameters");
    const std::string text = it == a.end() ? "" : it->second;
    auto fail = [&](const std::string& problem) {
      report(e, "attribute topo_parameters", "'" + text + "': " + problem);
    };
    std::vector<std::vector<long long>> parts;
    std::size_t start = 0;
    for (;;) {
      const std::size_t semi = text.find(';', start);
      const std::string part = text.substr(start, semi == std::string::npos ? semi : semi - start);
      std::vector<long long>& counts = parts.emplace_back();
      std::size_t from = 0;
      for (;;) {
        const std::size_t comma = part.find(',', from);
        long long v = 0;
        const std::string problem =
            parse_int(part.substr(from, comma == std::string::npos ? comma : comma - from), 1, 100000, v);
        if (!problem.empty()) return fail(problem + " (counts are whole numbers 1..100000)");
        counts.push_back(v);
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    const std::string& t = topology->second;
    if (t == "FAT_TREE") {
      const auto levels = static_cast<std::size_t>(parts[0][0]);
      if (parts.size() != 4 || parts[0].size() != 1 || parts[1].size() != levels ||
          parts[2].size() != levels || parts[3].size() != levels)
        fail("a FAT_TREE needs 'levels;down,...;up,...;cables,...' with `levels` counts in each list");
    } else if (t == "DRAGONFLY") {
      if (parts.size() != 4 || parts[0].size() != 2 || parts[1].size() != 2 || parts[2].size() != 2 ||
          parts[3].size() != 1)
        fail("a DRAGONFLY needs 'groups,links;chassis,links;routers,links;nodes'");
    } else if (t == "TORUS") {
      if (parts.size() != 1) fail("a TORUS needs its dimensions 'x,y,...'");
    } else {
      report(e, "attribute topology",
             "unknown topology '" + t + "' (SimGrid 3.32 has FLAT, FAT_TREE, TORUS, DRAGONFLY)");
    }
  }

  void check_cluster(const Element& e, const Attributes& a) {
    radical(e, a);
    check_topology(e, a);
    quantity(e, a, "bw", Dimension::bandwidth);
    quantity(e, a, "lat", Dimension::time);
    // SimGrid skips these when empty (their DTD default, bb_lat's aside).
    for (const char* attribute : {"bb_bw", "limiter_link", "loopback_bw"})
      if (a.count(attribute) && !a.at(attribute).empty()) quantity(e, a, attribute, Dimension::bandwidth);
    for (const char* attribute : {"bb_lat", "loopback_lat"})
      if (a.count(attribute) && !a.at(attribute).empty()) quantity(e, a, attribute, Dimension::time);
  }

  void check_prop(const Attributes& a) {
    if (stack_.empty()) return;
    const Element& owner = stack_.back();
    const std::string key = a.count("id") ? a.at("id") : "";
    const std::string value = a.count("value") ? a.at("value") : "";
    const bool host = owner.name == "host" || owner.name == "cluster";
    report(owner, "property " + key,
           host ? check_host_property(key, value, owner.pstates) : check_property_name(key));
  }

  std::string path_;
  XML_Parser parser_ = nullptr;
  const std::string* text_ = nullptr;  // the file, while run() reads it
  std::vector<Element> stack_;
  long long hosts_ = 0;
  std::string error_;
};

}  // namespace

void check_platform_file(const std::string& path) {
  const std::string text = read_platform_bytes(path);
  if (ends_with(path, ".so") || ends_with(path, ".dylib")) return;
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[bad]));
    throw InputError(input_error_message(
        path + ":" + std::to_string(line_of(text, bad)), "",
        std::string("not UTF-8 (byte ") + byte + "); strata reads platform files as UTF-8 only"));
  }
  PlatformChecker(path).run(text);
}

const std::vector<std::string>& network_models() {
  // SimGrid 3.32, src/surf/surf_interface.cpp: surf_network_model_description, less two.
  // "ns-3": Debian builds SimGrid without ns-3, and choosing it kills the process (xbt_die).
  // "Constant": it has no links, and strata reads every platform's routes, which SimGrid then
  // refuses (an empty route) or aborts on (a route asked of a zone with routing None).
  static const std::vector<std::string> kModels = {"LV08", "CM02", "SMPI", "IB"};
  return kModels;
}

void check_network_model(const std::string& model) {
  for (const std::string& m : network_models())
    if (m == model) return;
  std::string known;
  for (const std::string& m : network_models()) known += (known.empty() ? "" : ", ") + m;
  if (model == "Constant" || model == "ns-3")
    throw InputError(
        "--network-model: SimGrid's '" + model + "' model cannot replay strata's plans (" +
        (model == "ns-3" ? "Debian's SimGrid is built without ns-3" : "it has no links nor routes") +
        "); use one of " + known);
  throw InputError("--network-model: unknown SimGrid network model '" + model + "' (known: " + known + ")");
}

}  // namespace sim
}  // namespace strata
