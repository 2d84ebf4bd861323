#include "strata/traces/trace_json.hpp"

#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace traces {

std::string_view strata_version() { return STRATA_VERSION; }

namespace {

// The file keeps fields in the documented order (id first), which plain nlohmann::json would sort.
using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kFormat = "strata-trace";

OrderedJson record_to_json(const TraceRecord& r) {
  OrderedJson j;
  j["id"] = r.id;
  j["kind"] = to_string(r.kind);
  j["stream"] = to_string(r.stream);
  j["worker"] = r.worker;
  j["host"] = r.host;
  j["iteration"] = r.iteration;
  j["start"] = r.start;
  j["end"] = r.end;
  j["bytes"] = r.bytes;
  j["flops"] = r.flops;
  return j;
}

OrderedJson trace_document(const Trace& trace) {
  Trace sorted;
  sorted.records = trace.records;
  sorted.sort();
  OrderedJson doc;
  doc["schema_version"] = kTraceSchemaVersion;
  doc["format"] = kFormat;
  doc["executor"] = trace.executor;
  doc["source"] = trace.source;
  doc["strata_version"] = strata_version();
  doc["experiment_hash"] = trace.experiment_hash;
  doc["experiment"] = trace.experiment;
  OrderedJson& records = doc["records"] = OrderedJson::array();
  for (const TraceRecord& r : sorted.records) records.push_back(record_to_json(r));
  return doc;
}

TraceRecord read_record(const JsonNode& node) {
  node.reject_unknown_fields(
      {"id", "kind", "stream", "worker", "host", "iteration", "start", "end", "bytes", "flops"});
  TraceRecord r;
  r.id = node.at("id").as_string();
  r.kind = read_enum<TaskKind>(node.at("kind"), parse_task_kind, "task kind");
  std::optional<JsonNode> stream = node.find("stream");
  r.stream = stream ? read_enum<Stream>(*stream, parse_stream, "stream")
                    : (is_communication(r.kind) ? Stream::comm : Stream::compute);
  r.worker = static_cast<WorkerId>(node.at("worker").as_int(0, INT32_MAX));
  if (std::optional<JsonNode> host = node.find("host")) r.host = host->as_string();
  if (std::optional<JsonNode> it = node.find("iteration"))
    r.iteration = static_cast<std::int32_t>(it->as_int(0, INT32_MAX));
  r.start = node.at("start").as_size();
  JsonNode end = node.at("end");
  r.end = end.as_size();
  if (r.end < r.start)
    end.fail("ends before it starts (end " + format_number(r.end) + " < start " + format_number(r.start) +
             ")");
  if (std::optional<JsonNode> bytes = node.find("bytes")) r.bytes = bytes->as_size();
  if (std::optional<JsonNode> flops = node.find("flops")) r.flops = flops->as_size();
  return r;
}

}  // namespace

Trace trace_from_json(const nlohmann::json& doc, const std::string& source) {
  JsonNode root(doc, source);
  check_file_header(root, kFormat, kTraceSchemaVersion);
  root.reject_unknown_fields({"schema_version", "format", "executor", "source", "strata_version",
                              "experiment_hash", "experiment", "records"});
  Trace trace;
  if (std::optional<JsonNode> hash = root.find("experiment_hash")) trace.experiment_hash = hash->as_string();
  if (doc.contains("experiment")) trace.experiment = doc.at("experiment");
  if (std::optional<JsonNode> executor = root.find("executor")) trace.executor = executor->as_string();
  if (std::optional<JsonNode> src = root.find("source")) trace.source = src->as_string();
  JsonNode records = root.at("records");
  trace.records.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) trace.records.push_back(read_record(records.at(i)));
  return trace;
}

Trace read_trace(const std::string& path) { return trace_from_json(read_json_file(path), path); }

nlohmann::json trace_to_json(const Trace& trace) { return nlohmann::json(trace_document(trace)); }

std::string trace_json_text(const Trace& trace, const std::string& where) {
  return dump_one_element_per_line(trace_document(trace), where);
}

void write_trace(const Trace& trace, const std::string& path) {
  write_file_atomically(path, trace_json_text(trace, path));
}

}  // namespace traces
}  // namespace strata
