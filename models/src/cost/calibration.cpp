// load_calibration: reads the JSON that `strata calibrate` writes
// (traces/schema/calibration.schema.json), checking every field, so that a bad file fails here
// with one line naming file, JSON pointer and problem rather than skewing a simulation.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace models {
namespace {

using nlohmann::json;

constexpr std::string_view kFormat = "strata-calibration";

class CalibrationReader {
 public:
  explicit CalibrationReader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& problem) const {
    throw InputError(input_error_message(path_, pointer, problem));
  }

  double number(const json& value, const std::string& pointer) const {
    if (!value.is_number()) fail(pointer, "expected a number, got " + value.dump());
    const double x = value.get<double>();
    if (!std::isfinite(x)) fail(pointer, "expected a finite number");
    return x;
  }

  double efficiency(const json& value, const std::string& pointer) const {
    const double e = number(value, pointer);
    if (!(e > 0 && e <= 1)) fail(pointer, "efficiency " + format_number(e) + " outside (0, 1]");
    return e;
  }

  double overhead(const json& value, const std::string& pointer) const {
    const double s = number(value, pointer);
    if (s < 0) fail(pointer, "negative overhead " + format_number(s) + " s");
    return s;
  }

  // A key is "kind[/dtype][/class]", kind a compute task kind, class "1e<decade>".
  void check_key(const std::string& key, const std::string& pointer) const {
    std::vector<std::string> parts;
    for (std::size_t from = 0;;) {
      const std::size_t slash = key.find('/', from);
      parts.push_back(key.substr(from, slash - from));
      if (slash == std::string::npos) break;
      from = slash + 1;
    }
    std::optional<TaskKind> kind = parse_task_kind(parts[0]);
    if (!kind) fail(pointer, "unknown task kind " + quote_for_message(parts[0]));
    if (is_communication(*kind))
      fail(pointer, "task kind " + quote_for_message(parts[0]) + " is not a compute kind");
    if (parts.size() > 3) fail(pointer, "expected kind[/dtype][/class]");
    std::size_t next = 1;
    if (parts.size() > next && !is_shape_class(parts[next])) {
      if (!parse_dtype(parts[next])) fail(pointer, "unknown dtype " + quote_for_message(parts[next]));
      ++next;
    }
    if (parts.size() > next && !is_shape_class(parts[next]))
      fail(pointer, "unknown shape class " + quote_for_message(parts[next]) +
                        " (expected a decade 1e0 ... 1e16 or a shape like 1.51e7)");
    if (parts.size() > next + 1) fail(pointer, "expected kind[/dtype][/class]");
  }

  static bool is_shape_class(const std::string& text) {
    if (is_exact_shape_class(text)) return true;
    if (text.size() < 3 || text.size() > 4 || text.compare(0, 2, "1e") != 0) return false;
    for (std::size_t i = 2; i < text.size(); ++i)
      if (text[i] < '0' || text[i] > '9') return false;
    return std::stoi(text.substr(2)) <= 16;
  }

  const json& member(const json& object, const std::string& key, const std::string& pointer) const {
    if (!object.contains(key)) fail(pointer + "/" + key, "missing");
    return object[key];
  }

  void object(const json& value, const std::string& pointer, std::initializer_list<const char*> keys) const {
    if (!value.is_object()) fail(pointer, "expected an object");
    for (const auto& [key, v] : value.items()) {
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      if (!known) fail(pointer + "/" + json_pointer_token(key), "unknown key");
    }
  }

  TransportCalibration transport(const json& value, const std::string& pointer) const {
    object(value, pointer,
           {"p2p_alpha_s", "p2p_beta_s_per_byte", "allreduce_alpha_s", "allreduce_beta_s_per_byte",
            "allreduce_ranks"});
    TransportCalibration t;
    t.p2p_alpha_s = overhead(member(value, "p2p_alpha_s", pointer), pointer + "/p2p_alpha_s");
    t.p2p_beta_s_per_byte =
        overhead(member(value, "p2p_beta_s_per_byte", pointer), pointer + "/p2p_beta_s_per_byte");
    t.allreduce_alpha_s =
        overhead(member(value, "allreduce_alpha_s", pointer), pointer + "/allreduce_alpha_s");
    t.allreduce_beta_s_per_byte =
        overhead(member(value, "allreduce_beta_s_per_byte", pointer), pointer + "/allreduce_beta_s_per_byte");
    const json& ranks = member(value, "allreduce_ranks", pointer);
    if (!ranks.is_number_integer() || ranks.get<std::int64_t>() < 2)
      fail(pointer + "/allreduce_ranks", "expected an integer >= 2, got " + ranks.dump());
    t.allreduce_ranks = static_cast<int>(ranks.get<std::int64_t>());
    return t;
  }

  HostCalibration host(const json& value, const std::string& pointer) const {
    object(value, pointer, {"name", "cores", "flops_fp32", "flops_fp64", "mem_bw"});
    HostCalibration h;
    const json& name = member(value, "name", pointer);
    if (!name.is_string()) fail(pointer + "/name", "expected a string");
    h.name = name.get<std::string>();
    const json& cores = member(value, "cores", pointer);
    if (!cores.is_number_integer() || cores.get<std::int64_t>() < 1)
      fail(pointer + "/cores", "expected an integer >= 1, got " + cores.dump());
    h.cores = static_cast<int>(cores.get<std::int64_t>());
    for (auto [key, field] : {std::pair{"flops_fp32", &h.flops_fp32}, std::pair{"flops_fp64", &h.flops_fp64},
                              std::pair{"mem_bw", &h.mem_bw}}) {
      const std::string place = pointer + "/" + key;
      *field = number(member(value, key, pointer), place);
      if (!(*field > 0)) fail(place, "expected a positive number");
    }
    return h;
  }

  // {"sizes": [...], "flop_per_s": [...]} of one dtype (gemm_grid.hpp).
  GemmGrid gemm_grid(const json& value, const std::string& pointer) const {
    object(value, pointer, {"sizes", "flop_per_s"});
    GemmGrid grid;
    for (auto [key, into] : {std::pair{"sizes", &grid.sizes}, std::pair{"flop_per_s", &grid.flop_per_s}}) {
      const json& list = member(value, key, pointer);
      const std::string place = pointer + "/" + key;
      if (!list.is_array()) fail(place, "expected an array");
      if (list.size() > 1000000) fail(place, "more than 10^6 entries");
      for (std::size_t i = 0; i < list.size(); ++i)
        into->push_back(number(list[i], place + "/" + std::to_string(i)));
    }
    if (const std::string problem = gemm_grid_problem(grid); !problem.empty()) fail(pointer, problem);
    return grid;
  }

  template <typename Check>
  void table(const json& object, const std::string& name, std::map<std::string, double>& into,
             Check check) const {
    const std::string pointer = "/" + name;
    if (!object.is_object()) fail(pointer, "expected an object");
    for (const auto& [key, value] : object.items()) {
      const std::string place = pointer + "/" + json_pointer_token(key);
      check_key(key, place);
      into[key] = (this->*check)(value, place);
    }
  }

  json parse() const {
    note_input(path_);
    std::ifstream in(path_);
    if (!in) fail("", "cannot open file");
    try {
      return json::parse(in);
    } catch (const json::exception& e) {
      // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, ...", or
      // "[json.exception.out_of_range.406] number overflow parsing '1e999'".
      std::string what = e.what();
      const std::size_t bracket = what.find("] ");
      fail("", "invalid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
    }
  }

 private:
  const std::string& path_;
};

void check_header(const CalibrationReader& reader, const json& doc) {
  if (!doc.is_object()) reader.fail("", "expected a JSON object");
  if (!doc.contains("schema_version")) reader.fail("/schema_version", "missing");
  const json& version = doc["schema_version"];
  if (!version.is_number_integer() || version.get<std::int64_t>() != Calibration::kSchemaVersion)
    reader.fail("/schema_version", "unsupported version " + version.dump() + " (expected " +
                                       std::to_string(Calibration::kSchemaVersion) + ")");
  if (doc.contains("format") && (!doc["format"].is_string() || doc["format"].get<std::string>() != kFormat))
    reader.fail("/format", "expected \"" + std::string(kFormat) + "\", got " + doc["format"].dump());
}

}  // namespace

// Starts from Calibration::defaults(): a key the file names replaces the built-in value for that
// key, every other key keeps it. Unknown top-level keys are rejected (a misspelt key would
// otherwise be silently ignored).
Calibration load_calibration(const std::string& path) {
  CalibrationReader reader(path);
  const json doc = reader.parse();
  check_header(reader, doc);
  Calibration calibration = Calibration::defaults();
  calibration.source = path;
  for (const auto& [key, value] : doc.items()) {
    if (key == "schema_version" || key == "format") continue;
    // Built by append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
    const std::string pointer = std::string("/").append(json_pointer_token(key));
    if (key == "default_flops_efficiency")
      calibration.default_flops_efficiency = reader.efficiency(value, pointer);
    else if (key == "default_mem_efficiency")
      calibration.default_mem_efficiency = reader.efficiency(value, pointer);
    else if (key == "flops_efficiency")
      reader.table(value, key, calibration.flops_efficiency, &CalibrationReader::efficiency);
    else if (key == "mem_efficiency")
      reader.table(value, key, calibration.mem_efficiency, &CalibrationReader::efficiency);
    else if (key == "overhead_s")
      reader.table(value, key, calibration.overhead_s, &CalibrationReader::overhead);
    else if (key == "transports") {
      if (!value.is_object()) reader.fail(pointer, "expected an object");
      for (const auto& [name, t] : value.items())
        calibration.transports[name] = reader.transport(t, pointer + "/" + json_pointer_token(name));
    } else if (key == "gemm") {
      if (!value.is_object()) reader.fail(pointer, "expected an object");
      for (const auto& [name, grid] : value.items()) {
        const std::string place = pointer + "/" + json_pointer_token(name);
        if (!parse_dtype(name))
          reader.fail(place, "unknown dtype " + quote_for_message(name) + " (bf16, fp16, fp32, fp64)");
        calibration.gemm[name] = reader.gemm_grid(grid, place);
      }
    } else if (key == "host")
      calibration.host = reader.host(value, pointer);
    else if (key != "device" && key != "created")  // informational, not read
      reader.fail(pointer, "unknown key");
  }
  return calibration;
}

void check_calibration_for_hosts(const Calibration& calibration, const std::vector<HostSpec>& hosts) {
  std::vector<std::pair<std::string, double>> best;  // per dtype grid: its fastest point
  for (const auto& [name, grid] : calibration.gemm)
    if (parse_dtype(name) && !grid.flop_per_s.empty())
      best.emplace_back(name, *std::max_element(grid.flop_per_s.begin(), grid.flop_per_s.end()));
  if (best.empty()) return;
  std::set<std::pair<GpuType, std::vector<double>>> checked;  // (type, peak per grid)
  for (const HostSpec& host : hosts) {
    if (host.gpu == GpuType::none) continue;
    std::vector<double> peaks;
    for (const auto& [name, rate] : best) peaks.push_back(host.peak_flops(*parse_dtype(name)));
    if (!checked.emplace(host.gpu, peaks).second) continue;
    for (std::size_t i = 0; i < best.size(); ++i) {
      const auto& [name, rate] = best[i];
      if (rate > peaks[i])
        throw InputError(
            input_error_message(calibration.source, "/gemm/" + name,
                                "measured up to " + format_number(rate / 1e12) + " TFLOP/s, above the " +
                                    format_number(peaks[i] / 1e12) + " TFLOP/s " + name + " peak of host " +
                                    quote_for_message(host.name) + " (" + std::string(to_string(host.gpu)) +
                                    "): the grid comes from a faster GPU than the platform's"));
    }
  }
}

std::string calibration_to_json(const Calibration& c, const std::string& device, const std::string& created) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = Calibration::kSchemaVersion;
  doc["format"] = std::string(kFormat);
  doc["device"] = device;
  doc["created"] = created;
  doc["default_flops_efficiency"] = c.default_flops_efficiency;
  doc["default_mem_efficiency"] = c.default_mem_efficiency;
  doc["flops_efficiency"] = c.flops_efficiency;  // std::map: sorted keys
  doc["mem_efficiency"] = c.mem_efficiency;
  doc["overhead_s"] = c.overhead_s;
  doc["transports"] = nlohmann::ordered_json::object();
  for (const auto& [name, t] : c.transports)
    doc["transports"][name] = {{"p2p_alpha_s", t.p2p_alpha_s},
                               {"p2p_beta_s_per_byte", t.p2p_beta_s_per_byte},
                               {"allreduce_alpha_s", t.allreduce_alpha_s},
                               {"allreduce_beta_s_per_byte", t.allreduce_beta_s_per_byte},
                               {"allreduce_ranks", t.allreduce_ranks}};
  if (!c.gemm.empty()) {
    doc["gemm"] = nlohmann::ordered_json::object();
    for (const auto& [name, grid] : c.gemm)
      doc["gemm"][name] = {{"sizes", grid.sizes}, {"flop_per_s", grid.flop_per_s}};
  }
  if (c.host.cores > 0)
    doc["host"] = {{"name", c.host.name},
                   {"cores", c.host.cores},
                   {"flops_fp32", c.host.flops_fp32},
                   {"flops_fp64", c.host.flops_fp64},
                   {"mem_bw", c.host.mem_bw}};
  return doc.dump(1) + "\n";
}

}  // namespace models
}  // namespace strata
