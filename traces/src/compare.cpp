#include "strata/traces/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "strata/traces/error.hpp"
#include "strata/traces/stats.hpp"
#include "strata/traces/timeline_svg.hpp"

namespace strata {
inline namespace traces {
namespace {

struct Duration {
  TaskKind kind = TaskKind::fixed;
  WorkerId worker = 0;
  double seconds = 0;
};

// Duration of each task on its lowest-numbered participant, by id.
std::map<std::string, Duration> durations(const Trace& trace) {
  std::map<std::string, Duration> out;
  for (const TraceRecord& r : trace.records) {
    auto [it, inserted] = out.try_emplace(r.id, Duration{r.kind, r.worker, r.end - r.start});
    if (!inserted && r.worker < it->second.worker) it->second = Duration{r.kind, r.worker, r.end - r.start};
  }
  return out;
}

void check_same_ids(const std::map<std::string, Duration>& a, const std::map<std::string, Duration>& b,
                    const char* a_name, const char* b_name) {
  for (const auto& [id, d] : a)
    if (b.count(id) == 0)
      throw InputError(std::string("traces differ: task '") + id + "' is in the " + a_name +
                       " trace and not in the " + b_name + " one (not runs of the same Plan)");
}

}  // namespace

double TaskComparison::relative_error() const {
  if (measured_s == 0) return predicted_s == 0 ? 0 : INFINITY;
  return (predicted_s - measured_s) / measured_s;
}

std::vector<TaskComparison> TraceComparison::worst(std::size_t count) const {
  std::vector<TaskComparison> sorted = tasks;
  std::stable_sort(sorted.begin(), sorted.end(), [](const TaskComparison& a, const TaskComparison& b) {
    return std::abs(a.relative_error()) > std::abs(b.relative_error());
  });
  sorted.resize(std::min(count, sorted.size()));
  return sorted;
}

TraceComparison compare_traces(const Trace& predicted, const std::vector<Trace>& measured) {
  STRATA_ASSERT(!measured.empty(), "compare_traces needs a measured run");
  const std::map<std::string, Duration> pred = durations(predicted);
  std::vector<std::map<std::string, Duration>> runs;
  runs.reserve(measured.size());
  for (const Trace& t : measured) {
    runs.push_back(durations(t));
    check_same_ids(pred, runs.back(), "predicted", "measured");
    check_same_ids(runs.back(), pred, "measured", "predicted");
  }
  TraceComparison out;
  out.tasks.reserve(pred.size());
  std::map<TaskKind, std::vector<double>> errors;
  std::vector<double> compute_errors;
  std::vector<double> samples(runs.size());
  for (const auto& [id, p] : pred) {
    for (std::size_t r = 0; r < runs.size(); ++r) samples[r] = runs[r].at(id).seconds;
    TaskComparison c{id, p.kind, p.worker, p.seconds, median(samples)};
    const double e = std::abs(c.relative_error());
    errors[p.kind].push_back(e);
    if (!is_communication(p.kind)) compute_errors.push_back(e);
    out.tasks.push_back(std::move(c));
  }
  for (const auto& [kind, e] : errors) {
    KindComparison k;
    k.kind = kind;
    k.tasks = e.size();
    k.median_abs_error = median(e);
    k.p90_abs_error = nearest_rank_percentile(e, 0.9);
    out.kinds.push_back(k);
  }
  for (const TaskComparison& c : out.tasks)
    for (KindComparison& k : out.kinds)
      if (k.kind == c.kind) {
        k.predicted_total_s += c.predicted_s;
        k.measured_total_s += c.measured_s;
      }
  if (!compute_errors.empty()) {
    out.compute_median_abs_error = median(compute_errors);
    out.compute_p90_abs_error = nearest_rank_percentile(compute_errors, 0.9);
  }
  return out;
}

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A duration label in the unit that keeps it short.
std::string time_label(double s) {
  if (s >= 1) return fmt("%g s", s);
  if (s >= 1e-3) return fmt("%g ms", s * 1e3);
  if (s >= 1e-6) return fmt("%g us", s * 1e6);
  return fmt("%g ns", s * 1e9);
}

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};

}  // namespace

std::string comparison_svg(const TraceComparison& comparison, const std::string& title, double band) {
  constexpr double kSize = 520, kLeft = 80, kTop = 50, kLegend = 190;
  double lo = INFINITY, hi = 0;
  for (const TaskComparison& c : comparison.tasks)
    for (double v : {c.predicted_s, c.measured_s})
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(hi > 0)) lo = 1e-6, hi = 1e-3;
  const double d_lo = std::floor(std::log10(lo)), d_hi = std::max(d_lo + 1, std::ceil(std::log10(hi)));
  auto pos = [&](double v) {
    return (std::log10(std::max(v, std::pow(10.0, d_lo))) - d_lo) / (d_hi - d_lo) * kSize;
  };
  auto x_of = [&](double v) { return kLeft + pos(v); };
  auto y_of = [&](double v) { return kTop + kSize - pos(v); };
  std::string svg;
  const double width = kLeft + kSize + 20 + kLegend, height = kTop + kSize + 60;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) + "\" height=\"" +
         fmt("%.0f", height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg +=
      "<text x=\"" + fmt("%.0f", kLeft) + "\" y=\"24\" font-size=\"14\">" + xml_escape(title) + "</text>\n";
  svg += "<rect x=\"" + fmt("%.0f", kLeft) + "\" y=\"" + fmt("%.0f", kTop) + "\" width=\"" +
         fmt("%.0f", kSize) + "\" height=\"" + fmt("%.0f", kSize) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double d = d_lo; d <= d_hi; ++d) {
    const double v = std::pow(10.0, d);
    svg += "<line x1=\"" + fmt("%.1f", x_of(v)) + "\" y1=\"" + fmt("%.1f", kTop) + "\" x2=\"" +
           fmt("%.1f", x_of(v)) + "\" y2=\"" + fmt("%.1f", kTop + kSize) + "\" stroke=\"#eee\"/>\n";
    svg += "<line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + fmt("%.1f", y_of(v)) + "\" x2=\"" +
           fmt("%.1f", kLeft + kSize) + "\" y2=\"" + fmt("%.1f", y_of(v)) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + fmt("%.1f", x_of(v)) + "\" y=\"" + fmt("%.0f", kTop + kSize + 16) +
           "\" text-anchor=\"middle\">" + time_label(v) + "</text>\n";
    svg += "<text x=\"" + fmt("%.0f", kLeft - 6) + "\" y=\"" + fmt("%.1f", y_of(v) + 4) +
           "\" text-anchor=\"end\">" + time_label(v) + "</text>\n";
  }
  svg += "<text x=\"" + fmt("%.0f", kLeft + kSize / 2) + "\" y=\"" + fmt("%.0f", kTop + kSize + 40) +
         "\" text-anchor=\"middle\">predicted task duration</text>\n";
  svg += "<text transform=\"translate(18," + fmt("%.0f", kTop + kSize / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">measured task duration (median over runs)</text>\n";
  // y = x and the band: measured = predicted / (1 ± band).
  const double a = std::pow(10.0, d_lo), b = std::pow(10.0, d_hi);
  svg += "<line x1=\"" + fmt("%.1f", x_of(a)) + "\" y1=\"" + fmt("%.1f", y_of(a)) + "\" x2=\"" +
         fmt("%.1f", x_of(b)) + "\" y2=\"" + fmt("%.1f", y_of(b)) + "\" stroke=\"#444\"/>\n";
  for (double f : {1 / (1 + band), 1 / (1 - band)})
    svg += "<line x1=\"" + fmt("%.1f", x_of(a)) + "\" y1=\"" + fmt("%.1f", y_of(a * f)) + "\" x2=\"" +
           fmt("%.1f", x_of(b / f)) + "\" y2=\"" + fmt("%.1f", y_of(b)) +
           "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n";
  std::map<TaskKind, std::size_t> colour;
  for (const KindComparison& k : comparison.kinds) colour.emplace(k.kind, colour.size());
  for (const TaskComparison& c : comparison.tasks) {
    const char* fill = kPalette[colour[c.kind] % std::size(kPalette)];
    svg += "<circle cx=\"" + fmt("%.1f", x_of(c.predicted_s)) + "\" cy=\"" + fmt("%.1f", y_of(c.measured_s)) +
           "\" r=\"3\" fill=\"" + fill + "\" fill-opacity=\"0.75\"><title>" + xml_escape(c.id) +
           ": predicted " + time_label(c.predicted_s) + ", measured " + time_label(c.measured_s) +
           "</title></circle>\n";
  }
  double y = kTop + 10;
  const double lx = kLeft + kSize + 20;
  for (const KindComparison& k : comparison.kinds) {
    svg += "<circle cx=\"" + fmt("%.0f", lx + 5) + "\" cy=\"" + fmt("%.0f", y - 4) + "\" r=\"4\" fill=\"" +
           kPalette[colour[k.kind] % std::size(kPalette)] + "\"/>\n";
    svg += "<text x=\"" + fmt("%.0f", lx + 14) + "\" y=\"" + fmt("%.0f", y) + "\">" +
           std::string(to_string(k.kind)) + " (" + fmt("%.0f", 100 * k.median_abs_error) + " %)</text>\n";
    y += 18;
  }
  svg += "<text x=\"" + fmt("%.0f", lx) + "\" y=\"" + fmt("%.0f", y + 8) +
         "\" fill=\"#555\">(median |error|); dashed: ±" + fmt("%.0f", 100 * band) + " %</text>\n";
  svg += "</svg>\n";
  return svg;
}

MeasuredSpread measured_spread(const std::vector<double>& seconds) {
  STRATA_ASSERT(!seconds.empty(), "no measured iteration");
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  return {median(seconds), sorted[sorted.size() / 10], sorted[(sorted.size() * 9) / 10]};
}

nlohmann::ordered_json validation_json(const ValidationRun& run, const TraceComparison& cmp) {
  const MeasuredSpread m = measured_spread(run.measured_s);
  nlohmann::ordered_json j;
  j["model"] = run.model;
  j["strategy"] = run.strategy;
  j["schedule"] = run.schedule;
  j["transport"] = run.transport;
  j["device"] = run.device;
  j["workers"] = run.workers;
  j["iterations"] = run.iterations;
  j["iteration_predicted_s"] = run.predicted_s;
  j["iteration_measured_s"] = m.median;
  j["iteration_measured_p10_s"] = m.p10;
  j["iteration_measured_p90_s"] = m.p90;
  j["iteration_error"] = (run.predicted_s - m.median) / m.median;
  j["compute_median_abs_error"] = cmp.compute_median_abs_error;
  j["compute_p90_abs_error"] = cmp.compute_p90_abs_error;
  for (const KindComparison& k : cmp.kinds)
    j["kinds"][std::string(to_string(k.kind))] = {{"tasks", k.tasks},
                                                  {"median_abs_error", k.median_abs_error},
                                                  {"p90_abs_error", k.p90_abs_error},
                                                  {"predicted_total_s", k.predicted_total_s},
                                                  {"measured_total_s", k.measured_total_s}};
  j["strata_version"] = strata_version();
  j["experiment_hash"] = run.experiment_hash;
  j["experiment"] = run.experiment;
  return j;
}

}  // namespace traces
}  // namespace strata
