#include "strata/traces/trace.hpp"

#include <algorithm>
#include <tuple>

namespace strata {

void Trace::sort() {
  // (start, worker, id) is the documented order; stream and end only break ties between records
  // that share all three, and the stable sort keeps even exact duplicates in a fixed order.
  std::stable_sort(records.begin(), records.end(), [](const TraceRecord& a, const TraceRecord& b) {
    return std::tie(a.start, a.worker, a.id, a.stream, a.end) <
           std::tie(b.start, b.worker, b.id, b.stream, b.end);
  });
}

}  // namespace strata
