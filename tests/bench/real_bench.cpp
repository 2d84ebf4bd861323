// strata_bench_real: the real executor (strata::real) against baselines measured in the same
// run, single-threaded OpenBLAS throughout (CpuBackend sets it; it is built before anything).
//
// 1. gemm/<model>/<task>: every GEMM that the zoo's MLP (784-256-128-10) and LeNet-5 Plans run at
//    global batch 64, dp=1 — shapes, transposes, leading dimensions and beta derived from the
//    Plans' tasks as the kernels issue them (a conv task: one im2col GEMM per image) — through
//    CpuBackend::gemm (argument checks included) and through cblas_sgemm directly. Each
//    iteration times a block of ~0.25 ms of each, in alternating order, so both see the same
//    machine; the ratio is backend throughput / direct throughput from the fastest block of
//    each. Goal: >= 0.90 for every shape.
// 2. interpreter/empty_*: Interpreter::run on a Plan of N empty `fixed` tasks (duration_s = 0)
//    chained by data dependencies, all on one worker or alternating between two (each task a
//    cross-thread hand-off); overhead per task = wall time of the run / N, median over runs.
//    interpreter/mlp_tasks: the median duration of the MLP Plan's compute tasks (Trainer, Adam,
//    fp32, batch 64), and one batch's wall time split into task time, time between tasks and
//    time outside them. Goal: overhead / median task < 0.05.
// 3. mlp/trainer_vs_hand: samples/s of Trainer<float> on one worker against HandMlp
//    (hand_mlp.hpp), the same kernels called from a plain loop, on the same Fashion-MNIST batches
//    from the same initial weights (the mean losses printed must agree): once doing the Plan's
//    GEMMs (goal: trainer / hand >= 0.8), once without the first layer's input gradient, which
//    the Plan computes but nothing reads. Each round runs kTrainBatches batches per side, in
//    rotating order; samples/s from the fastest round of each side.
// Fastest blocks and rounds, and medians, because the machine may be shared: other processes
// stretch some samples, rarely all. Workers are pinned as Trainer pins them by default (worker w
// on core w), and the hand-written loops run on core 0 too.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "hand_mlp.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/exec/interpreter.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/real/transport/thread_transport.hpp"

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;
using real::Transpose;

constexpr std::int64_t kBatch = 64;
constexpr double kGemmBlockSeconds = 0.25e-3;
constexpr int kGemmIterations = 80;
constexpr int kEmptyTasks = 20000;
constexpr int kEmptyRuns = 7;
constexpr int kMlpTaskBatches = 40;
constexpr int kTrainBatches = 200;
constexpr int kTrainRounds = 5;  // each: kTrainBatches on each side

real::CpuBackend& cpu_backend() {
  static real::CpuBackend backend;  // sets OpenBLAS to one thread, process-wide
  return backend;
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

template <typename F>
double seconds_per_call(int calls, F&& f) {
  const auto start = Clock::now();
  for (int i = 0; i < calls; ++i) f();
  return std::chrono::duration<double>(Clock::now() - start).count() / calls;
}

Plan lowered(const std::string& model) {
  StrategyConfig c;
  c.global_batch = kBatch;
  c.optimizer = Optimizer::adam;
  c.dtype = DType::fp32;
  Plan plan = lower(make_model(model), c);
  plan.validate();
  return plan;
}

// ---- 1. GEMM ----

struct Gemm {
  std::string name;  // model/phase/layer
  Transpose ta = Transpose::no;
  Transpose tb = Transpose::no;
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float beta = 0;
  std::int64_t per_task = 1;  // GEMMs the task issues (conv: one per image)
  double backend_s = 0;       // fastest block, s per GEMM
  double direct_s = 0;

  double flops() const { return 2.0 * static_cast<double>(m * n * k); }
  double ratio() const { return direct_s / backend_s; }
  std::string dims() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
           (ta == Transpose::yes ? "T" : "N") + (tb == Transpose::yes ? "T" : "N") +
           " beta=" + fixed(beta, 0);
  }
};

// The GEMM `t` issues, as real_exec/src/kernels/kernels.cpp and kernels_conv.cpp call it; false for a
// task without one. Linear and conv weights carry a bias, so forward GEMMs add to it (beta 1);
// backward-weight GEMMs add into dW (microbatches accumulate, TaskRunner passes accumulate).
bool gemm_of(const Task& t, Gemm& g) {
  const bool linear = t.kind == TaskKind::linear_fwd || t.kind == TaskKind::linear_bwd_data ||
                      t.kind == TaskKind::linear_bwd_weight;
  const bool conv = t.kind == TaskKind::conv_fwd || t.kind == TaskKind::conv_bwd_data ||
                    t.kind == TaskKind::conv_bwd_weight;
  if (!linear && !conv) return false;
  const bool fwd = t.kind == TaskKind::linear_fwd || t.kind == TaskKind::conv_fwd;
  const bool data = t.kind == TaskKind::linear_bwd_data || t.kind == TaskKind::conv_bwd_data;
  if (linear) {  // Y[m,n] = X[m,k] W[k,n]
    const std::int64_t m = *t.attr_int("m"), k = *t.attr_int("k"), n = *t.attr_int("n");
    if (fwd)
      g = Gemm{"", Transpose::no, Transpose::no, m, n, k, k, n, n, 1};
    else if (data)
      g = Gemm{"", Transpose::no, Transpose::yes, m, k, n, n, n, k, 0};
    else
      g = Gemm{"", Transpose::yes, Transpose::no, k, n, m, k, n, n, 1};
    return true;
  }
  // Per image: Y[c_out, oh*ow] = W[c_out, c_in*kh*kw] cols[c_in*kh*kw, oh*ow].
  const std::int64_t pad = *t.attr_int("pad"), stride = *t.attr_int("stride");
  const std::int64_t kh = *t.attr_int("kh"), kw = *t.attr_int("kw");
  const std::int64_t oh = (*t.attr_int("h_in") + 2 * pad - kh) / stride + 1;
  const std::int64_t ow = (*t.attr_int("w_in") + 2 * pad - kw) / stride + 1;
  const std::int64_t rows = *t.attr_int("c_in") * kh * kw;
  const std::int64_t cols = oh * ow;
  const std::int64_t out = *t.attr_int("c_out");
  if (fwd)
    g = Gemm{"", Transpose::no, Transpose::no, out, cols, rows, rows, cols, cols, 1};
  else if (data)
    g = Gemm{"", Transpose::yes, Transpose::no, rows, cols, out, rows, cols, cols, 0};
  else
    g = Gemm{"", Transpose::no, Transpose::yes, out, rows, cols, cols, cols, rows, 1};
  g.per_task = *t.attr_int("n");
  return true;
}

std::vector<Gemm>& gemms() {
  static std::vector<Gemm> all = [] {
    std::vector<Gemm> out;
    for (const char* model : {"mlp", "lenet5"}) {
      const Plan plan = lowered(model);
      for (const Task& t : plan.tasks()) {
        Gemm g;
        if (!gemm_of(t, g)) continue;
        const auto at = t.id.find("/mb0/");
        g.name = std::string(model) + "/" + (at == std::string::npos ? t.id : t.id.substr(at + 5));
        out.push_back(g);
      }
    }
    return out;
  }();
  return all;
}

std::vector<float> random_matrix(std::int64_t elems, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  std::vector<float> v(static_cast<std::size_t>(elems));
  for (float& x : v) x = u(rng);
  return v;
}

void bm_gemm(benchmark::State& state, Gemm& g) {
  std::mt19937 rng(1);
  const auto a = random_matrix((g.ta == Transpose::no ? g.m : g.k) * g.lda, rng);
  const auto b = random_matrix((g.tb == Transpose::no ? g.k : g.n) * g.ldb, rng);
  auto c = random_matrix(g.m * g.ldc, rng);
  real::Backend& backend = cpu_backend();
  auto via_backend = [&] {
    backend.gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0F, a.data(), g.lda, b.data(), g.ldb, g.beta, c.data(), g.ldc);
  };
  auto cblas = [](Transpose t) { return t == Transpose::yes ? CblasTrans : CblasNoTrans; };
  auto direct = [&] {
    cblas_sgemm(CblasRowMajor, cblas(g.ta), cblas(g.tb), static_cast<blasint>(g.m), static_cast<blasint>(g.n),
                static_cast<blasint>(g.k), 1.0F, a.data(), static_cast<blasint>(g.lda), b.data(),
                static_cast<blasint>(g.ldb), g.beta, c.data(), static_cast<blasint>(g.ldc));
  };
  seconds_per_call(3, via_backend);
  const int calls =
      std::clamp(static_cast<int>(kGemmBlockSeconds / seconds_per_call(10, direct)), 1, 1 << 20);
  g.backend_s = g.direct_s = 1e9;
  bool backend_first = true;
  for (auto _ : state) {
    double through_backend = 0, straight = 0;
    if (backend_first) {
      through_backend = seconds_per_call(calls, via_backend);
      straight = seconds_per_call(calls, direct);
    } else {
      straight = seconds_per_call(calls, direct);
      through_backend = seconds_per_call(calls, via_backend);
    }
    backend_first = !backend_first;
    state.SetIterationTime(through_backend * calls);
    g.backend_s = std::min(g.backend_s, through_backend);
    g.direct_s = std::min(g.direct_s, straight);
  }
  state.SetLabel(g.dims());
  state.counters["calls_per_block"] = calls;
  state.counters["backend_gflops"] = g.flops() / g.backend_s * 1e-9;
  state.counters["sgemm_gflops"] = g.flops() / g.direct_s * 1e-9;
  state.counters["backend_vs_sgemm"] = g.ratio();
}

// ---- 2. interpreter overhead ----

struct Overhead {
  std::vector<double> per_task_s;  // one per run
  std::vector<double> task_s;      // MLP compute-task durations
  // Per MLP batch (its tasks run one at a time on one worker, so they never overlap): wall time
  // of train_batch = the sum of its task durations (busy) + the time between tasks (gaps) + the
  // time outside the first start .. last end span (outside: binding the batch, setting up the
  // run, waking the worker thread and, at the end, the calling thread).
  struct Batch {
    double wall = 0, busy = 0, gaps = 0, outside = 0;
  };
  std::vector<Batch> batches;
  // The batch of median wall time, whose parts add up (medians of the parts would not).
  Batch median_batch() const {
    std::vector<Batch> sorted = batches;
    std::sort(sorted.begin(), sorted.end(), [](const Batch& a, const Batch& b) { return a.wall < b.wall; });
    return sorted.empty() ? Batch{} : sorted[sorted.size() / 2];
  }
};
std::map<std::string, Overhead>& overheads() {
  static std::map<std::string, Overhead> all;
  return all;
}

// `count` empty fixed tasks, task i on worker i mod `workers`, each data-dependent on the last.
Plan empty_chain(int count, int workers) {
  Plan plan(workers);
  plan.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    Task t;
    t.id = "it0/t" + std::to_string(i);
    t.kind = TaskKind::fixed;
    t.worker = i % workers;
    t.attrs["duration_s"] = 0.0;
    const TaskIndex index = plan.add_task(std::move(t));
    if (i > 0) plan.add_data_dep(index - 1, index);
  }
  plan.validate();
  return plan;
}

void bm_empty_tasks(benchmark::State& state, int workers) {
  const Plan plan = empty_chain(kEmptyTasks, workers);
  real::check_kernels(plan, "bench");
  real::Workspace<float> ws(plan);
  real::ThreadTransport<float> transport;
  real::TaskRunner<float> runner(plan, cpu_backend(), ws, transport, real::OptimizerSettings{});
  real::Interpreter<float> interpreter(plan, runner, real::TrainConfig{}.pin_workers);
  interpreter.run();  // starts the threads' first waits, faults the timing array in
  Overhead& o = overheads()[workers == 1 ? "1worker" : "handoff"];
  for (auto _ : state) {
    double wall = 0;
    interpreter.run(&wall);
    state.SetIterationTime(wall);
    o.per_task_s.push_back(wall / kEmptyTasks);
  }
  state.counters["tasks"] = kEmptyTasks;
  state.counters["per_task_us"] = median(o.per_task_s) * 1e6;
}

const real::LabelledImages& train_set() {
  static const real::LabelledImages data = real::load_fashion_mnist(real::DatasetSplit::train);
  return data;
}

// Batch b of the epoch-0 order, cycling over the full batches (the last, partial one is skipped).
std::vector<std::int64_t> batch(const real::EpochBatches& batches, std::int64_t b) {
  auto span = batches.batch(b % (train_set().count / kBatch));
  return {span.begin(), span.end()};
}

void bm_mlp_tasks(benchmark::State& state) {
  const Plan plan = lowered("mlp");
  real::Trainer<float> trainer(plan, cpu_backend(), real::TrainConfig{});
  const real::EpochBatches batches(train_set().count, kBatch, 0);
  std::int64_t b = 0;
  for (int i = 0; i < 3; ++i) trainer.train_batch(train_set(), batch(batches, b++));  // warm-up
  Overhead& o = overheads()["mlp"];
  for (auto _ : state) {
    std::vector<real::TaskTiming> timings;
    const auto indices = batch(batches, b++);
    const auto start = Clock::now();
    trainer.train_batch(train_set(), indices, &timings);
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(wall);
    double busy = 0, first = 1e9, last = 0;
    for (TaskIndex t = 0; t < plan.size(); ++t) {
      const double d = timings[t].end - timings[t].start;
      if (plan.task(t).stream == Stream::compute) o.task_s.push_back(d);
      busy += d;
      first = std::min(first, timings[t].start);
      last = std::max(last, timings[t].end);
    }
    o.batches.push_back({wall, busy, last - first - busy, wall - (last - first)});
  }
  state.counters["tasks_per_batch"] = static_cast<double>(plan.size());
  state.counters["median_task_us"] = median(o.task_s) * 1e6;
  const Overhead::Batch m = o.median_batch();
  state.counters["batch_us"] = m.wall * 1e6;
  state.counters["busy_us"] = m.busy * 1e6;
  state.counters["gaps_us"] = m.gaps * 1e6;
  state.counters["outside_us"] = m.outside * 1e6;
}

// ---- 3. MLP training throughput ----

// The three sides of the training benchmark, each timed on kTrainBatches batches per round.
enum Side { side_trainer, side_hand, side_hand_minimal, side_count };

struct Training {
  double best_s[side_count] = {1e9, 1e9, 1e9};  // fastest round per side
  double loss[side_count] = {0, 0, 0};          // summed over every batch of every round
  int rounds = 0;
  double samples_per_s(Side side) const { return static_cast<double>(kTrainBatches * kBatch) / best_s[side]; }
  double ratio(Side baseline) const { return best_s[baseline] / best_s[side_trainer]; }
  double mean_loss(Side side) const { return loss[side] / (rounds * kTrainBatches); }
};
Training& training_result() {
  static Training result;
  return result;
}

// Pins the calling thread to one core for its lifetime, then restores its former affinity.
class PinnedToCore {
 public:
  explicit PinnedToCore(int core) {
    pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);  // best effort, as Interpreter's
  }
  ~PinnedToCore() { pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_); }
  PinnedToCore(const PinnedToCore&) = delete;
  PinnedToCore& operator=(const PinnedToCore&) = delete;

 private:
  cpu_set_t saved_{};
};

void bm_mlp_training(benchmark::State& state) {
  // The Trainer's worker threads are pinned to core 0; the hand-written loops run on this thread,
  // pinned there too, so that both sides get one and the same core (an unpinned loop could move
  // away from another process that a pinned worker must share its core with).
  const PinnedToCore pinned(0);
  Training& r = training_result();
  const Plan plan = lowered("mlp");
  real::Trainer<float> trainer(plan, cpu_backend(), real::TrainConfig{});
  HandMlp hand(plan, trainer, cpu_backend(), true);      // the Plan's GEMMs, first-layer dX included
  HandMlp minimal(plan, trainer, cpu_backend(), false);  // what a hand-written trainer needs
  const real::EpochBatches batches(train_set().count, kBatch, 0);
  auto train = [&](int side, std::int64_t b) {
    const auto indices = batch(batches, b);
    if (side == side_trainer) return trainer.train_batch(train_set(), indices);
    return (side == side_hand ? hand : minimal).train_batch(train_set(), indices);
  };
  std::int64_t next[side_count] = {0, 0, 0};
  for (auto _ : state) {
    double seconds[side_count] = {0, 0, 0};
    for (int i = 0; i < side_count; ++i) {  // rotate the order so that no side always runs first
      const int side = (r.rounds + i) % side_count;
      const auto start = Clock::now();
      for (int b = 0; b < kTrainBatches; ++b) r.loss[side] += train(side, next[side]++);
      seconds[side] = std::chrono::duration<double>(Clock::now() - start).count();
      r.best_s[side] = std::min(r.best_s[side], seconds[side]);
    }
    ++r.rounds;
    state.SetIterationTime(seconds[side_trainer]);
  }
  state.counters["trainer_samples_per_s"] = r.samples_per_s(side_trainer);
  state.counters["hand_samples_per_s"] = r.samples_per_s(side_hand);
  state.counters["hand_minimal_samples_per_s"] = r.samples_per_s(side_hand_minimal);
  state.counters["trainer_vs_hand"] = r.ratio(side_hand);
  state.counters["trainer_vs_hand_minimal"] = r.ratio(side_hand_minimal);
}

// ---- summary ----

std::string verdict(bool met) { return met ? "met" : "MISSED"; }

void print_summary() {
  std::cout
      << "\n=== strata_bench_real summary (OpenBLAS 1 thread; ratios against baselines of this run) ===\n";
  double min_ratio = 1e9;
  std::string worst;
  for (const Gemm& g : gemms()) {
    if (g.backend_s <= 0 || g.backend_s >= 1e9) continue;
    std::cout << "gemm " << g.name << " " << g.dims() << " x" << g.per_task << ": backend "
              << fixed(g.flops() / g.backend_s * 1e-9, 1) << " GFLOP/s, sgemm "
              << fixed(g.flops() / g.direct_s * 1e-9, 1) << " GFLOP/s, ratio " << fixed(g.ratio(), 3) << '\n';
    if (g.ratio() < min_ratio) min_ratio = g.ratio(), worst = g.name;
  }
  if (!worst.empty())
    std::cout << "gemm_backend_vs_sgemm_min_ratio " << fixed(min_ratio, 3) << " (" << worst
              << ") (goal >= 0.90: " << verdict(min_ratio >= 0.90) << ")\n";
  auto& o = overheads();
  if (o.count("mlp") != 0) {
    const double task = median(o["mlp"].task_s);
    const Overhead::Batch m = o["mlp"].median_batch();
    std::cout << "mlp_median_compute_task_us " << fixed(task * 1e6, 2) << '\n'
              << "mlp_trainer_batch_us " << fixed(m.wall * 1e6, 1) << " = tasks " << fixed(m.busy * 1e6, 1)
              << " + between tasks " << fixed(m.gaps * 1e6, 1) << " + outside the tasks' span "
              << fixed(m.outside * 1e6, 1) << " (the batch of median wall time)\n";
    for (const char* key : {"1worker", "handoff"}) {
      if (o.count(key) == 0) continue;
      const double per_task = median(o[key].per_task_s);
      std::cout << "overhead_" << key << "_us " << fixed(per_task * 1e6, 3) << "  overhead_" << key
                << "_vs_median_task " << fixed(per_task / task, 4)
                << " (goal < 0.05: " << verdict(per_task / task < 0.05) << ")\n";
    }
  }
  const Training& t = training_result();
  if (t.rounds > 0) {
    std::cout << "mlp_trainer_samples_per_s " << fixed(t.samples_per_s(side_trainer), 0) << '\n'
              << "mlp_hand_samples_per_s " << fixed(t.samples_per_s(side_hand), 0)
              << " (the Plan's GEMMs, first-layer input gradient included)\n"
              << "mlp_hand_minimal_samples_per_s " << fixed(t.samples_per_s(side_hand_minimal), 0)
              << " (no first-layer input gradient)\n"
              << "mlp_mean_loss trainer " << fixed(t.mean_loss(side_trainer), 6) << " hand "
              << fixed(t.mean_loss(side_hand), 6) << " hand_minimal "
              << fixed(t.mean_loss(side_hand_minimal), 6) << '\n'
              << "mlp_trainer_vs_hand_ratio " << fixed(t.ratio(side_hand), 3)
              << " (goal >= 0.8: " << verdict(t.ratio(side_hand) >= 0.8) << ")\n"
              << "mlp_trainer_vs_hand_minimal_ratio " << fixed(t.ratio(side_hand_minimal), 3) << '\n';
  }
  std::cout.flush();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  return run_benchmark_program(argc, argv, "strata_bench_real", [&] {
    cpu_backend();
    for (Gemm& g : gemms())
      benchmark::RegisterBenchmark(("gemm/" + g.name).c_str(), [&g](benchmark::State& s) { bm_gemm(s, g); })
          ->UseManualTime()
          ->Iterations(kGemmIterations)
          ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("interpreter/empty_1worker",
                                 [](benchmark::State& s) { bm_empty_tasks(s, 1); })
        ->UseManualTime()
        ->Iterations(kEmptyRuns)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("interpreter/empty_handoff",
                                 [](benchmark::State& s) { bm_empty_tasks(s, 2); })
        ->UseManualTime()
        ->Iterations(kEmptyRuns)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("interpreter/mlp_tasks", bm_mlp_tasks)
        ->UseManualTime()
        ->Iterations(kMlpTaskBatches)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("mlp/trainer_vs_hand", bm_mlp_training)
        ->UseManualTime()
        ->Iterations(kTrainRounds)
        ->Unit(benchmark::kMillisecond);
    benchmark::RunSpecifiedBenchmarks();
    print_summary();
  });
}
