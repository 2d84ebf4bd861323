// strata validate-published: simulates published large-model training runs and prints the
// predicted iteration time and TFLOP/s per GPU beside the published ones.
//
// The runs are a data file in the repository (validation/megatron-sc21-table1.json: Narayanan et
// al. 2021, Table 1), every figure in it from the paper or the authors' scripts, named in its
// "source" fields. Each row is simulated exactly as `strata simulate` would with
//   --model M --set layers=L --set hidden=H --set heads=A --set seq=S --set vocab=V
//   --strategy dp=D,tp=T,pp=P --schedule 1f1b --microbatches B/(D b) --global-batch B
//   --dtype bf16 --optimizer adam --collectives aggregated --set recompute=R --set interleave=1
//   --set ddp=overlap|after_flush --platform selene-<GPUs>.xml
// (b the row's micro-batch size, D = GPUs / (T P)); the published iteration time is
// F / (TFLOP/s x 10^12 x GPUs) with the paper's FLOP count per iteration (its eq. 3, recompute
// forward included) F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h)).
// A row the lowering cannot build yet prints "not simulated: <the lowering's one-line reason>".
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/sim/process.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {
namespace {

constexpr double kGiB = 1073741824.0;

struct PublishedRow {
  std::int64_t row = 0;
  std::string params;  // as published ("1.7B")
  std::int64_t layers = 0, hidden = 0, heads = 0;
  std::int64_t tp = 1, pp = 1, gpus = 1;
  std::int64_t global_batch = 0, microbatch_size = 0;
  std::string recompute, ddp;
  double tflops_per_gpu = 0;  // published, achieved TFLOP/s per GPU
  std::string platform;       // "" = selene-<gpus>.xml

  std::int64_t dp() const { return gpus / (tp * pp); }
  std::int64_t microbatches() const { return global_batch / (dp() * microbatch_size); }
};

struct PublishedRuns {
  std::string path, source, model;
  std::int64_t seq = 0, vocab = 0;
  std::vector<PublishedRow> rows;
};

PublishedRow read_row(const JsonNode& n) {
  n.reject_unknown_fields({"row", "params", "layers", "hidden", "heads", "tp", "pp", "gpus", "global_batch",
                           "microbatch_size", "recompute", "ddp", "tflops_per_gpu", "platform"});
  PublishedRow r;
  r.row = n.at("row").as_int(1, INT32_MAX);
  r.params = n.at("params").as_string();
  r.layers = n.at("layers").as_int(1, INT32_MAX);
  r.hidden = n.at("hidden").as_int(1, INT32_MAX);
  r.heads = n.at("heads").as_int(1, INT32_MAX);
  r.tp = n.at("tp").as_int(1, INT32_MAX);
  r.pp = n.at("pp").as_int(1, INT32_MAX);
  r.gpus = n.at("gpus").as_int(1, INT32_MAX);
  r.global_batch = n.at("global_batch").as_int(1, INT32_MAX);
  r.microbatch_size = n.at("microbatch_size").as_int(1, INT32_MAX);
  r.recompute = n.at("recompute").as_string();
  if (!parse_recompute(r.recompute))
    n.at("recompute").fail("unknown recompute " + quote_for_message(r.recompute));
  r.ddp = n.at("ddp").as_string();
  if (!parse_ddp_mode(r.ddp)) n.at("ddp").fail("unknown ddp mode " + quote_for_message(r.ddp));
  r.tflops_per_gpu = n.at("tflops_per_gpu").as_number();
  if (r.tflops_per_gpu <= 0) n.at("tflops_per_gpu").fail("must be > 0");
  if (const auto p = n.find("platform")) r.platform = p->as_string();
  if (r.gpus % (r.tp * r.pp) != 0)
    n.at("gpus").fail(std::to_string(r.gpus) +
                      " GPUs do not divide into tp x pp = " + std::to_string(r.tp * r.pp));
  if (r.global_batch % (r.dp() * r.microbatch_size) != 0)
    n.at("global_batch")
        .fail(std::to_string(r.global_batch) +
              " is not a multiple of dp x microbatch_size = " + std::to_string(r.dp() * r.microbatch_size));
  return r;
}

PublishedRuns read_published(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  const JsonNode root(doc, path);
  check_file_header(root, "strata-published-runs", 1);
  root.reject_unknown_fields(
      {"format", "schema_version", "source", "microbatch_source", "model", "seq", "vocab", "rows"});
  PublishedRuns runs;
  runs.path = path;
  runs.source = root.at("source").as_string();
  runs.model = root.at("model").as_string();
  runs.seq = root.at("seq").as_int(1, INT32_MAX);
  runs.vocab = root.at("vocab").as_int(1, INT32_MAX);
  const JsonNode rows = root.at("rows");
  if (rows.size() == 0) rows.fail("no row");
  for (std::size_t i = 0; i < rows.size(); ++i) runs.rows.push_back(read_row(rows.at(i)));
  return runs;
}

// The paper's FLOPs per iteration (Narayanan et al. 2021, eq. 3; recompute forward included).
double paper_flops(const PublishedRuns& runs, const PublishedRow& r) {
  const double b = static_cast<double>(r.global_batch), s = static_cast<double>(runs.seq);
  const double l = static_cast<double>(r.layers), h = static_cast<double>(r.hidden);
  const double v = static_cast<double>(runs.vocab);
  return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}

// The `--set` pairs and flags of the row's simulation, as `strata simulate` takes them.
std::vector<std::pair<std::string, std::string>> row_sets(const PublishedRuns& runs, const PublishedRow& r) {
  return {{"layers", std::to_string(r.layers)},
          {"hidden", std::to_string(r.hidden)},
          {"heads", std::to_string(r.heads)},
          {"seq", std::to_string(runs.seq)},
          {"vocab", std::to_string(runs.vocab)},
          {"recompute", r.recompute},
          {"interleave", "1"},
          {"ddp", r.ddp}};
}

std::string row_platform(const PublishedRow& r) {
  return resolve_platform(r.platform.empty() ? "selene-" + std::to_string(r.gpus) + ".xml" : r.platform);
}

std::string row_strategy(const PublishedRow& r) {
  return "dp=" + std::to_string(r.dp()) + ",tp=" + std::to_string(r.tp) + ",pp=" + std::to_string(r.pp);
}

std::string simulate_command(const PublishedRuns& runs, const PublishedRow& r) {
  std::string cmd = "strata simulate --model " + runs.model;
  for (const auto& [key, value] : row_sets(runs, r)) cmd += " --set " + key + "=" + value;
  return cmd + " --strategy " + row_strategy(r) + " --schedule 1f1b --microbatches " +
         std::to_string(r.microbatches()) + " --global-batch " + std::to_string(r.global_batch) +
         " --dtype bf16 --optimizer adam --collectives aggregated --platform " + row_platform(r);
}

Experiment row_experiment(const PublishedRuns& runs, const PublishedRow& r) {
  Experiment e;
  e.model = runs.model;
  for (const auto& [key, value] : row_sets(runs, r)) apply_set(e, key, value);
  e.dp = static_cast<int>(r.dp());
  e.tp = static_cast<int>(r.tp);
  e.pp = static_cast<int>(r.pp);
  e.schedule = PipelineSchedule::one_f_one_b;
  e.microbatches = r.microbatches();
  e.global_batch = r.global_batch;
  e.dtype = DType::bf16;
  e.optimizer = Optimizer::adam;
  return e;
}

// In a child process: the row's report as JSON, or {"not_simulated": <reason>} when the lowering
// refuses an option it does not build yet.
std::string simulate_row(const PublishedRuns& runs, const PublishedRow& r) {
  Plan plan;
  try {
    plan = lower(row_experiment(runs, r));
  } catch (const InputError& e) {
    return nlohmann::json{{"not_simulated", e.what()}}.dump();
  }
  ReplayFlags flags;
  flags.collectives = "aggregated";
  return report_to_json(replay(plan, row_platform(r), replay_options(flags)).report).dump();
}

struct RowResult {
  const PublishedRow* row = nullptr;
  double flops = 0, published_s = 0;
  std::optional<Report> report;
  std::string not_simulated;

  double predicted_tflops() const {
    return flops / (report->iteration_time_s * static_cast<double>(row->gpus) * 1e12);
  }
  double error_pct() const { return 100 * (report->iteration_time_s - published_s) / published_s; }
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string configuration(const PublishedRow& r) {
  return row_strategy(r) + " mbs=" + std::to_string(r.microbatch_size) +
         " B=" + std::to_string(r.global_batch) + " recompute=" + r.recompute + " ddp=" + r.ddp;
}

void print_table(const PublishedRuns& runs, const std::vector<RowResult>& results) {
  std::printf("validate-published %s: %zu rows\nsource: %s\n", runs.path.c_str(), results.size(),
              runs.source.c_str());
  std::printf("%3s %6s %-62s %12s %12s %8s %14s %14s %4s %9s\n", "row", "params", "configuration",
              "predicted(s)", "published(s)", "error(%)", "pred(TFLOP/s)", "publ(TFLOP/s)", "fits",
              "mem(GiB)");
  std::string notes;
  for (const RowResult& x : results) {
    const bool sim = x.report.has_value();
    std::printf("%3lld %6s %-62s %12s %12.3f %8s %14s %14.1f %4s %9s\n", static_cast<long long>(x.row->row),
                x.row->params.c_str(), configuration(*x.row).c_str(),
                sim ? fmt("%.3f", x.report->iteration_time_s).c_str() : "-", x.published_s,
                sim ? fmt("%+.1f", x.error_pct()).c_str() : "-",
                sim ? fmt("%.1f", x.predicted_tflops()).c_str() : "-", x.row->tflops_per_gpu,
                sim ? (x.report->fits ? "yes" : "no") : "-",
                sim ? fmt("%.1f", x.report->peak_memory_bytes / kGiB).c_str() : "-");
    if (!sim) notes += "row " + std::to_string(x.row->row) + " not simulated: " + x.not_simulated + "\n";
  }
  std::cout << notes;
}

// Mean absolute error (%) over the simulated rows, and their count.
std::pair<double, std::size_t> mean_abs_error(const std::vector<RowResult>& results) {
  double sum = 0;
  std::size_t n = 0;
  for (const RowResult& x : results)
    if (x.report) {
      sum += std::abs(x.error_pct());
      ++n;
    }
  return {n > 0 ? sum / static_cast<double>(n) : 0, n};
}

nlohmann::json results_json(const PublishedRuns& runs, const std::vector<RowResult>& results) {
  nlohmann::json rows = nlohmann::json::array();
  for (const RowResult& x : results) {
    nlohmann::json j = {{"row", x.row->row},
                        {"params", x.row->params},
                        {"configuration", configuration(*x.row)},
                        {"command", simulate_command(runs, *x.row)},
                        {"flops_per_iteration", x.flops},
                        {"published_s", x.published_s},
                        {"published_tflops_per_gpu", x.row->tflops_per_gpu},
                        {"simulated", x.report.has_value()},
                        {"not_simulated", x.not_simulated},
                        {"predicted_s", nullptr},
                        {"predicted_tflops_per_gpu", nullptr},
                        {"error_pct", nullptr},
                        {"fits", nullptr},
                        {"peak_memory_bytes", nullptr}};
    if (x.report) {
      j["predicted_s"] = x.report->iteration_time_s;
      j["predicted_tflops_per_gpu"] = x.predicted_tflops();
      j["error_pct"] = x.error_pct();
      j["fits"] = x.report->fits;
      j["peak_memory_bytes"] = x.report->peak_memory_bytes;
    }
    rows.push_back(j);
  }
  const auto [mae, n] = mean_abs_error(results);
  return {{"format", "strata-validate-published"},
          {"schema_version", 1},
          {"data", runs.path},
          {"source", runs.source},
          {"rows", rows},
          {"simulated_rows", n},
          {"mean_abs_error_pct", n > 0 ? nlohmann::json(mae) : nlohmann::json(nullptr)}};
}

std::string results_csv(const nlohmann::json& doc) {
  static const char* const kColumns[] = {"row",
                                         "params",
                                         "configuration",
                                         "predicted_s",
                                         "published_s",
                                         "error_pct",
                                         "predicted_tflops_per_gpu",
                                         "published_tflops_per_gpu",
                                         "fits",
                                         "peak_memory_bytes",
                                         "not_simulated"};
  std::string s;
  for (const char* c : kColumns) s += (s.empty() ? "" : ",") + std::string(c);
  s += "\n";
  for (const auto& row : doc["rows"]) {
    std::string line;
    for (const char* c : kColumns) {
      const nlohmann::json& v = row[c];
      std::string cell = v.is_null()      ? ""
                         : v.is_boolean() ? (v.get<bool>() ? "yes" : "no")
                         : v.is_string()  ? v.get<std::string>()
                                          : v.dump();
      if (cell.find_first_of(",\"") != std::string::npos) {
        std::string quoted = "\"";
        for (char ch : cell) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        cell = quoted + "\"";
      }
      line += (line.empty() ? "" : ",") + cell;
    }
    s += line + "\n";
  }
  return s;
}

struct ValidatePublishedOptions {
  std::string data = std::string(STRATA_VALIDATION_DIR) + "/megatron-sc21-table1.json";
  std::string json, csv;
  double max_error = -1;  // < 0: no bound
};

int validate_published(const ValidatePublishedOptions& o) {
  const PublishedRuns runs = read_published(o.data);
  std::vector<std::function<std::string()>> jobs;
  for (const PublishedRow& r : runs.rows) jobs.push_back([&runs, &r] { return simulate_row(runs, r); });
  const std::vector<std::string> outputs = run_in_children(jobs, 2);
  std::vector<RowResult> results;
  for (std::size_t i = 0; i < runs.rows.size(); ++i) {
    RowResult x;
    x.row = &runs.rows[i];
    x.flops = paper_flops(runs, *x.row);
    x.published_s = x.flops / (x.row->tflops_per_gpu * 1e12 * static_cast<double>(x.row->gpus));
    const nlohmann::json j = nlohmann::json::parse(outputs[i]);
    if (j.contains("not_simulated"))
      x.not_simulated = j["not_simulated"].get<std::string>();
    else
      x.report = report_from_json(j);
    results.push_back(std::move(x));
  }
  print_table(runs, results);
  const auto [mae, n] = mean_abs_error(results);
  std::printf("mean absolute error of the iteration time: %s over %zu of %zu rows\n",
              n > 0 ? fmt("%.1f %%", mae).c_str() : "-", n, results.size());
  const nlohmann::json doc = results_json(runs, results);
  if (!o.json.empty()) write_file_atomically(o.json, doc.dump(1) + "\n");
  if (!o.csv.empty()) write_file_atomically(o.csv, results_csv(doc));
  if (o.max_error < 0) return 0;
  int status = 0;
  for (const RowResult& x : results) {
    if (!x.report) {
      std::fprintf(stderr, "validate-published: row %lld not simulated (--max-error %g %% needs every row)\n",
                   static_cast<long long>(x.row->row), o.max_error);
      status = 1;
    } else if (std::abs(x.error_pct()) > o.max_error) {
      std::fprintf(stderr, "validate-published: row %lld error %+.1f %% exceeds --max-error %g %%\n",
                   static_cast<long long>(x.row->row), x.error_pct(), o.max_error);
      status = 1;
    }
  }
  return status;
}

}  // namespace

void add_validate_published_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("validate-published",
                         "simulate published training runs (Megatron-LM, Narayanan et al. 2021, Table 1) "
                         "and compare iteration time and TFLOP/s per GPU");
  auto o = std::make_shared<ValidatePublishedOptions>();
  add_input_option(*cmd, "--data", o->data,
                   "the published runs (JSON; default: validation/megatron-sc21-table1.json)");
  add_output_option(*cmd, "--json", o->json, "write the rows as JSON");
  add_output_option(*cmd, "--csv", o->csv, "write the rows as CSV");
  cmd->add_option("--max-error", o->max_error,
                  "exit 1 when a row's iteration-time error exceeds PCT % (or a row is not simulated)")
      ->transform(real_number(0, 1e6));
  cmd->callback([&action, o] { action = [o] { return validate_published(*o); }; });
}

}  // namespace strata::cli
