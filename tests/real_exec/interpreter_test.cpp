// The real executor runs the Plan: equivalence of strategies in float64 (same parameters after
// 20 SGD steps as one worker) and in float32 with Adam (same loss curve), Plan edits that change
// the run, refused kinds, trace ids. tests/real_exec/mpi/ makes the same claims across MPI processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"
#include "weights.hpp"

namespace strata::real {
namespace {

using training_runs::batch_indices;
using training_runs::max_abs_difference;
using training_runs::mlp_plan;

constexpr int kSteps = 20;

const LabelledImages& train_set() {
  static const LabelledImages data = load_fashion_mnist(DatasetSplit::train);
  return data;
}

// Weights (with bias) of each layer after training, by layer name, from data-parallel rank `dp`.
std::map<std::string, std::vector<double>> weights_after(const Plan& plan, int steps, int dp = 0) {
  CpuBackend backend;
  return training_runs::trained_weights(plan, train_set(), steps, host_executor<double>(backend), dp);
}

TEST(Interpreter, DataParallelTwoAndFourMatchOneWorkerInFloat64) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), kSteps);
  ASSERT_EQ(serial.size(), 3u);
  for (int dp : {2, 4}) {
    const auto parallel = weights_after(mlp_plan(dp, 1, 1), kSteps);
    EXPECT_LT(max_abs_difference(serial, parallel), 1e-9) << "dp=" << dp;
  }
}

TEST(Interpreter, GPipeAndOneFOneBWithTwoStagesMatchSerialBackprop) {
  const auto serial = weights_after(mlp_plan(1, 1, 1), kSteps);
  for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    const auto piped = weights_after(mlp_plan(1, 2, 4, schedule), kSteps);
    EXPECT_LT(max_abs_difference(serial, piped), 1e-9);
  }
}

// The training loss of each step, in float32 with Adam (lr 1e-3), as strata run trains.
std::vector<double> adam_losses(const Plan& plan, int steps) {
  CpuBackend backend;
  TrainConfig config;
  config.seed = training_runs::kSeed;
  Trainer<float> trainer(plan, backend, config);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(trainer.train_batch(train_set(), batch_indices(s)));
  return losses;
}

// In float32 the strategies sum in other orders than one worker does, so they agree only up to
// rounding: the claim is on the loss curve, step by step within 1e-3 relative, as one compares a
// DDP run with a single-GPU one (measured: at most 1.7e-7, dp=4).
TEST(Interpreter, Float32AdamLossCurvesOfEveryStrategyFollowOneWorker) {
  const auto serial = adam_losses(mlp_plan(1, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam), kSteps);
  ASSERT_EQ(serial.size(), static_cast<std::size_t>(kSteps));
  EXPECT_LT(serial.back(), 0.8 * serial.front());  // it learns: the curve is worth comparing
  const std::vector<std::pair<std::string, Plan>> strategies = {
      {"dp=2", mlp_plan(2, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam)},
      {"dp=4", mlp_plan(4, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam)},
      {"gpipe pp=2", mlp_plan(1, 2, 4, PipelineSchedule::gpipe, Optimizer::adam)},
      {"1f1b pp=2", mlp_plan(1, 2, 4, PipelineSchedule::one_f_one_b, Optimizer::adam)},
  };
  for (const auto& [name, plan] : strategies) {
    const auto losses = adam_losses(plan, kSteps);
    ASSERT_EQ(losses.size(), serial.size()) << name;
    double worst = 0;
    for (std::size_t s = 0; s < losses.size(); ++s)
      worst = std::max(worst, std::abs(losses[s] / serial[s] - 1));
    EXPECT_LT(worst, 1e-3) << name;
    std::printf("%s: largest relative loss difference over %d steps %.3g\n", name.c_str(), kSteps, worst);
  }
}

TEST(Interpreter, TrainingMovesTheWeights) {
  const auto before = weights_after(mlp_plan(1, 1, 1), 0);
  const auto after = weights_after(mlp_plan(1, 1, 1), kSteps);
  EXPECT_GT(max_abs_difference(before, after), 1e-3);
}

// Editing the Plan edits the run: with every allreduce's group cut to rank 0 alone, the two
// replicas no longer exchange gradients and their weights part.
TEST(Interpreter, CuttingTheAllreduceGroupSplitsTheReplicas) {
  Plan plan = mlp_plan(2, 1, 1);
  const auto together = max_abs_difference(weights_after(plan, 3, 0), weights_after(plan, 3, 1));
  EXPECT_LT(together, 1e-12);
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    Task& t = plan.mutable_task(i);
    if (t.kind != TaskKind::allreduce) continue;
    t.group = {0};
    std::erase_if(t.reads, [&](BufferIndex b) { return plan.buffer(b).worker != 0; });
    std::erase_if(t.writes, [&](BufferIndex b) { return plan.buffer(b).worker != 0; });
  }
  plan.validate();
  const auto apart = max_abs_difference(weights_after(plan, 3, 0), weights_after(plan, 3, 1));
  EXPECT_GT(apart, 1e-4);
}

TEST(Interpreter, KindWithoutKernelIsRefusedBeforeAnythingRuns) {
  Plan plan(1);
  Task t;
  t.id = "it0/fixed";
  t.kind = TaskKind::fixed;
  t.worker = 0;
  plan.add_task(t);
  plan.validate();
  try {
    check_kernels(plan, "edited.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("edited.json"), std::string::npos) << what;
    EXPECT_NE(what.find("/tasks/0"), std::string::npos) << what;
    EXPECT_NE(what.find("it0/fixed"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Interpreter, MeasuredTraceHasExactlyThePlansTaskIds) {
  const Plan plan = mlp_plan(2, 2, 2);
  CpuBackend backend;
  Trainer<float> trainer(plan, backend, TrainConfig{});
  std::vector<TaskTiming> timings;
  trainer.train_batch(train_set(), batch_indices(0), &timings);
  const Trace trace = measured_trace(plan, timings, "localhost", "test");
  std::set<std::string> plan_ids;
  for (const Task& t : plan.tasks()) plan_ids.insert(t.id);
  std::set<std::string> trace_ids;
  for (const TraceRecord& r : trace.records) {
    trace_ids.insert(r.id);
    EXPECT_LE(r.start, r.end) << r.id;
  }
  EXPECT_EQ(plan_ids, trace_ids);
  EXPECT_GT(trainer.bytes_sent(), 0u);
}

// --- one Plan spread over processes (ProcessShare), all in this process --------------------------

// N "processes" in this one, connected as MpiTransport connects real ones: a send stages its
// payload and at once tells the receiving process's Interpreter (MPI's progress thread does so on
// arrival); an announcement is a direct call; an allreduce blocks its comm thread until every
// member process has entered it, as MPI's ring does. begin_run() is a barrier.
struct LoopbackWorld {
  explicit LoopbackWorld(int processes) : sinks(static_cast<std::size_t>(processes), nullptr) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<RemoteCompletions*> sinks;  // by process, set by begin_run()
  int at_barrier = 0;
  int barrier_round = 0;
  std::map<TaskIndex, std::size_t> entered;  // allreduce: members inside
  std::map<TaskIndex, std::vector<float>> staged;
};

class LoopbackTransport final : public Transport<float> {
 public:
  LoopbackTransport(LoopbackWorld& world, int process) : world_(world), process_(process) {}
  void send(const Plan& plan, TaskIndex task, Workspace<float>& ws) override {
    const Task& t = plan.task(task);
    RemoteCompletions* peer = nullptr;
    {
      std::lock_guard<std::mutex> lock(world_.mutex);
      world_.staged[task].assign(ws.data(t.reads[0]), ws.data(t.reads[0]) + ws.size(t.reads[0]));
      peer = world_.sinks[static_cast<std::size_t>(t.peer)];
    }
    peer->remote_completed(task);
  }
  void recv(const Plan& plan, TaskIndex task, Workspace<float>& ws) override {
    std::lock_guard<std::mutex> lock(world_.mutex);
    const auto it = world_.staged.find(matching_send(plan, plan.task(task)));
    STRATA_ASSERT(it != world_.staged.end(),
                  "recv " + plan.task(task).id + " started before its payload arrived");
    STRATA_ASSERT(static_cast<std::int64_t>(it->second.size()) == ws.size(plan.task(task).writes[0]),
                  "payload size");
    std::copy(it->second.begin(), it->second.end(), ws.data(plan.task(task).writes[0]));
  }
  void send_values(const Plan&, TaskIndex, std::vector<float>, Workspace<float>&) override {
    STRATA_ASSERT(false, "the loopback transport moves whole buffers only");
  }
  void recv_values(const Plan&, TaskIndex, std::span<float>, Workspace<float>&) override {
    STRATA_ASSERT(false, "the loopback transport moves whole buffers only");
  }
  void collective(const Plan& plan, TaskIndex task, Workspace<float>&) override {
    std::unique_lock<std::mutex> lock(world_.mutex);
    ++world_.entered[task];
    world_.changed.notify_all();
    world_.changed.wait(lock, [&] { return world_.entered[task] == plan.task(task).group.size(); });
  }
  std::uint64_t bytes_sent() const override { return 0; }
  std::string name() const override { return "loopback"; }
  int process_of(WorkerId worker) const override { return worker; }
  int process() const override { return process_; }
  void begin_run(RemoteCompletions& sink) override {
    std::unique_lock<std::mutex> lock(world_.mutex);
    world_.sinks[static_cast<std::size_t>(process_)] = &sink;
    const int round = world_.barrier_round;
    if (++world_.at_barrier == static_cast<int>(world_.sinks.size())) {
      world_.at_barrier = 0;
      ++world_.barrier_round;
      world_.changed.notify_all();
    }
    world_.changed.wait(lock, [&] { return world_.barrier_round != round; });
  }
  void announce(TaskIndex task, const std::vector<int>& processes) override {
    std::vector<RemoteCompletions*> told;
    {
      std::lock_guard<std::mutex> lock(world_.mutex);
      for (int p : processes) told.push_back(world_.sinks[static_cast<std::size_t>(p)]);
    }
    for (RemoteCompletions* sink : told) sink->remote_completed(task);
  }

 private:
  LoopbackWorld& world_;
  int process_;
};

// A random Plan with real kernels, in the manner of dispatch_test.cpp's random plans: compute
// tasks (grad_accumulate, each into a buffer of its own), send/recv pairs and allreduces over
// random groups in random ring order, random priorities (few values) and random data and
// control dependencies on the 32 tasks before (none for a recv).
Plan random_spread_plan(std::uint32_t seed, int num_tasks, int workers) {
  std::mt19937 rng(seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Plan plan(workers);
  auto buffer = [&](WorkerId w, int elements) {
    return plan.add_buffer(
        Buffer{"b" + std::to_string(plan.buffers().size()), w, 4.0 * elements, DType::fp32, false});
  };
  std::vector<BufferIndex> source;
  for (WorkerId w = 0; w < workers; ++w) source.push_back(buffer(w, 512));
  auto add = [&](Task t) {
    t.id = "t" + std::to_string(plan.size());
    t.priority = uniform(0, 4);
    const auto index = static_cast<int>(plan.size());
    // A recv depends on its send alone, as the strategies write it (matching_send finds it so).
    for (int d = index == 0 || t.kind == TaskKind::recv ? 0 : uniform(0, 3); d > 0; --d) {
      const auto dep = static_cast<TaskIndex>(uniform(std::max(0, index - 32), index - 1));
      (uniform(0, 1) == 0 ? t.data_deps : t.control_deps).push_back(dep);
    }
    return plan.add_task(std::move(t));
  };
  while (static_cast<int>(plan.size()) < num_tasks) {
    const int roll = uniform(0, 9);
    const int elements = uniform(1, 512);
    Task t;
    if (roll < 5) {
      t.kind = TaskKind::grad_accumulate;
      t.worker = uniform(0, workers - 1);
      const BufferIndex out = buffer(t.worker, elements);
      t.reads = {source[static_cast<std::size_t>(t.worker)], out};
      t.writes = {out};
      add(std::move(t));
    } else if (roll < 8) {
      t.kind = TaskKind::send;
      t.stream = Stream::comm;
      t.worker = uniform(0, workers - 1);
      t.peer = (t.worker + uniform(1, workers - 1)) % workers;
      t.reads = {buffer(t.worker, elements)};
      Task r;
      r.kind = TaskKind::recv;
      r.stream = Stream::comm;
      r.worker = t.peer;
      r.peer = t.worker;
      r.writes = {buffer(r.worker, elements)};
      const TaskIndex send = add(std::move(t));
      plan.add_data_dep(send, add(std::move(r)));
    } else {
      t.kind = TaskKind::allreduce;
      t.stream = Stream::comm;
      t.algo = CollectiveAlgo::ring;
      for (WorkerId w = 0; w < workers; ++w) t.group.push_back(w);
      std::shuffle(t.group.begin(), t.group.end(), rng);
      t.group.resize(static_cast<std::size_t>(uniform(2, workers)));
      for (WorkerId w : t.group) t.reads.push_back(buffer(w, elements));
      t.writes = t.reads;
      add(std::move(t));
    }
  }
  plan.validate();
  return plan;
}

// Every worker its own process, on one random Plan after another: each process runs exactly its
// own tasks and every run ends. A deadlock cannot be failed and cleaned up (its threads never
// return), so it ends the test program with a message naming the seed.
TEST(ProcessShare, RandomPlansSpreadOverProcessesFinishWithoutDeadlock) {
  constexpr int kWorkers = 4;
  CpuBackend backend;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    const Plan plan = random_spread_plan(seed, 400, kWorkers);
    LoopbackWorld world(kWorkers);
    std::vector<std::unique_ptr<Workspace<float>>> spaces;
    std::vector<std::unique_ptr<LoopbackTransport>> transports;
    std::vector<std::unique_ptr<TaskRunner<float>>> runners;
    std::vector<std::unique_ptr<Interpreter<float>>> interpreters;
    for (int p = 0; p < kWorkers; ++p) {
      spaces.push_back(std::make_unique<Workspace<float>>(plan));
      transports.push_back(std::make_unique<LoopbackTransport>(world, p));
      runners.push_back(std::make_unique<TaskRunner<float>>(plan, backend, *spaces.back(), *transports.back(),
                                                            OptimizerSettings{}));
      interpreters.push_back(std::make_unique<Interpreter<float>>(plan, *runners.back(), false));
    }
    std::vector<std::vector<TaskTiming>> timings(kWorkers);
    std::atomic<int> done{0};
    std::vector<std::thread> processes;
    for (int p = 0; p < kWorkers; ++p)
      processes.emplace_back([&, p] {
        timings[static_cast<std::size_t>(p)] = interpreters[static_cast<std::size_t>(p)]->run();
        ++done;
      });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (done < kWorkers && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (done < kWorkers) {
      std::fprintf(stderr, "ProcessShare: seed %u: %d of %d processes still running after 30 s: deadlock\n",
                   seed, kWorkers - done.load(), kWorkers);
      std::fflush(stderr);
      std::_Exit(1);
    }
    for (auto& th : processes) th.join();
    for (TaskIndex t = 0; t < plan.size(); ++t)
      for (int p = 0; p < kWorkers; ++p) {
        const auto participants = plan.task(t).participants();
        const bool local = std::find(participants.begin(), participants.end(), p) != participants.end();
        EXPECT_EQ(timings[static_cast<std::size_t>(p)][t].end > 0, local)
            << "seed " << seed << ": task " << plan.task(t).id << " in process " << p;
      }
  }
}

}  // namespace
}  // namespace strata::real
