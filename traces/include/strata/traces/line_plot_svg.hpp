// A line plot as SVG: a few named series of (x, y) points on linear axes, for curves people
// would rather look at than read (accuracy against time per solver, speedup against workers).
//
// Axes start at the series' minimum (0 when every value is >= 0 and the axis is `from_zero`) and end at a
// "nice" bound (1, 2 or 5 times a power of ten) with 5-10 labelled ticks; series are drawn in
// the order given, each with its own colour and a legend entry. Points are drawn in the order
// given (sort them by x for a curve). Cost is linear in the points. Deterministic text.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace strata {
inline namespace traces {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool line = true;                               // false: the points alone (a scatter)
};

struct LinePlot {
  std::string title;
  std::string x_label;  // with its unit, e.g. "wall-clock time (s)"
  std::string y_label;
  bool x_from_zero = true;
  bool y_from_zero = true;
  std::vector<PlotSeries> series;
};

std::string line_plot_svg(const LinePlot& plot);

// Writes line_plot_svg atomically.
void write_line_plot_svg(const LinePlot& plot, const std::string& path);

}  // namespace traces
}  // namespace strata
