// MemoryMeter: each worker's allocator figures as the real executor measures them, the bytes it
// holds now and the most it has held, counted from the arrays themselves (the Workspace's Plan
// buffers) and from every temporary a kernel or a transport allocates while it serves the
// worker (a conv's column matrix, a pool's argmax, the loss's probabilities, a staged message).
//
// Held charges a number of bytes to one worker for as long as it lives: a temporary's owner
// keeps one beside it. Held::here charges the worker of the innermost MeterScope on the calling
// thread (the TaskRunner opens one around each task), so a kernel counts its temporaries
// without knowing which worker it serves; outside any scope (the reference trainers, the tests
// of a kernel on its own) it charges nothing. What the libraries allocate inside themselves
// (OpenBLAS's per-thread buffers, the MPI library's eager buffers) is not counted: it is the
// libraries', fixed, and the process RSS that `run` prints beside these figures shows it.
//
// Ownership: a Held shares ownership of its meter, so a temporary that outlives the Workspace
// (one kept in a cache) gives its bytes back to a meter that still exists.
// Thread safety: the counters are atomic; a MeterScope belongs to the thread that opened it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata::real {

class MemoryMeter {
 public:
  explicit MemoryMeter(std::size_t workers);
  // Adds `bytes` (negative: gives them back) to worker w's live bytes and raises its peak.
  void add(WorkerId w, std::int64_t bytes);
  std::int64_t live(WorkerId w) const;
  std::int64_t peak(WorkerId w) const;
  void reset_peaks();  // every peak to its worker's live bytes

 private:
  std::size_t workers_;
  std::unique_ptr<std::atomic<std::int64_t>[]> live_;
  std::unique_ptr<std::atomic<std::int64_t>[]> peak_;
};

class Held {
 public:
  Held() = default;
  Held(std::shared_ptr<MemoryMeter> meter, WorkerId worker, std::int64_t bytes);
  // `bytes` charged to the worker of this thread's innermost MeterScope; nothing outside one.
  static Held here(std::int64_t bytes);
  ~Held();
  Held(Held&& other) noexcept;
  Held& operator=(Held&& other) noexcept;
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

  void release();  // gives the bytes back now
  std::int64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<MemoryMeter> meter_;
  WorkerId worker_ = 0;
  std::int64_t bytes_ = 0;
};

// The bytes a vector's allocation holds.
template <typename V>
std::int64_t allocated_bytes(const V& v) {
  return static_cast<std::int64_t>(v.capacity() * sizeof(typename V::value_type));
}

// Held::here charges `worker` on `meter` on this thread while the scope lives (scopes nest).
class MeterScope {
 public:
  MeterScope(const std::shared_ptr<MemoryMeter>& meter, WorkerId worker);
  ~MeterScope();
  MeterScope(const MeterScope&) = delete;
  MeterScope& operator=(const MeterScope&) = delete;

 private:
  const MeterScope* outer_;
  friend class Held;
  const std::shared_ptr<MemoryMeter>* meter_;
  WorkerId worker_;
};

}  // namespace strata::real
