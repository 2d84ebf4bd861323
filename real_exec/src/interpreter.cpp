#include "strata/real/interpreter.hpp"

#include <pthread.h>
#include <sched.h>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

void pin_to_core(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: a refusal is harmless
}

}  // namespace

template <typename T>
Interpreter<T>::Interpreter(const Plan& plan, TaskRunner<T>& runner, bool pin_workers)
    : plan_(plan), runner_(runner), queues_(static_cast<std::size_t>(plan.num_workers()) * 2) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (std::size_t slot = 0; slot < queues_.size(); ++slot) {
    const int core = pin_workers ? static_cast<int>(slot / 2) % cores : -1;
    threads_.emplace_back([this, slot, core] { stream_loop(slot, core); });
  }
}

template <typename T>
Interpreter<T>::~Interpreter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (auto& th : threads_) th.join();
}

template <typename T>
std::size_t Interpreter<T>::slot_of(TaskIndex t) const {
  const Task& task = plan_.task(t);
  const WorkerId owner = task.participants().front();
  return static_cast<std::size_t>(owner) * 2 + (task.stream == Stream::comm ? 1 : 0);
}

template <typename T>
void Interpreter<T>::hand_out(const std::vector<TaskIndex>& startable) {
  for (TaskIndex t : startable) queues_[slot_of(t)].push_back(t);
  if (!startable.empty()) work_.notify_all();
}

template <typename T>
std::vector<TaskTiming> Interpreter<T>::run(double* wall_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  dispatcher_ = std::make_unique<Dispatcher>(plan_);
  timings_.assign(plan_.size(), TaskTiming{});
  error_ = nullptr;
  running_ = true;
  t0_ = std::chrono::steady_clock::now();
  hand_out(dispatcher_->take_startable());
  done_.wait(lock, [this] { return error_ != nullptr || dispatcher_->finished(); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  running_ = false;
  if (error_) {
    // Let the threads drain what is queued without running it.
    for (auto& q : queues_) q.clear();
    std::rethrow_exception(error_);
  }
  STRATA_ASSERT(dispatcher_->running() == 0, "run ended with tasks still running");
  if (wall_s != nullptr) *wall_s = wall;
  return timings_;
}

template <typename T>
void Interpreter<T>::stream_loop(std::size_t slot, int core) {
  if (core >= 0) pin_to_core(core);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queues_[slot].empty(); });
    if (stop_) return;
    const TaskIndex t = queues_[slot].front();
    queues_[slot].pop_front();
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
      runner_.run(t);
    } catch (...) {
      failure = std::current_exception();
    }
    const auto end = std::chrono::steady_clock::now();
    lock.lock();
    timings_[t] = TaskTiming{std::chrono::duration<double>(start - t0_).count(),
                             std::chrono::duration<double>(end - t0_).count()};
    if (failure) {
      if (!error_) error_ = failure;
      done_.notify_all();
      continue;
    }
    if (!running_) continue;
    dispatcher_->complete(t);
    hand_out(dispatcher_->take_startable());
    if (dispatcher_->finished()) done_.notify_all();
  }
}

Trace measured_trace(const Plan& plan, const std::vector<TaskTiming>& timings, const std::string& host,
                     const std::string& source) {
  STRATA_ASSERT(timings.size() == plan.size(), "one timing per task");
  Trace trace;
  trace.executor = "real";
  trace.source = source;
  trace.records.reserve(plan.size());
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& task = plan.task(i);
    for (WorkerId w : task.participants())
      trace.records.push_back(trace_record(task, w, host, timings[i].start, timings[i].end));
  }
  trace.sort();
  return trace;
}

template class Interpreter<float>;
template class Interpreter<double>;

}  // namespace strata::real
