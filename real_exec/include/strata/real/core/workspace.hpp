// Workspace<T>: the memory of a Plan being run for real: one array of T per Plan buffer, the
// labels of each (data-parallel rank, microbatch), and the optimizer step counters.
//
// A Plan buffer of `bytes` bytes in dtype d holds bytes / size(d) elements; the real executor
// stores them as T (float, or double for the exactness tests) whatever d says, so a Plan
// lowered for fp32 runs in float64 unchanged. Weight buffers hold a layer's weights followed by
// its bias (linear: k·n + n, conv: c_out·c_in·kh·kw + c_out); "opt/state" holds the optimizer's
// per-parameter state (Adam: first moments then second moments; SGD: the velocity).
//
// Ownership: the Workspace owns every array; pointers into it stay valid for its lifetime
// (arrays are never resized after construction). Thread safety: tasks that the Plan orders by
// its dependencies touch disjoint arrays or touch them one after the other; the Workspace adds
// no locking of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/traces/plan.hpp"

namespace strata::real {

template <typename T>
class Workspace {
 public:
  // Allocates every buffer of `plan`, zero-filled. REQUIRES: plan validated.
  explicit Workspace(const Plan& plan);

  T* data(BufferIndex b) { return arrays_[b].data(); }
  const T* data(BufferIndex b) const { return arrays_[b].data(); }
  std::int64_t size(BufferIndex b) const { return static_cast<std::int64_t>(arrays_[b].size()); }
  // The array itself, for kernels that borrow it whole (moved into a Tensor and back, O(1)): its
  // size must be the same when it is given back.
  std::vector<T>& array(BufferIndex b) { return arrays_[b]; }

  // Labels of the samples bound to (data-parallel rank, microbatch), set before a run.
  void set_labels(std::int64_t dp, std::int64_t microbatch, std::vector<std::int32_t> labels);
  // REQUIRES: set_labels was called for this pair (checked).
  const std::vector<std::int32_t>& labels(std::int64_t dp, std::int64_t microbatch) const;
  // Every (dp, microbatch) pair with labels, in increasing order.
  std::vector<std::pair<std::int64_t, std::int64_t>> label_keys() const;

  // Number of updates an optimizer state buffer has had; the caller increments it. One counter
  // per buffer, allocated up front: workers stepping their own state at the same time touch
  // different counters (a map grown on first use raced, and corrupted itself, when two workers'
  // first steps overlapped).
  std::int64_t& optimizer_steps(BufferIndex state) { return steps_[state]; }

 private:
  std::vector<std::vector<T>> arrays_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int32_t>> labels_;
  std::vector<std::int64_t> steps_;  // per buffer
};

extern template class Workspace<float>;
extern template class Workspace<double>;

}  // namespace strata::real
