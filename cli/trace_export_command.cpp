// strata trace-export: a strata Trace to Chrome trace JSON (Perfetto) and an SVG timeline.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/perfetto.hpp"
#include "strata/traces/timeline_svg.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata::cli {

void add_trace_export_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("trace-export", "convert a strata Trace to Chrome trace JSON (Perfetto) and SVG");
  struct Options {
    std::string in, out, svg;
    int svg_workers = 16;
    int iteration = -1;
  };
  auto o = std::make_shared<Options>();
  add_input_option(*cmd, "trace", o->in, "strata Trace JSON")->required();
  add_output_option(*cmd, "-o,--output", o->out, "Chrome trace event JSON to write (opens in Perfetto)");
  add_output_option(*cmd, "--svg", o->svg, "SVG timeline to write");
  cmd->add_option("--svg-workers", o->svg_workers, "workers drawn in the SVG")->transform(whole_number(1));
  cmd->add_option("--iteration", o->iteration, "draw only this iteration in the SVG")
      ->transform(whole_number(0));
  cmd->callback([&action, o] {
    action = [o] {
      if (o->out.empty() && o->svg.empty()) throw InputError("trace-export: give -o FILE and/or --svg FILE");
      Trace trace = read_trace(o->in);
      if (!o->out.empty()) {
        write_chrome_trace(trace, o->out);
        std::printf("%zu records -> %s (opens in Perfetto)\n", trace.records.size(), o->out.c_str());
      }
      if (!o->svg.empty()) {
        TimelineOptions options;
        options.max_workers = o->svg_workers;
        options.iteration = o->iteration;
        write_timeline_svg(trace, o->svg, options);
        std::printf("timeline -> %s\n", o->svg.c_str());
      }
      return 0;
    };
  });
}

}  // namespace strata::cli
