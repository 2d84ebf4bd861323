// BufferLifetimes<T>: gives a run's buffers back as soon as the run is done with them, so that a
// Workspace in release mode (workspace.hpp) holds what a framework's allocator would hold: a
// microbatch's activations from the task that first writes them to the last task that reads
// them. The lifetimes come from the Plan's reads and writes of the tasks this process runs, not
// from the lowering's mem_alloc/mem_free (what the simulator's memory model counts), so the
// measured peak checks the model rather than repeating it.
//
// A buffer can live more than once in a run: a task that writes it without reading it (a
// recomputation's re-run forward rewriting an activation) starts a new lifetime, and the one
// before ends with the last task that touched it before that write. So the tasks that touch a
// buffer, in the Plan's topological order, fall into segments, each starting at such a write; a
// buffer is released when every task of its current segment has completed, and allocated again
// at the next segment's first touch. (The Plan orders the rewrite after the earlier readers, or
// the kernels themselves would race.)
//
// Use: begin_run() before each run, task_done(t) when task t has completed (from any thread).
// Thread safety: task_done is safe to call concurrently; begin_run only between runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "strata/real/core/workspace.hpp"
#include "strata/traces/plan.hpp"

namespace strata::real {

template <typename T>
class BufferLifetimes {
 public:
  // `runs_here(t)`: whether this process runs task t. REQUIRES: ws is in release mode; plan and
  // ws outlive this.
  BufferLifetimes(const Plan& plan, Workspace<T>& ws, const std::function<bool(TaskIndex)>& runs_here);

  void begin_run();
  void task_done(TaskIndex t);

 private:
  struct Touch {
    BufferIndex buffer = 0;
    std::uint32_t segment = 0;  // index into uses_ / left_
  };
  Workspace<T>& ws_;
  std::vector<std::vector<Touch>> touched_;  // per task: the distinct non-persistent buffers it touches
  std::vector<std::int32_t> uses_;           // per segment: local tasks in it
  std::unique_ptr<std::atomic<std::int32_t>[]> left_;
};

extern template class BufferLifetimes<float>;
extern template class BufferLifetimes<double>;

}  // namespace strata::real
