// strata run: trains a model for real on Fashion-MNIST by interpreting its Plan (real_exec/).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "db_flags.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "placement_flags.hpp"
#include "real_run.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/real/core/process_memory.hpp"
#include "strata/real/train/admm_plan.hpp"
#include "strata/real/train/gcn_plan.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/plan_json.hpp"
#include "strata/traces/trace_json.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

struct RunOptions {
  CommonFlags flags;
  std::string plan;
  std::string trace;
  std::string transport = "threads";
  std::string device = "cpu";
  std::string precision = "fp32";
  int epochs = 5;
  bool no_pin = false;
  std::string init = "auto";
  std::string augment = "none";  // crop-flip: training images shifted and flipped (augment.hpp)
  std::string log;               // CSV of accuracy against epoch and wall-clock seconds
  nlohmann::json experiment;     // canonical spec of the run (null for --plan)
  PlacementFlags placement;
  double cpu_share = 1;  // each worker's, in functions of less than one vCPU (--function-memory)
  DbFlags db;
  std::shared_ptr<ResultsStore> store;  // with --db: the run's row, rewritten after each epoch
};

// A measured trace that records what was run.
Trace recorded(Trace trace, const RunOptions& o, const Plan& plan) {
  trace.experiment = o.experiment;
  trace.experiment_hash = plan.info.experiment_hash;
  return trace;
}

void draw_progress(int epoch, int epochs, std::int64_t done, std::int64_t all) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / std::max<std::int64_t>(1, all));
  std::fprintf(stderr, "\repoch %d/%d [%s%s] %lld/%lld batches", epoch, epochs,
               std::string(static_cast<std::size_t>(filled), '=').c_str(),
               std::string(static_cast<std::size_t>(kWidth - filled), ' ').c_str(),
               static_cast<long long>(done), static_cast<long long>(all));
  if (done == all) std::fprintf(stderr, "\r%*s\r", kWidth + 40, "");
}

// The --log CSV of every run: a header, then a row per epoch, the file rewritten after each row
// so that a stopped run keeps its log. Beside it, <log>.experiment.json records what ran (its
// `experiment`, `experiment_hash` and `strata_version`; `strata spec --from log.csv` reads it),
// written with the first row. `write` false (not process 0, or no --log) keeps it quiet. With
// --db, process 0 also keeps the run's row in the results store (fidelity real), written again
// after each epoch with the accuracy curve so far.
class RunLog {
 public:
  RunLog(const RunOptions& o, const Plan& plan, bool write)
      : path_(o.log), write_(write && !path_.empty()), store_(write ? o.store : nullptr) {
    if (store_) {
      row_.key.experiment_hash = plan.info.experiment_hash;
      row_.key.platform_hash =
          platform_hash("", real_run_settings(o.transport, o.device, o.precision,
                                              o.init + (o.augment == "none" ? "" : ", augment: " + o.augment),
                                              !o.no_pin, o.cpu_share));
      row_.key.fidelity = "real";
      row_.key.seed = o.flags.seed;
      row_.command = "run";
      row_.model = plan.info.model;
      row_.strategy = plan.info.strategy;
      row_.platform = "this machine";
      row_.workers = plan.num_workers();
      row_.spec = o.experiment.is_null() ? "" : o.experiment.dump();
      row_.strata_version = std::string(strata_version());
      batch_ = static_cast<double>(plan.info.global_batch);
    }
    nlohmann::ordered_json j;
    j["format"] = "strata-run-log";
    j["log"] = std::filesystem::path(path_).filename().string();
    j["experiment_hash"] = plan.info.experiment_hash;
    j["strata_version"] = strata_version();
    j["experiment"] = o.experiment;
    sidecar_ = j.dump(1) + "\n";
  }
  void add(long long epoch, double train_s, double wall_s, long long samples, double loss, double accuracy,
           double samples_per_s) {
    char row[256];
    std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%lld,%.6f,%.6f,%.1f\n", epoch, train_s, wall_s, samples,
                  loss, accuracy, samples_per_s);
    text_ += row;
    if (store_) {
      curve_.push_back({{"epoch", epoch}, {"test_accuracy", accuracy}, {"train_seconds", train_s}});
      row_.accuracy = curve_.dump();
      row_.samples_per_s = samples_per_s;
      if (batch_ > 0 && samples_per_s > 0) row_.iteration_time_s = batch_ / samples_per_s;
      store_->commit({row_});
    }
    if (!write_) return;
    if (!sidecar_.empty()) write_file_atomically(path_ + ".experiment.json", sidecar_);
    sidecar_.clear();
    write_file_atomically(path_, text_);
  }

 private:
  std::string path_;
  bool write_;
  std::shared_ptr<ResultsStore> store_;
  ResultRow row_;
  nlohmann::json curve_ = nlohmann::json::array();
  double batch_ = 0;     // samples per Plan iteration
  std::string sidecar_;  // until written
  std::string text_ =
      "epoch,train_seconds,wall_seconds,samples,train_loss,test_accuracy,samples_per_second\n";
};

// Each worker's peak of buffer arrays and temporaries (the Workspace's meter) and the
// processes' resident high-water mark, their cross-check. Collective under MPI.
template <typename T>
void print_memory(const std::vector<std::int64_t>& peaks, real::Transport<T>& transport, bool report) {
  std::vector<double> rss = {static_cast<double>(real::process_peak_rss_bytes())};
  transport.max_over_processes(rss);
  if (!report) return;
  std::string text;
  double sum = 0;
  for (std::size_t w = 0; w < peaks.size(); ++w) {
    text += (w == 0 ? "" : ", ") + format_bytes(static_cast<double>(peaks[w]));
    sum += static_cast<double>(peaks[w]);
  }
  std::printf(
      "peak memory per worker (its buffers from first touch to last use, and every temporary): %s; all "
      "workers %s\n",
      text.c_str(), format_bytes(sum).c_str());
  std::printf(
      "process peak resident memory: %s (the largest process; the data set, libraries and temporaries too)\n",
      format_bytes(rss[0]).c_str());
}

// The end of an ADMM or GCN run: one more Plan run for --trace, then the bytes moved. Every
// process calls it (the run and the byte count are collectives); `report` prints.
template <typename T>
int finish_solver_run(const Plan& plan, const RunOptions& o, bool report, real::PlanTrainer<T>& trainer) {
  if (!o.trace.empty()) {
    const std::vector<real::TaskTiming> timings = trainer.run();
    if (report) {
      write_trace(recorded(real::measured_trace(plan, timings, real::host_name(),
                                                plan.info.model + " " + plan.info.strategy),
                           o, plan),
                  o.trace);
      std::printf("measured trace of one more Plan run -> %s (%zu tasks)\n", o.trace.c_str(), plan.size());
    }
  }
  const std::uint64_t bytes = trainer.bytes_sent();
  if (report) std::printf("bytes sent between workers: %.4g B\n", static_cast<double>(bytes));
  return 0;
}

// An ADMM Plan (dladmm, pdadmm, pdadmm-g-q): full batch on the Plan's seeded training columns.
// One sweep updates every layer once and is an epoch (it sees every sample once); a Plan run is
// its admm_iterations sweeps, so --epochs E runs the Plan ceil(E / sweeps) times.
template <typename T>
int train_admm(const Plan& plan, const RunOptions& o, real::Transport<T>& transport) {
  const real::AdmmPlanShape shape = real::admm_plan_shape(plan);
  const auto seed = static_cast<std::uint64_t>(o.flags.seed);
  const real::AdmmData<T> train =
      real::admm_columns<T>(real::load_fashion_mnist(real::DatasetSplit::train), shape.samples, seed);
  const real::LabelledImages test_images = real::load_fashion_mnist(real::DatasetSplit::test);
  const real::AdmmData<T> test = real::admm_columns<T>(test_images, test_images.count, 0);
  const bool report = transport.process() == 0;
  real::CpuBackend backend;
  real::AdmmPlanTrainer<T> trainer(plan, train, seed, backend, transport, !o.no_pin);
  const int sweeps = std::max(1, plan.num_iterations());
  const int runs = (o.epochs + sweeps - 1) / sweeps;
  if (report)
    std::printf(
        "run %s %s on %d %s (%s transport, %s): %lld training samples as one full batch, %d sweep(s) per "
        "Plan run, "
        "%d run(s)\n",
        plan.info.model.c_str(), plan.info.strategy.c_str(), plan.num_workers(),
        transport.name() == "mpi" ? "MPI process(es), one worker each" : "worker thread(s)",
        transport.name().c_str(), o.precision.c_str(), static_cast<long long>(shape.samples), sweeps, runs);
  RunLog log(o, plan, report);
  double train_seconds = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 1; r <= runs; ++r) {
    double seconds = 0;
    trainer.run(&seconds);
    train_seconds += seconds;
    const real::AdmmNetwork<T> net = trainer.network();
    const double loss = real::mean_cross_entropy(net, train.x, train.labels, backend);
    const double train_accuracy = real::accuracy(net, train.x, train.classes, backend);
    const double test_accuracy = real::accuracy(net, test.x, test.classes, backend);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int epoch = r * sweeps;
    const double rate = static_cast<double>(shape.samples * sweeps) / std::max(1e-9, seconds);
    if (report)
      std::printf(
          "epoch %d: train loss %.4f, train accuracy %.2f %%, test accuracy %.2f %%, %.3f s per sweep "
          "(%.2f s training, %.2f s wall so far)\n",
          epoch, loss, 100 * train_accuracy, 100 * test_accuracy, seconds / sweeps, train_seconds, wall);
    std::fflush(stdout);
    log.add(epoch, train_seconds, wall, static_cast<long long>(epoch * shape.samples), loss, test_accuracy,
            rate);
  }
  return finish_solver_run(plan, o, report, trainer);
}

// What one round of a GCN Plan is, for the header line.
std::string gcn_round(const real::GcnPlanShape& shape, const Plan& plan) {
  if (shape.sites == 0) return "a round is one full-graph Adam step";
  const std::int64_t steps = plan.info.global_batch / std::max<std::int64_t>(1, shape.nodes);
  return "a round is " + std::to_string(steps) + " full-graph local steps on each of " +
         std::to_string(shape.sites) + " sites, then write-back";
}

// A GCN Plan (--solver gist, or backprop on --model gcn): full-graph training on the Plan's graph
// (gcn_plan_graph: the kNN graph of its node count, or the power-law graph it was laid out on).
// A round (GIST's, or one backprop step) is an epoch of --epochs: every node is seen; a Plan run
// is its iterations' rounds, run ceil(E / rounds) times.
template <typename T>
int train_gcn(const Plan& plan, const RunOptions& o, const real::OptimizerSettings& optimizer,
              real::Transport<T>& transport) {
  const real::GcnPlanShape shape = real::gcn_plan_shape(plan);
  const auto seed = static_cast<std::uint64_t>(o.flags.seed);
  real::CpuBackend backend;
  const auto start = std::chrono::steady_clock::now();
  const real::GcnPlanGraph<T> graph = real::gcn_plan_graph<T>(backend, plan, seed);
  const real::GcnData<T>& data = graph.data;
  const double graph_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  real::GcnPlanTrainer<T> trainer(plan, data, seed, backend, transport, optimizer, !o.no_pin,
                                  graph.partition);
  const int rounds = shape.rounds, runs = (o.epochs + rounds - 1) / rounds;
  // Under MPI every process builds the same graph and runs its sites; the global model lives on
  // worker 0, so process 0 evaluates and reports.
  const bool report = transport.process() == 0;
  if (report)
    std::printf(
        "run %s %s on %d %s (%s transport, %s, Adam lr %g): %s, mean degree %.1f, built in %.2f s, "
        "%zu training / %zu test nodes; %s; %d round(s) per Plan run, %d run(s)\n",
        plan.info.model.c_str(), plan.info.strategy.c_str(), plan.num_workers(),
        transport.name() == "mpi" ? "MPI process(es), one worker each" : "worker thread(s)",
        transport.name().c_str(), o.precision.c_str(), optimizer.learning_rate, graph.description.c_str(),
        static_cast<double>(data.adjacency.nonzeros() - shape.nodes) / static_cast<double>(shape.nodes),
        graph_s, data.split.train.size(), data.split.test.size(), gcn_round(shape, plan).c_str(), rounds,
        runs);
  RunLog log(o, plan, report);
  double train_seconds = 0;
  for (int r = 1; r <= runs; ++r) {
    double seconds = 0;
    trainer.run(&seconds);
    train_seconds += seconds;
    if (!report) continue;
    const real::GcnParameters<T> params = trainer.parameters();
    const double loss = real::gcn_training_loss(backend, data, params);
    const double accuracy = real::gcn_accuracy(backend, data, params, data.split.test);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::int64_t done = trainer.rounds_done();
    std::printf(
        "round %lld: train loss %.4f, test accuracy %.2f %%, %.3f s per round (%.2f s training, %.2f s wall "
        "so far)\n",
        static_cast<long long>(done), loss, 100 * accuracy, seconds / rounds, train_seconds, wall);
    std::fflush(stdout);
    log.add(static_cast<long long>(done), train_seconds, wall,
            static_cast<long long>(done * plan.info.global_batch), loss, accuracy,
            static_cast<double>(rounds * plan.info.global_batch) / std::max(1e-9, seconds));
  }
  return finish_solver_run(plan, o, report, trainer);
}

// The serial-parallel hybrid's warm-up (--set warmup_epochs=W): its first W epochs run `plan`,
// the same model lowered with correction_period 1 (every minibatch serial), over `transport`;
// then the hybrid's Trainer continues from its weights, optimizer state and stores.
template <typename T>
struct Warmup {
  const Plan* plan = nullptr;
  real::Transport<T>* transport = nullptr;
};

// Trains with `transport` and reports what rank 0 saw; under MPI every process runs this with
// the same arguments (the Trainer's calls are collectives) and only process 0 prints.
template <typename T>
int train(const Plan& plan, const RunOptions& o, const real::OptimizerSettings& optimizer,
          real::Transport<T>& transport, Warmup<T> warmup = {}) {
  real::check_plan_device(plan, o.device);
  if (is_admm(plan.info.solver)) return train_admm<T>(plan, o, transport);
  if (plan.info.trains_graph()) return train_gcn<T>(plan, o, optimizer, transport);
  const real::LabelledImages train_set = real::load_fashion_mnist(real::DatasetSplit::train);
  if (const std::int64_t stores = plan.info.parameters.stored_samples; stores > 0 && stores < train_set.count)
    throw InputError("--set train_samples=" + std::to_string(stores) + ": " +
                     std::string(to_string(plan.info.solver)) +
                     " keeps one row per training sample in its stores, and the training set has " +
                     std::to_string(train_set.count));
  const real::LabelledImages test_set = real::load_fashion_mnist(real::DatasetSplit::test);
  const bool report = transport.process() == 0;
  real::CpuBackend backend;
  real::TrainConfig config;
  config.seed = static_cast<std::uint64_t>(o.flags.seed);
  config.optimizer = optimizer;
  config.pin_workers = !o.no_pin;
  config.cpu_share = o.cpu_share;
  // auto: He for the MLP (its recipe), PyTorch's default for the other models.
  config.augment = *real::parse_augment(o.augment);
  config.init = o.init == "he" || (o.init == "auto" && plan.info.model == "mlp")
                    ? real::WeightInit::he_normal
                    : real::WeightInit::fan_in_uniform;
  const auto make_trainer = [&](const Plan& p, real::Transport<T>& t) {
    return std::make_unique<real::Trainer<T>>(p, executor_for<T>(o.device, backend), config, t);
  };
  const int warmup_epochs = warmup.plan == nullptr ? 0 : static_cast<int>(plan.info.parameters.warmup_epochs);
  std::unique_ptr<real::Trainer<T>> trainer =
      warmup_epochs > 0 ? make_trainer(*warmup.plan, *warmup.transport) : make_trainer(plan, transport);
  if (report)
    std::printf(
        "run %s %s on %d %s (%s backend, %s transport, %s%s): global batch %lld, %lld batches per epoch\n",
        plan.info.model.c_str(), plan.info.strategy.c_str(), plan.num_workers(),
        transport.name() == "mpi" ? "MPI process(es), one worker each" : "worker thread(s)",
        trainer->backend_name().c_str(), transport.name().c_str(), o.precision.c_str(),
        o.augment == "none" ? "" : ", crop-flip augmentation",
        static_cast<long long>(trainer->global_batch()),
        static_cast<long long>(train_set.count / trainer->global_batch()));
  if (report && warmup_epochs > 0)
    std::printf(
        "warm-up: epoch(s) 1-%d every minibatch a serial correction (correction_period 1), filling "
        "every stored state\n",
        warmup_epochs);
  const bool progress = report && progress_wanted();
  RunLog log(o, plan, report);
  double train_seconds = 0;
  double last_accuracy = 0;
  std::uint64_t warmup_bytes = 0;
  std::vector<std::int64_t> warmup_peaks;
  const auto start = std::chrono::steady_clock::now();
  for (int e = 1; e <= o.epochs; ++e) {
    if (warmup_epochs > 0 && e == warmup_epochs + 1) {
      std::unique_ptr<real::Trainer<T>> hybrid = make_trainer(plan, transport);
      hybrid->continue_from(*trainer);
      warmup_bytes = trainer->bytes_sent();
      warmup_peaks = trainer->peak_memory_per_worker();
      trainer = std::move(hybrid);
    }
    std::function<void(std::int64_t, std::int64_t)> on_batch;
    if (progress)
      on_batch = [&](std::int64_t done, std::int64_t all) { draw_progress(e, o.epochs, done, all); };
    const real::EpochResult r = trainer->train_epoch(e, train_set, test_set, on_batch);
    train_seconds += r.train_seconds;
    last_accuracy = r.test_accuracy;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (report)
      std::printf(
          "epoch %d/%d: train loss %.4f, test accuracy %.2f %%, %.0f samples/s, %.2f s (%.2f s training, "
          "%.2f s wall so far)%s\n",
          e, o.epochs, r.train_loss, 100 * r.test_accuracy, r.samples_per_second, r.train_seconds,
          train_seconds, wall, e <= warmup_epochs ? ", serial warm-up" : "");
    std::fflush(stdout);
    log.add(e, train_seconds, wall,
            static_cast<long long>(e * (train_set.count / trainer->global_batch()) * trainer->global_batch()),
            r.train_loss, r.test_accuracy, r.samples_per_second);
  }
  if (!o.trace.empty()) {
    const Plan& traced = trainer->plan();
    std::vector<real::TaskTiming> timings;
    std::vector<std::int64_t> first(static_cast<std::size_t>(trainer->global_batch()));
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<std::int64_t>(i);
    trainer->train_batch(train_set, first, &timings);
    if (report) {
      write_trace(recorded(real::measured_trace(traced, timings, real::host_name(),
                                                traced.info.model + " " + traced.info.strategy),
                           o, traced),
                  o.trace);
      std::printf("measured trace of one more iteration -> %s (%zu tasks)\n", o.trace.c_str(), traced.size());
    }
  }
  const std::uint64_t bytes = warmup_bytes + trainer->bytes_sent();
  if (report) std::printf("bytes sent between workers: %.4g B\n", static_cast<double>(bytes));
  std::vector<std::int64_t> peaks = trainer->peak_memory_per_worker();
  for (std::size_t w = 0; w < std::min(peaks.size(), warmup_peaks.size()); ++w)
    peaks[w] = std::max(peaks[w], warmup_peaks[w]);
  print_memory(peaks, trainer->transport(), report);
  if (report && o.epochs > 0)
    std::printf("test accuracy %.2f %% after %d epoch(s), %.2f s training\n", 100 * last_accuracy, o.epochs,
                train_seconds);
  return 0;
}

template <typename T>
int train(const Plan& plan, const Plan* warmup, const RunOptions& o,
          const real::OptimizerSettings& optimizer) {
  if (o.transport == "mpi") {
#if STRATA_HAVE_MPI
    // One process per worker, started by mpirun.
    return on_mpi_ranks(plan.num_workers(), o.plan.empty() ? "strategy" : "Plan", "run",
                        [&](const real::MpiSession& session) {
                          real::MpiTransport<T> transport(session, plan);
                          if (warmup == nullptr) return train<T>(plan, o, optimizer, transport);
                          real::MpiTransport<T> serial(session, *warmup);
                          return train<T>(plan, o, optimizer, transport, {warmup, &serial});
                        });
#else
    throw_no_mpi();
#endif
  }
  real::ThreadTransport<T> transport;
  real::ThreadTransport<T> serial;
  return train<T>(plan, o, optimizer, transport, {warmup, &serial});
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "train for real on Fashion-MNIST by interpreting the Plan");
  auto o = std::make_shared<RunOptions>();
  add_common_flags(*cmd, o->flags, true);
  add_input_option(*cmd, "--plan", o->plan, "Plan JSON (instead of --model/--strategy)");
  o->flags.track(cmd->add_option("--epochs", o->flags.epochs, "passes over the 60,000 training images")
                     ->transform(whole_number(1)));
  add_output_option(*cmd, "--log", o->log,
                    "write accuracy against epoch and seconds (CSV, rewritten each epoch)",
                    OutputWrite::as_it_goes, {".experiment.json"});
  add_output_option(*cmd, "--trace", o->trace, "write the measured Trace of one iteration (strata JSON)");
  cmd->add_option("--transport", o->transport,
                  "threads (workers as threads of this process) or mpi (one OpenMPI process per worker, "
                  "under mpirun -np <workers>)");
  cmd->add_option("--device", o->device,
                  "where the kernels run: cpu (OpenBLAS) or cuda (GPU 0, each worker a pair of streams)");
  cmd->add_option("--precision", o->precision, "element type the kernels compute in: fp32 or fp64");
  cmd->add_flag("--no-pin", o->no_pin, "do not pin worker threads to cores");
  add_placement_flags(*cmd, o->placement, false);
  add_input_option(*cmd, "--platform", o->flags.platform,
                   "SimGrid platform XML a --schedule-policy places the workers on (this machine's: "
                   "strata calibrate --emit-platform)");
  add_db_flags(*cmd, o->db, false);
  cmd->add_option("--init", o->init, "weight init: auto (he for mlp, uniform otherwise), he, uniform")
      ->check(CLI::IsMember({"auto", "he", "uniform"}));
  cmd->add_option(
         "--augment", o->augment,
         "training images: none, or crop-flip (shifted up to 4 pixels and mirrored at random, He et al. "
         "2016); images smaller than the model's square input are padded to it either way")
      ->check(CLI::IsMember({"none", "crop-flip"}));
  cmd->callback([&action, o] {
    action = [o] {
      check_transport(o->transport);
      check_device(o->device, o->transport);
      if (o->precision != "fp32" && o->precision != "fp64")
        throw InputError("--precision: unknown '" + o->precision + "' (fp32, fp64)");
      o->store = open_results_store(o->db);
      real::OptimizerSettings optimizer;
      Plan plan;
      std::optional<Plan> warmup;  // serial-parallel with --set warmup_epochs: the serial Plan
      if (o->plan.empty()) {
        const Experiment e = experiment_of(o->flags, kRunBatchPerWorker);
        plan = plan_to_run(e);
        optimizer = optimizer_of(e);
        o->experiment = canonical_json(e);
        o->epochs = e.epochs;
        if (e.solver.warmup_epochs > 0) {
          Experiment serial = e;
          serial.solver.correction_period = 1;
          warmup = plan_to_run(serial);
        }
      } else {
        refuse_beside_plan(o->flags, true);
        plan = plan_to_run(o->flags, o->plan);
        optimizer = plan_optimizer(o->flags, plan);
        o->epochs = o->flags.epochs;
        if (const std::int64_t w = plan.info.parameters.warmup_epochs; w > 0)
          throw InputError(o->plan + ": warmup_epochs " + std::to_string(w) +
                           " needs the serial Plan beside this one: run with --model and --solver "
                           "serial-parallel --set warmup_epochs=" +
                           std::to_string(w) + " instead of --plan");
      }
      if (warmup && o->placement.policy != "strategy")
        throw InputError(
            "--set warmup_epochs: runs the serial-parallel Plans on the strategy's placement only, "
            "not beside --schedule-policy " +
            o->placement.policy);
      if (o->device == "cuda") real::check_cuda_kernels(plan, o->plan.empty() ? "--device cuda" : o->plan);
      // Every worker still runs on this machine (threads, or the ranks mpirun started): a
      // placement says which host each worker stands for in the Plan, not where it runs.
      ReplayOptions placement_options;
      place_workers_and_say(plan, o->placement, o->flags.platform, placement_options);
      if (plan.has_unplaced())
        throw InputError(
            "--schedule-policy: the Plan leaves tasks unplaced: give heft, cpop, peft, minmin, cp or rr, "
            "with "
            "--platform");
      o->cpu_share = function_cpu_share(plan, o->placement, o->flags.platform, !o->no_pin);
      if (o->cpu_share < 1 && (is_admm(plan.info.solver) || plan.info.trains_graph()))
        throw InputError("--function-memory: runs backprop Plans only in functions of less than one vCPU");
      const Plan* serial = warmup ? &*warmup : nullptr;
      return o->precision == "fp64" ? train<double>(plan, serial, *o, optimizer)
                                    : train<float>(plan, serial, *o, optimizer);
    };
  });
}

}  // namespace strata::cli
