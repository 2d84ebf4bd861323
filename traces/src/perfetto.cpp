#include "strata/traces/perfetto.hpp"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace traces {
namespace {

// Events keep the field order of the format's documentation (name, ph, pid, tid, ts, ...).
using OrderedJson = nlohmann::ordered_json;

constexpr std::int64_t kGroupPids = 10000;  // pid block of each Trace in a side-by-side document

std::int64_t pid_of(WorkerId worker, std::int64_t group = 0) { return group * kGroupPids + worker + 1; }
std::int64_t tid_of(WorkerId worker, Stream stream) {
  return 2 * std::int64_t{worker} + (stream == Stream::compute ? 1 : 2);
}
// Comm lane k > 0 of a worker (concurrent comm records): above every lane-0 number, so rows
// stay distinct within the worker's process.
constexpr std::int64_t kLaneTidStride = std::int64_t{1} << 32;
std::int64_t comm_lane_tid(WorkerId worker, std::size_t lane) {
  return tid_of(worker, Stream::comm) + static_cast<std::int64_t>(lane) * kLaneTidStride;
}

// Nanoseconds since the start of the run: the common grid that ts and dur are rounded to.
double to_ns(double seconds) { return std::round(seconds * 1e9); }

OrderedJson metadata(const char* name, WorkerId worker, std::int64_t group, std::int64_t tid, const char* arg,
                     OrderedJson value) {
  OrderedJson e;
  e["name"] = name;
  e["ph"] = "M";
  e["pid"] = pid_of(worker, group);
  e["tid"] = tid;
  e["args"][arg] = std::move(value);
  return e;
}

void add_worker_metadata(WorkerId worker, const std::string& host, const std::string& label,
                         std::int64_t group, std::size_t comm_lanes, OrderedJson& events) {
  std::string name = label.empty() ? "" : label + ": ";
  name += "worker " + std::to_string(worker);
  if (!host.empty()) name += " (" + host + ")";
  const std::int64_t compute = tid_of(worker, Stream::compute);
  const std::int64_t comm = tid_of(worker, Stream::comm);
  events.push_back(metadata("process_name", worker, group, compute, "name", name));
  events.push_back(
      metadata("process_sort_index", worker, group, compute, "sort_index", pid_of(worker, group)));
  events.push_back(metadata("thread_name", worker, group, compute, "name", "compute"));
  events.push_back(metadata("thread_sort_index", worker, group, compute, "sort_index", compute));
  events.push_back(metadata("thread_name", worker, group, comm, "name", "comm"));
  events.push_back(metadata("thread_sort_index", worker, group, comm, "sort_index", comm));
  for (std::size_t lane = 1; lane < comm_lanes; ++lane) {
    const std::int64_t tid = comm_lane_tid(worker, lane);
    events.push_back(metadata("thread_name", worker, group, tid, "name", "comm " + std::to_string(lane + 1)));
    events.push_back(metadata("thread_sort_index", worker, group, tid, "sort_index", tid));
  }
}

// Comm lane of each record (0 for compute): the first lane of its worker free at its start, in
// Trace::sort order (start first), so records that overlap in time, as the simulator's
// concurrent communicators do, sit on separate rows. One comm stream per worker never overlaps:
// one lane. O(records x lanes).
std::vector<std::size_t> assign_comm_lanes(const Trace& sorted, std::map<WorkerId, std::size_t>& lanes_of) {
  std::vector<std::size_t> lane(sorted.records.size(), 0);
  std::map<WorkerId, std::vector<double>> lane_end;  // ns
  for (std::size_t i = 0; i < sorted.records.size(); ++i) {
    const TraceRecord& r = sorted.records[i];
    if (r.stream != Stream::comm) continue;
    std::vector<double>& ends = lane_end[r.worker];
    const double start = to_ns(r.start);
    std::size_t k = 0;
    while (k < ends.size() && ends[k] > start) ++k;
    if (k == ends.size()) ends.push_back(0);
    ends[k] = to_ns(r.end);
    lane[i] = k;
  }
  for (const auto& [worker, ends] : lane_end) lanes_of[worker] = ends.size();
  return lane;
}

OrderedJson complete_event(const TraceRecord& r, std::int64_t group, std::size_t lane) {
  const double start_ns = to_ns(r.start);
  OrderedJson e;
  e["name"] = r.id;
  e["cat"] = to_string(r.kind);
  e["ph"] = "X";
  e["pid"] = pid_of(r.worker, group);
  e["tid"] = lane == 0 ? tid_of(r.worker, r.stream) : comm_lane_tid(r.worker, lane);
  e["ts"] = start_ns / 1e3;
  e["dur"] = (to_ns(r.end) - start_ns) / 1e3;
  e["args"]["bytes"] = r.bytes;
  e["args"]["flops"] = r.flops;
  e["args"]["iteration"] = r.iteration;
  return e;
}

void add_trace(const Trace& trace, const std::string& label, std::int64_t group, OrderedJson& events) {
  Trace sorted;
  sorted.records = trace.records;
  sorted.sort();
  // Host of each worker: the first one named in canonical order (a worker runs on one host).
  std::map<WorkerId, std::string> hosts;
  for (const TraceRecord& r : sorted.records) {
    auto [it, inserted] = hosts.emplace(r.worker, r.host);
    if (it->second.empty()) it->second = r.host;
  }
  std::map<WorkerId, std::size_t> lanes_of;
  const std::vector<std::size_t> lane = assign_comm_lanes(sorted, lanes_of);
  for (const auto& [worker, host] : hosts)
    add_worker_metadata(worker, host, label, group, lanes_of[worker], events);
  for (std::size_t i = 0; i < sorted.records.size(); ++i)
    events.push_back(complete_event(sorted.records[i], group, lane[i]));
}

// The trace event format's top-level "metadata" dictionary: what was run, when the trace says.
void add_experiment(const Trace& trace, OrderedJson& doc) {
  if (trace.experiment_hash.empty()) return;
  doc["metadata"]["strata_version"] = strata_version();
  doc["metadata"]["experiment_hash"] = trace.experiment_hash;
  doc["metadata"]["experiment"] = trace.experiment;
}

// Events are built apart and moved in: a reference into an ordered_json object is invalidated
// by the next key inserted.
OrderedJson chrome_document(const Trace& trace) {
  OrderedJson events = OrderedJson::array();
  add_trace(trace, "", 0, events);
  OrderedJson doc;
  doc["traceEvents"] = std::move(events);
  doc["otherData"]["executor"] = trace.executor;
  doc["otherData"]["source"] = trace.source;
  add_experiment(trace, doc);
  return doc;
}

OrderedJson chrome_document(const std::vector<LabelledTrace>& traces) {
  OrderedJson events = OrderedJson::array();
  OrderedJson groups = OrderedJson::array();
  for (std::size_t g = 0; g < traces.size(); ++g) {
    STRATA_ASSERT(traces[g].trace != nullptr, "side-by-side trace without a Trace");
    add_trace(*traces[g].trace, traces[g].label, static_cast<std::int64_t>(g), events);
    groups.push_back({{"label", traces[g].label},
                      {"executor", traces[g].trace->executor},
                      {"source", traces[g].trace->source},
                      {"first_pid", pid_of(0, static_cast<std::int64_t>(g))}});
  }
  OrderedJson doc;
  doc["traceEvents"] = std::move(events);
  doc["otherData"]["groups"] = std::move(groups);
  for (const LabelledTrace& t : traces)
    if (!t.trace->experiment_hash.empty()) {
      add_experiment(*t.trace, doc);
      break;
    }
  return doc;
}

}  // namespace

nlohmann::json trace_to_chrome(const Trace& trace) { return nlohmann::json(chrome_document(trace)); }

std::string chrome_trace_text(const Trace& trace, const std::string& where) {
  return dump_one_element_per_line(chrome_document(trace), where);
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  write_file_atomically(path, chrome_trace_text(trace, path));
}

nlohmann::json traces_to_chrome(const std::vector<LabelledTrace>& traces) {
  return nlohmann::json(chrome_document(traces));
}

void write_chrome_traces(const std::vector<LabelledTrace>& traces, const std::string& path) {
  write_file_atomically(path, dump_one_element_per_line(chrome_document(traces), path));
}

}  // namespace traces
}  // namespace strata
