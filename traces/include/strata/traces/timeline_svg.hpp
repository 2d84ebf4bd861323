// A Trace drawn as an SVG timeline, for reports and READMEs where Perfetto cannot be opened.
//
// One band per worker (the first `max_workers` ranks), two rows each: compute above, comm below;
// every record is a rectangle coloured by task family (forward, backward, weight gradient,
// optimizer, point-to-point, collective) with its id as tooltip. The time axis is in the unit
// that keeps its labels readable. Cost is linear in the records drawn.
#pragma once

#include <string>

#include "strata/traces/trace.hpp"

namespace strata {
inline namespace traces {

struct TimelineOptions {
  int max_workers = 16;  // bands drawn; the rest are summarised in the caption
  int iteration = -1;    // only this iteration (-1 = all)
  int width_px = 1200;
  std::string title;
};

std::string trace_to_svg(const Trace& trace, const TimelineOptions& options = {});

// `text` with <, >, & and " written as XML entities, for SVG text and attributes (strata's SVG
// writers share it).
std::string xml_escape(const std::string& text);

// A trace that records its experiment (Trace::experiment_hash set) carries it in the SVG as
// <metadata id="strata-experiment">{"experiment_hash", "strata_version", "experiment"}</metadata>
// (the JSON XML-escaped): svg_experiment_metadata() writes that element, svg_metadata_json() reads
// the JSON text back out of an SVG document ("" when it has none).
std::string svg_experiment_metadata(const Trace& trace);
std::string svg_metadata_json(const std::string& svg);

// Writes trace_to_svg atomically.
void write_timeline_svg(const Trace& trace, const std::string& path, const TimelineOptions& options = {});

}  // namespace traces
}  // namespace strata
