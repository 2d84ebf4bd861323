// line_plot_svg: see line_plot_svg.hpp.
#include "strata/traces/line_plot_svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "strata/traces/json_io.hpp"
#include "strata/traces/timeline_svg.hpp"

namespace strata {
inline namespace traces {
namespace {

constexpr std::array<const char*, 10> kColours = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string num(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A tick step of 1, 2 or 5 times a power of ten giving at most 10 intervals over `span`.
double tick_step(double span) {
  const double raw = span / 10;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

struct Axis {
  double lo = 0, hi = 1, step = 0.1;
};

Axis make_axis(double lo, double hi, bool from_zero) {
  if (!(hi >= lo)) lo = 0, hi = 1;
  if (from_zero && lo >= 0) lo = 0;
  if (hi - lo < 1e-300) hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1);
  Axis a;
  a.step = tick_step(hi - lo);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil(hi / a.step) * a.step;
  return a;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return num(("%." + std::to_string(decimals) + "f").c_str(), v);
}

}  // namespace

std::string line_plot_svg(const LinePlot& plot) {
  constexpr double kWidth = 640, kHeight = 400, kLeft = 70, kTop = 40, kLegend = 220;
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const PlotSeries& s : plot.series)
    for (const auto& [x, y] : s.points) {
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  const Axis ax = make_axis(x_lo, x_hi, plot.x_from_zero);
  const Axis ay = make_axis(y_lo, y_hi, plot.y_from_zero);
  auto x_of = [&](double x) { return kLeft + (x - ax.lo) / (ax.hi - ax.lo) * kWidth; };
  auto y_of = [&](double y) { return kTop + kHeight - (y - ay.lo) / (ay.hi - ay.lo) * kHeight; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num("%.0f", kLeft + kWidth + 20 + kLegend) + "\" height=\"" +
                    num("%.0f", kTop + kHeight + 60) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + num("%.0f", kLeft) + "\" y=\"24\" font-size=\"14\">" + xml_escape(plot.title) +
         "</text>\n";
  for (double x = ax.lo; x <= ax.hi + ax.step / 2; x += ax.step) {
    svg += "<line x1=\"" + num("%.1f", x_of(x)) + "\" y1=\"" + num("%.0f", kTop) + "\" x2=\"" +
           num("%.1f", x_of(x)) + "\" y2=\"" + num("%.0f", kTop + kHeight) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + num("%.1f", x_of(x)) + "\" y=\"" + num("%.0f", kTop + kHeight + 16) +
           "\" text-anchor=\"middle\">" + tick_label(x, ax.step) + "</text>\n";
  }
  for (double y = ay.lo; y <= ay.hi + ay.step / 2; y += ay.step) {
    svg += "<line x1=\"" + num("%.0f", kLeft) + "\" y1=\"" + num("%.1f", y_of(y)) + "\" x2=\"" +
           num("%.0f", kLeft + kWidth) + "\" y2=\"" + num("%.1f", y_of(y)) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + num("%.0f", kLeft - 6) + "\" y=\"" + num("%.1f", y_of(y) + 4) +
           "\" text-anchor=\"end\">" + tick_label(y, ay.step) + "</text>\n";
  }
  svg += "<rect x=\"" + num("%.0f", kLeft) + "\" y=\"" + num("%.0f", kTop) + "\" width=\"" +
         num("%.0f", kWidth) + "\" height=\"" + num("%.0f", kHeight) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  svg += "<text x=\"" + num("%.0f", kLeft + kWidth / 2) + "\" y=\"" + num("%.0f", kTop + kHeight + 40) +
         "\" text-anchor=\"middle\">" + xml_escape(plot.x_label) + "</text>\n";
  svg += "<text transform=\"translate(18," + num("%.0f", kTop + kHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + xml_escape(plot.y_label) + "</text>\n";
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const std::string colour = kColours[i % kColours.size()];
    std::string points;
    for (const auto& [x, y] : s.points) points += num("%.1f", x_of(x)) + "," + num("%.1f", y_of(y)) + " ";
    if (s.line)
      svg += "<polyline fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\" points=\"" + points +
             "\"><title>" + xml_escape(s.name) + "</title></polyline>\n";
    for (const auto& [x, y] : s.points)
      svg += "<circle cx=\"" + num("%.1f", x_of(x)) + "\" cy=\"" + num("%.1f", y_of(y)) +
             "\" r=\"3\" fill=\"" + colour + "\"/>\n";
    const double ly = kTop + 10 + 18 * static_cast<double>(i);
    svg += "<line x1=\"" + num("%.0f", kLeft + kWidth + 20) + "\" y1=\"" + num("%.0f", ly) + "\" x2=\"" +
           num("%.0f", kLeft + kWidth + 40) + "\" y2=\"" + num("%.0f", ly) + "\" stroke=\"" + colour +
           "\" stroke-width=\"2\"/>\n";
    svg += "<text x=\"" + num("%.0f", kLeft + kWidth + 46) + "\" y=\"" + num("%.0f", ly + 4) + "\">" +
           xml_escape(s.name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

void write_line_plot_svg(const LinePlot& plot, const std::string& path) {
  write_file_atomically(path, line_plot_svg(plot));
}

}  // namespace traces
}  // namespace strata
