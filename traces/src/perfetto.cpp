#include "strata/traces/perfetto.hpp"

#include <cmath>
#include <map>

#include "strata/traces/json_io.hpp"

namespace strata {
namespace {

// Events keep the field order of the format's documentation (name, ph, pid, tid, ts, ...).
using OrderedJson = nlohmann::ordered_json;

std::int64_t pid_of(WorkerId worker) { return std::int64_t{worker} + 1; }
std::int64_t tid_of(WorkerId worker, Stream stream) {
  return 2 * std::int64_t{worker} + (stream == Stream::compute ? 1 : 2);
}

// Nanoseconds since the start of the run: the common grid that ts and dur are rounded to.
double to_ns(double seconds) { return std::round(seconds * 1e9); }

OrderedJson metadata(const char* name, WorkerId worker, std::int64_t tid, const char* arg,
                     OrderedJson value) {
  OrderedJson e;
  e["name"] = name;
  e["ph"] = "M";
  e["pid"] = pid_of(worker);
  e["tid"] = tid;
  e["args"][arg] = std::move(value);
  return e;
}

void add_worker_metadata(WorkerId worker, const std::string& host, OrderedJson& events) {
  std::string name = "worker " + std::to_string(worker);
  if (!host.empty()) name += " (" + host + ")";
  const std::int64_t compute = tid_of(worker, Stream::compute);
  const std::int64_t comm = tid_of(worker, Stream::comm);
  events.push_back(metadata("process_name", worker, compute, "name", name));
  events.push_back(metadata("process_sort_index", worker, compute, "sort_index", pid_of(worker)));
  events.push_back(metadata("thread_name", worker, compute, "name", "compute"));
  events.push_back(metadata("thread_sort_index", worker, compute, "sort_index", compute));
  events.push_back(metadata("thread_name", worker, comm, "name", "comm"));
  events.push_back(metadata("thread_sort_index", worker, comm, "sort_index", comm));
}

OrderedJson complete_event(const TraceRecord& r) {
  const double start_ns = to_ns(r.start);
  OrderedJson e;
  e["name"] = r.id;
  e["cat"] = to_string(r.kind);
  e["ph"] = "X";
  e["pid"] = pid_of(r.worker);
  e["tid"] = tid_of(r.worker, r.stream);
  e["ts"] = start_ns / 1e3;
  e["dur"] = (to_ns(r.end) - start_ns) / 1e3;
  e["args"]["bytes"] = r.bytes;
  e["args"]["flops"] = r.flops;
  e["args"]["iteration"] = r.iteration;
  return e;
}

OrderedJson chrome_document(const Trace& trace) {
  Trace sorted;
  sorted.records = trace.records;
  sorted.sort();

  // Host of each worker: the first one named in canonical order (a worker runs on one host).
  std::map<WorkerId, std::string> hosts;
  for (const TraceRecord& r : sorted.records) {
    auto [it, inserted] = hosts.emplace(r.worker, r.host);
    if (it->second.empty()) it->second = r.host;
  }
  OrderedJson doc;
  OrderedJson& events = doc["traceEvents"] = OrderedJson::array();
  for (const auto& [worker, host] : hosts) add_worker_metadata(worker, host, events);
  for (const TraceRecord& r : sorted.records) events.push_back(complete_event(r));
  doc["otherData"]["executor"] = trace.executor;
  doc["otherData"]["source"] = trace.source;
  return doc;
}

}  // namespace

nlohmann::json trace_to_chrome(const Trace& trace) {
  return nlohmann::json(chrome_document(trace));
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  write_file_atomically(path, dump_one_element_per_line(chrome_document(trace), path));
}

}  // namespace strata
