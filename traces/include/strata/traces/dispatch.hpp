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
// Communication streams (CommStreams). With `one_per_worker` every communication task of a
// worker shares its one comm stream, as above. With `per_group` a worker has one comm stream per
// communicator, as Megatron-LM's separate NCCL communicators for DP, TP and PP: a collective's
// stream is its group taken as a set of ranks (so the TP group, the DP group and a ZeRO gather
// group are distinct streams, whatever their ring order), a send's the pair (peer, outgoing) and
// a recv's (peer, incoming). A task attribute `comm_group` (string) names the communicator
// explicitly and then replaces that derivation: tasks with the same name share the stream on
// each of their workers. The rule above holds per stream: one task at a time in (priority,
// index) order; different streams of one worker run concurrently (the replay lets their flows
// share the links). The deadlock argument is unchanged: the smallest ready task heads all of its
// streams.
//
// Stream order (PlanInfo::stream_order). The rule above is StreamOrder::ready: a stream picks the
// most urgent of its *ready* tasks. Under StreamOrder::issue each stream runs all of its tasks in
// (priority, index) order, one after another, whether or not the next one is ready: a task that
// waits for a dependency holds its stream, as a kernel or NCCL call waits at the head of a CUDA
// stream. A collective starts when it heads every member's stream (of the rule above) and is
// ready. Such a Plan can deadlock where a dataflow cannot: the constructor refuses one whose
// stream orders and dependencies form a cycle (InvalidPlanError naming a task on it), so a
// Plan it accepts always finishes. Cost: O(n log n) once to sort each stream's tasks and O(n + e)
// for the cycle check; then O(1) per start.
//
// Cost: O(log n) per queue operation; each task is pushed once per participant. `per_group`
// adds, at construction, O(g log g) per collective of g ranks (its sorted group looked up among
// the Plan's groups) and one hash lookup per participant of a communication task; dispatch then
// reads each participant's stream from a table.
//
// The executor owns time: it calls take_startable(), runs those tasks, and reports each
// completion with complete(). An executor that runs only part of the Plan (one process of an MPI
// run) marks the tasks run elsewhere with run_elsewhere() and reports them with
// complete_unstarted(). Not thread-safe; the real executor serialises calls.
#pragma once

#include <cstdint>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {

enum class CommStreams : std::uint8_t {
  one_per_worker,  // one comm stream per worker (the real executor's rule)
  per_group,       // one comm stream per communicator per worker (the replay's rule)
};

// The attribute that names a communication task's communicator (CommStreams::per_group).
inline constexpr const char* kCommGroupAttr = "comm_group";

class Dispatcher {
 public:
  // REQUIRES: plan validated; plan outlives the Dispatcher. Throws InvalidPlanError when the Plan's
  // issue order (StreamOrder::issue) under `comm_streams` can deadlock.
  explicit Dispatcher(const Plan& plan, CommStreams comm_streams = CommStreams::one_per_worker);

  // The stream of the k-th participant of `task` (k indexes Task::participants()): a number in
  // [0, stream_count()), equal for two tasks exactly when they share that stream. For tools that
  // check or draw a schedule (one track per stream); the Dispatcher itself uses the same table.
  std::size_t stream_of(TaskIndex task, std::size_t k) const { return slot_of(task, plan_.task(task), k); }
  std::size_t stream_count() const { return queues_.size(); }
  // Number of distinct streams the Plan's tasks use (compute and comm, all workers).
  std::size_t streams_used() const { return streams_used_; }

  // StreamOrder::issue: every pair (a, b) where b is the task after a on one of the streams, each
  // stream in turn; empty under StreamOrder::ready. With the dependencies they form an acyclic
  // graph (checked by the constructor).
  std::vector<std::pair<TaskIndex, TaskIndex>> issue_edges() const;

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
  // The stream slot of the k-th participant of `task`.
  std::size_t slot_of(TaskIndex task, const Task& t, std::size_t k) const {
    if (t.stream == Stream::comm && !comm_offsets_.empty()) return comm_slots_[comm_offsets_[task] + k];
    return stream_slot(t.participants()[k], t.stream);
  }
  void assign_comm_streams();
  // StreamOrder::issue: each slot's tasks in (priority, index) order; throws when they deadlock.
  void order_streams();
  void check_issue_order_finishes() const;
  // waiting: pending or ready; elsewhere: see run_elsewhere().
  enum class State : std::uint8_t { waiting, elsewhere, running, done };

  void make_ready(TaskIndex task);
  void release_successors(TaskIndex task);
  void drop_stale_heads(std::size_t slot);
  // StreamOrder::issue: the task slot s runs next (skipping those that will never start here), or
  // kNone when it has run them all.
  static constexpr TaskIndex kNone = std::numeric_limits<TaskIndex>::max();
  TaskIndex issue_head(std::size_t slot);
  void try_start_head(std::size_t slot, std::vector<TaskIndex>& out);

  const Plan& plan_;
  // Successors in compressed rows: those of task i are successors_[offsets_[i] .. offsets_[i+1]).
  std::vector<std::size_t> offsets_;
  std::vector<TaskIndex> successors_;
  std::vector<std::uint32_t> pending_;  // unfinished predecessors per task
  std::vector<State> state_;            // per task
  // per_group: the slots of comm task i's participants are comm_slots_[comm_offsets_[i] ..
  // comm_offsets_[i + 1]); both empty under one_per_worker.
  std::vector<std::size_t> comm_offsets_;
  std::vector<std::uint32_t> comm_slots_;
  std::size_t streams_used_ = 0;
  std::vector<Queue> queues_;  // per stream slot (StreamOrder::ready)
  // StreamOrder::issue: slot s runs issue_[issue_offsets_[s] .. issue_offsets_[s + 1]) in order;
  // cursor_[s] is the first of them not yet started (started, completed unstarted, elsewhere).
  bool in_issue_order_ = false;
  std::vector<std::size_t> issue_offsets_, cursor_;
  std::vector<TaskIndex> issue_;
  std::vector<bool> busy_;            // per stream slot
  std::vector<std::size_t> dirty_;    // slots whose head may now start
  std::vector<std::size_t> slots_;    // scratch for take_startable
  std::vector<TaskIndex> startable_;  // what take_startable returns
  std::size_t completed_ = 0;
  std::size_t running_ = 0;
};

}  // namespace traces
}  // namespace strata
