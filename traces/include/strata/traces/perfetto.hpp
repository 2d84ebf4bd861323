// Export of a Trace as Chrome trace event JSON, which opens in Perfetto (ui.perfetto.dev) and
// chrome://tracing.
//
// Layout: one process per worker, named "worker N (host)" ("worker N" when the host is unknown),
// with two threads (rows) named "compute" and "comm". Each record is one complete event
// ("ph":"X") on the row of its worker and stream: name = task id, cat = task kind, ts and dur in
// microseconds (rounded to the nanosecond, so back-to-back tasks stay back to back), args
// {bytes (B), flops (FLOP), iteration}. A Trace holds one record per participating rank of a
// collective, so a collective appears on the comm row of every participant. Comm records of one
// worker that overlap in time (the simulator runs one comm stream per communicator: replay.hpp)
// go to extra rows "comm 2", "comm 3", ...: each record on the first row free at its start, in
// Trace::sort order, so no row holds overlapping slices.
//
// Numbering: pid = worker + 1; tid = 2 * worker + 1 (compute) and 2 * worker + 2 (comm), and
// 2 * worker + 2 + k * 2^32 for comm row k + 1.
// Perfetto's importer follows Linux, where pid 0 and tid 0 are the idle task ("swapper") and
// rows with tid 0 have been merged with others; distinct positive numbers keep every row its own.
// process_sort_index and thread_sort_index metadata keep workers in rank order, compute above comm.
//
// Output is deterministic: metadata events by worker, then complete events in Trace::sort order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/traces/trace.hpp"

namespace strata {
inline namespace traces {

// {"traceEvents":[...], "otherData":{"executor","source"}}.
nlohmann::json trace_to_chrome(const Trace& trace);

// The bytes write_chrome_trace writes; errors name `where`.
std::string chrome_trace_text(const Trace& trace, const std::string& where);

// Writes trace_to_chrome(trace) to `path` atomically, one event per line.
void write_chrome_trace(const Trace& trace, const std::string& path);

// Several Traces of one Plan side by side (predicted and measured): each is a group of processes
// named "<label>: worker N (host)"; group g's pids are g * 10000 + worker + 1, so the groups stay
// apart and in the order given. otherData lists the labels with each Trace's executor and source.
struct LabelledTrace {
  std::string label;
  const Trace* trace = nullptr;
};
nlohmann::json traces_to_chrome(const std::vector<LabelledTrace>& traces);
void write_chrome_traces(const std::vector<LabelledTrace>& traces, const std::string& path);

}  // namespace traces
}  // namespace strata
