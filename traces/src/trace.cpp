#include "strata/traces/trace.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace strata {
inline namespace traces {

TraceRecord trace_record(const Task& task, WorkerId worker, std::string host, double start, double end) {
  TraceRecord r;
  r.id = task.id;
  r.kind = task.kind;
  r.stream = task.stream;
  r.worker = worker;
  r.host = std::move(host);
  r.iteration = task.iteration;
  r.start = start;
  r.end = end;
  r.bytes = is_communication(task.kind) ? task.comm_bytes : task.bytes_read + task.bytes_written;
  r.flops = task.flops;
  return r;
}

void Trace::sort() {
  // (start, worker, id) is the documented order; stream and end only break ties between records
  // that share all three, and the stable sort keeps even exact duplicates in a fixed order.
  std::stable_sort(records.begin(), records.end(), [](const TraceRecord& a, const TraceRecord& b) {
    return std::tie(a.start, a.worker, a.id, a.stream, a.end) <
           std::tie(b.start, b.worker, b.id, b.stream, b.end);
  });
}

}  // namespace traces
}  // namespace strata
