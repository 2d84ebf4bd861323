#include "strata/real/calibrate/calibrate.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/exec/interpreter.hpp"
#include "strata/real/train/plan_runs.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/real/transport/file_store.hpp"
#include "strata/real/transport/thread_transport.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/stats.hpp"

namespace strata::real {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Pins the calling thread to core 0 for its lifetime in this scope, then restores its mask.
class PinToCoreZero {
 public:
  PinToCoreZero() {
    pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  }
  ~PinToCoreZero() { pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_); }
  PinToCoreZero(const PinToCoreZero&) = delete;
  PinToCoreZero& operator=(const PinToCoreZero&) = delete;

 private:
  cpu_set_t saved_{};
};

// Median time of `work` over at least `min_reps` runs and until `budget_s` is spent (at most
// `max_reps`), after two warm-up runs.
template <typename Work>
double time_median(Work&& work, int min_reps = 5, int max_reps = 50, double budget_s = 0.03) {
  work();
  work();
  std::vector<double> times;
  const auto t0 = Clock::now();
  while (static_cast<int>(times.size()) < min_reps ||
         (static_cast<int>(times.size()) < max_reps && seconds_since(t0) < budget_s)) {
    const auto start = Clock::now();
    work();
    times.push_back(seconds_since(start));
  }
  return median(std::move(times));
}

template <typename T>
void fill_uniform(std::mt19937_64& rng, T* data, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    data[i] = static_cast<T>(static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5);
}

template <typename T>
double gemm_rate(Backend& backend, std::int64_t n) {
  std::mt19937_64 rng(1);
  std::vector<T> a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size());
  fill_uniform(rng, a.data(), n * n);
  fill_uniform(rng, b.data(), n * n);
  const double t = time_median(
      [&] {
        backend.gemm(Transpose::no, Transpose::no, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(),
                     n);
      },
      5, 30, 0.3);
  return 2.0 * static_cast<double>(n * n * n) / t;
}

double triad_bandwidth() {
  constexpr std::size_t kElems = std::size_t{32} << 20 >> 2;  // 32 MiB of float per array
  std::vector<float> a(kElems, 1.0f), b(kElems, 2.0f), c(kElems, 0.5f);
  const double t = time_median(
      [&] {
        for (std::size_t i = 0; i < kElems; ++i) a[i] = b[i] + 3.0f * c[i];
      },
      5, 10, 0.3);
  return 3.0 * sizeof(float) * kElems / t;
}

}  // namespace

MachinePeaks measure_peaks(const Progress& progress) {
  PinToCoreZero pin;
  CpuBackend backend;
  MachinePeaks p;
  p.host = host_name();
  p.cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (progress) progress("GEMM peak (fp32, fp64)");
  p.gemm_fp32 = std::max(gemm_rate<float>(backend, 512), gemm_rate<float>(backend, 1024));
  p.gemm_fp64 = std::max(gemm_rate<double>(backend, 512), gemm_rate<double>(backend, 1024));
  if (progress) progress("memory bandwidth (triad)");
  p.triad_bw = triad_bandwidth();
  return p;
}

std::vector<TaskSample> measure_tasks(const std::vector<Plan>& plans, const LabelledImages& data,
                                      const Progress& progress, const ExecutorFactory<float>& executor) {
  constexpr int kWarmup = 5, kRuns = 20;
  PlanRunSettings settings;
  settings.executor = executor;
  std::vector<TaskSample> out;
  for (const Plan& plan : plans) {
    STRATA_ASSERT(plan.num_workers() == 1, "task calibration runs one-worker Plans");
    if (executor && cpu_only_plan(plan)) continue;  // a device calibration: these solvers run on the CPU only
    const std::string name =
        plan.info.model + " " + plan.info.strategy + " batch " + std::to_string(plan.info.global_batch);
    if (progress) progress("tasks of " + name);
    const PlanRuns next = plan_runs(plan, data, settings);
    std::vector<std::vector<double>> durations(plan.size());
    // Iterations of a tenth of a second or more (the GCN's full graph) get 1 warm-up and 5
    // measured runs: their tasks are long enough for a median of 5 to hold.
    int warmup = kWarmup, runs = kRuns;
    for (int run = 0; run < warmup + runs; ++run) {
      const auto start = std::chrono::steady_clock::now();
      const std::vector<TaskTiming> timings = next();
      if (run == 0 && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(100))
        warmup = 1, runs = 5;
      if (run < warmup) continue;
      for (TaskIndex i = 0; i < plan.size(); ++i) durations[i].push_back(timings[i].end - timings[i].start);
    }
    for (TaskIndex i = 0; i < plan.size(); ++i) {
      const Task& t = plan.task(i);
      if (is_communication(t.kind)) continue;
      out.push_back(TaskSample{name, t.id, t.kind, t.dtype, t.flops, t.bytes_read + t.bytes_written,
                               median(std::move(durations[i]))});
    }
  }
  return out;
}

namespace {

// A chain of `n` grad_accumulate tasks on one-element buffers: task i on worker i % workers,
// after task i − 1 (control dependency). Near-empty kernels: what remains is dispatch.
Plan dispatch_chain(int workers, int n) {
  Plan plan(workers);
  std::vector<BufferIndex> src, dst;
  for (int w = 0; w < workers; ++w) {
    src.push_back(plan.add_buffer(Buffer{"w" + std::to_string(w) + "/src", w, 4, DType::fp32, true}));
    dst.push_back(plan.add_buffer(Buffer{"w" + std::to_string(w) + "/dst", w, 4, DType::fp32, true}));
  }
  for (int i = 0; i < n; ++i) {
    Task t;
    t.id = "chain/" + std::to_string(i);
    t.kind = TaskKind::grad_accumulate;
    t.worker = i % workers;
    t.reads = {src[static_cast<std::size_t>(t.worker)], dst[static_cast<std::size_t>(t.worker)]};
    t.writes = {dst[static_cast<std::size_t>(t.worker)]};
    t.bytes_read = 8;
    t.bytes_written = 4;
    const TaskIndex index = plan.add_task(std::move(t));
    if (i > 0) plan.add_control_dep(index - 1, index);
  }
  plan.validate();
  return plan;
}

struct ChainTimes {
  double dispatch_s = 0;  // per task beyond its kernel
  double task_s = 0;      // 10th percentile time of a near-empty task (kernel, launch, completion)
};

ChainTimes dispatch_per_task(int workers, const ExecutorFactory<float>& executor) {
  constexpr int kTasks = 2000;
  const Plan plan = dispatch_chain(workers, kTasks);
  ThreadTransport<float> transport;
  const PlanExecution<float> execution =
      assemble_execution(plan, executor, transport, OptimizerSettings{}, true);
  Interpreter<float>& interpreter = *execution.interpreter;
  std::vector<double> per_task, task;
  for (int rep = 0; rep < 7; ++rep) {
    const std::vector<TaskTiming> timings = interpreter.run();
    double first = INFINITY, last = 0, kernels = 0;
    std::vector<double> durations;
    for (const TaskTiming& t : timings) {
      first = std::min(first, t.start);
      last = std::max(last, t.end);
      kernels += t.end - t.start;
      durations.push_back(t.end - t.start);
    }
    if (rep < 2) continue;
    per_task.push_back((last - first - kernels) / (kTasks - 1));
    std::sort(durations.begin(), durations.end());
    task.push_back(durations[durations.size() / 10]);  // the floor: what the quick tenth took
  }
  return ChainTimes{median(std::move(per_task)), median(std::move(task))};
}

}  // namespace

DispatchOverhead measure_dispatch(const ExecutorFactory<float>& executor) {
  CpuBackend backend;
  const ExecutorFactory<float> run_on = executor ? executor : host_executor<float>(backend);
  const ChainTimes one = dispatch_per_task(1, run_on);
  return DispatchOverhead{one.dispatch_s, dispatch_per_task(2, run_on).dispatch_s, one.task_s};
}

namespace {

constexpr double kMessageSizes[] = {1024, 16384, 262144, 1048576, 4194304};  // B
constexpr int kMessagesPerSize = 24;
constexpr int kTransportRuns = 3;  // the fastest run's medians count: the others met noise

// Ping-pong of `count` messages of `bytes` between workers 0 and 1 (send, then the peer's recv,
// then the reply), then a chain of `count` 2-rank allreduces of `bytes` each.
Plan transport_plan(double bytes, int count) {
  Plan plan(2);
  const double elems = bytes / 4;
  std::vector<BufferIndex> buf;
  for (int w = 0; w < 2; ++w)
    buf.push_back(plan.add_buffer(Buffer{"w" + std::to_string(w) + "/msg", w, elems * 4, DType::fp32, true}));
  long previous = -1;
  for (int i = 0; i < count; ++i) {
    const int from = i % 2, to = 1 - from;
    Task send;
    send.id = "p2p/" + std::to_string(i) + "/send";
    send.kind = TaskKind::send;
    send.stream = Stream::comm;
    send.worker = from;
    send.peer = to;
    send.comm_bytes = elems * 4;
    send.reads = {buf[static_cast<std::size_t>(from)]};
    const TaskIndex s = plan.add_task(std::move(send));
    if (previous >= 0) plan.add_data_dep(static_cast<TaskIndex>(previous), s);
    Task recv;
    recv.id = "p2p/" + std::to_string(i) + "/recv";
    recv.kind = TaskKind::recv;
    recv.stream = Stream::comm;
    recv.worker = to;
    recv.peer = from;
    recv.comm_bytes = elems * 4;
    recv.writes = {buf[static_cast<std::size_t>(to)]};
    const TaskIndex r = plan.add_task(std::move(recv));
    plan.add_data_dep(s, r);
    previous = static_cast<long>(r);
  }
  for (int i = 0; i < count; ++i) {
    Task ar;
    ar.id = "allreduce/" + std::to_string(i);
    ar.kind = TaskKind::allreduce;
    ar.stream = Stream::comm;
    ar.group = {0, 1};
    ar.algo = CollectiveAlgo::ring;
    ar.comm_bytes = elems * 4;
    ar.reads = {buf[0], buf[1]};
    ar.writes = {buf[0], buf[1]};
    const TaskIndex a = plan.add_task(std::move(ar));
    plan.add_data_dep(static_cast<TaskIndex>(previous), a);
    previous = static_cast<long>(a);
  }
  plan.validate();
  return plan;
}

}  // namespace

PlanTimer executor_plan_timer(ExecutorFactory<float> executor) {
  return [executor = std::move(executor)](const Plan& plan) {
    ThreadTransport<float> transport;
    const PlanExecution<float> execution =
        assemble_execution(plan, executor, transport, OptimizerSettings{}, true);
    Interpreter<float>& interpreter = *execution.interpreter;
    interpreter.run();  // warm-up: first touches, thread wake-ups
    const std::vector<TaskTiming> timings = interpreter.run();
    std::vector<std::pair<double, double>> out;
    out.reserve(timings.size());
    for (const TaskTiming& t : timings) out.emplace_back(t.start, t.end);
    return out;
  };
}

PlanTimer thread_plan_timer() {
  return [](const Plan& plan) {
    CpuBackend backend;
    return executor_plan_timer(host_executor<float>(backend))(plan);
  };
}

std::vector<TransportSample> measure_transport(const std::string& name, const PlanTimer& run_plan) {
  std::vector<TransportSample> out;
  for (double bytes : kMessageSizes) {
    const Plan plan = transport_plan(bytes, kMessagesPerSize);
    double p2p_best = INFINITY, allreduce_best = INFINITY;
    for (int run = 0; run < kTransportRuns; ++run) {
      const std::vector<std::pair<double, double>> times = run_plan(plan);
      STRATA_ASSERT(times.size() == plan.size(), "one timing per task");
      std::vector<double> p2p, allreduce;
      for (TaskIndex i = 0; i < plan.size(); ++i) {
        const Task& t = plan.task(i);
        if (t.kind == TaskKind::recv) p2p.push_back(times[i].second - times[t.data_deps[0]].first);
        if (t.kind == TaskKind::allreduce) allreduce.push_back(times[i].second - times[i].first);
      }
      p2p_best = std::min(p2p_best, median(p2p));
      allreduce_best = std::min(allreduce_best, median(allreduce));
    }
    out.push_back(TransportSample{name, "p2p", bytes, p2p_best});
    out.push_back(TransportSample{name, "allreduce", bytes, allreduce_best});
  }
  return out;
}

std::vector<TransportSample> measure_file_store(Medium medium) {
  TemporaryFolder folder(medium == Medium::memory ? "strata-cache-calibrate" : "strata-store-calibrate",
                         medium);
  const std::string name = medium == Medium::memory ? "cache" : "files";
  FileObjectStore store(folder.path());
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  std::vector<TransportSample> out;
  std::size_t round = 0;
  for (double bytes : kMessageSizes) {
    const auto elements = static_cast<std::size_t>(bytes / sizeof(float));
    std::vector<float> data(elements, 1.0F), back(elements);
    double request_best = INFINITY, allreduce_best = INFINITY, put_best = INFINITY, get_best = INFINITY,
           remove_best = INFINITY;
    for (int run = 0; run < kTransportRuns; ++run) {
      std::vector<double> requests, allreduces, puts, gets, removes;
      for (int m = 0; m < kMessagesPerSize; ++m, ++round) {
        // Keyed as the exchange keys its objects: a fresh folder per round and rank.
        const std::string key = "request/" + std::to_string(round) + "/r0/g";
        auto t = Clock::now();
        store.put(key, data.data(), elements * sizeof(float));
        puts.push_back(since(t));
        requests.push_back(puts.back());
        t = Clock::now();
        store.get(key, back.data(), elements * sizeof(float));
        gets.push_back(since(t));
        requests.push_back(gets.back());
        t = Clock::now();
        store.remove_all("request/" + std::to_string(round));
        removes.push_back(since(t));
        std::vector<std::vector<float>> ranks(2, data);
        t = Clock::now();
        for (int phase = 1; phase <= 3; ++phase)
          for (std::size_t r = 0; r < 2; ++r)
            storage_exchange_phase(store, CollectiveAlgo::storage_allreduce, "probe", round, r, 2, ranks[r],
                                   phase);
        allreduces.push_back(since(t));
      }
      request_best = std::min(request_best, median(requests));
      allreduce_best = std::min(allreduce_best, median(allreduces));
      put_best = std::min(put_best, median(puts));
      get_best = std::min(get_best, median(gets));
      remove_best = std::min(remove_best, median(removes));
    }
    out.push_back(TransportSample{name, "p2p", bytes, request_best});
    out.push_back(TransportSample{name, "put", bytes, put_best});
    out.push_back(TransportSample{name, "get", bytes, get_best});
    out.push_back(TransportSample{name, "remove", bytes, remove_best});
    out.push_back(TransportSample{name, "allreduce", bytes, allreduce_best});
  }
  return out;
}

std::vector<Plan> zoo_calibration_plans() {
  std::vector<Plan> plans;
  for (const char* model : {"mlp", "lenet5"})
    for (std::int64_t batch : {64, 32, 16}) {
      StrategyConfig c;
      c.global_batch = batch;
      c.optimizer = Optimizer::adam;
      c.dtype = DType::fp32;
      Plan plan = lower(make_model(model, {}), c);
      plan.validate();
      plans.push_back(std::move(plan));
    }
  {  // the ADMM layer updates: pdADMM on one worker, 784-256-256-10, 2,000 samples, one sweep
    StrategyConfig c;
    c.global_batch = 2000;
    c.dtype = DType::fp32;
    std::map<std::string, std::string> none;
    Plan plan = lower_solver(make_model("mlp", {{"sizes", "784,256,256,10"}}), c,
                             parse_solver_config(Solver::pdadmm, none));
    plan.validate();
    plans.push_back(std::move(plan));
  }
  // The graph aggregation: full-graph GCN training on the kNN graph, at 2,000 nodes (cache-sized)
  // and at the 10,000 of the GIST runs, whose aggregation streams from memory.
  for (const char* nodes : {"2000", "10000"}) {
    StrategyConfig c;
    c.optimizer = Optimizer::adam;
    c.dtype = DType::fp32;
    Plan plan = lower(make_model("gcn", {{"nodes", nodes}}), c);
    plan.validate();
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace strata::real
