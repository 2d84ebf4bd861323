#include "strata/traces/stats.hpp"

#include <algorithm>
#include <cmath>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace traces {

double median(std::vector<double> values) {
  STRATA_ASSERT(!values.empty(), "median of nothing");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double nearest_rank_percentile(std::vector<double> values, double p) {
  STRATA_ASSERT(!values.empty(), "percentile of nothing");
  STRATA_ASSERT(p > 0 && p <= 1, "percentile outside (0, 1]");
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace traces
}  // namespace strata
