// Order statistics of measured or predicted times, shared by the executors, the comparison of
// their Traces and the CLI. O(n log n): each sorts its copy of the values.
#pragma once

#include <vector>

namespace strata {
inline namespace traces {

// The middle value, or the mean of the two middle values. REQUIRES: values not empty (checked).
double median(std::vector<double> values);

// Nearest rank: the smallest value with at least a fraction `p` of the values at or below it.
// REQUIRES: values not empty, 0 < p <= 1 (checked).
double nearest_rank_percentile(std::vector<double> values, double p);

}  // namespace traces
}  // namespace strata
