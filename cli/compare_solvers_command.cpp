// strata compare-solvers: every solver that applies to the model, and backprop under DP and
// PP-1F1B, DP with each memory option the real executor runs (recompute=full, zero=1, zero=1
// with offload=1, zero=2, zero=3) and DP with each gradient compression (compression=int8, fp8, topk,
// powersgd), on the same workers: predicted time per epoch on a platform, measured time per epoch and
// accuracy on this machine, time to a target accuracy, bytes per iteration predicted and
// measured, and peak memory per worker; an SVG of accuracy against wall-clock time.
//
// One "iteration" is what one optimizer step of the solver sees (docs/solvers.md): backprop, a
// global batch; AMPNet and local parallelism, one instance of `--global-batch` samples (64 by
// default); the ADMM solvers, one full-batch sweep, which is also their epoch. Each row's Plan is
// replayed in a child process (one SimGrid engine per process).
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "real_run.hpp"
#include "strata/real/train/admm_plan.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/replay.hpp"
#include "strata/sim/report.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/line_plot_svg.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

constexpr double kEpochSamples = 60000;  // Fashion-MNIST's training set; a GCN's epoch is its graph's nodes
constexpr std::int64_t kBatchPerWorker = 64;

struct CompareOptions {
  CommonFlags flags;
  ReplayFlags replay;
  int epochs = 2;
  double target = 0.85;
  std::string svg = "compare-solvers.svg";
  std::string csv;   // the table's rows as CSV ("" = none)
  std::string json;  // and as JSON
  // Worker counts of a predicted scaling study (--scaling); empty: the comparison above.
  std::vector<std::int64_t> scaling;
};

struct Row {
  std::string label;
  CommonFlags flags;
  std::string why_not;       // non-empty: this row has no Plan here
  bool plan_failed = false;  // why_not says the Plan was built but is invalid (a strata bug)
  std::string not_measured;  // non-empty: why the real executor did not run it
  double epoch_samples = kEpochSamples;
  Report predicted;
  std::vector<real::EpochResult> measured;
  std::vector<double> seconds;  // cumulative training seconds after each epoch
  double measured_bytes = -1;   // B per iteration the workers sent (backprop rows), -1 unmeasured
};

std::vector<Row> rows_for(const CompareOptions& o) {
  const int w = o.flags.workers > 0 ? o.flags.workers : 2;
  std::vector<Row> rows;
  auto add = [&](const std::string& label, const std::string& solver, const std::string& strategy) {
    Row r;
    r.label = label;
    r.flags = o.flags;
    r.flags.solver = solver;
    // --set keys of other solvers are not this row's.
    r.flags.sets.clear();
    for (const std::string& pair : o.flags.sets) {
      const std::string key = pair.substr(0, pair.find('='));
      if (!is_solver_key(key) || is_solver_key(key, *parse_solver(solver))) r.flags.sets.push_back(pair);
    }
    r.flags.strategy = strategy;
    r.flags.workers = strategy.empty() ? w : 0;
    r.flags.forced = {"--solver", "--strategy", "--workers", "--schedule"};
    rows.push_back(std::move(r));
  };
  add("backprop dp=" + std::to_string(w), "backprop", "dp=" + std::to_string(w));
  rows.back().flags.schedule = "1f1b";
  add("backprop pp=" + std::to_string(w) + " 1f1b", "backprop", "pp=" + std::to_string(w));
  // The memory options the real executor runs, on the data-parallel row (docs/memory.md, "Run
  // for real"): activation recomputation, ZeRO-1, ZeRO-1 with its optimizer on the host (a row
  // whose platform has no pcie_bw says why it has no Plan), ZeRO-2 and ZeRO-3; then the gradient codecs
  // (docs/compression.md) with their default topk_ratio and powersgd_rank.
  for (const std::vector<std::string>& options :
       std::vector<std::vector<std::string>>{{"recompute=full"},
                                             {"zero=1"},
                                             {"zero=1", "offload=1"},
                                             {"zero=2"},
                                             {"zero=3"},
                                             {"compression=int8"},
                                             {"compression=fp8"},
                                             {"compression=topk"},
                                             {"compression=powersgd"}}) {
    std::string label = "backprop dp=" + std::to_string(w);
    for (const std::string& option : options) label += " " + option;
    add(label, "backprop", "dp=" + std::to_string(w));
    rows.back().flags.schedule = "1f1b";
    for (const std::string& option : options) rows.back().flags.sets.push_back(option);
  }
  for (const std::string& solver : solver_names())
    if (solver != "backprop") add(solver, solver, "");
  return rows;
}

// The rows of a scaling study at `w` workers: the solvers that split a deep network over workers
// (docs/solvers.md, "Very deep CNNs"), each as it scales: local parallelism with one chunk per
// worker, Block-ADMM in its batch setting (one step per minibatch; the online setting's default of
// one step per block makes a minibatch cost w passes) and the serial-parallel hybrid with its defaults.
std::vector<Row> scaling_rows(const CompareOptions& o, std::int64_t w) {
  CompareOptions at = o;
  at.flags.workers = static_cast<int>(w);
  const std::string n = std::to_string(w);
  // rows_for's label of each row the study keeps, its label here (the same at every count) and
  // the setting it adds.
  const std::vector<std::array<std::string, 3>> kept = {
      {"backprop dp=" + n, "backprop dp", ""},
      {"backprop pp=" + n + " 1f1b", "backprop pp 1f1b", ""},
      {"ampnet", "ampnet", ""},
      {"local", "local", "chunks=" + n},
      {"pdadmm", "pdadmm", ""},
      {"block-admm", "block-admm batch", "setting=batch"},
      {"serial-parallel", "serial-parallel", ""}};
  std::vector<Row> all = rows_for(at);
  std::vector<Row> rows;
  for (Row& r : all)
    for (const auto& [from, label, set] : kept)
      if (r.label == from) {
        r.label = label;
        if (!set.empty()) r.flags.sets.push_back(set);
        rows.push_back(std::move(r));
        break;
      }
  return rows;
}

// Replays the row's Plan on `platform` in a child process; fills why_not instead when it has none.
void predict(Row& row, const std::string& platform, const ReplayOptions& options) {
  Plan plan;
  try {
    StrategyConfig config;
    SolverConfig solver;
    const Model model = build_model(row.flags, config, &solver);
    if (model.family == "gcn") row.epoch_samples = static_cast<double>(model.graph_nodes);
    plan = build_plan(row.flags, kBatchPerWorker);
    if (is_admm(plan.info.solver))
      row.epoch_samples = static_cast<double>(plan.info.global_batch);  // a full-batch sweep
  } catch (const InvalidPlanError& e) {
    row.why_not = e.what();
    row.plan_failed = true;
    return;
  } catch (const InputError& e) {
    row.why_not = e.what();  // the solver does not apply to this model or these workers
    return;
  }
  try {
    row.predicted = replay_report_apart(plan, platform, options);
  } catch (const InputError& e) {
    row.why_not = e.what();  // the platform lacks what the Plan needs (offload: pcie_bw)
  }
}

// An ADMM row: one epoch is one full-batch sweep over the Plan's seeded training columns.
void measure_admm(Row& row, const Plan& plan, const CompareOptions& o,
                  const real::LabelledImages& train_images, const real::LabelledImages& test_images) {
  const real::AdmmPlanShape shape = real::admm_plan_shape(plan);
  const auto seed = static_cast<std::uint64_t>(o.flags.seed);
  const real::AdmmData<float> train = real::admm_columns<float>(train_images, shape.samples, seed);
  const real::AdmmData<float> test = real::admm_columns<float>(test_images, test_images.count, 0);
  real::CpuBackend backend;
  real::ThreadTransport<float> transport;
  real::AdmmPlanTrainer<float> trainer(plan, train, seed, backend, transport, true);
  const int sweeps = std::max(1, plan.num_iterations());
  double seconds = 0;
  for (int e = sweeps; e - sweeps < o.epochs; e += sweeps) {
    if (progress_wanted())
      std::fprintf(stderr, "\rcompare-solvers: %s, epoch %d/%d   ", row.label.c_str(), e, o.epochs);
    real::EpochResult r;
    r.epoch = e;
    trainer.run(&r.train_seconds);
    const real::AdmmNetwork<float> net = trainer.network();
    r.train_loss = real::mean_cross_entropy(net, train.x, train.labels, backend);
    r.test_accuracy = real::accuracy(net, test.x, test.classes, backend);
    r.samples_per_second = static_cast<double>(shape.samples * sweeps) / std::max(1e-9, r.train_seconds);
    r.train_seconds /= sweeps;  // per epoch
    for (int s = 0; s < sweeps; ++s) {
      seconds += r.train_seconds;
      row.measured.push_back(r);
      row.seconds.push_back(seconds);
    }
  }
  if (progress_wanted()) std::fprintf(stderr, "\r%60s\r", "");
}

void measure(Row& row, const CompareOptions& o) {
  if (!row.why_not.empty() || o.epochs == 0) return;
  Plan plan;
  try {
    plan = plan_to_run(row.flags, "");
  } catch (const InputError& e) {
    row.not_measured = e.what();  // e.g. a task kind the real executor has no kernel for
    return;
  }
  static const real::LabelledImages train = real::load_fashion_mnist(real::DatasetSplit::train);
  static const real::LabelledImages test = real::load_fashion_mnist(real::DatasetSplit::test);
  if (is_admm(plan.info.solver)) return measure_admm(row, plan, o, train, test);
  real::CpuBackend backend;
  real::TrainConfig config;
  config.seed = static_cast<std::uint64_t>(o.flags.seed);
  config.init = plan.info.model == "mlp" ? real::WeightInit::he_normal : real::WeightInit::fan_in_uniform;
  real::Trainer<float> trainer(plan, backend, config);
  double seconds = 0;
  for (int e = 1; e <= o.epochs; ++e) {
    if (progress_wanted())
      std::fprintf(stderr, "\rcompare-solvers: %s, epoch %d/%d   ", row.label.c_str(), e, o.epochs);
    row.measured.push_back(trainer.train_epoch(e, train, test));
    seconds += row.measured.back().train_seconds;
    row.seconds.push_back(seconds);
  }
  // The bytes of one more run of the Plan on the first batch (the epochs' totals also hold the test
  // passes' pipeline traffic), per solver iteration as the prediction counts them.
  std::vector<std::int64_t> first(static_cast<std::size_t>(std::min(trainer.global_batch(), train.count)));
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<std::int64_t>(i);
  const std::uint64_t before = trainer.bytes_sent();
  trainer.train_batch(train, first);
  row.measured_bytes =
      static_cast<double>(trainer.bytes_sent() - before) / std::max(1, row.predicted.instances);
  if (progress_wanted()) std::fprintf(stderr, "\r%60s\r", "");
}

// A row's figures in base units (s, B, fractions); null where the table prints "-" or "n/a".
nlohmann::json row_json(const Row& r, const CompareOptions& o) {
  nlohmann::json j = {{"row", r.label},
                      {"predicted_epoch_s", nullptr},
                      {"measured_epoch_s", nullptr},
                      {"test_accuracy", nullptr},
                      {"time_to_target_s", nullptr},
                      {"bytes_per_iteration", nullptr},
                      {"measured_bytes_per_iteration", nullptr},
                      {"peak_memory_bytes", nullptr},
                      {"not_available", r.why_not.empty() ? nullptr : nlohmann::json(r.why_not)},
                      {"not_measured", r.not_measured.empty() ? nullptr : nlohmann::json(r.not_measured)}};
  if (!r.why_not.empty()) return j;
  j["predicted_epoch_s"] = r.epoch_samples / std::max(1e-30, r.predicted.samples_per_s);
  // The report's bytes are per Plan iteration, which holds `instances` solver iterations.
  j["bytes_per_iteration"] =
      (r.predicted.bytes_intra_host + r.predicted.bytes_inter_host) / r.predicted.instances;
  j["peak_memory_bytes"] = r.predicted.peak_memory_bytes;
  if (r.measured_bytes >= 0) j["measured_bytes_per_iteration"] = r.measured_bytes;
  if (r.measured.empty()) return j;
  double epoch = 0;
  for (const real::EpochResult& e : r.measured) epoch += e.train_seconds;
  j["measured_epoch_s"] = epoch / static_cast<double>(r.measured.size());
  j["test_accuracy"] = r.measured.back().test_accuracy;
  for (std::size_t e = 0; e < r.measured.size(); ++e)
    if (r.measured[e].test_accuracy >= o.target) {
      j["time_to_target_s"] = r.seconds[e];
      break;
    }
  return j;
}

void print_table(const std::vector<Row>& rows, const CompareOptions& o) {
  std::printf("%-34s %14s %14s %10s %14s %16s %16s %14s\n", "solver", "predicted/epoch", "measured/epoch",
              "accuracy",
              ("to " + std::to_string(static_cast<int>(std::lround(o.target * 100))) + " %").c_str(),
              "bytes/iteration", "measured bytes", "peak mem/worker");
  for (const Row& r : rows) {
    if (!r.why_not.empty()) {
      std::printf("%-34s n/a (%s)\n", r.label.c_str(), r.why_not.c_str());
      continue;
    }
    const nlohmann::json j = row_json(r, o);  // the figures, printed with their units
    auto seconds = [&j](const char* key, const char* none) {
      return j[key].is_null() ? std::string(none) : format_seconds(j[key].get<double>());
    };
    auto bytes = [&j](const char* key) {
      return j[key].is_null() ? std::string("-") : format_bytes(j[key].get<double>());
    };
    char accuracy[32] = "-";
    if (!j["test_accuracy"].is_null())
      std::snprintf(accuracy, sizeof accuracy, "%.2f %%", 100 * j["test_accuracy"].get<double>());
    std::printf("%-34s %14s %14s %10s %14s %16s %16s %14s%s\n", r.label.c_str(),
                seconds("predicted_epoch_s", "-").c_str(), seconds("measured_epoch_s", "-").c_str(), accuracy,
                seconds("time_to_target_s", r.measured.empty() ? "-" : "not reached").c_str(),
                bytes("bytes_per_iteration").c_str(), bytes("measured_bytes_per_iteration").c_str(),
                bytes("peak_memory_bytes").c_str(), r.not_measured.empty() ? "" : "  (not run here, *)");
  }
  for (const Row& r : rows)
    if (!r.not_measured.empty()) std::printf("* %s: %s\n", r.label.c_str(), r.not_measured.c_str());
  std::printf(
      "predicted on %s; measured here over %d epoch(s), threads transport; batch %lld per worker "
      "(per instance for ampnet and local; the ADMM solvers: one full-batch sweep per epoch)\n",
      o.flags.platform.c_str(), o.epochs, static_cast<long long>(kBatchPerWorker));
}

void write_tables(const std::vector<Row>& rows, const CompareOptions& o) {
  static const char* const kColumns[] = {"row",
                                         "predicted_epoch_s",
                                         "measured_epoch_s",
                                         "test_accuracy",
                                         "time_to_target_s",
                                         "bytes_per_iteration",
                                         "measured_bytes_per_iteration",
                                         "peak_memory_bytes",
                                         "not_available",
                                         "not_measured"};
  nlohmann::json all = nlohmann::json::array();
  std::string csv;
  for (const char* c : kColumns) csv += (csv.empty() ? "" : ",") + std::string(c);
  csv += "\n";
  for (const Row& r : rows) {
    const nlohmann::json j = row_json(r, o);
    std::string line;
    for (const char* c : kColumns) line += (line.empty() ? "" : ",") + csv_cell(j[c]);
    csv += line + "\n";
    all.push_back(j);
  }
  if (!o.csv.empty()) write_file_atomically(o.csv, csv);
  if (!o.json.empty()) {
    const nlohmann::json doc = {{"schema_version", 1},          {"format", "strata-compare-solvers"},
                                {"platform", o.flags.platform}, {"epochs", o.epochs},
                                {"target", o.target},           {"rows", all}};
    write_file_atomically(o.json, dump_one_element_per_line(doc, o.json));
  }
}

void write_plot(const std::vector<Row>& rows, const CompareOptions& o) {
  LinePlot plot;
  plot.title = "test accuracy against training time: " + o.flags.model + ", " +
               std::to_string(o.flags.workers > 0 ? o.flags.workers : 2) + " workers, this machine";
  plot.x_label = "training time (s)";
  plot.y_label = "test accuracy (%)";
  plot.y_from_zero = false;
  for (const Row& r : rows) {
    if (r.measured.empty()) continue;
    PlotSeries s{r.label, {}};
    for (std::size_t e = 0; e < r.measured.size(); ++e)
      s.points.emplace_back(r.seconds[e], 100 * r.measured[e].test_accuracy);
    plot.series.push_back(std::move(s));
  }
  write_line_plot_svg(plot, o.svg);
  std::printf("accuracy against time -> %s\n", o.svg.c_str());
}

// The scaling study: every row at every worker count, predicted; speedup over backprop on one
// worker (the first count's data-parallel row when the counts start at 1).
int run_scaling(const CompareOptions& o, const std::string& platform, const ReplayOptions& options) {
  struct Point {
    std::int64_t workers = 0;
    Row row;
  };
  std::vector<Point> points;
  for (std::int64_t w : o.scaling) {
    for (Row& r : scaling_rows(o, w)) {
      if (progress_wanted())
        std::fprintf(stderr, "\rcompare-solvers: %s on %lld workers   ", r.label.c_str(),
                     static_cast<long long>(w));
      predict(r, platform, options);
      points.push_back({w, std::move(r)});
    }
  }
  if (progress_wanted()) std::fprintf(stderr, "\r%70s\r", "");
  double serial = 0;  // s per epoch of backprop on one worker
  for (const Point& p : points)
    if (p.workers == 1 && p.row.label == "backprop dp" && p.row.why_not.empty())
      serial = p.row.epoch_samples / std::max(1e-30, p.row.predicted.samples_per_s);
  nlohmann::json all = nlohmann::json::array();
  std::printf("%-20s %8s %16s %10s %16s %16s\n", "solver", "workers", "predicted/epoch", "speedup",
              "bytes/iteration", "peak mem/worker");
  std::map<std::string, PlotSeries> series;
  std::vector<std::string> order;
  bool failed = false;
  for (const Point& p : points) {
    nlohmann::json j = row_json(p.row, o);
    j["workers"] = p.workers;
    j["speedup"] = nullptr;
    failed = failed || p.row.plan_failed;
    if (!p.row.why_not.empty()) {
      std::printf("%-20s %8lld n/a (%s)\n", p.row.label.c_str(), static_cast<long long>(p.workers),
                  p.row.why_not.c_str());
      all.push_back(j);
      continue;
    }
    const double epoch = j["predicted_epoch_s"].get<double>();
    std::string speedup = "-";
    if (serial > 0) {
      j["speedup"] = serial / epoch;
      char text[32];
      std::snprintf(text, sizeof text, "%.2fx", serial / epoch);
      speedup = text;
      if (series.find(p.row.label) == series.end()) order.push_back(p.row.label);
      series[p.row.label].name = p.row.label;
      series[p.row.label].points.emplace_back(static_cast<double>(p.workers), serial / epoch);
    }
    std::printf("%-20s %8lld %16s %10s %16s %16s\n", p.row.label.c_str(), static_cast<long long>(p.workers),
                format_seconds(epoch).c_str(), speedup.c_str(),
                format_bytes(j["bytes_per_iteration"].get<double>()).c_str(),
                format_bytes(j["peak_memory_bytes"].get<double>()).c_str());
    all.push_back(j);
  }
  std::printf(
      "predicted on %s; an epoch is %g samples, batch %lld per worker (per instance for ampnet, local, "
      "block-admm and serial-parallel); speedup over backprop on 1 worker\n",
      o.flags.platform.c_str(), kEpochSamples, static_cast<long long>(kBatchPerWorker));
  static const char* const kColumns[] = {
      "row",          "workers", "predicted_epoch_s", "speedup", "bytes_per_iteration", "peak_memory_bytes",
      "not_available"};
  std::string csv;
  for (const char* c : kColumns) csv += (csv.empty() ? "" : ",") + std::string(c);
  csv += "\n";
  for (nlohmann::json& j : all) {
    std::string line;
    for (const char* c : kColumns) line += (line.empty() ? "" : ",") + csv_cell(j[c]);
    csv += line + "\n";
  }
  if (!o.csv.empty()) write_file_atomically(o.csv, csv);
  if (!o.json.empty()) {
    const nlohmann::json doc = {{"schema_version", 1},
                                {"format", "strata-compare-solvers-scaling"},
                                {"platform", o.flags.platform},
                                {"model", o.flags.model},
                                {"rows", all}};
    write_file_atomically(o.json, dump_one_element_per_line(doc, o.json));
  }
  if (failed)
    throw InputError(
        "compare-solvers: a row's Plan is invalid (n/a in the table); the other rows are printed");
  if (!o.svg.empty() && !series.empty()) {
    LinePlot plot;
    plot.title = "predicted speedup over backprop on 1 worker: " + o.flags.model + " on " + o.flags.platform;
    plot.x_label = "workers";
    plot.y_label = "speedup (x)";
    for (const std::string& name : order) plot.series.push_back(series[name]);
    write_line_plot_svg(plot, o.svg);
    std::printf("speedup against workers -> %s\n", o.svg.c_str());
  }
  return 0;
}

}  // namespace

void add_compare_solvers_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("compare-solvers",
                                 "every solver and backprop DP / PP-1F1B on the same workers: predicted and "
                                 "measured time per epoch, accuracy, bytes, memory");
  cmd->footer(
      "A row whose solver does not apply to the model or the workers prints n/a (why) and leaves the "
      "exit status 0. A row whose Plan is built but fails validation prints n/a (why); the command "
      "then exits 1 without writing the plot.");
  auto o = std::make_shared<CompareOptions>();
  o->flags.model = "mlp";
  add_input_option(*cmd, "--spec", o->flags.spec,
                   "experiment spec JSON (model, settings); flags given too override it");
  o->flags.track(cmd->add_option("--model", o->flags.model, "model from the zoo (default mlp)"));
  o->flags.track(cmd->add_option("--workers", o->flags.workers, "workers of every row (default 2)")
                     ->transform(whole_number(1)));
  add_platform_flag(*cmd, o->flags, PlatformFlag::required);
  CLI::Option* epochs =
      cmd->add_option("--epochs", o->epochs, "epochs each row trains here (0: predict only)")
          ->transform(whole_number(0));
  cmd->add_option("--target", o->target, "test accuracy the time-to-target column asks for (0-1)")
      ->transform(real_number(0.0, 1.0));
  add_output_option(*cmd, "--svg", o->svg, "accuracy against time plot");
  add_output_option(*cmd, "--csv", o->csv, "write the table's rows as CSV (s, B, fractions; default: none)");
  add_output_option(*cmd, "--json", o->json, "write the table's rows as JSON (default: none)");
  o->flags.track(cmd->add_option("--optimizer", o->flags.optimizer, "sgd | adam")
                     ->check(CLI::IsMember({"sgd", "adam"})));
  o->flags.track(cmd->add_option("--seed", o->flags.seed, "seed of every random choice")
                     ->transform(whole_number(INT64_MIN, INT64_MAX)));
  o->flags.track(
      cmd->add_option("--set", o->flags.sets, "key=value model, solver or optimizer setting (repeatable)"));
  add_replay_flags(*cmd, o->replay);
  cmd->add_option(
         "--scaling", o->scaling,
         "worker counts of a predicted scaling study, e.g. 1,2,4,8,16,32,64: backprop DP and PP-1F1B, "
         "AMPNet, local, pdADMM and Block-ADMM (batch setting) at each; --svg plots speedup")
      ->delimiter(',')
      ->transform(whole_number(1, 1 << 20));
  cmd->callback([&action, o, epochs] {
    const bool epochs_given = epochs->count() > 0;
    action = [o, epochs_given] {
      if (!o->scaling.empty() && epochs_given)
        throw InputError("--scaling: a predicted study; it trains nothing here (leave --epochs out)");
      const std::string platform = resolve_platform(o->flags.platform);
      // Every row replays on it: a file that is not there is one error, not a row of n/a each.
      if (std::FILE* f = std::fopen(platform.c_str(), "rb"); f != nullptr)
        std::fclose(f);
      else
        throw InputError(platform + ": cannot open file: " + std::strerror(errno));
      const ReplayOptions options = replay_options(o->replay);  // reads the calibration once
      // Rows the platform cannot hold would each be n/a after a failed lowering: one line instead.
      const std::int64_t most = o->scaling.empty() ? (o->flags.workers > 0 ? o->flags.workers : 2)
                                                   : *std::max_element(o->scaling.begin(), o->scaling.end());
      const int slots = load_platform_summary_apart(platform, options.network).total_slots();
      if (most > slots)
        throw InputError(std::string(o->scaling.empty() ? "--workers" : "--scaling") + ": " +
                         std::to_string(most) + " workers, the platform " + platform + " has " +
                         std::to_string(slots) + " worker slots");
      if (!o->scaling.empty()) return run_scaling(*o, platform, options);
      std::vector<Row> rows = rows_for(*o);
      for (Row& r : rows) predict(r, platform, options);
      const auto failed = std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.plan_failed; });
      for (Row& r : rows) measure(r, *o);
      print_table(rows, *o);
      write_tables(rows, *o);
      if (failed != rows.end())
        throw InputError("compare-solvers: row '" + failed->label +
                         "': its Plan is invalid (n/a in the table); the other rows are printed");
      if (!o->svg.empty() && o->epochs > 0) write_plot(rows, *o);
      return 0;
    };
  });
}

}  // namespace strata::cli
