#include "strata/sim/published.hpp"

#include <cmath>
#include <cstdio>
#include <new>

#include "strata/sim/process.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace sim {
namespace {

constexpr double kGiB = 1073741824.0;

PublishedRow read_row(const JsonNode& n) {
  n.reject_unknown_fields({"row", "params", "layers", "hidden", "heads", "tp", "pp", "gpus", "global_batch",
                           "microbatch_size", "interleave", "recompute", "ddp", "framework", "tflops_per_gpu",
                           "iteration_s", "platform"});
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
  if (const auto v = n.find("interleave")) r.interleave = v->as_int(1, INT32_MAX);
  r.recompute = n.at("recompute").as_string();
  if (!parse_recompute(r.recompute))
    n.at("recompute").fail("unknown recompute " + quote_for_message(r.recompute));
  if (const auto v = n.find("ddp")) {
    r.ddp = v->as_string();
    if (!parse_ddp_mode(r.ddp)) v->fail("unknown ddp mode " + quote_for_message(r.ddp));
  }
  if (const auto v = n.find("framework")) {
    r.framework = v->as_string();
    if (!parse_framework(r.framework)) v->fail("unknown framework " + quote_for_message(r.framework));
  }
  const auto tflops = n.find("tflops_per_gpu");
  const auto seconds = n.find("iteration_s");
  if (!tflops && !seconds) n.fail("neither iteration_s nor tflops_per_gpu: what was measured?");
  if (tflops) {
    r.tflops_per_gpu = tflops->as_number();
    if (!(r.tflops_per_gpu > 0)) tflops->fail("must be > 0");
  }
  if (seconds) {
    r.iteration_s = seconds->as_number();
    if (!(r.iteration_s > 0)) seconds->fail("must be > 0");
  }
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

std::string strategy_text(const PublishedRow& r) {
  return "dp=" + std::to_string(r.dp()) + ",tp=" + std::to_string(r.tp) + ",pp=" + std::to_string(r.pp);
}

// The framework a row runs with: its own, or its file's ("" = strata's default).
const std::string& row_framework(const PublishedRuns& runs, const PublishedRow& r) {
  return r.framework.empty() ? runs.framework : r.framework;
}

// The published TFLOP/s per GPU, with the paper's FLOP count.
double published_tflops(const PublishedResult& x) {
  return x.flops / (x.published_s * static_cast<double>(x.row->gpus) * 1e12);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

PublishedRuns read_published_runs(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  const JsonNode root(doc, path);
  check_file_header(root, "strata-published-runs", 1);
  root.reject_unknown_fields({"format", "schema_version", "source", "microbatch_source", "model", "seq",
                              "vocab", "framework", "rows"});
  PublishedRuns runs;
  runs.path = path;
  runs.source = root.at("source").as_string();
  runs.model = root.at("model").as_string();
  runs.seq = root.at("seq").as_int(1, INT32_MAX);
  runs.vocab = root.at("vocab").as_int(1, INT32_MAX);
  if (const auto v = root.find("framework")) {
    runs.framework = v->as_string();
    if (!parse_framework(runs.framework)) v->fail("unknown framework " + quote_for_message(runs.framework));
  }
  const JsonNode rows = root.at("rows");
  if (rows.size() == 0) rows.fail("no row");
  for (std::size_t i = 0; i < rows.size(); ++i) runs.rows.push_back(read_row(rows.at(i)));
  return runs;
}

double paper_flops(const PublishedRuns& runs, const PublishedRow& r) {
  const double b = static_cast<double>(r.global_batch), s = static_cast<double>(runs.seq);
  const double l = static_cast<double>(r.layers), h = static_cast<double>(r.hidden);
  const double v = static_cast<double>(runs.vocab);
  return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}

double published_iteration_s(const PublishedRuns& runs, const PublishedRow& r) {
  if (r.iteration_s > 0) return r.iteration_s;
  return paper_flops(runs, r) / (r.tflops_per_gpu * 1e12 * static_cast<double>(r.gpus));
}

std::vector<std::pair<std::string, std::string>> published_sets(const PublishedRuns& runs,
                                                                const PublishedRow& r) {
  std::vector<std::pair<std::string, std::string>> sets;
  const std::string& framework = row_framework(runs, r);
  if (!framework.empty()) sets.emplace_back("framework", framework);
  sets.emplace_back("layers", std::to_string(r.layers));
  sets.emplace_back("hidden", std::to_string(r.hidden));
  sets.emplace_back("heads", std::to_string(r.heads));
  sets.emplace_back("seq", std::to_string(runs.seq));
  sets.emplace_back("vocab", std::to_string(runs.vocab));
  sets.emplace_back("recompute", r.recompute);
  sets.emplace_back("interleave", std::to_string(r.interleave));
  if (!r.ddp.empty()) sets.emplace_back("ddp", r.ddp);
  return sets;
}

std::string published_configuration(const PublishedRuns& runs, const PublishedRow& r) {
  const std::string& framework = row_framework(runs, r);
  std::string text = strategy_text(r) + " mbs=" + std::to_string(r.microbatch_size) +
                     " B=" + std::to_string(r.global_batch) + " recompute=" + r.recompute;
  if (r.interleave > 1) text += " v=" + std::to_string(r.interleave);
  if (!framework.empty()) text += " " + framework;
  if (!r.ddp.empty()) text += " ddp=" + r.ddp;
  return text;
}

std::string published_command(const PublishedRuns& runs, const PublishedRow& r, const std::string& platform) {
  std::string cmd = "strata simulate --model " + runs.model;
  for (const auto& [key, value] : published_sets(runs, r)) cmd += " --set " + key + "=" + value;
  return cmd + " --strategy " + strategy_text(r) + " --schedule 1f1b --microbatches " +
         std::to_string(r.microbatches()) + " --global-batch " + std::to_string(r.global_batch) +
         " --dtype bf16 --optimizer adam --collectives aggregated --platform " + platform;
}

Experiment published_experiment(const PublishedRuns& runs, const PublishedRow& r) {
  Experiment e;
  e.model = runs.model;
  for (const auto& [key, value] : published_sets(runs, r)) apply_set(e, key, value);
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

double PublishedResult::predicted_tflops() const {
  return flops / (report->iteration_time_s * static_cast<double>(row->gpus) * 1e12);
}
double PublishedResult::error_pct() const {
  return 100 * (report->iteration_time_s - published_s) / published_s;
}

std::vector<PublishedResult> simulate_published(
    const PublishedRuns& runs, const std::function<std::string(const PublishedRow&)>& platform_of,
    const ReplayOptions& options, int parallel) {
  std::vector<PublishedResult> results;
  std::vector<std::function<std::string()>> jobs;
  for (const PublishedRow& r : runs.rows) {
    PublishedResult x;
    x.row = &r;
    x.flops = paper_flops(runs, r);
    x.published_s = published_iteration_s(runs, r);
    x.platform = platform_of(r);
    results.push_back(x);
    // In a child: the row's report as JSON, or {"not_simulated": <reason>} when the lowering
    // refuses an option it does not build yet.
    jobs.push_back([&runs, &r, &options, platform = x.platform] {
      ReplayOptions quiet = options;
      quiet.keep_trace = false;
      quiet.progress = nullptr;
      const auto skipped = [](const std::string& why) {
        return nlohmann::json{{"not_simulated", why}}.dump();
      };
      // As `strata simulate` replays it: with a symmetry reduction where one is exact (of the
      // tensor-parallel ranks of each stage on these rows).
      try {
        return report_to_json(replay_experiment(published_experiment(runs, r), platform, quiet).report)
            .dump();
      } catch (const InputError& e) {
        return skipped(e.what());
      } catch (const std::bad_alloc&) {
        return skipped("its Plan or its replay does not fit in the memory this machine has left");
      }
    });
  }
  const std::vector<ChildResult> outputs = run_in_children_each(jobs, parallel);
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!outputs[i].ok) {  // killed, most often by the kernel when the machine ran out of memory
      results[i].not_simulated = outputs[i].text;
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(outputs[i].text);
    if (j.contains("not_simulated"))
      results[i].not_simulated = j["not_simulated"].get<std::string>();
    else
      results[i].report = report_from_json(j);
  }
  return results;
}

std::pair<double, std::size_t> published_mean_abs_error(const std::vector<PublishedResult>& results) {
  double sum = 0;
  std::size_t n = 0;
  for (const PublishedResult& x : results)
    if (x.report) {
      sum += std::abs(x.error_pct());
      ++n;
    }
  return {n > 0 ? sum / static_cast<double>(n) : 0, n};
}

std::string published_table(const PublishedRuns& runs, const std::vector<PublishedResult>& results) {
  std::string out = "validate-published " + runs.path + ": " + std::to_string(results.size()) +
                    " rows\nsource: " + runs.source + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%3s %6s %-72s %12s %12s %8s %14s %14s %4s %9s\n", "row", "params",
                "configuration", "predicted(s)", "published(s)", "error(%)", "pred(TFLOP/s)", "publ(TFLOP/s)",
                "fits", "mem(GiB)");
  out += line;
  std::string notes;
  for (const PublishedResult& x : results) {
    const bool sim = x.report.has_value();
    std::snprintf(line, sizeof line, "%3lld %6s %-72s %12s %12.3f %8s %14s %14.1f %4s %9s\n",
                  static_cast<long long>(x.row->row), x.row->params.c_str(),
                  published_configuration(runs, *x.row).c_str(),
                  sim ? fmt("%.3f", x.report->iteration_time_s).c_str() : "-", x.published_s,
                  sim ? fmt("%+.1f", x.error_pct()).c_str() : "-",
                  sim ? fmt("%.1f", x.predicted_tflops()).c_str() : "-", published_tflops(x),
                  sim ? (x.report->fits ? "yes" : "no") : "-",
                  sim ? fmt("%.1f", x.report->peak_memory_bytes / kGiB).c_str() : "-");
    out += line;
    if (!sim) notes += "row " + std::to_string(x.row->row) + " not simulated: " + x.not_simulated + "\n";
  }
  const auto [mae, n] = published_mean_abs_error(results);
  out += notes + "mean absolute error of the iteration time: " + (n > 0 ? fmt("%.1f %%", mae) : "-") +
         " over " + std::to_string(n) + " of " + std::to_string(results.size()) + " rows\n";
  if (n == 0) return out;
  // Where each predicted iteration goes (Report::breakdown), s per iteration, mean per GPU.
  std::snprintf(line, sizeof line,
                "\npredicted iteration by part (s per iteration, mean per GPU; exposed: not under "
                "compute)\n%3s %9s %9s %9s %9s %9s %9s %9s %9s\n",
                "row", "GEMM", "attention", "mem-bound", "optimizer", "exp. TP", "exp. PP", "exp. DP",
                "bubble");
  out += line;
  for (const PublishedResult& x : results) {
    if (!x.report) continue;
    const Breakdown& b = x.report->breakdown;
    std::snprintf(line, sizeof line, "%3lld %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n",
                  static_cast<long long>(x.row->row), b.gemm_s, b.attention_s, b.memory_bound_s,
                  b.optimizer_s, b.exposed_tp_s, b.exposed_pp_s, b.exposed_dp_s, b.idle_s);
    out += line;
  }
  return out;
}

nlohmann::json published_json(const PublishedRuns& runs, const std::vector<PublishedResult>& results) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PublishedResult& x : results) {
    nlohmann::json j = {{"row", x.row->row},
                        {"params", x.row->params},
                        {"configuration", published_configuration(runs, *x.row)},
                        {"command", published_command(runs, *x.row, x.platform)},
                        {"flops_per_iteration", x.flops},
                        {"published_s", x.published_s},
                        {"published_tflops_per_gpu", published_tflops(x)},
                        {"simulated", x.report.has_value()},
                        {"not_simulated", x.not_simulated},
                        {"predicted_s", nullptr},
                        {"predicted_tflops_per_gpu", nullptr},
                        {"error_pct", nullptr},
                        {"fits", nullptr},
                        {"peak_memory_bytes", nullptr},
                        {"breakdown", nullptr}};
    if (x.report) {
      j["predicted_s"] = x.report->iteration_time_s;
      j["predicted_tflops_per_gpu"] = x.predicted_tflops();
      j["error_pct"] = x.error_pct();
      j["fits"] = x.report->fits;
      j["peak_memory_bytes"] = x.report->peak_memory_bytes;
      j["breakdown"] = breakdown_to_json(x.report->breakdown);
    }
    rows.push_back(j);
  }
  const auto [mae, n] = published_mean_abs_error(results);
  return {{"format", "strata-validate-published"},
          {"schema_version", 1},
          {"data", runs.path},
          {"source", runs.source},
          {"rows", rows},
          {"simulated_rows", n},
          {"mean_abs_error_pct", n > 0 ? nlohmann::json(mae) : nlohmann::json(nullptr)}};
}

std::string published_csv(const nlohmann::json& doc) {
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
                                         "gemm_s",
                                         "attention_s",
                                         "memory_bound_s",
                                         "optimizer_s",
                                         "exposed_tp_s",
                                         "exposed_pp_s",
                                         "exposed_dp_s",
                                         "bubble_s",
                                         "not_simulated"};
  std::string s;
  for (const char* c : kColumns) s += (s.empty() ? "" : ",") + std::string(c);
  s += "\n";
  for (const auto& row : doc["rows"]) {
    std::string line;
    for (const char* c : kColumns) {
      // The breakdown's columns come from the row's "breakdown" object (null when not simulated).
      const nlohmann::json& breakdown = row.at("breakdown");
      const nlohmann::json v = row.contains(c)         ? row.at(c)
                               : breakdown.is_object() ? breakdown.at(c)
                                                       : nlohmann::json();
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

}  // namespace sim
}  // namespace strata
