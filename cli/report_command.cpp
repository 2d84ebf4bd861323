// strata report: one self-contained HTML page from the results store (docs/results.md) — what
// the store holds, the best configurations of each model and platform, their Pareto fronts, how
// the closed form agrees with the replays, predictions against measurements, the accuracy of real
// runs, every row with its spec and the files written with it. Every plot is an inline SVG drawn
// from the store's rows; the page loads nothing from anywhere.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "commands.hpp"
#include "db_flags.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "result_tables.hpp"
#include "strata/sim/explore.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/line_plot_svg.hpp"
#include "strata/traces/results_store.hpp"
#include "strata/traces/timeline_svg.hpp"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string db = "strata.db";
  double wait_s = 30;
  std::string output;
  std::string where;
  std::size_t best = 10;
};

std::string esc(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  return out;
}

std::string num(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A cell of a number that may be missing: "-" then, else formatted.
std::string opt(const std::optional<double>& v, const char* format, double scale = 1) {
  return v && std::isfinite(*v) ? num(format, *v * scale) : "-";
}

int fidelity_rank(const std::string& fidelity) {
  if (fidelity == "step") return 3;
  if (fidelity == "aggregated") return 2;
  if (fidelity == "analytical") return 1;
  return 0;
}

bool simulated(const ResultRow& r) { return fidelity_rank(r.key.fidelity) > 0; }

// Fitting first, then the least iteration time, then the key.
bool better(const ResultRow* a, const ResultRow* b) {
  const bool fa = a->fits.value_or(false), fb = b->fits.value_or(false);
  if (fa != fb) return fa;
  const double ta = a->iteration_time_s.value_or(INFINITY), tb = b->iteration_time_s.value_or(INFINITY);
  if (ta != tb) return ta < tb;
  return a->key.text() < b->key.text();
}

std::string row_link(const ResultRow& r) {
  return "<a href=\"#row-" + esc(r.key.text()) + "\"><code>" + esc(r.key.text()) + "</code></a>";
}

// A path as URL text: every byte but the unreserved ones (RFC 3986 §2.3) and '/' percent-encoded,
// so that no stored path ("javascript:alert(1)") reads as a scheme, a query or a fragment.
std::string percent_encoded(const std::string& path) {
  std::string out;
  for (const char c : path) {
    const auto b = static_cast<unsigned char>(c);
    if (std::isalnum(b) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += c;
      continue;
    }
    char hex[4];
    std::snprintf(hex, sizeof hex, "%%%02X", b);
    out += hex;
  }
  return out;
}

// The href of a row's file: a relative URL from the report's folder ("t.json", "../runs/t.json")
// where one exists, else a file: URL of the absolute path. Never anything else: a stored path is
// data, not markup or a scheme.
std::string file_href(const std::string& file, const fs::path& report_dir) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(fs::path(file), ec);
  if (ec) return "file://" + percent_encoded(file);
  const fs::path rel = fs::relative(absolute.lexically_normal(), report_dir, ec);
  if (ec || rel.empty()) return "file://" + percent_encoded(absolute.lexically_normal().generic_string());
  // Its ':' encoded, a relative path never reads as a scheme.
  return percent_encoded(rel.generic_string());
}

// Links to the row's files, relative to the report's folder where they can be.
std::string file_links(const ResultRow& r, const fs::path& report_dir) {
  std::string out;
  for (const auto& [kind, file] : r.files) {
    std::error_code ec;
    const std::string href = file_href(file, report_dir);
    const bool there = fs::exists(fs::path(file), ec);
    out += std::string(out.empty() ? "" : " ") + "<a class=\"file\" href=\"" + esc(href) + "\">" + esc(kind) +
           "</a>" + (there ? "" : " (missing)");
  }
  return out.empty() ? "-" : out;
}

std::string table_head(const std::vector<std::string>& columns, const std::string& id) {
  std::string out = "<table class=\"sortable\" id=\"" + esc(id) + "\"><thead><tr>";
  for (const std::string& c : columns) out += "<th>" + esc(c) + "</th>";
  return out + "</tr></thead><tbody>\n";
}

const std::vector<std::string> kConfigColumns = {"#",
                                                 "fits",
                                                 "fidelity",
                                                 "strategy",
                                                 "workers",
                                                 "iteration (s)",
                                                 "tokens/s",
                                                 "MFU (%)",
                                                 "bubble (%)",
                                                 "exposed comm. (s)",
                                                 "peak memory (GiB)",
                                                 "energy (J/iteration)",
                                                 "cost (USD/iteration)",
                                                 "files",
                                                 "row"};

std::string config_row(std::size_t rank, const ResultRow& r, const fs::path& dir) {
  std::string fits = "-";
  if (r.fits) fits = *r.fits ? "yes" : "no";
  const std::vector<std::string> cells = {std::to_string(rank),
                                          esc(fits),
                                          esc(r.key.fidelity),
                                          esc(r.strategy),
                                          std::to_string(r.workers),
                                          opt(r.iteration_time_s, "%.6g"),
                                          opt(r.tokens_per_s, "%.6g"),
                                          opt(r.mfu, "%.1f", 100),
                                          opt(r.bubble_fraction, "%.1f", 100),
                                          opt(r.exposed_comm_s, "%.4g"),
                                          opt(r.peak_memory_bytes, "%.2f", 1.0 / (1024.0 * 1024 * 1024)),
                                          opt(r.energy_j, "%.6g"),
                                          opt(r.cost_usd, "%.4g"),
                                          file_links(r, dir),
                                          row_link(r)};
  std::string out = "<tr>";
  for (const std::string& c : cells) out += "<td>" + c + "</td>";
  return out + "</tr>\n";
}

// Rows no other beats in both x and y (and strictly in one), by x.
std::vector<const ResultRow*> front_of(const std::vector<const ResultRow*>& rows,
                                       const std::function<std::optional<double>(const ResultRow&)>& x,
                                       const std::function<std::optional<double>(const ResultRow&)>& y) {
  std::vector<const ResultRow*> with;
  for (const ResultRow* r : rows)
    if (x(*r) && y(*r)) with.push_back(r);
  std::sort(with.begin(), with.end(), [&](const ResultRow* a, const ResultRow* b) {
    if (*x(*a) != *x(*b)) return *x(*a) < *x(*b);
    if (*y(*a) != *y(*b)) return *y(*a) < *y(*b);
    return a->key.text() < b->key.text();
  });
  // Sorted by x then y: a row is on the front when its y is below every y before it. O(n log n).
  std::vector<const ResultRow*> front;
  double best_y = INFINITY;
  for (const ResultRow* r : with)
    if (*y(*r) < best_y) {
      front.push_back(r);
      best_y = *y(*r);
    }
  return front;
}

std::string plot(const LinePlot& p) { return "<div class=\"plot\">" + line_plot_svg(p) + "</div>\n"; }

// One model on one platform: its best configurations (each experiment at the highest fidelity
// it reached), their front in time and money (or memory), and the closed form against the
// replays on the configurations replayed.
std::string group_section(const std::string& title, const std::vector<const ResultRow*>& rows,
                          const ReportOptions& o, const fs::path& dir, std::size_t index) {
  std::map<std::string, const ResultRow*> best;  // by experiment and platform hash
  std::map<std::string, std::map<std::string, const ResultRow*>> by_fidelity;
  for (const ResultRow* r : rows) {
    const std::string id = r->key.experiment_hash + "/" + r->key.platform_hash;
    by_fidelity[id][r->key.fidelity] = r;
    const auto it = best.find(id);
    if (it == best.end() || fidelity_rank(r->key.fidelity) > fidelity_rank(it->second->key.fidelity))
      best[id] = r;
  }
  std::vector<const ResultRow*> ranked;
  for (const auto& [id, r] : best) ranked.push_back(r);
  std::sort(ranked.begin(), ranked.end(), better);
  const std::string g = "g" + std::to_string(index);
  std::string out = "<section class=\"group\" id=\"" + g + "\"><h2>" + esc(title) + "</h2>\n";
  std::map<std::string, int> fidelities;
  for (const ResultRow* r : ranked) ++fidelities[r->key.fidelity];
  std::string counts;
  for (const auto& [f, n] : fidelities)
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " at " + f;
  out += "<p>" + std::to_string(ranked.size()) + " configurations (" + esc(counts) + "); the best " +
         std::to_string(std::min(o.best, ranked.size())) +
         " by iteration time, fitting first, each at the highest fidelity it reached:</p>\n";
  out += table_head(kConfigColumns, g + "-best");
  for (std::size_t i = 0; i < ranked.size() && i < o.best; ++i) out += config_row(i + 1, *ranked[i], dir);
  out += "</tbody></table>\n";

  // Fronts of iteration time against peak memory (what recomputation, ZeRO and offloading
  // trade), and against money where the rows are priced and differ in workers (on one platform
  // at one worker count, money is proportional to time).
  std::vector<const ResultRow*> fitting;
  std::set<int> workers;
  std::size_t priced = 0;
  for (const ResultRow* r : ranked)
    if (r->fits.value_or(false)) {
      fitting.push_back(r);
      workers.insert(r->workers);
      priced += r->cost_usd ? 1 : 0;
    }
  using Value = std::function<std::optional<double>(const ResultRow&)>;
  const Value time = [](const ResultRow& r) { return r.iteration_time_s; };
  const Value memory = [](const ResultRow& r) {
    return r.peak_memory_bytes ? std::optional<double>(*r.peak_memory_bytes / (1024.0 * 1024 * 1024))
                               : std::nullopt;
  };
  const Value money = [](const ResultRow& r) { return r.cost_usd; };
  std::vector<std::tuple<std::string, std::string, Value>> fronts = {
      {"peak memory", "peak memory per worker (GiB)", memory}};
  if (priced >= 2 && workers.size() >= 2) fronts.emplace_back("money", "cost (USD per iteration)", money);
  for (const auto& [name, label, other] : fronts) {
    const std::vector<const ResultRow*> front = front_of(fitting, time, other);
    if (front.empty() || fitting.size() < 2) continue;
    LinePlot p;
    p.title = "Pareto front of iteration time and " + name + ", " + title;
    p.x_label = "iteration time (s)";
    p.y_label = label;
    p.x_from_zero = false;
    PlotSeries all{"fitting configurations", {}, false}, line{"Pareto front", {}, true};
    for (const ResultRow* r : fitting) all.points.emplace_back(*time(*r), *other(*r));
    for (const ResultRow* r : front) line.points.emplace_back(*time(*r), *other(*r));
    p.series = {all, line};
    out += "<h3>Pareto front: iteration time and " + esc(name) + "</h3>\n" + plot(p);
    out += "<p>" + std::to_string(front.size()) + " of " + std::to_string(fitting.size()) +
           " fitting configurations on the front of iteration time and " + esc(name) + ":</p>\n";
    out += table_head(kConfigColumns, g + "-front-" + (name == "money" ? "money" : "memory"));
    for (std::size_t i = 0; i < front.size(); ++i) out += config_row(i + 1, *front[i], dir);
    out += "</tbody></table>\n";
  }

  // The closed form against the replays.
  std::vector<double> est, sim;
  PlotSeries points{"configurations", {}, false};
  double worst = 0, total = 0;
  for (const auto& [id, f] : by_fidelity) {
    const auto a = f.find("analytical");
    const ResultRow* replay = f.count("step") != 0         ? f.at("step")
                              : f.count("aggregated") != 0 ? f.at("aggregated")
                                                           : nullptr;
    if (a == f.end() || replay == nullptr || !a->second->iteration_time_s || !replay->iteration_time_s)
      continue;
    est.push_back(*a->second->iteration_time_s);
    sim.push_back(*replay->iteration_time_s);
    points.points.emplace_back(sim.back(), est.back());
    const double e = std::fabs(est.back() - sim.back()) / sim.back() * 100;
    worst = std::max(worst, e);
    total += e;
  }
  if (!est.empty()) {
    double lo = INFINITY, hi = 0;
    for (std::size_t i = 0; i < est.size(); ++i) {
      lo = std::min({lo, est[i], sim[i]});
      hi = std::max({hi, est[i], sim[i]});
    }
    LinePlot p;
    p.title = "closed form against replay, " + title;
    p.x_from_zero = false;
    p.y_from_zero = false;
    p.x_label = "replayed iteration time (s)";
    p.y_label = "closed-form iteration time (s)";
    p.series = {points, PlotSeries{"equal", {{lo, lo}, {hi, hi}}, true}};
    const double tau = kendall_tau_b(est, sim);
    out += "<h3>Closed form against replay</h3>\n" + plot(p);
    out += "<p class=\"agreement\">" + std::to_string(est.size()) +
           " configurations at both fidelities: mean |difference| " +
           num("%.2f", total / static_cast<double>(est.size())) + " %, largest " + num("%.2f", worst) +
           " %, Kendall tau " + (std::isfinite(tau) ? num("%.3f", tau) : std::string("-")) + ".</p>\n";
  }
  return out + "</section>\n";
}

std::string validation_section(const std::vector<const ResultRow*>& rows, const fs::path& dir) {
  std::string out = "<section id=\"validation\"><h2>Predictions against measurements</h2>\n";
  PlotSeries points{"validations", {}, false};
  double lo = INFINITY, hi = 0;
  for (const ResultRow* r : rows)
    if (r->iteration_time_s && r->measured_iteration_time_s) {
      points.points.emplace_back(*r->measured_iteration_time_s * 1e3, *r->iteration_time_s * 1e3);
      lo = std::min({lo, points.points.back().first, points.points.back().second});
      hi = std::max({hi, points.points.back().first, points.points.back().second});
    }
  if (!points.points.empty()) {
    LinePlot p;
    p.title = "predicted against measured iteration time";
    p.x_label = "measured (ms)";
    p.y_label = "predicted (ms)";
    p.x_from_zero = false;
    p.y_from_zero = false;
    p.series = {points, PlotSeries{"equal", {{lo, lo}, {hi, hi}}, true}};
    out += plot(p);
  }
  out += table_head({"model", "strategy", "platform", "workers", "predicted (ms)", "measured (ms)",
                     "error (%)", "files", "row"},
                    "validation-table");
  for (const ResultRow* r : rows)
    out += "<tr><td>" + esc(r->model) + "</td><td>" + esc(r->strategy) + "</td><td>" + esc(r->platform) +
           "</td><td>" + std::to_string(r->workers) + "</td><td>" + opt(r->iteration_time_s, "%.4g", 1e3) +
           "</td><td>" + opt(r->measured_iteration_time_s, "%.4g", 1e3) + "</td><td>" +
           opt(r->error_pct, "%+.1f") + "</td><td>" + file_links(*r, dir) + "</td><td>" + row_link(*r) +
           "</td></tr>\n";
  return out + "</tbody></table></section>\n";
}

// Rows with a test accuracy per epoch: real runs (`id` real) or a search's trials (`id` search).
std::string curves_section(const std::vector<const ResultRow*>& rows, const fs::path& dir,
                           const std::string& id, const std::string& title) {
  std::string out = "<section id=\"" + id + "\"><h2>" + esc(title) + "</h2>\n";
  LinePlot p;
  p.title = "test accuracy per epoch";
  p.x_label = "epoch";
  p.y_label = "test accuracy (%)";
  p.y_from_zero = false;
  std::vector<std::string> finals;
  std::vector<std::pair<double, PlotSeries>> series;  // (final accuracy, curve)
  for (const ResultRow* r : rows) {
    const std::vector<double> curve = accuracy_curve(*r);
    finals.push_back(curve.empty() ? "-" : num("%.2f", curve.back() * 100));
    if (curve.empty()) continue;
    PlotSeries s{r->model + " " + r->strategy, {}, true};
    for (std::size_t e = 0; e < curve.size(); ++e)
      s.points.emplace_back(static_cast<double>(e + 1), curve[e] * 100);
    series.emplace_back(curve.back(), std::move(s));
  }
  // The ten best curves by their last accuracy (a search may hold thousands).
  constexpr std::size_t kCurves = 10;
  std::stable_sort(series.begin(), series.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (series.size() > kCurves)
    p.title += " (the " + std::to_string(kCurves) + " best of " + std::to_string(series.size()) + ")";
  for (std::size_t i = 0; i < series.size() && i < kCurves; ++i)
    p.series.push_back(std::move(series[i].second));
  if (!p.series.empty()) out += plot(p);
  out += table_head(
      {"model", "strategy", "workers", "samples/s", "iteration (s)", "final accuracy (%)", "files", "row"},
      "real-table");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& r = *rows[i];
    out += "<tr><td>" + esc(r.model) + "</td><td>" + esc(r.strategy) + "</td><td>" +
           std::to_string(r.workers) + "</td><td>" + opt(r.samples_per_s, "%.6g") + "</td><td>" +
           opt(r.iteration_time_s, "%.4g") + "</td><td>" + finals[i] + "</td><td>" + file_links(r, dir) +
           "</td><td>" + row_link(r) + "</td></tr>\n";
  }
  return out + "</tbody></table></section>\n";
}

std::string all_rows_section(const std::vector<ResultRow>& rows, const fs::path& dir) {
  std::string out =
      "<section id=\"rows\"><h2>Every row</h2>\n<p>" + std::to_string(rows.size()) +
      " rows by key (experiment hash / platform hash / fidelity / seed); click a column to sort, "
      "a spec to read the Experiment.</p>\n";
  out += table_head(
      {"key", "command", "model", "strategy", "platform", "workers", "fits", "iteration (s)", "tokens/s",
       "MFU (%)", "peak memory (GiB)", "energy (J)", "cost (USD)", "error (%)", "files", "spec", "strata"},
      "rows-table");
  for (const ResultRow& r : rows) {
    std::string fits = "-";
    if (r.fits) fits = *r.fits ? "yes" : "no";
    const std::string spec =
        r.spec.empty() ? "-" : "<a href=\"#spec-" + esc(r.key.experiment_hash) + "\">spec</a>";
    out += "<tr id=\"row-" + esc(r.key.text()) + "\"><td><code>" + esc(r.key.text()) + "</code></td><td>" +
           esc(r.command) + "</td><td>" + esc(r.model) + "</td><td>" + esc(r.strategy) + "</td><td>" +
           esc(r.platform) + "</td><td>" + std::to_string(r.workers) + "</td><td>" + fits + "</td><td>" +
           opt(r.iteration_time_s, "%.6g") + "</td><td>" + opt(r.tokens_per_s, "%.6g") + "</td><td>" +
           opt(r.mfu, "%.1f", 100) + "</td><td>" +
           opt(r.peak_memory_bytes, "%.2f", 1.0 / (1024.0 * 1024 * 1024)) + "</td><td>" +
           opt(r.energy_j, "%.6g") + "</td><td>" + opt(r.cost_usd, "%.4g") + "</td><td>" +
           opt(r.error_pct, "%+.1f") + "</td><td>" + file_links(r, dir) + "</td><td>" + spec + "</td><td>" +
           esc(r.strata_version) + "</td></tr>\n";
  }
  out += "</tbody></table></section>\n";
  // Each Experiment once (rows of several fidelities share it).
  std::map<std::string, std::string> specs;
  for (const ResultRow& r : rows)
    if (!r.spec.empty()) specs.emplace(r.key.experiment_hash, r.spec);
  out += "<section id=\"specs\"><h2>Experiments</h2>\n<p>" + std::to_string(specs.size()) +
         " Experiment specs (strata simulate --spec re-runs one).</p>\n";
  for (const auto& [hash, spec] : specs) {
    const nlohmann::json j = nlohmann::json::parse(spec, nullptr, false);
    out += "<details id=\"spec-" + esc(hash) + "\"><summary><code>" + esc(hash) + "</code></summary><pre>" +
           esc(j.is_discarded() ? spec : j.dump(2)) + "</pre></details>\n";
  }
  return out + "</section>\n";
}

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}h3{font-size:1.05em}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#f4f4f4;cursor:pointer}td:nth-child(4){text-align:left}
tr:target{background:#ffd}details:target{background:#ffd}pre{font-size:11px}
nav a{margin-right:1em}.plot{overflow-x:auto})";

// Sorting by a column (numbers as numbers, "-" last), opening a spec the page jumps to, and a
// mark that the script ran to its end (the report's test looks for it).
constexpr const char* kScript = R"(
(function () {
  function value(cell) {
    var t = cell.textContent.trim();
    if (t === '-' || t === '') return null;
    var n = Number(t.replace(/^\+/, ''));
    return isNaN(n) ? t : n;
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th').forEach(function (th, column) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var down = th.dataset.order === 'asc';
        rows.sort(function (a, b) {
          var x = value(a.cells[column]), y = value(b.cells[column]);
          if (x === null || y === null) return x === null ? (y === null ? 0 : 1) : -1;
          var c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === 'number' ? -1 : 1);
          return down ? -c : c;
        });
        th.dataset.order = down ? 'desc' : 'asc';
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  function open() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (target && target.tagName === 'DETAILS') target.open = true;
  }
  window.addEventListener('hashchange', open);
  open();
  document.body.setAttribute('data-ready', 'yes');
})();
)";

int report(const ReportOptions& o) {
  ResultsStore store(o.db, o.wait_s);
  std::vector<ResultRow> rows = store.rows();
  if (!o.where.empty()) {
    const ResultTable keys = store.query("SELECT key FROM results WHERE (" + o.where + ")");
    std::set<std::string> kept;
    for (const auto& cells : keys.rows)
      if (const auto* k = std::get_if<std::string>(&cells[0])) kept.insert(*k);
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const ResultRow& r) { return kept.count(r.key.text()) == 0; }),
               rows.end());
  }
  if (rows.empty())
    throw InputError(
        input_error_message(o.db, "", o.where.empty() ? "no rows to report" : "no row matches --where"));
  const fs::path dir = fs::absolute(fs::path(o.output)).parent_path();

  std::map<std::string, std::vector<const ResultRow*>> groups;  // "model on platform (N workers)"
  std::vector<const ResultRow*> validations, real, searches;
  std::map<std::pair<std::string, std::string>, int> counts;  // (command, fidelity)
  std::set<std::string> versions;
  for (const ResultRow& r : rows) {
    ++counts[{r.command, r.key.fidelity}];
    versions.insert(r.strata_version);
    if (r.key.fidelity == "validate") validations.push_back(&r);
    if (r.key.fidelity == "real") real.push_back(&r);
    if (r.key.fidelity == "search") searches.push_back(&r);
    if (simulated(r)) groups[r.model + " on " + r.platform].push_back(&r);
  }
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>strata report: " +
      esc(fs::path(o.db).filename().string()) + "</title>\n<style>" + kStyle + "</style></head>\n<body>\n";
  html += "<h1>strata report: " + esc(fs::path(o.db).filename().string()) + "</h1>\n";
  std::string version_list;
  for (const std::string& v : versions) version_list += (version_list.empty() ? "" : ", ") + v;
  html += "<p id=\"summary\">" + std::to_string(rows.size()) + " rows" +
          (o.where.empty() ? "" : " where <code>" + esc(o.where) + "</code>") + ", written by strata " +
          esc(version_list) + ". Every table and plot below is read from the store.</p>\n<nav>";
  std::size_t index = 0;
  for (const auto& [title, members] : groups)
    html += "<a href=\"#g" + std::to_string(index++) + "\">" + esc(title) + "</a>";
  if (!validations.empty()) html += "<a href=\"#validation\">validations</a>";
  if (!real.empty()) html += "<a href=\"#real\">real runs</a>";
  if (!searches.empty()) html += "<a href=\"#search\">search trials</a>";
  html += "<a href=\"#rows\">every row</a><a href=\"#specs\">experiments</a></nav>\n";
  html += table_head({"command", "fidelity", "rows"}, "counts");
  for (const auto& [cf, n] : counts)
    html += "<tr><td>" + esc(cf.first) + "</td><td>" + esc(cf.second) + "</td><td>" + std::to_string(n) +
            "</td></tr>\n";
  html += "</tbody></table>\n";
  index = 0;
  for (const auto& [title, members] : groups) html += group_section(title, members, o, dir, index++);
  if (!validations.empty()) html += validation_section(validations, dir);
  if (!real.empty()) html += curves_section(real, dir, "real", "Real runs");
  if (!searches.empty()) html += curves_section(searches, dir, "search", "Search trials");
  html += all_rows_section(rows, dir);
  html += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  write_file_atomically(o.output, html);
  std::printf(
      "report of %zu rows (%zu model-platform groups, %zu validations, %zu real runs, %zu search trials) -> "
      "%s\n",
      rows.size(), groups.size(), validations.size(), real.size(), searches.size(), o.output.c_str());
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("report", "one self-contained HTML page of the results store");
  auto o = std::make_shared<ReportOptions>();
  add_store_reader_flags(*cmd, o->db, o->wait_s);
  add_output_option(*cmd, "-o,--output", o->output, "the HTML file")->required();
  cmd->add_option("--where", o->where, "report only the rows of this SQL condition, e.g. \"model = 'mlp'\"");
  cmd->add_option("--best", o->best, "configurations listed per model and platform")
      ->transform(whole_number(1, 100000));
  cmd->callback([&action, o] { action = [o] { return report(*o); }; });
}

}  // namespace strata::cli
