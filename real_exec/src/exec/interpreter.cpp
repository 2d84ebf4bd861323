#include "strata/real/exec/interpreter.hpp"

#include "strata/real/core/backend.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <system_error>
#include <thread>
#include <utility>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// How long a stream thread polls for its next task before it sleeps on its condition variable:
// longer than a cross-core wake-up of a sleeping thread (35-55 us on a 2-vCPU KVM guest,
// strata_bench_real), so a hand-off between cores inside a run rarely pays one.
constexpr std::chrono::microseconds kPoll{200};

// One step of a polling loop: a spin-wait hint, not a yield. sched_yield() on Linux's EEVDF
// scheduler moves the yielding thread's virtual deadline a slice ahead per call, so a thread that
// polled by yielding next to a busy sibling on its core was, once woken, not run before the
// sibling's slice ended: up to ~1 ms late (a pipeline stage's send waited for its optimizer step).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

void pin_to_core(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: a refusal is harmless
}

// The Dispatcher's communication streams: one per worker, as its threads, for a dataflow Plan; for
// a Plan in issue order the replay's, one per communicator (a worker's comm thread then runs the
// tasks its streams start in the order they start), so that both executors follow the same
// per-stream order and a Plan the replay accepts never deadlocks here.
CommStreams interpreter_comm_streams(const Plan& plan) {
  return plan.info.stream_order == StreamOrder::issue ? CommStreams::per_group : CommStreams::one_per_worker;
}

// The order in which every process runs its workers' collectives: Kahn's algorithm over data
// and control edges taking the lowest (priority, index) among ready tasks, so that collectives
// follow the order the Dispatcher itself prefers. A Plan in issue order (StreamOrder::issue)
// adds the edges of each stream's order (Dispatcher::issue_edges under the interpreter's stream
// rule), so that the chains agree with it. Deterministic: the same in every process.
std::vector<TaskIndex> priority_topological_order(const Plan& plan) {
  std::vector<std::uint32_t> pending(plan.size(), 0);
  std::vector<std::vector<TaskIndex>> successors(plan.size());
  for (TaskIndex i = 0; i < plan.size(); ++i)
    for (const auto* deps : {&plan.task(i).data_deps, &plan.task(i).control_deps})
      for (TaskIndex d : *deps) {
        successors[d].push_back(i);
        ++pending[i];
      }
  if (plan.info.stream_order == StreamOrder::issue)
    for (const auto& [a, b] : Dispatcher(plan, interpreter_comm_streams(plan)).issue_edges()) {
      successors[a].push_back(b);
      ++pending[b];
    }
  using Key = std::pair<std::int64_t, TaskIndex>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  for (TaskIndex i = 0; i < plan.size(); ++i)
    if (pending[i] == 0) ready.emplace(plan.task(i).priority, i);
  std::vector<TaskIndex> order;
  order.reserve(plan.size());
  while (!ready.empty()) {
    const TaskIndex t = ready.top().second;
    ready.pop();
    order.push_back(t);
    for (TaskIndex s : successors[t])
      if (--pending[s] == 0) ready.emplace(plan.task(s).priority, s);
  }
  STRATA_ASSERT(order.size() == plan.size(), "the Plan has a cycle (it was not validated)");
  return order;
}

}  // namespace

ProcessShare::ProcessShare(const Plan& plan, std::vector<int> process_of, int process)
    : plan_(plan),
      process_of_(std::move(process_of)),
      process_(process),
      runs_(plan.size(), false),
      tellers_(plan.size(), 0),
      listeners_(plan.size()) {
  STRATA_ASSERT(process_of_.size() == static_cast<std::size_t>(plan.num_workers()), "one process per worker");
  for (int p : process_of_) all_local_ = all_local_ && p == process_;
  if (all_local_) {
    runs_.assign(plan.size(), true);
    return;
  }
  chain_collectives();
  std::vector<std::vector<int>> procs(plan.size());
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    procs[t] = processes_of_task(plan.task(t));
    runs_[t] = std::binary_search(procs[t].begin(), procs[t].end(), process_);
  }
  // Process q waits for task r when r runs elsewhere and one of its successors runs on q.
  auto wait = [&](int q, TaskIndex r) {
    if (std::binary_search(procs[r].begin(), procs[r].end(), q)) return;
    if (q == process_) tellers_[r] = static_cast<std::uint32_t>(procs[r].size());
    const Task& task = plan.task(r);
    const bool payload_tells = task.kind == TaskKind::send && q == this->process_of(task.peer);
    if (runs_[r] && !payload_tells) listeners_[r].push_back(q);
  };
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    const Task& task = chained_.task(t);
    for (const auto* deps : {&task.data_deps, &task.control_deps})
      for (TaskIndex r : *deps)
        for (int q : procs[t]) wait(q, r);
    // A send's payload always goes to its peer, which must be waiting for it.
    if (task.kind == TaskKind::send) wait(this->process_of(task.peer), t);
  }
  for (auto& l : listeners_) {
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
  }
}

std::vector<int> ProcessShare::processes_of_task(const Task& t) const {
  std::vector<int> out;
  for (WorkerId w : t.participants()) out.push_back(process_of(w));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void ProcessShare::chain_collectives() {
  chained_ = plan_;
  constexpr TaskIndex kNone = std::numeric_limits<TaskIndex>::max();
  std::vector<TaskIndex> last(static_cast<std::size_t>(plan_.num_workers()), kNone);
  for (TaskIndex c : priority_topological_order(plan_)) {
    const Task& task = plan_.task(c);
    if (!is_collective(task.kind)) continue;
    std::vector<TaskIndex> before;
    for (WorkerId w : task.group) {
      TaskIndex& prev = last[static_cast<std::size_t>(w)];
      if (prev != kNone && std::find(before.begin(), before.end(), prev) == before.end())
        before.push_back(prev);
      prev = c;
    }
    for (TaskIndex b : before) chained_.add_control_dep(b, c);
  }
}

template <typename T>
Interpreter<T>::Interpreter(const Plan& plan, TaskExecutor<T>& runner, bool pin_workers)
    : plan_(plan),
      runner_(runner),
      transport_(runner.transport()),
      share_(
          plan,
          [&] {
            std::vector<int> process_of(static_cast<std::size_t>(plan.num_workers()));
            for (WorkerId w = 0; w < plan.num_workers(); ++w)
              process_of[static_cast<std::size_t>(w)] = transport_.process_of(w);
            return process_of;
          }(),
          transport_.process()),
      wake_(static_cast<std::size_t>(plan.num_workers()) * 2),
      queued_(std::make_unique<std::atomic<std::size_t>[]>(static_cast<std::size_t>(plan.num_workers()) * 2)),
      queues_(static_cast<std::size_t>(plan.num_workers()) * 2) {
  for (TaskIndex t = 0; t < plan.size(); ++t)
    if (!share_.runs(t)) remote_.push_back(t);
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Pinned: one entry per core, a poller alone on it. Unpinned: one entry for the process, and
  // polling only while no more threads are awake than there are cores.
  awake_entries_ = pin_workers ? static_cast<std::size_t>(cores) : 1;
  poll_limit_ = pin_workers ? 1 : cores;
  awake_ = std::make_unique<std::atomic<int>[]>(awake_entries_);
  for (std::size_t c = 0; c < awake_entries_; ++c) awake_[c].store(0);
  core_of_slot_.assign(queues_.size(), 0);
  sleeping_.assign(queues_.size(), false);
  // Each local stream may be inside BLAS while the others are: their buffers made first, so that
  // running out of address space is one line here, not a thread spinning in OpenBLAS.
  int local_streams = 0;
  for (std::size_t slot = 0; slot < queues_.size(); ++slot)
    if (share_.process_of(static_cast<WorkerId>(slot / 2)) == share_.process()) ++local_streams;
  if (local_streams > 0) prepare_blas_buffers(local_streams);
  for (std::size_t slot = 0; slot < queues_.size(); ++slot) {
    const auto worker = static_cast<WorkerId>(slot / 2);
    if (share_.process_of(worker) != share_.process()) continue;
    const int core = pin_workers ? worker % cores : -1;
    core_of_slot_[slot] = core >= 0 ? static_cast<std::size_t>(core) : 0;
    awake_of(slot).fetch_add(1);  // awake until its first sleep
    try {
      threads_.emplace_back([this, slot, core] { stream_loop(slot, core); });
    } catch (const std::system_error& e) {
      // No thread for this stream (out of memory or of threads): the ones started stop first,
      // the failure is one line.
      stop_threads();
      throw InputError(std::string("out of memory: cannot start the thread of worker ") +
                       std::to_string(worker) + "'s stream (" + e.code().message() + ")");
    }
  }
}

template <typename T>
void Interpreter<T>::stop_threads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  for (auto& w : wake_) w.notify_all();
  for (auto& th : threads_)
    if (th.joinable()) th.join();
  threads_.clear();
}

template <typename T>
void Interpreter<T>::set_cpu_share(double share) {
  STRATA_ASSERT(share > 0 && share <= 1, "CPU share " + std::to_string(share) + " outside (0, 1]");
  cpu_share_ = share;
  quota_debt_.assign(queues_.size(), std::chrono::duration<double>(0));
}

// The idle time a compute task owes is added to its stream's debt and slept off once it reaches
// a period (1 ms, above the ~60 us a sleep oversleeps on Linux), the sleep's actual length paid
// back: over a run the stream idles (1/share - 1) times its busy time, as a CFS quota throttles.
template <typename T>
void Interpreter<T>::hold_for_quota(std::size_t slot, std::chrono::steady_clock::time_point start) {
  constexpr std::chrono::duration<double> kPeriod{1e-3};
  const auto busy = std::chrono::steady_clock::now() - start;
  std::chrono::duration<double>& debt = quota_debt_[slot];
  debt += std::chrono::duration<double>(busy) * (1 / cpu_share_ - 1);
  if (debt < kPeriod) return;
  const auto before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(debt);
  debt -= std::chrono::steady_clock::now() - before;
}

template <typename T>
Interpreter<T>::~Interpreter() {
  stop_threads();
}

// The stream of the first participant that runs here: for a collective, the comm stream of the
// first local member of its group.
template <typename T>
std::size_t Interpreter<T>::slot_of(TaskIndex t) const {
  const Task& task = plan_.task(t);
  for (WorkerId w : task.participants())
    if (share_.process_of(w) == share_.process())
      return static_cast<std::size_t>(w) * 2 + (task.stream == Stream::comm ? 1 : 0);
  STRATA_ASSERT(false, "task " + task.id + " was handed out but runs in another process");
  return 0;
}

// A sleeping thread counts as awake on its core from the moment it is handed work, not from when
// it runs: a poller on that core must stop at once, since the scheduler may not preempt it for
// the woken thread before the poller's time slice ends.
template <typename T>
void Interpreter<T>::hand_out(const std::vector<TaskIndex>& startable) {
  for (TaskIndex t : startable) {
    const std::size_t slot = slot_of(t);
    queues_[slot].push_back(t);
    queued_[slot].store(queues_[slot].size(), std::memory_order_release);
    if (sleeping_[slot]) {
      sleeping_[slot] = false;
      awake_of(slot).fetch_add(1);
      wake_[slot].notify_one();
    }
  }
}

// Between runs every thread sleeps. A core that got no work at the start of a run would then pay a
// full wake-up for its first hand-off (a pipeline stage's first receive), so one thread per idle
// core is woken to poll: a comm thread where there is one, since such a core mostly waits for a
// message first.
template <typename T>
void Interpreter<T>::start_pollers() {
  for (std::size_t pass = 0; pass < 2; ++pass)
    for (std::size_t slot = pass == 0 ? 1 : 0; slot < queues_.size(); slot += 2) {
      // Only this process's threads ever sleep: another process's slots are never sleeping_.
      if (!sleeping_[slot] || awake_of(slot).load() != 0) continue;
      sleeping_[slot] = false;
      awake_of(slot).fetch_add(1);
      wake_[slot].notify_one();
    }
}

template <typename T>
std::vector<TaskTiming> Interpreter<T>::run(double* wall_s) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dispatcher_ = std::make_unique<Dispatcher>(share_.dispatch_plan(), interpreter_comm_streams(plan_));
    timings_.assign(plan_.size(), TaskTiming{});
    error_ = nullptr;
    awaited_.resize(plan_.size());
    for (TaskIndex t = 0; t < plan_.size(); ++t) awaited_[t] = share_.tellers(t);
    for (TaskIndex t : remote_) dispatcher_->run_elsewhere(t);
    for (TaskIndex t : remote_)
      if (share_.tellers(t) == 0) dispatcher_->complete_unstarted(t);
  }
  // Other processes start their runs only from here on, so whatever they tell us is for this run.
  transport_.begin_run(*this);
  std::unique_lock<std::mutex> lock(mutex_);
  running_ = true;
  polling_.store(true, std::memory_order_relaxed);
  t0_ = std::chrono::steady_clock::now();
  for (TaskIndex t : early_) hear(t);
  early_.clear();
  hand_out(dispatcher_->take_startable());
  start_pollers();
  done_.wait(lock, [this] { return error_ != nullptr || dispatcher_->finished(); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  running_ = false;
  polling_.store(false, std::memory_order_relaxed);  // between runs idle threads sleep at once
  const std::exception_ptr error = error_;
  if (error) {
    // Let the threads drain what is queued without running it.
    for (std::size_t slot = 0; slot < queues_.size(); ++slot) {
      queues_[slot].clear();
      queued_[slot].store(0, std::memory_order_release);
    }
  } else {
    STRATA_ASSERT(dispatcher_->running() == 0, "run ended with tasks still running");
  }
  lock.unlock();
  transport_.end_run();
  if (error) std::rethrow_exception(error);
  if (wall_s != nullptr) *wall_s = wall;
  return timings_;
}

template <typename T>
void Interpreter<T>::remote_completed(TaskIndex task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!running_) {
    early_.push_back(task);
    return;
  }
  hear(task);
}

template <typename T>
void Interpreter<T>::hear(TaskIndex task) {
  STRATA_ASSERT(awaited_[task] > 0,
                "told of task " + plan_.task(task).id + ", which this process does not wait for");
  if (--awaited_[task] > 0) return;
  dispatcher_->complete_unstarted(task);
  hand_out(dispatcher_->take_startable());
  if (dispatcher_->finished()) done_.notify_all();
}

// A thread with nothing queued polls for up to kPoll, then sleeps. It polls only while no other
// stream thread is awake on its core (poll_limit_ counts itself): a poller next to a busy sibling
// would take the core from it. Whoever hands work to a sleeping thread counts it awake (hand_out).
template <typename T>
void Interpreter<T>::stream_loop(std::size_t slot, int core) {
  if (core >= 0) pin_to_core(core);
  std::atomic<int>& awake = awake_of(slot);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queues_[slot].empty() && !stop_) {
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + kPoll;
      while (queued_[slot].load(std::memory_order_acquire) == 0 && polling_.load(std::memory_order_relaxed) &&
             awake.load(std::memory_order_relaxed) <= poll_limit_ && std::chrono::steady_clock::now() < until)
        cpu_relax();
      lock.lock();
    }
    if (queues_[slot].empty() && !stop_) {
      sleeping_[slot] = true;
      awake.fetch_sub(1);
      wake_[slot].wait(lock, [&] { return stop_ || !sleeping_[slot]; });
      if (queues_[slot].empty() && !stop_) continue;  // woken to poll (start_pollers)
    }
    if (stop_) return;
    const TaskIndex t = queues_[slot].front();
    queues_[slot].pop_front();
    queued_[slot].store(queues_[slot].size(), std::memory_order_release);
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
      runner_.run(t);
      if (cpu_share_ < 1 && !is_communication(plan_.task(t).kind)) hold_for_quota(slot, start);
      if (after_task_) after_task_(t);
    } catch (...) {
      failure = std::current_exception();
    }
    const auto end = std::chrono::steady_clock::now();
    if (!failure && !share_.listeners(t).empty()) {
      try {
        transport_.announce(t, share_.listeners(t));
      } catch (...) {
        failure = std::current_exception();
      }
    }
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

std::string host_name() {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  return host;
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
