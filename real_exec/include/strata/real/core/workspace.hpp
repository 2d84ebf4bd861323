// Workspace<T>: the memory of a Plan being run for real: one array of T per Plan buffer, the
// labels of each (data-parallel rank, microbatch), and the optimizer step counters.
//
// A Plan buffer of `bytes` bytes in dtype d holds bytes / size(d) elements; the real executor
// stores them as T (float, or double for the exactness tests) whatever d says, so a Plan
// lowered for fp32 runs in float64 unchanged. Weight buffers hold a layer's weights followed by
// its bias (linear: k·n + n, conv: c_out·c_in·kh·kw + c_out); "opt/state" holds the optimizer's
// per-parameter state (Adam: first moments then second moments; SGD: the velocity).
//
// Memory, measured (release mode, set_releasing): a buffer that is not persistent (a
// microbatch's activations and their gradients) holds no memory until a task first touches it
// in a run (data() or array() allocates it, zero-filled) and gives it back at release(), which
// the Trainer calls when the run's last task touching it has completed (BufferLifetimes,
// exec/interpreter.hpp). Every array's bytes (elements x sizeof(T)) are charged to its
// buffer's worker while it is held: live_bytes() and peak_bytes() are that worker's allocator
// figures, counted from the arrays themselves, not from the Plan's mem_alloc/mem_free (which
// the simulator's memory model reads), and from the temporaries the kernels and transports
// charge to the same meter (meter(), memory_meter.hpp).
//
// Ownership: the Workspace owns every array; pointers into an array stay valid until it is
// released (persistent arrays: for the Workspace's lifetime; without release mode, every
// array). Thread safety: tasks that the Plan orders by its dependencies touch disjoint arrays or
// touch them one after the other; the allocation on first touch takes a lock, the counters are
// atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "strata/real/core/memory_meter.hpp"
#include "strata/traces/plan.hpp"

namespace strata::real {

template <typename T>
class Workspace {
 public:
  // Allocates every buffer of `plan`, zero-filled. REQUIRES: plan validated.
  explicit Workspace(const Plan& plan);
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) = delete;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  T* data(BufferIndex b) { return held(b).data(); }
  const T* data(BufferIndex b) const { return held(b).data(); }
  std::int64_t size(BufferIndex b) const { return sizes_[b]; }
  // The array itself, for kernels that borrow it whole (moved into a Tensor and back, O(1)): its
  // size must be the same when it is given back.
  std::vector<T>& array(BufferIndex b) { return held(b); }

  // Release mode: every non-persistent array not in `kept` is given back now and allocated
  // again when next touched. `kept`: buffers the host reads after a run (the loss, the logits).
  void set_releasing(const std::vector<BufferIndex>& kept);
  bool releasing() const { return releasing_; }
  // Gives back a non-persistent, not kept array (no-op otherwise, or when not held); every such
  // array at release_all().
  void release(BufferIndex b);
  void release_all();
  // Bytes of worker w's arrays held now, and the most held since construction or reset_peaks().
  std::int64_t live_bytes(WorkerId w) const;
  std::int64_t peak_bytes(WorkerId w) const;
  void reset_peaks();
  // The meter those figures come from: kernels and transports charge their temporaries to it.
  const std::shared_ptr<MemoryMeter>& meter() const { return meter_; }

  // Labels of the samples bound to (data-parallel rank, microbatch), set before a run.
  void set_labels(std::int64_t dp, std::int64_t microbatch, std::vector<std::int32_t> labels);
  // REQUIRES: set_labels was called for this pair (checked).
  const std::vector<std::int32_t>& labels(std::int64_t dp, std::int64_t microbatch) const;
  // The data-set indices of those samples (Block-ADMM's batch setting keeps state per sample).
  void set_sample_ids(std::int64_t dp, std::int64_t microbatch, std::vector<std::int64_t> ids);
  // REQUIRES: set_sample_ids was called for this pair (checked).
  const std::vector<std::int64_t>& sample_ids(std::int64_t dp, std::int64_t microbatch) const;
  // Every (dp, microbatch) pair with labels, in increasing order.
  std::vector<std::pair<std::int64_t, std::int64_t>> label_keys() const;

  // Number of updates an optimizer state buffer has had; the caller increments it. One counter
  // per buffer, allocated up front: workers stepping their own state at the same time touch
  // different counters (a map grown on first use raced, and corrupted itself, when two workers'
  // first steps overlapped).
  std::int64_t& optimizer_steps(BufferIndex state) { return steps_[state]; }

 private:
  std::vector<T>& held(BufferIndex b) const;  // allocates on first touch in release mode
  void charge(BufferIndex b, std::int64_t bytes) const;

  const Plan* plan_;
  mutable std::vector<std::vector<T>> arrays_;
  std::vector<std::int64_t> sizes_;  // elements per buffer, held or not
  bool releasing_ = false;
  std::vector<char> releasable_;                  // per buffer: non-persistent and not kept
  std::unique_ptr<std::atomic<bool>[]> is_held_;  // per buffer (release mode)
  std::shared_ptr<MemoryMeter> meter_;
  std::unique_ptr<std::mutex> allocation_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int32_t>> labels_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> sample_ids_;
  std::vector<std::int64_t> steps_;  // per buffer
};

extern template class Workspace<float>;
extern template class Workspace<double>;

}  // namespace strata::real
