// Interpreter<T>: runs a Plan for real, task by task, in the dispatch order the simulator uses.
//
// Each worker has a compute stream and a communication stream, each a thread of its own that
// stays alive across runs. One shared Dispatcher (traces/dispatch.hpp, the same readiness and
// priority rule as sim/) decides what starts: when a thread finishes a task it takes the
// dispatcher's lock, reports the completion, and hands every task that became startable to the
// thread of its (worker, stream) — a collective to the comm thread of its group's first rank
// that runs in this process — and wakes that thread only. During a run, a thread that has
// finished a task polls its queue for a while (kPoll, interpreter.cpp) before it sleeps, but only
// while no other stream thread is awake on its core: waking a thread that sleeps on an idle core
// costs tens of microseconds on a virtual machine, more than many tasks of a small model, while a
// poller next to a busy sibling would take the core from it.
// So a run is the Plan: the same tasks, the same dependencies, the same per-stream order rule.
//
// When the transport spreads the workers over processes (MPI), each process runs an Interpreter
// over the whole Plan but only the threads and tasks of its own workers (ProcessShare below);
// remote tasks complete in its Dispatcher when their processes say so, or at the start of the
// run when no local task depends on them.
//
// Every task is timed with std::chrono::steady_clock around its kernel; times are seconds from
// the start of the run. With `pin_workers`, worker w's threads are pinned to core w mod cores,
// so workers do not migrate and fight over cores (OpenBLAS runs one thread per call).
//
// Thread safety: run() is not reentrant; call it from one thread. A kernel's exception stops
// the run and is rethrown by run().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/real/exec/task_runner.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/trace.hpp"

namespace strata::real {

struct TaskTiming {
  double start = 0;  // s from the start of the run
  double end = 0;    // s
};

// ProcessShare: the part of a Plan that one process runs when the transport spreads the workers
// over processes, and what it must hear of the rest. A task is local when one of its
// participants' workers runs in this process.
//
// Every process dispatches the whole Plan but runs only its local tasks. A remote task that a
// local one depends on completes when every process running a part of it has said so (a send
// tells its peer by its payload, the others by an empty message); every other remote task
// completes at the start of the run. So a local task starts only once all its dependencies have
// completed wherever they ran — a recv only once its payload is here, so a comm stream never
// blocks on a message that a task queued behind it would cause.
//
// Collectives need one more rule. In one process a collective starts when every member's stream
// has it at its head; across processes each member decides alone, and two members that start
// different collectives first would wait for each other forever (a timing-dependent deadlock:
// the ready set each sees depends on when messages arrive). So dispatch_plan() adds control
// dependencies that make the collectives of each worker run one after another in one fixed order,
// the same in every process: the topological order of the Plan that takes the lowest
// (priority, index) among ready tasks. These edges follow a topological order, so the graph stays
// acyclic; a process starts a collective only when its predecessor on every member's chain has
// completed, so all members run the same collective next, and the task that is first in that
// order among the unfinished ones can always start: no deadlock.
//
// Invariants: tellers(t) > 0 only for remote tasks; listeners(t) non-empty only for local ones,
// never holding this process nor the process a send's payload already tells.
class ProcessShare {
 public:
  // `process_of[w]`: the process that runs worker w; `process`: this one.
  ProcessShare(const Plan& plan, std::vector<int> process_of, int process);

  bool all_local() const { return all_local_; }
  bool runs(TaskIndex t) const { return runs_[t]; }
  // Remote task: how many processes will say it completed (0: complete it at the start).
  std::uint32_t tellers(TaskIndex t) const { return tellers_[t]; }
  // Local task: the processes to tell when this process's part of it completes.
  const std::vector<int>& listeners(TaskIndex t) const { return listeners_[t]; }
  // The Plan the Dispatcher runs: the Plan itself, or a copy with the collective chains.
  const Plan& dispatch_plan() const { return all_local_ ? plan_ : chained_; }
  int process_of(WorkerId w) const { return process_of_[static_cast<std::size_t>(w)]; }
  int process() const { return process_; }

 private:
  std::vector<int> processes_of_task(const Task& t) const;  // sorted, unique
  void chain_collectives();

  const Plan& plan_;
  Plan chained_;
  std::vector<int> process_of_;
  int process_ = 0;
  bool all_local_ = true;
  std::vector<bool> runs_;
  std::vector<std::uint32_t> tellers_;
  std::vector<std::vector<int>> listeners_;
};

template <typename T>
class Interpreter : private RemoteCompletions {
 public:
  // The workers this process runs, and whom to tell, come from the runner's transport
  // (Transport::process_of): all of them for ThreadTransport.
  // REQUIRES: plan validated and check_kernels passed; everything outlives the Interpreter.
  Interpreter(const Plan& plan, TaskExecutor<T>& runner, bool pin_workers);
  ~Interpreter() override;
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs every task of the Plan once (its local tasks, when spread over processes: then every
  // process calls run() together). Returns one timing per task (by TaskIndex; zero for remote
  // tasks) and the wall time of the whole run in seconds through `wall_s`.
  std::vector<TaskTiming> run(double* wall_s = nullptr);

  const ProcessShare& share() const { return share_; }

  // Called by the stream thread that ran a task, right after it completed without error and
  // before its dependants may start (BufferLifetimes::task_done). Set between runs.
  void set_after_task(std::function<void(TaskIndex)> after) { after_task_ = std::move(after); }

  // A CPU quota for every worker, as a serverless function of less than one vCPU has (docs/
  // serverless.md): each compute task, once run, holds its stream idle for (1/share - 1) times
  // its own duration, so the worker gets `share` of its core, as CFS bandwidth control gives a
  // container. Communication tasks are not held. 1: none. REQUIRES: 0 < share <= 1; set
  // between runs.
  void set_cpu_share(double share);

 private:
  void remote_completed(TaskIndex task) override;  // from the transport's thread
  void hear(TaskIndex task);                       // REQUIRES: mutex_ held, running_
  std::size_t slot_of(TaskIndex t) const;
  void hand_out(const std::vector<TaskIndex>& startable);  // REQUIRES: mutex_ held
  void start_pollers();                                    // REQUIRES: mutex_ held
  void stream_loop(std::size_t slot, int core);
  void stop_threads();  // wakes every stream thread with stop_ set and joins it
  void hold_for_quota(std::size_t slot, std::chrono::steady_clock::time_point start);
  std::atomic<int>& awake_of(std::size_t slot) { return awake_[core_of_slot_[slot]]; }

  const Plan& plan_;
  TaskExecutor<T>& runner_;
  Transport<T>& transport_;
  ProcessShare share_;
  std::function<void(TaskIndex)> after_task_;
  double cpu_share_ = 1;
  std::vector<std::chrono::duration<double>> quota_debt_;  // per slot: idle time owed (set_cpu_share)
  std::vector<TaskIndex> remote_;                          // tasks other processes run
  std::mutex mutex_;
  std::vector<std::condition_variable> wake_;           // per slot: work was queued
  std::unique_ptr<std::atomic<std::size_t>[]> queued_;  // per slot: queue length, read unlocked
  std::condition_variable done_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::vector<std::deque<TaskIndex>> queues_;  // per (worker, stream) slot
  std::vector<TaskTiming> timings_;
  std::vector<std::uint32_t> awaited_;  // per remote task: tellers not heard yet in this run
  std::vector<TaskIndex> early_;        // heard between begin_run() and the start of the run
  // Per core (index = the core threads are pinned to; one shared entry when unpinned): how many
  // stream threads placed there are awake. A thread polls for its next task only while it is the
  // only one awake on its core (see stream_loop).
  std::unique_ptr<std::atomic<int>[]> awake_;
  std::size_t awake_entries_ = 0;
  std::vector<std::size_t> core_of_slot_;  // per slot: its entry of awake_
  std::vector<bool> sleeping_;             // per slot: its thread waits on wake_ (guarded by mutex_)
  int poll_limit_ = 1;                     // most threads awake on an entry for polling to go on
  std::atomic<bool> polling_{false};       // a run is under way: idle threads may poll
  std::chrono::steady_clock::time_point t0_;
  std::exception_ptr error_;
  bool running_ = false;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Merges one run's timings over the processes of `transport` (a collective under MPI): each
// process timed its own tasks and left the others at 0, so the element-wise maximum holds every
// task's times (a collective's members each timed it: the maximum is when the last finished).
template <typename T>
void merge_over_processes(Transport<T>& transport, std::vector<TaskTiming>& timings) {
  std::vector<double> flat;
  flat.reserve(2 * timings.size());
  for (const TaskTiming& t : timings) flat.insert(flat.end(), {t.start, t.end});
  transport.max_over_processes(flat);
  for (std::size_t i = 0; i < timings.size(); ++i) timings[i] = TaskTiming{flat[2 * i], flat[2 * i + 1]};
}

// The measured Trace of one run: a record per task and participant, in the schema the
// simulator writes (Trace::sort order), executor "real".
// This machine's name (gethostname), "localhost" when it has none: the host of measured traces.
std::string host_name();

Trace measured_trace(const Plan& plan, const std::vector<TaskTiming>& timings, const std::string& host,
                     const std::string& source);

extern template class Interpreter<float>;
extern template class Interpreter<double>;

}  // namespace strata::real
