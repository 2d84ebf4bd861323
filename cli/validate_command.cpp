// strata validate: runs a Plan for real and simulates it, then compares iteration time and every
// task's duration (traces/compare.hpp). The loop that tells a user how far to trust strata's
// predictions on their machine.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include "commands.hpp"
#include "db_flags.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "placement_flags.hpp"
#include "real_run.hpp"
#include "strata/real/train/gcn_plan.hpp"
#include "strata/real/train/plan_runs.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/sim/platform.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/compare.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/perfetto.hpp"
#include "strata/traces/stats.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

struct ValidateOptions {
  CommonFlags flags;
  ReplayFlags replay;
  PlacementFlags placement;
  std::string plan;
  std::string transport = "threads";
  std::string device = "cpu";
  int iterations = 20;
  int warmup = 5;
  int worst = 5;
  std::string perfetto = "validation.perfetto.json";
  std::string svg = "validation.svg";
  std::string json;
  std::string csv;
  bool no_pin = false;
  double cpu_share = 1;               // each worker's, in functions of less than one vCPU (--function-memory)
  bool speedup = false;               // also the same flags on 1 worker, runs alternated
  nlohmann::json experiment;          // canonical spec of what runs (null for --plan)
  real::OptimizerSettings optimizer;  // the experiment's (--plan: --optimizer and --set's)
  DbFlags db;
  std::shared_ptr<ResultsStore> store;  // open_results_store(db), checked before any run
};

double span_of(const Trace& t) {
  double lo = INFINITY, hi = 0;
  for (const TraceRecord& r : t.records) {
    lo = std::min(lo, r.start);
    hi = std::max(hi, r.end);
  }
  return t.records.empty() ? 0 : hi - lo;
}

struct Measured {
  std::vector<Trace> runs;          // one per measured iteration, times from its own start
  std::vector<double> iteration_s;  // span of each
  std::string host;
  // Per worker, the most bytes of buffer arrays it held over the runs (the Workspace's counts);
  // empty where the trainer does not measure it.
  std::shared_ptr<std::vector<std::int64_t>> peak_memory = std::make_shared<std::vector<std::int64_t>>();
};

// Appends one measured run (timings from the run's own start) to `m`.
void record(const Plan& plan, std::vector<real::TaskTiming> timings, Measured& m) {
  double t0 = INFINITY;
  for (const real::TaskTiming& t : timings) t0 = std::min(t0, t.start);
  for (real::TaskTiming& t : timings) t.start -= t0, t.end -= t0;
  m.runs.push_back(real::measured_trace(plan, timings, m.host, plan.info.model + " " + plan.info.strategy));
  m.iteration_s.push_back(span_of(m.runs.back()));
}

// One Plan's real runs, one iteration per call, timings merged over processes: a backprop Plan on
// consecutive Fashion-MNIST batches, an ADMM Plan's sweeps on its seeded full batch. The workers
// are placed by `transport` (threads of this process when null).
using NextRun = std::function<std::vector<real::TaskTiming>()>;

NextRun plan_runs(const Plan& plan, const ValidateOptions& o, real::Transport<float>* transport,
                  std::shared_ptr<std::vector<std::int64_t>> peak_memory) {
  real::check_plan_device(plan, o.device);
  if (plan.info.trains_graph() && transport != nullptr)
    throw InputError("--transport " + o.transport + ": GCN Plans run on worker threads only");
  static const real::LabelledImages train = real::load_fashion_mnist(real::DatasetSplit::train);
  auto backend = std::make_shared<real::CpuBackend>();
  real::PlanRunSettings settings;
  settings.seed = static_cast<std::uint64_t>(o.flags.seed);
  settings.pin_workers = !o.no_pin;
  settings.cpu_share = o.cpu_share;
  settings.optimizer = o.optimizer;
  settings.device = o.device;
  settings.executor = executor_for<float>(o.device, *backend);
  settings.transport = transport;
  settings.peak_memory = std::move(peak_memory);
  real::PlanRuns runs = real::plan_runs(plan, train, settings);
  return [runs = std::move(runs), backend] { return runs(); };
}

// `warmup` + `iterations` runs of each Plan, the Plans' runs alternating (the first Plan first in
// even rounds, last in odd ones), so that a second Plan (the 1-worker baseline of --speedup) meets
// the same machine. Under MPI every process calls this and gets the merged timings of every task.
std::vector<Measured> measure(const std::vector<const Plan*>& plans, const ValidateOptions& o,
                              real::Transport<float>* transport) {
  std::vector<Measured> m(plans.size());
  std::vector<NextRun> runs;
  for (std::size_t p = 0; p < plans.size(); ++p)
    runs.push_back(plan_runs(*plans[p], o, transport, m[p].peak_memory));
  for (Measured& one : m) one.host = real::host_name();
  const bool progress = (transport == nullptr || transport->process() == 0) && progress_wanted();
  const int all = o.warmup + o.iterations;
  for (int i = 0; i < all; ++i) {
    for (std::size_t j = 0; j < plans.size(); ++j) {
      const std::size_t p = i % 2 == 0 ? j : plans.size() - 1 - j;
      std::vector<real::TaskTiming> timings = runs[p]();
      if (i >= o.warmup) record(*plans[p], std::move(timings), m[p]);
    }
    if (progress)
      std::fprintf(stderr, "\rvalidate: real run, iteration %d/%d%s", i + 1, all, i + 1 == all ? "\n" : "");
  }
  return m;
}

Measured measure(const Plan& plan, const ValidateOptions& o, real::Transport<float>* transport) {
  return std::move(measure({&plan}, o, transport)[0]);
}

std::string temporary_platform(const std::string& xml) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("strata-validate-" + std::to_string(::getpid()) + ".xml");
  write_file_atomically(path.string(), xml);
  return path.string();
}

// What the simulation needs, read and checked before anything runs.
struct Simulation {
  ReplayOptions options;
  std::string platform_xml;  // generated from the calibration, or empty
  std::string platform;      // the platform file given
};

Simulation prepare_simulation(const ValidateOptions& o) {
  Simulation sim;
  sim.options = replay_options(o.replay);
  if (!o.flags.platform.empty()) {
    sim.platform = resolve_platform(o.flags.platform);
  } else {
    if (o.replay.calibration.empty())
      throw InputError("validate: give --calibration FILE (from strata calibrate) or --platform FILE");
    // A GPU run's workers exchange device-to-device copies: the calibration's "cuda" transport.
    sim.platform_xml =
        one_host_platform_xml(sim.options.calibration, o.device == "cuda" ? "cuda" : o.transport);
  }
  return sim;
}

void print_header(const Plan& plan, const ValidateOptions& o) {
  std::printf(
      "validate %s %s: %d worker(s) on %s, %s transport, global batch %lld; %d measured iterations after %d "
      "warm-up\n",
      plan.info.model.c_str(), plan.info.strategy.c_str(), plan.num_workers(),
      o.device == "cuda" ? "GPU 0" : "the CPU", o.transport.c_str(),
      static_cast<long long>(plan.info.global_batch), o.iterations, o.warmup);
  std::fflush(stdout);
}

// Simulates the Plan and prints predicted against measured (rank 0 only under MPI).
// Each worker's peak memory as the replay's memory model predicts it (the lowering's mem_alloc,
// mem_free and mem_temp) and as the real run held it (the Workspace's meter: its arrays from
// first touch to last use and every temporary of the kernels and transports).
void print_memory(const Report& predicted, const std::vector<std::int64_t>& measured) {
  if (measured.empty()) return;
  std::printf("peak memory per worker: ");
  for (const WorkerReport& w : predicted.per_worker) {
    const auto at = static_cast<std::size_t>(w.worker);
    if (at >= measured.size() || measured[at] <= 0) continue;
    const double got = static_cast<double>(measured[at]);
    std::printf("%sw%d predicted %s, measured %s (%+.1f %%)", w.worker == 0 ? "" : "; ", w.worker,
                format_bytes(w.peak_memory_bytes).c_str(), format_bytes(got).c_str(),
                100 * (w.peak_memory_bytes - got) / got);
  }
  std::printf("\n");
}

// The validation's row: the replay's figures with the measured median and the error; the
// platform hash also covers what runs for real (transport, device, pinning, function share).
void store_validation(const ValidateOptions& o, const Plan& plan, const Simulation& s,
                      const std::string& platform, const Report& predicted, double measured) {
  if (!o.store) return;
  std::vector<std::string> settings = replay_settings(o.replay, s.options);
  settings.push_back("transport: " + o.transport);
  settings.push_back("device: " + o.device);
  settings.push_back(std::string("pinned: ") + (o.no_pin ? "no" : "yes"));
  settings.push_back("cpu_share: " + std::to_string(o.cpu_share));
  // This machine's platform, generated from the calibration, is hashed by its text.
  const std::string hash =
      s.platform.empty() ? platform_text_hash(s.platform_xml, settings) : platform_hash(platform, settings);
  ResultRow row = report_row(predicted, "validate", std::nullopt, hash, plan.info.strategy);
  row.key.experiment_hash = plan.info.experiment_hash;
  row.key.fidelity = "validate";
  row.key.seed = o.experiment.is_object() ? o.experiment.value("seed", std::int64_t{0}) : 0;
  row.spec = o.experiment.is_null() ? "" : o.experiment.dump();
  row.platform = s.platform.empty() ? "this machine" : std::filesystem::path(platform).filename().string();
  row.measured_iteration_time_s = measured;
  row.error_pct = 100 * (predicted.iteration_time_s - measured) / measured;
  row.files = row_files({{"perfetto", o.perfetto}, {"svg", o.svg}, {"csv", o.csv}});
  o.store->commit({row});
}

int report(const Plan& plan, const ValidateOptions& o, Simulation s, const Measured& m,
           double* predicted_s = nullptr) {
  ReplayOptions& options = s.options;
  const bool generated = s.platform.empty();
  const std::string platform = generated ? temporary_platform(s.platform_xml) : s.platform;
  const std::size_t median_run = [&] {
    std::vector<std::size_t> order(m.iteration_s.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return m.iteration_s[a] < m.iteration_s[b]; });
    return order[order.size() / 2];
  }();

  options.keep_trace = true;
  ReplayResult sim;
  try {
    // A policy places the simulated workers; the measured ones all run on this machine.
    Plan placed_plan = plan;
    place_workers_and_say(placed_plan, o.placement, platform, options);
    sim = replay(placed_plan, platform, options);
  } catch (...) {
    if (generated) std::filesystem::remove(platform);
    throw;
  }
  if (generated) std::filesystem::remove(platform);
  sim.trace.experiment = o.experiment;
  sim.trace.experiment_hash = plan.info.experiment_hash;
  const double predicted = sim.report.iteration_time_s;
  if (predicted_s != nullptr) *predicted_s = predicted;
  const MeasuredSpread spread = measured_spread(m.iteration_s);
  const double measured = spread.median, p10 = spread.p10, p90 = spread.p90;
  const TraceComparison cmp = compare_traces(sim.trace, m.runs);
  store_validation(o, plan, s, platform, sim.report, measured);

  std::printf("platform %s, calibration %s\n",
              generated ? "of this machine (from the calibration)" : platform.c_str(),
              options.calibration.source.c_str());
  std::printf("iteration time: predicted %s, measured %s (median; p10 %s, p90 %s): error %+.1f %%\n",
              format_seconds(predicted).c_str(), format_seconds(measured).c_str(),
              format_seconds(p10).c_str(), format_seconds(p90).c_str(),
              100 * (predicted - measured) / measured);
  print_memory(sim.report, *m.peak_memory);
  std::printf("compute tasks: median |error| %.1f %%, p90 %.1f %%\n", 100 * cmp.compute_median_abs_error,
              100 * cmp.compute_p90_abs_error);
  std::printf("%-18s %6s %14s %14s %12s %10s\n", "kind", "tasks", "predicted", "measured", "median|err|",
              "p90|err|");
  for (const KindComparison& k : cmp.kinds)
    std::printf("%-18s %6zu %14s %14s %10.1f %% %8.1f %%\n", std::string(to_string(k.kind)).c_str(), k.tasks,
                format_seconds(k.predicted_total_s).c_str(), format_seconds(k.measured_total_s).c_str(),
                100 * k.median_abs_error, 100 * k.p90_abs_error);
  std::printf("worst tasks:\n");
  for (const TaskComparison& t : cmp.worst(static_cast<std::size_t>(o.worst)))
    std::printf("  %-44s %-18s predicted %10s, measured %10s: %+.1f %%\n", t.id.c_str(),
                std::string(to_string(t.kind)).c_str(), format_seconds(t.predicted_s).c_str(),
                format_seconds(t.measured_s).c_str(), 100 * t.relative_error());
  if (!o.perfetto.empty()) {
    write_chrome_traces({{"predicted", &sim.trace}, {"measured", &m.runs[median_run]}}, o.perfetto);
    std::printf("predicted and measured (median iteration) side by side -> %s (Perfetto)\n",
                o.perfetto.c_str());
  }
  if (!o.svg.empty()) {
    write_file_atomically(o.svg, comparison_svg(cmp, plan.info.model + " " + plan.info.strategy + " (" +
                                                         (o.device == "cuda" ? "GPU streams" : o.transport) +
                                                         "): predicted vs measured task durations"));
    std::printf("predicted vs measured task durations -> %s\n", o.svg.c_str());
  }
  if (!o.csv.empty()) {  // the printed table: the iteration, then each task kind
    std::vector<nlohmann::json> rows;
    rows.push_back({{"row", "iteration"},
                    {"tasks", plan.size()},
                    {"predicted_s", predicted},
                    {"measured_s", measured},
                    {"error_pct", 100 * (predicted - measured) / measured}});
    for (const KindComparison& k : cmp.kinds)
      rows.push_back({{"row", std::string(to_string(k.kind))},
                      {"tasks", k.tasks},
                      {"predicted_s", k.predicted_total_s},
                      {"measured_s", k.measured_total_s},
                      {"median_abs_error_pct", 100 * k.median_abs_error},
                      {"p90_abs_error_pct", 100 * k.p90_abs_error}});
    write_table_files(rows,
                      {"row", "tasks", "predicted_s", "measured_s", "error_pct", "median_abs_error_pct",
                       "p90_abs_error_pct"},
                      o.csv, "", {}, "rows");
  }
  if (!o.json.empty()) {
    const ValidationRun run{plan.info.model,
                            plan.info.strategy,
                            plan.info.schedule_label(),
                            o.transport,
                            o.device,
                            plan.num_workers(),
                            o.iterations,
                            predicted,
                            m.iteration_s,
                            o.experiment,
                            plan.info.experiment_hash};
    nlohmann::json doc = validation_json(run, cmp);
    doc["peak_memory"] = nlohmann::json::array();
    for (const WorkerReport& w : sim.report.per_worker)
      if (static_cast<std::size_t>(w.worker) < m.peak_memory->size())
        doc["peak_memory"].push_back(
            {{"worker", w.worker},
             {"predicted_bytes", w.peak_memory_bytes},
             {"measured_bytes", (*m.peak_memory)[static_cast<std::size_t>(w.worker)]}});
    write_file_atomically(o.json, doc.dump(1) + "\n");
  }
  return 0;
}

// The simulated iteration time of `plan`, replayed in a child process (one SimGrid engine per
// process: the parent replays the Plan under validation itself).
double predict_in_child(const Plan& plan, const Simulation& s) {
  const std::string text = run_in_child([&] {
    const bool generated = s.platform.empty();
    const std::string platform = generated ? temporary_platform(s.platform_xml) : s.platform;
    const double t = replay(plan, platform, s.options).report.iteration_time_s;
    if (generated) std::filesystem::remove(platform);
    char out[64];
    std::snprintf(out, sizeof out, "%.17g", t);
    return std::string(out);
  });
  return std::stod(text);
}

// --speedup: the Plan and the same flags on one worker, measured with their runs alternated, and
// both simulated; prints the measured and predicted speedup.
int validate_speedup(const Plan& plan, const ValidateOptions& o, Simulation sim) {
  if (o.transport != "threads") throw InputError("--speedup: runs over --transport threads only");
  CommonFlags one = o.flags;
  one.workers = 1;
  one.strategy.clear();
  one.forced = {"--workers", "--strategy"};  // over a --spec too
  const Plan baseline = plan_to_run(one, "");
  print_header(plan, o);
  const std::vector<Measured> m = measure({&plan, &baseline}, o, nullptr);
  const double predicted_one = predict_in_child(baseline, sim);
  double predicted = 0;
  report(plan, o, std::move(sim), m[0], &predicted);
  const double measured = median(m[0].iteration_s), measured_one = median(m[1].iteration_s);
  const double speedup = measured_one / measured, predicted_speedup = predicted_one / predicted;
  std::printf(
      "speedup over 1 worker (same flags, runs alternated): measured %.2fx (%s on 1 worker, %s on %d), "
      "predicted %.2fx (%s, %s): error %+.1f %%\n",
      speedup, format_seconds(measured_one).c_str(), format_seconds(measured).c_str(), plan.num_workers(),
      predicted_speedup, format_seconds(predicted_one).c_str(), format_seconds(predicted).c_str(),
      100 * (predicted_speedup - speedup) / speedup);
  return 0;
}

// One process per worker under mpirun: every process measures, rank 0 simulates and reports.
int validate_over_mpi(const Plan& plan, const ValidateOptions& o, Simulation sim) {
#if STRATA_HAVE_MPI
  return on_mpi_ranks(plan.num_workers(), o.plan.empty() ? "strategy" : "Plan", "validate",
                      [&](const real::MpiSession& session) {
                        if (session.rank() == 0) print_header(plan, o);
                        Measured m;
                        {
                          real::MpiTransport<float> transport(session, plan);
                          m = measure(plan, o, &transport);
                        }  // the transport's teardown is collective: before rank 0 goes on alone
                        return session.rank() == 0 ? report(plan, o, std::move(sim), m) : 0;
                      });
#else
  (void)plan, (void)o, (void)sim;
  throw_no_mpi();
#endif
}

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("validate", "run a Plan for real and simulate it; compare iteration and task times");
  auto o = std::make_shared<ValidateOptions>();
  add_common_flags(*cmd, o->flags, true);
  add_replay_flags(*cmd, o->replay);
  o->flags.calibration = &o->replay.calibration;  // prices --partition balanced
  add_input_option(*cmd, "--plan", o->plan, "Plan JSON (instead of --model/--strategy)");
  add_platform_flag(*cmd, o->flags, PlatformFlag::this_machine);
  add_placement_flags(*cmd, o->placement, false);
  cmd->add_option("--transport", o->transport, "threads (default) or mpi");
  cmd->add_option("--device", o->device,
                  "where the kernels run: cpu (default) or cuda (GPU 0; each worker a pair of streams)");
  cmd->add_option("--runs", o->iterations, "measured iterations (their median counts)")
      ->transform(whole_number(1));
  cmd->add_option("--warmup", o->warmup, "iterations run before measuring")->transform(whole_number(0));
  cmd->add_option("--worst", o->worst, "tasks listed with the largest errors")->transform(whole_number(0));
  add_output_option(*cmd, "--perfetto", o->perfetto,
                    "predicted and measured traces side by side (\"\" to skip)");
  add_output_option(*cmd, "--svg", o->svg, "plot of predicted vs measured task durations (\"\" to skip)");
  add_output_option(*cmd, "--json", o->json, "the figures as JSON");
  add_output_option(*cmd, "--csv", o->csv, "the table (iteration, then each task kind) as CSV");
  add_db_flags(*cmd, o->db, true);
  cmd->add_flag("--no-pin", o->no_pin, "do not pin worker threads to cores");
  cmd->add_flag(
      "--speedup", o->speedup,
      "also run the same flags on 1 worker, alternating runs, and compare measured and predicted speedup");
  cmd->callback([&action, o] {
    action = [o] {
      check_transport(o->transport);
      check_device(o->device, o->transport);
      o->store = open_results_store(o->db);
      if (o->speedup && !o->plan.empty())
        throw InputError(
            "--speedup: needs the flags that build the Plan (--model, --solver, --workers), not --plan");
      Plan plan;
      if (o->plan.empty()) {
        const Experiment e = experiment_of(o->flags, kRunBatchPerWorker);
        o->experiment = canonical_json(e);
        o->optimizer = optimizer_of(e);
        plan = plan_to_run(e);
      } else {
        refuse_beside_plan(o->flags, true);
        plan = plan_to_run(o->flags, o->plan);
        o->optimizer = plan_optimizer(o->flags, plan);
      }
      if (o->device == "cuda") real::check_cuda_kernels(plan, o->plan.empty() ? "--device cuda" : o->plan);
      Simulation sim = prepare_simulation(*o);
      if (plan.has_unplaced()) {  // measured and simulated alike: the policy places them first
        const std::string platform =
            sim.platform.empty() ? temporary_platform(sim.platform_xml) : sim.platform;
        try {
          place_workers_and_say(plan, o->placement, platform, sim.options);
        } catch (...) {
          if (sim.platform.empty()) std::filesystem::remove(platform);
          throw;
        }
        if (sim.platform.empty()) std::filesystem::remove(platform);
      }
      if (o->placement.function_memory_mb > 0) {  // the functions' CPU share, from the platform's pool
        if (o->speedup) throw InputError("--speedup: not with --function-memory");
        const std::string platform =
            sim.platform.empty() ? temporary_platform(sim.platform_xml) : sim.platform;
        try {
          o->cpu_share = function_cpu_share(plan, o->placement, platform, !o->no_pin);
        } catch (...) {
          if (sim.platform.empty()) std::filesystem::remove(platform);
          throw;
        }
        if (sim.platform.empty()) std::filesystem::remove(platform);
      }
      if (o->speedup) return validate_speedup(plan, *o, std::move(sim));
      if (o->transport == "mpi") return validate_over_mpi(plan, *o, std::move(sim));
      print_header(plan, *o);
      const Measured m = measure(plan, *o, nullptr);
      return report(plan, *o, std::move(sim), m);
    };
  });
}

}  // namespace strata::cli
