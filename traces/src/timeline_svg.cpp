#include "strata/traces/timeline_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "strata/traces/json_io.hpp"
#include "strata/traces/units.hpp"

namespace strata {
inline namespace traces {
namespace {

constexpr int kLeft = 110;
constexpr int kRowHeight = 12;
constexpr int kBandGap = 6;
constexpr int kTop = 40;

struct Family {
  const char* name;
  const char* color;
};

// Task families by kind and by the phase segment of the id (fwd / bwd / bwdw).
Family family_of(const TraceRecord& r) {
  if (is_collective(r.kind)) return {"collective", "#d62728"};
  if (r.kind == TaskKind::send || r.kind == TaskKind::recv) return {"send/recv", "#ff7f0e"};
  if (r.kind == TaskKind::optimizer_step || r.kind == TaskKind::host_copy) return {"optimizer", "#9467bd"};
  if (r.id.find("/bwdw/") != std::string::npos) return {"weight gradient", "#17becf"};
  if (r.id.find("/bwd/") != std::string::npos) return {"backward", "#2ca02c"};
  return {"forward", "#1f77b4"};
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about 8 ticks over `span`.
double tick_step(double span) {
  const double raw = span / 8;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

}  // namespace

std::string svg_experiment_metadata(const Trace& trace) {
  nlohmann::ordered_json j;
  j["experiment_hash"] = trace.experiment_hash;
  j["strata_version"] = strata_version();
  j["experiment"] = trace.experiment;
  return "<metadata id=\"strata-experiment\">" + xml_escape(j.dump()) + "</metadata>\n";
}

std::string svg_metadata_json(const std::string& svg) {
  const std::string open = "<metadata id=\"strata-experiment\">";
  const std::size_t begin = svg.find(open);
  if (begin == std::string::npos) return "";
  const std::size_t from = begin + open.size();
  const std::size_t end = svg.find("</metadata>", from);
  if (end == std::string::npos) return "";
  std::string out;
  for (std::size_t i = from; i < end; ++i) {
    if (svg[i] != '&') {
      out += svg[i];
      continue;
    }
    bool known = false;
    for (const auto& [entity, c] : {std::pair{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}}) {
      const std::string_view e(entity);
      if (svg.compare(i, e.size(), e) == 0) {
        out += c;
        i += e.size() - 1;
        known = true;
        break;
      }
    }
    if (!known) out += '&';
  }
  return out;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string trace_to_svg(const Trace& trace, const TimelineOptions& options) {
  double t0 = std::numeric_limits<double>::infinity();
  double t1 = -t0;
  int workers = 0;
  for (const TraceRecord& r : trace.records) {
    if (options.iteration >= 0 && r.iteration != options.iteration) continue;
    t0 = std::min(t0, r.start);
    t1 = std::max(t1, r.end);
    workers = std::max(workers, r.worker + 1);
  }
  if (!(t1 > t0)) {
    t0 = 0;
    t1 = 1;
  }
  const int shown = std::min(workers, options.max_workers);
  const int band = 2 * kRowHeight + kBandGap;
  const int height = kTop + shown * band + 50;
  const double plot_w = options.width_px - kLeft - 20;
  auto x = [&](double t) { return kLeft + (t - t0) / (t1 - t0) * plot_w; };

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(options.width_px) +
                  "\" height=\"" + std::to_string(height) +
                  "\" font-family=\"sans-serif\" font-size=\"10\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!trace.experiment_hash.empty()) s += svg_experiment_metadata(trace);
  const std::string title = options.title.empty() ? trace.source : options.title;
  s += "<text x=\"" + std::to_string(kLeft) + "\" y=\"16\" font-size=\"13\">" + xml_escape(title) +
       "</text>\n";
  for (int w = 0; w < shown; ++w) {
    const int y = kTop + w * band;
    s += "<text x=\"4\" y=\"" + std::to_string(y + kRowHeight - 2) + "\">worker " + std::to_string(w) +
         " compute</text>\n<text x=\"4\" y=\"" + std::to_string(y + 2 * kRowHeight - 2) + "\">comm</text>\n";
    s += "<rect x=\"" + std::to_string(kLeft) + "\" y=\"" + std::to_string(y) + "\" width=\"" + num(plot_w) +
         "\" height=\"" + std::to_string(2 * kRowHeight) + "\" fill=\"#f4f4f4\"/>\n";
  }
  for (const TraceRecord& r : trace.records) {
    if (r.worker >= shown || (options.iteration >= 0 && r.iteration != options.iteration)) continue;
    const Family f = family_of(r);
    const int y = kTop + r.worker * band + (r.stream == Stream::comm ? kRowHeight : 0);
    const double w = std::max(0.5, x(r.end) - x(r.start));
    s += "<rect x=\"" + num(x(r.start)) + "\" y=\"" + std::to_string(y + 1) + "\" width=\"" + num(w) +
         "\" height=\"" + std::to_string(kRowHeight - 2) + "\" fill=\"" + f.color + "\"><title>" +
         xml_escape(r.id) + " (" + format_seconds(r.end - r.start) + ")</title></rect>\n";
  }
  const int axis_y = kTop + shown * band + 4;
  const double step = tick_step(t1 - t0);
  for (double t = 0; t <= (t1 - t0) * 1.0001; t += step) {
    s += "<line x1=\"" + num(x(t0 + t)) + "\" y1=\"" + std::to_string(axis_y) + "\" x2=\"" + num(x(t0 + t)) +
         "\" y2=\"" + std::to_string(axis_y + 4) + "\" stroke=\"black\"/>\n";
    s += "<text x=\"" + num(x(t0 + t)) + "\" y=\"" + std::to_string(axis_y + 15) +
         "\" text-anchor=\"middle\">" + format_seconds(t) + "</text>\n";
  }
  int lx = kLeft;
  for (const Family& f :
       {Family{"forward", "#1f77b4"}, Family{"backward", "#2ca02c"}, Family{"weight gradient", "#17becf"},
        Family{"optimizer", "#9467bd"}, Family{"send/recv", "#ff7f0e"}, Family{"collective", "#d62728"}}) {
    s += "<rect x=\"" + std::to_string(lx) + "\" y=\"" + std::to_string(axis_y + 24) +
         "\" width=\"10\" height=\"10\" fill=\"" + f.color + "\"/><text x=\"" + std::to_string(lx + 14) +
         "\" y=\"" + std::to_string(axis_y + 33) + "\">" + f.name + "</text>\n";
    lx += 110;
  }
  if (workers > shown)
    s += "<text x=\"" + std::to_string(lx) + "\" y=\"" + std::to_string(axis_y + 33) + "\">(" +
         std::to_string(shown) + " of " + std::to_string(workers) + " workers shown)</text>\n";
  s += "</svg>\n";
  return s;
}

void write_timeline_svg(const Trace& trace, const std::string& path, const TimelineOptions& options) {
  write_file_atomically(path, trace_to_svg(trace, options));
}

}  // namespace traces
}  // namespace strata
