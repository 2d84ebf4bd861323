// Interpreter<T>: runs a Plan for real, task by task, in the dispatch order the simulator uses.
//
// Each worker has a compute stream and a communication stream, each a thread of its own that
// stays alive across runs. One shared Dispatcher (traces/dispatch.hpp, the same readiness and
// priority rule as sim/) decides what starts: when a thread finishes a task it takes the
// dispatcher's lock, reports the completion, and hands every task that became startable to the
// thread of its (worker, stream) — a collective to the comm thread of its group's first rank.
// So a run is the Plan: the same tasks, the same dependencies, the same per-stream order rule.
//
// Every task is timed with std::chrono::steady_clock around its kernel; times are seconds from
// the start of the run. With `pin_workers`, worker w's threads are pinned to core w mod cores,
// so workers do not migrate and fight over cores (OpenBLAS runs one thread per call).
//
// Thread safety: run() is not reentrant; call it from one thread. A kernel's exception stops
// the run and is rethrown by run().
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/real/task_runner.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/trace.hpp"

namespace strata::real {

struct TaskTiming {
  double start = 0;  // s from the start of the run
  double end = 0;    // s
};

template <typename T>
class Interpreter {
 public:
  // REQUIRES: plan validated and check_kernels passed; everything outlives the Interpreter.
  Interpreter(const Plan& plan, TaskRunner<T>& runner, bool pin_workers);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs every task of the Plan once. Returns one timing per task (by TaskIndex) and the wall
  // time of the whole run in seconds through `wall_s`.
  std::vector<TaskTiming> run(double* wall_s = nullptr);

 private:
  std::size_t slot_of(TaskIndex t) const;
  void hand_out(const std::vector<TaskIndex>& startable);  // REQUIRES: mutex_ held
  void stream_loop(std::size_t slot, int core);

  const Plan& plan_;
  TaskRunner<T>& runner_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable done_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::vector<std::deque<TaskIndex>> queues_;  // per (worker, stream) slot
  std::vector<TaskTiming> timings_;
  std::chrono::steady_clock::time_point t0_;
  std::exception_ptr error_;
  bool running_ = false;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The measured Trace of one run: a record per task and participant, in the schema the
// simulator writes (Trace::sort order), executor "real".
Trace measured_trace(const Plan& plan, const std::vector<TaskTiming>& timings, const std::string& host,
                     const std::string& source);

extern template class Interpreter<float>;
extern template class Interpreter<double>;

}  // namespace strata::real
