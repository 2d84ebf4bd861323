// Experiment <-> JSON (schema in experiment.hpp). The --set keys are written and read through
// the key table, so a file and the flags are held to the same ranges.
#include <algorithm>
#include <limits>

#include "set_table.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

using detail::SetValue;
using Json = nlohmann::json;

constexpr const char* kFormat = "strata-experiment";

Json value_json(const SetValue& v) {
  return std::visit([](const auto& x) { return Json(x); }, v);
}

// Reads one JSON document with every problem reported as "<source>: <pointer>: <problem>".
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& problem) const {
    throw InputError(source_ + ": " + pointer + ": " + problem);
  }

  void expect_object(const Json& j, const std::string& pointer, const std::vector<std::string>& known) const {
    if (!j.is_object()) fail(pointer.empty() ? "/" : pointer, "expected an object");
    for (const auto& [key, value] : j.items())
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(pointer + "/" + key, "unknown field (known: " + list + ")");
      }
  }

  std::int64_t integer(const Json& j, const std::string& pointer, std::int64_t min, std::int64_t max) const {
    if (!j.is_number_integer()) fail(pointer, "expected an integer");
    const auto v = j.get<std::int64_t>();
    if (v < min || v > max)
      fail(pointer,
           "must be in " + std::to_string(min) + " .. " + std::to_string(max) + ", got " + std::to_string(v));
    return v;
  }

  std::string text(const Json& j, const std::string& pointer, const std::vector<std::string>& choices) const {
    if (!j.is_string()) fail(pointer, "expected a string");
    auto v = j.get<std::string>();
    if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
      fail(pointer, "unknown value " + quote_for_message(v) + " (known: " + list + ")");
    }
    return v;
  }

  SetValue set_value(const SetKey& key, const Json& j, const std::string& pointer) const {
    switch (key.type) {
      case SetKeyType::integer:
      case SetKeyType::count:
        if (!j.is_number_integer()) fail(pointer, "expected an integer");
        return j.get<std::int64_t>();
      case SetKeyType::count_list: {
        if (!j.is_array()) fail(pointer, "expected a list of integers");
        std::vector<std::int64_t> list;
        for (std::size_t i = 0; i < j.size(); ++i) {
          if (!j[i].is_number_integer()) fail(pointer + "/" + std::to_string(i), "expected an integer");
          list.push_back(j[i].get<std::int64_t>());
        }
        return list;
      }
      case SetKeyType::real:
        if (!j.is_number()) fail(pointer, "expected a number");
        return j.get<double>();
      case SetKeyType::choice:
        return text(j, pointer, {});
    }
    return std::int64_t{0};
  }

  // The table keys of `section` found in `j`.
  void read_keys(Experiment& e, const Json& j, const std::string& pointer, SetSection section) const {
    for (const SetKey& key : set_keys()) {
      if (key.section != section || !j.contains(key.name)) continue;
      const std::string at = pointer + "/" + key.name;
      if (auto problem = detail::put_set_value(e, key, set_value(key, j.at(key.name), at)))
        fail(at, *problem);
    }
  }

 private:
  std::string source_;
};

std::vector<std::string> section_fields(const Experiment& e, SetSection section,
                                        std::vector<std::string> fixed) {
  for (const SetKey& key : set_keys())
    if (key.section == section && detail::key_applies(key, e.model, e.solver.solver))
      fixed.push_back(key.name);
  return fixed;
}

void read_model(Experiment& e, const Json& doc, const Reader& in) {
  if (!doc.contains("model")) in.fail("/model", "missing");
  const Json& m = doc.at("model");
  if (!m.is_object()) in.fail("/model", "expected an object");
  if (!m.contains("name")) in.fail("/model/name", "missing");
  e.model = in.text(m.at("name"), "/model/name", zoo_names());
  in.expect_object(m, "/model", section_fields(e, SetSection::model, {"name"}));
  in.read_keys(e, m, "/model", SetSection::model);
}

void read_strategy(Experiment& e, const Json& doc, const Reader& in) {
  if (!doc.contains("strategy")) return;
  const Json& s = doc.at("strategy");
  in.expect_object(s, "/strategy", section_fields(e, SetSection::strategy, {"dp", "tp", "pp", "schedule"}));
  constexpr std::int64_t kMax = 1'000'000;
  if (s.contains("dp")) e.dp = static_cast<int>(in.integer(s.at("dp"), "/strategy/dp", 1, kMax));
  if (s.contains("tp")) e.tp = static_cast<int>(in.integer(s.at("tp"), "/strategy/tp", 1, kMax));
  if (s.contains("pp")) e.pp = static_cast<int>(in.integer(s.at("pp"), "/strategy/pp", 1, kMax));
  if (s.contains("schedule"))
    e.schedule =
        *parse_pipeline_schedule(in.text(s.at("schedule"), "/strategy/schedule", {"gpipe", "1f1b", "zb-h1"}));
  in.read_keys(e, s, "/strategy", SetSection::strategy);
}

void read_solver(Experiment& e, const Json& doc, const Reader& in) {
  if (!doc.contains("solver")) return;
  const Json& s = doc.at("solver");
  if (!s.is_object()) in.fail("/solver", "expected an object");
  if (s.contains("name"))
    e.solver.solver = *parse_solver(in.text(s.at("name"), "/solver/name", solver_names()));
  in.expect_object(s, "/solver", section_fields(e, SetSection::solver, {"name"}));
  in.read_keys(e, s, "/solver", SetSection::solver);
}

void read_optimizer(Experiment& e, const Json& doc, const Reader& in) {
  if (!doc.contains("optimizer")) return;
  const Json& o = doc.at("optimizer");
  in.expect_object(o, "/optimizer", section_fields(e, SetSection::optimizer, {"kind"}));
  if (o.contains("kind"))
    e.optimizer = *parse_optimizer(in.text(o.at("kind"), "/optimizer/kind", {"sgd", "adam"}));
  in.read_keys(e, o, "/optimizer", SetSection::optimizer);
}

void read_scalars(Experiment& e, const Json& doc, const Reader& in) {
  constexpr std::int64_t kMax = 1'000'000'000'000;
  if (doc.contains("dtype")) {
    const std::string d = in.text(doc.at("dtype"), "/dtype", {"auto", "fp32", "bf16", "fp16", "fp64"});
    e.dtype = d == "auto" ? std::nullopt : parse_dtype(d);
  }
  if (doc.contains("global_batch"))
    e.global_batch = in.integer(doc.at("global_batch"), "/global_batch", 0, kMax);
  if (doc.contains("microbatches"))
    e.microbatches = in.integer(doc.at("microbatches"), "/microbatches", 0, kMax);
  if (doc.contains("iterations"))
    e.iterations = static_cast<int>(in.integer(doc.at("iterations"), "/iterations", 1, 1'000'000));
  if (doc.contains("epochs"))
    e.epochs = static_cast<int>(in.integer(doc.at("epochs"), "/epochs", 1, 1'000'000));
  if (doc.contains("seed"))
    e.seed = in.integer(doc.at("seed"), "/seed", std::numeric_limits<std::int64_t>::min(),
                        std::numeric_limits<std::int64_t>::max());
}

}  // namespace

nlohmann::json to_json(const Experiment& e) {
  Json j;
  j["schema_version"] = Experiment::kSchemaVersion;
  j["format"] = kFormat;
  j["model"] = {{"name", e.model}};
  j["strategy"] = {{"dp", e.dp}, {"tp", e.tp}, {"pp", e.pp}, {"schedule", to_string(e.schedule)}};
  j["solver"] = {{"name", to_string(e.solver.solver)}};
  j["optimizer"] = {{"kind", to_string(e.optimizer)}};
  for (const SetKey& key : set_keys()) {
    if (key.section == SetSection::solver && !detail::key_applies(key, e.model, e.solver.solver)) continue;
    if (const auto value = detail::get_set_value(e, key)) {
      if (!key.quiet_default.empty() && detail::format_set_value(*value) == key.quiet_default) continue;
      if (const auto preset = detail::preset_text(e, key.name);
          preset && detail::format_set_value(*value) == *preset)
        continue;
      j[std::string(to_string(key.section))][key.name] = value_json(*value);
    }
  }
  j["dtype"] = e.dtype ? std::string(to_string(*e.dtype)) : "auto";
  j["global_batch"] = e.global_batch;
  j["microbatches"] = e.microbatches;
  j["iterations"] = e.iterations;
  j["epochs"] = e.epochs;
  j["seed"] = e.seed;
  return j;
}

Experiment experiment_from_json(const nlohmann::json& doc, const std::string& source) {
  const Reader in(source);
  in.expect_object(doc, "",
                   {"schema_version", "format", "model", "strategy", "solver", "optimizer", "dtype",
                    "global_batch", "microbatches", "iterations", "epochs", "seed"});
  if (!doc.contains("schema_version")) in.fail("/schema_version", "missing");
  const std::int64_t version = in.integer(doc.at("schema_version"), "/schema_version", 1, 1'000'000);
  if (version > Experiment::kSchemaVersion)
    in.fail("/schema_version", "version " + std::to_string(version) + " is newer than this strata reads (" +
                                   std::to_string(Experiment::kSchemaVersion) + "); update strata");
  if (doc.contains("format")) in.text(doc.at("format"), "/format", {kFormat});
  Experiment e;
  try {
    read_model(e, doc, in);
  } catch (const InputError& error) {
    const std::string what = error.what();
    if (what.rfind(source, 0) == 0) throw;
    in.fail("/model", what);
  }
  read_solver(e, doc, in);
  read_strategy(e, doc, in);
  read_optimizer(e, doc, in);
  read_scalars(e, doc, in);
  return e;
}

Experiment read_experiment(const std::string& path) {
  return experiment_from_json(read_json_file(path), path);
}

}  // namespace models
}  // namespace strata
