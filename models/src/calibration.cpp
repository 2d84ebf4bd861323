// load_calibration: reads the JSON that `strata calibrate` writes
// (traces/schema/calibration.schema.json), checking every field, so that a bad file fails here
// with one line naming file, JSON pointer and problem rather than skewing a simulation.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "strata/models/cost_model.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
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

  // A key is "kind" or "kind/dtype", kind a compute task kind.
  void check_key(const std::string& key, const std::string& pointer) const {
    const std::size_t slash = key.find('/');
    const std::string kind_name = key.substr(0, slash);
    std::optional<TaskKind> kind = parse_task_kind(kind_name);
    if (!kind) fail(pointer, "unknown task kind '" + kind_name + "'");
    if (is_communication(*kind))
      fail(pointer, "task kind '" + kind_name + "' is not a compute kind");
    if (slash != std::string::npos && !parse_dtype(key.substr(slash + 1)))
      fail(pointer, "unknown dtype '" + key.substr(slash + 1) + "'");
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
    std::ifstream in(path_);
    if (!in) fail("", "cannot open file");
    try {
      return json::parse(in);
    } catch (const json::parse_error& e) {
      // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, ...".
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
  if (doc.contains("format") &&
      (!doc["format"].is_string() || doc["format"].get<std::string>() != kFormat))
    reader.fail("/format",
                "expected \"" + std::string(kFormat) + "\", got " + doc["format"].dump());
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
    else if (key != "device" && key != "created")  // informational, not read
      reader.fail(pointer, "unknown key");
  }
  return calibration;
}

}  // namespace strata
