// strata_bench_solvers: the time one iteration of each training solver takes on this machine
// (strata::real, OpenBLAS one thread, fp32, Fashion-MNIST), next to backprop's, as ratios
// against backprop runs measured in the same process (docs/solvers.md, "Benchmarks").
//
// 1. Layer-group solvers, through the real Trainer (the same Plan interpreter as backprop):
//    - backprop on the zoo MLP 784-256-128-10 at batch 64 per worker: 1 worker (global batch 64)
//      and pp=2 1F1B (global batch 128 in 2 microbatches of 64, the size of an AMPNet instance);
//    - AMPNet (mak = 4, muf = 1) and local parallelism (2 chunks, chunked) on 2 workers, 16
//      instances of 64 samples per Plan.
//    Reported: time per Plan iteration, per instance and per sample; the per-sample time against
//    backprop's on 1 worker and on pp=2 (both: the solvers run on 2 workers).
// 2. pdADMM and pdADMM-G-Q (admm.hpp), float32, on the 5 x 256 MLP 784-256-256-256-256-10, full
//    batch of kAdmmSamples images (a seed-1 permutation of the training set), cold start from
//    seed 0, default settings (rho = nu = 1e-4). One ADMM iteration (every layer's p, W, b, z,
//    then q, u) serially (iterate_serial, dlADMM's sweep) and on 2 workers (admm_workers.hpp:
//    pdADMM's Jacobi order, layer l on worker floor(l * 2 / 5) as the lowering places it). The
//    two networks run the same iterations in alternating order and must stay bitwise identical.
//    Compared with backprop: one ADMM iteration updates every weight once from all N samples;
//    its backprop equivalent is one pass over the same N samples in batches of 64 (N / 64 Adam
//    steps) on the same 5 x 256 MLP: backprop's time per sample x N, serial against 1 worker,
//    2 workers against pp=2.
// 3. GIST (gcn.hpp) on the kNN graph (k = 10) of kGraphNodes seeded Fashion-MNIST training
//    images, GCN 784-256-256-10 with layer norm, standardised features: one round with m = 2
//    sites of zeta = 10 local Adam steps (sites in sequence, and on 2 threads) against zeta
//    full-GCN Adam steps on one thread.
//    Each ADMM worker's CPU time per iteration is printed too: its split (worker 0 holds the
//    784-wide first layer) bounds the 2-worker speedup.
// Every figure is the fastest sample of its benchmark (the machine may be shared: other
// processes stretch some samples, rarely all); beside it the CPU time, summed over threads, and
// the cores other processes kept busy meanwhile (OtherLoad): a 2-worker figure taken beside one
// core of other work ran on one core, and says nothing about the speedup. Sample counts are
// fixed in code so that the whole program takes well under a minute on 2 cores.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "admm_workers.hpp"
#include "bench_main.hpp"
#include "bench_timing.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/data/knn_graph.hpp"
#include "strata/real/kernels/admm.hpp"
#include "strata/real/kernels/gcn.hpp"
#include "strata/real/reference/admm_train.hpp"
#include "strata/real/reference/gcn_train.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::bench {
namespace {

constexpr std::int64_t kBatch = 64;              // samples per worker step (backprop), per instance
constexpr int kWorkers = kAdmmWorkers;           // 2, never more: the machine has 2 cores
constexpr std::int64_t kSamplesPerBlock = 4096;  // Plan runs timed together, per sample
constexpr int kPlanBlocks = 6;
constexpr std::int64_t kAdmmSamples = 4096;
constexpr int kAdmmIterations = 6;  // timed, after one untimed
constexpr std::int64_t kGraphNodes = 2000;
constexpr std::int64_t kZeta = 10;
constexpr int kGcnRepeats = 6;
constexpr const char* kMlp = "784,256,128,10";  // the zoo's MLP
constexpr const char* kMlp5x256 = "784,256,256,256,256,10";
constexpr const char* kBackprop1 = "backprop/mlp/1worker";  // the baselines of the layer-group solvers
constexpr const char* kBackpropPp2 = "backprop/mlp/pp2_1f1b";

real::CpuBackend& cpu_backend() {
  static real::CpuBackend backend;  // sets OpenBLAS to one thread, process-wide
  return backend;
}

const real::LabelledImages& train_set() {
  static const real::LabelledImages data = real::load_fashion_mnist(real::DatasetSplit::train);
  return data;
}

// Samples one Plan iteration trains on, by benchmark name (for the per-sample figures).
std::map<std::string, std::int64_t>& samples_per_iteration() {
  static std::map<std::string, std::int64_t> all;
  return all;
}

double per_sample(const std::string& name) {
  return best(name) / static_cast<double>(samples_per_iteration().at(name));
}

// ---- 1. Plans through the Trainer ----

struct PlanCase {
  std::string name;  // benchmark and samples name
  std::string sizes = kMlp;
  SolverConfig solver;
  int pp = 1;  // backprop's pipeline stages; the layer-group solvers get kWorkers as dp
};

Plan plan_of(const PlanCase& c) {
  StrategyConfig config;
  config.optimizer = Optimizer::adam;
  config.dtype = DType::fp32;
  if (c.solver.solver == Solver::backprop) {
    config.pp = c.pp;
    config.microbatches = c.pp;
    config.schedule = PipelineSchedule::one_f_one_b;
    config.global_batch = kBatch * c.pp;
  } else {
    config.dp = kWorkers;
    config.global_batch = kBatch;  // per instance
  }
  return lower_solver(make_model("mlp", {{"sizes", c.sizes}}), config, c.solver);
}

std::vector<PlanCase> plan_cases() {
  SolverConfig ampnet;
  ampnet.solver = Solver::ampnet;
  ampnet.max_active_keys = 4;
  ampnet.min_update_frequency = 1;
  SolverConfig local;
  local.solver = Solver::local;
  local.chunks = 2;
  return {{kBackprop1, kMlp, {}, 1},
          {kBackpropPp2, kMlp, {}, 2},
          {"ampnet/mlp/2workers_mak4_muf1", kMlp, ampnet, 1},
          {"local/mlp/2workers_chunks2", kMlp, local, 1},
          {"backprop/mlp5x256/1worker", kMlp5x256, {}, 1},
          {"backprop/mlp5x256/pp2_1f1b", kMlp5x256, {}, 2}};
}

void bm_plan(benchmark::State& state, const PlanCase& c) {
  const Plan plan = plan_of(c);
  const std::int64_t batch = plan.info.global_batch;
  const std::int64_t runs = std::max<std::int64_t>(1, kSamplesPerBlock / batch);
  real::Trainer<float> trainer(plan, cpu_backend(), real::TrainConfig{});
  const real::EpochBatches batches(train_set().count, batch, 0);
  std::int64_t next = 0;
  auto train_one = [&] {
    const auto span = batches.batch(next++ % (train_set().count / batch));  // full batches only
    trainer.train_batch(train_set(), {span.begin(), span.end()});
  };
  for (std::int64_t r = 0; r < runs; ++r) train_one();  // warm-up: threads, buffers, caches
  samples_per_iteration()[c.name] = batch;
  for (auto _ : state) {
    const Stopwatch watch;
    const OtherLoad others;
    for (std::int64_t r = 0; r < runs; ++r) train_one();
    const double wall = watch.wall_seconds() / static_cast<double>(runs);
    record(c.name, wall, watch.cpu_seconds() / static_cast<double>(runs), others.cores());
    state.SetIterationTime(wall);
  }
  state.counters["samples_per_iteration"] = static_cast<double>(batch);
  state.counters["best_ms_per_iteration"] = best(c.name) * 1e3;
  state.counters["best_us_per_sample"] = per_sample(c.name) * 1e6;
  if (c.sizes != kMlp) return;
  if (has_samples(kBackprop1))
    state.counters["per_sample_vs_bp_1w"] = per_sample(c.name) / per_sample(kBackprop1);
  if (has_samples(kBackpropPp2))
    state.counters["per_sample_vs_bp_pp2"] = per_sample(c.name) / per_sample(kBackpropPp2);
}

// ---- 2. ADMM ----

// The 5 x 256 MLP of the ADMM tests (admm_convergence_test.cpp), input width first.
std::vector<std::int64_t> five_by_256() { return {784, 256, 256, 256, 256, 10}; }

const real::AdmmData<float>& admm_data() {
  static const real::AdmmData<float> data = real::admm_columns<float>(train_set(), kAdmmSamples, 1);
  return data;
}

// Per ADMM benchmark, each worker's mean CPU seconds per iteration: the layout's load balance.
struct AdmmBalance {
  WorkerSeconds worker_cpu_s{};
  // The speedup this split of the work allows at best: all of it over the largest share.
  double bound() const {
    double sum = 0, largest = 0;
    for (const double s : worker_cpu_s) {
      sum += s;
      largest = std::max(largest, s);
    }
    return largest > 0 ? sum / largest : 0;
  }
};
std::map<std::string, AdmmBalance>& admm_balance() {
  static std::map<std::string, AdmmBalance> all;
  return all;
}

// Times one side and records it under `name`.
template <typename F>
double timed(const std::string& name, F&& work) {
  const Stopwatch watch;
  const OtherLoad others;
  work();
  const double wall = watch.wall_seconds();
  record(name, wall, watch.cpu_seconds(), others.cores());
  return wall;
}

void bm_admm(benchmark::State& state, const std::string& name, bool quantize) {
  real::AdmmSettings s;
  s.quantize_p = quantize;
  real::AdmmNetwork<float> serial =
      real::cold_start(admm_data().x, admm_data().labels, five_by_256(), 0, cpu_backend());
  real::AdmmNetwork<float> workers = serial;
  WorkerSeconds busy{};
  real::iterate_serial(serial, s, cpu_backend());  // untimed first iteration of each
  admm_on_workers(workers, s, cpu_backend(), busy);
  busy = {};
  auto run_serial = [&] { timed(name + "/serial", [&] { real::iterate_serial(serial, s, cpu_backend()); }); };
  auto run_workers = [&] {
    return timed(name + "/2workers", [&] { admm_on_workers(workers, s, cpu_backend(), busy); });
  };
  bool serial_first = true;
  for (auto _ : state) {  // alternating order, so that neither side always runs first
    if (serial_first) run_serial();
    state.SetIterationTime(run_workers());
    if (!serial_first) run_serial();
    serial_first = !serial_first;
  }
  if (!bitwise_equal(serial, workers))
    state.SkipWithError("the 2-worker iterates differ from the serial ones");
  state.counters["serial_ms"] = best(name + "/serial") * 1e3;
  state.counters["2workers_ms"] = best(name + "/2workers") * 1e3;
  state.counters["speedup_2workers"] = best(name + "/serial") / best(name + "/2workers");
  AdmmBalance& balance = admm_balance()[name];
  for (std::size_t w = 0; w < balance.worker_cpu_s.size(); ++w)
    balance.worker_cpu_s[w] = busy[w] / static_cast<double>(state.iterations());
  state.counters["worker0_cpu_ms"] = balance.worker_cpu_s[0] * 1e3;
  state.counters["worker1_cpu_ms"] = balance.worker_cpu_s[1] * 1e3;
  state.counters["speedup_bound"] = balance.bound();
}

// ---- 3. GIST ----

// The GCN of gist_convergence_test.cpp, input features first.
std::vector<std::int64_t> gcn_widths() { return {784, 256, 256, 10}; }
constexpr std::uint64_t kGcnSeed = 17;

struct GraphInfo {
  std::int64_t edges = 0;
  double build_s = 0;
};
GraphInfo& graph_info() {
  static GraphInfo info;
  return info;
}

const real::GcnData<float>& gcn_data() {
  static const real::GcnData<float> data = [] {
    const Stopwatch watch;
    real::KnnDatasetConfig knn;
    knn.subset_size = kGraphNodes;
    knn.threads = kWorkers;
    real::NodeDataset dataset = real::knn_image_dataset(cpu_backend(), train_set(), knn);
    real::standardize_features(dataset);
    graph_info() = {dataset.graph.edge_count(), watch.wall_seconds()};
    return real::make_gcn_data<float>(dataset);
  }();
  return data;
}

void bm_gcn_full(benchmark::State& state, const std::string& name) {
  real::GcnParameters<float> params = real::init_gcn<float>(gcn_widths(), kGcnSeed, true);
  real::train_gcn(cpu_backend(), gcn_data(), params, real::GcnTrainConfig{1});  // warm-up
  for (auto _ : state)
    state.SetIterationTime(timed(
        name, [&] { real::train_gcn(cpu_backend(), gcn_data(), params, real::GcnTrainConfig{kZeta}); }));
  state.counters["best_ms"] = best(name) * 1e3;
  state.counters["graph_edges"] = static_cast<double>(graph_info().edges);
}

void bm_gist_round(benchmark::State& state, const std::string& name, bool parallel_sites) {
  real::GcnParameters<float> global = real::init_gcn<float>(gcn_widths(), kGcnSeed, true);
  real::GistConfig config;
  config.sites = kWorkers;
  config.local_steps = kZeta;
  config.parallel_sites = parallel_sites;
  real::check_gist_config(config, gcn_widths());
  std::int64_t round = 0;
  real::gist_round(cpu_backend(), gcn_data(), global, config, round++);  // warm-up
  for (auto _ : state)
    state.SetIterationTime(
        timed(name, [&] { real::gist_round(cpu_backend(), gcn_data(), global, config, round++); }));
  state.counters["best_ms"] = best(name) * 1e3;
  const std::string full = "gcn/full_10steps";
  if (has_samples(full)) state.counters["vs_full_10steps"] = best(name) / best(full);
}

// ---- summary ----

std::string ms(double seconds) { return fixed(seconds * 1e3, 2) + " ms"; }
std::string us(double seconds) { return fixed(seconds * 1e6, 2) + " us"; }

// "<wall> (cpu <cpu>, others <n> cores)": the fastest sample of `name`, the least CPU time of its
// samples (all threads) and the cores other processes kept busy during the fastest sample.
std::string timing(const std::string& name) {
  return ms(best(name)) + " (cpu " + ms(best_cpu(name)) + ", others " + fixed(other_cores_at_best(name), 2) +
         " cores)";
}

void print_plan_rows() {
  const std::vector<PlanCase> cases = plan_cases();
  if (std::none_of(cases.begin(), cases.end(), [](const PlanCase& c) { return has_samples(c.name); })) return;
  std::cout << "-- per Plan iteration / per sample (fastest block; ratios per sample against backprop on the "
               "zoo MLP)\n";
  for (const PlanCase& c : cases) {
    if (!has_samples(c.name)) continue;
    const std::int64_t n = samples_per_iteration().at(c.name);
    const std::int64_t parts = n / kBatch;
    const bool backprop = c.solver.solver == Solver::backprop;
    const char* part =
        backprop ? (parts == 1 ? " microbatch" : " microbatches") : (parts == 1 ? " instance" : " instances");
    std::cout << c.name << ": " << timing(c.name) << " per Plan iteration of " << n << " samples = " << parts
              << part << " of " << kBatch << "; " << ms(best(c.name) * kBatch / static_cast<double>(n))
              << " per 64 samples, " << us(per_sample(c.name)) << " per sample";
    if (c.sizes == kMlp)
      for (const char* baseline : {kBackprop1, kBackpropPp2})
        if (has_samples(baseline))
          std::cout << ", vs " << baseline << " " << fixed(per_sample(c.name) / per_sample(baseline), 3)
                    << "x";
    std::cout << '\n';
  }
}

// Backprop's time for one pass over `count` samples at its batch, or 0 when it was filtered out.
double pass_seconds(const std::string& backprop, std::int64_t count) {
  return has_samples(backprop) ? per_sample(backprop) * static_cast<double>(count) : 0;
}

void print_admm_rows() {
  if (!has_samples("pdadmm/serial") && !has_samples("pdadmm_g_q/serial")) return;
  std::cout << "-- one ADMM iteration on " << kAdmmSamples
            << " samples, 5x256 MLP (backprop equivalent: one pass over the same samples, batch 64)\n";
  for (const char* solver : {"pdadmm", "pdadmm_g_q"}) {
    const std::string s = std::string(solver) + "/serial", p = std::string(solver) + "/2workers";
    if (!has_samples(s)) continue;
    const double bp1 = pass_seconds("backprop/mlp5x256/1worker", kAdmmSamples);
    const double bp2 = pass_seconds("backprop/mlp5x256/pp2_1f1b", kAdmmSamples);
    std::cout << solver << ": serial " << timing(s) << ", 2 workers " << timing(p) << ", speedup "
              << fixed(best(s) / best(p), 2) << "x";
    const AdmmBalance& balance = admm_balance()[solver];
    std::cout << " (worker CPU per iteration " << ms(balance.worker_cpu_s[0]) << " + "
              << ms(balance.worker_cpu_s[1]) << ": at most " << fixed(balance.bound(), 2) << "x)";
    if (bp1 > 0)
      std::cout << "; serial vs backprop 1 worker " << ms(bp1) << ": " << fixed(best(s) / bp1, 2) << "x";
    if (bp2 > 0)
      std::cout << "; 2 workers vs backprop pp=2 " << ms(bp2) << ": " << fixed(best(p) / bp2, 2) << "x";
    std::cout << '\n';
  }
}

void print_gist_rows() {
  const std::string full = "gcn/full_10steps";
  if (!has_samples(full)) return;
  std::cout << "-- GIST on a " << kGraphNodes << "-node kNN graph (" << graph_info().edges
            << " edges, built in " << fixed(graph_info().build_s, 2) << " s), GCN 784-256-256-10\n"
            << full << ": " << timing(full) << " for " << kZeta << " full Adam steps\n";
  for (const char* round : {"gist/m2_round_sequential", "gist/m2_round_2threads"})
    if (has_samples(round))
      std::cout << round << ": " << timing(round) << " per round of " << kZeta << " local steps per site, vs "
                << kZeta << " full steps " << fixed(best(round) / best(full), 3) << "x\n";
}

void print_summary() {
  std::cout << "\n=== strata_bench_solvers summary (OpenBLAS 1 thread, fp32; fastest sample of each; ratios "
               "against backprop of this run) ===\n";
  print_plan_rows();
  print_admm_rows();
  print_gist_rows();
  std::cout.flush();
}

void register_all() {
  for (const PlanCase& c : plan_cases())
    benchmark::RegisterBenchmark(c.name.c_str(), [c](benchmark::State& s) { bm_plan(s, c); })
        ->UseManualTime()
        ->Iterations(kPlanBlocks)
        ->Unit(benchmark::kMillisecond);
  for (const bool quantize : {false, true}) {
    const std::string name = quantize ? "pdadmm_g_q" : "pdadmm";
    benchmark::RegisterBenchmark((name + "/mlp5x256_n" + std::to_string(kAdmmSamples)).c_str(),
                                 [name, quantize](benchmark::State& s) { bm_admm(s, name, quantize); })
        ->UseManualTime()
        ->Iterations(kAdmmIterations)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("gcn/full_10steps",
                               [](benchmark::State& s) { bm_gcn_full(s, "gcn/full_10steps"); })
      ->UseManualTime()
      ->Iterations(kGcnRepeats)
      ->Unit(benchmark::kMillisecond);
  for (const bool parallel : {false, true}) {
    const std::string name = parallel ? "gist/m2_round_2threads" : "gist/m2_round_sequential";
    benchmark::RegisterBenchmark(name.c_str(),
                                 [name, parallel](benchmark::State& s) { bm_gist_round(s, name, parallel); })
        ->UseManualTime()
        ->Iterations(kGcnRepeats)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  return run_benchmark_program(argc, argv, "strata_bench_solvers", [&] {
    cpu_backend();
    register_all();
    benchmark::RunSpecifiedBenchmarks();
    print_summary();
  });
}
