// Dispatcher: the one readiness and priority rule both executors use.
//
// Each worker has two streams, compute and comm. A task is *ready* when all its data and control
// dependencies have completed. Every (worker, stream) keeps its ready tasks in a queue ordered by
// (priority, task index): lower first. A task *starts* when it is at the head of the queue of
// every stream it uses (one for compute and p2p tasks; the comm stream of each group member for
// a collective) and all those streams are idle. Streams run one task at a time, in order: a
// collective whose members are not all free holds its streams' heads (no back-filling), as an
// in-order NCCL stream does. Because (priority, index) is a total order, the ready task that is
// smallest overall is at the head of each of its streams and starts as soon as they are idle,
// so dispatch never deadlocks on a valid Plan.
//
// Cost: O(log n) per queue operation; each task is pushed once per participant.
// The executor owns time: it calls take_startable(), runs those tasks, and reports each
// completion with complete(). An executor that runs only part of the Plan (one process of an MPI
// run) marks the tasks run elsewhere with run_elsewhere() and reports them with
// complete_unstarted(). Not thread-safe; the real executor serialises calls.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {

class Dispatcher {
 public:
  // REQUIRES: plan validated; plan outlives the Dispatcher.
  explicit Dispatcher(const Plan& plan);

  // Tasks that start now, in (priority, index) order; they are marked running. The vector is
  // the Dispatcher's own and stays valid until the next call.
  const std::vector<TaskIndex>& take_startable();

  // Marks a running task finished, frees its streams and releases its successors.
  // REQUIRES: `task` was handed out by take_startable() and not completed yet (checked).
  void complete(TaskIndex task);

  // Marks a task that never started as finished and releases its successors, whether or not
  // its own dependencies have completed: it is never handed out. Its streams were never held, so
  // none is freed; a ready copy in a stream queue is dropped when it reaches the head (lazily,
  // so the cost stays O(log n) per queue entry). REQUIRES: `task` neither started nor completed
  // (checked).
  void complete_unstarted(TaskIndex task);

  // Another executor runs `task`: it is never handed out, even once ready, and completes only
  // through complete_unstarted(). REQUIRES: `task` neither started nor completed (checked).
  void run_elsewhere(TaskIndex task);

  bool finished() const { return completed_ == plan_.size(); }
  std::size_t completed() const { return completed_; }
  std::size_t running() const { return running_; }

 private:
  struct Key {
    std::int64_t priority;
    TaskIndex index;
    bool operator>(const Key& o) const {
      return priority != o.priority ? priority > o.priority : index > o.index;
    }
  };
  using Queue = std::priority_queue<Key, std::vector<Key>, std::greater<>>;

  std::size_t stream_slot(WorkerId worker, Stream stream) const {
    return static_cast<std::size_t>(worker) * 2 + (stream == Stream::comm ? 1 : 0);
  }
  // waiting: pending or ready; elsewhere: see run_elsewhere().
  enum class State : std::uint8_t { waiting, elsewhere, running, done };

  void make_ready(TaskIndex task);
  void release_successors(TaskIndex task);
  void drop_stale_heads(std::size_t slot);
  void try_start_head(std::size_t slot, std::vector<TaskIndex>& out);

  const Plan& plan_;
  // Successors in compressed rows: those of task i are successors_[offsets_[i] .. offsets_[i+1]).
  std::vector<std::size_t> offsets_;
  std::vector<TaskIndex> successors_;
  std::vector<std::uint32_t> pending_;  // unfinished predecessors per task
  std::vector<State> state_;            // per task
  std::vector<Queue> queues_;           // per stream slot
  std::vector<bool> busy_;              // per stream slot
  std::vector<std::size_t> dirty_;      // slots whose head may now start
  std::vector<std::size_t> slots_;      // scratch for take_startable
  std::vector<TaskIndex> startable_;    // what take_startable returns
  std::size_t completed_ = 0;
  std::size_t running_ = 0;
};

}  // namespace traces
}  // namespace strata
