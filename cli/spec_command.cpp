// strata spec: prints or writes the effective experiment spec (JSON) of the flags, of a --spec
// file with flags on top, or of any output strata wrote (--from report.json, trace, Perfetto
// file, SVG timeline, validation JSON, run log). `strata spec --help` lists every --set key from the key
// table.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/outputs.hpp"
#include "strata/traces/timeline_svg.hpp"

namespace strata::cli {
namespace {

struct SpecOptions {
  CommonFlags flags;
  std::string from;
  std::string output;
};

// The experiment recorded in a file strata wrote: a spec itself, or the `experiment` of a
// report, trace, validation JSON or run log's sidecar, the `metadata` of a Perfetto file, or the
// <metadata> element of an SVG timeline. A run's --log CSV names its sidecar, <log>.experiment.json.
Experiment recorded_experiment(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0) {
    const std::string sidecar = path + ".experiment.json";
    std::error_code ec;
    if (!std::filesystem::exists(sidecar, ec))
      throw InputError(path + ": a CSV log records its experiment in " + sidecar + ", which does not exist");
    return recorded_experiment(sidecar);
  }
  nlohmann::json doc;
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".svg") == 0) {
    note_input(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open");
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string text = svg_metadata_json(svg);
    if (text.empty())
      throw InputError(path + ": <metadata id=\"strata-experiment\">: no experiment recorded in this SVG");
    doc = parse_json_text(text, path + " <metadata>");
  } else {
    doc = read_json_file(path);
  }
  if (doc.is_object() && doc.value("format", "") == "strata-experiment")
    return experiment_from_json(doc, path);
  if (doc.is_object() && doc.contains("experiment") && !doc.at("experiment").is_null())
    return experiment_from_json(doc.at("experiment"), path + " /experiment");
  if (doc.is_object() && doc.contains("metadata") && doc.at("metadata").contains("experiment"))
    return experiment_from_json(doc.at("metadata").at("experiment"), path + " /metadata/experiment");
  throw InputError(path +
                   ": /experiment: no experiment recorded (an output of a Plan file, or not strata's)");
}

int write_spec(const SpecOptions& o) {
  const Experiment e =
      o.from.empty() ? experiment_of(o.flags) : experiment_on(recorded_experiment(o.from), o.from, o.flags);
  const std::string text = canonical_json(e).dump(2) + "\n";
  if (o.output.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  write_file_atomically(o.output, text);
  std::printf("spec %s (experiment hash %s) -> %s\n", e.model.c_str(), experiment_hash(e).c_str(),
              o.output.c_str());
  return 0;
}

}  // namespace

void add_spec_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("spec", "print or write the experiment spec (JSON) of the flags or of an output");
  auto o = std::make_shared<SpecOptions>();
  add_common_flags(*cmd, o->flags, true);
  o->flags.track(
      cmd->add_option("--epochs", o->flags.epochs, "passes over the data of a real run (strata run)")
          ->transform(whole_number(1)));
  add_input_option(*cmd, "--from", o->from,
                   "read the spec recorded in a report, trace, Perfetto, SVG, validation file or run log");
  add_output_option(*cmd, "-o,--output", o->output, "spec JSON to write (default: print it)");
  cmd->footer("--set keys (type, range, unit; who takes them):\n" + set_keys_help());
  cmd->callback([&action, o] { action = [o] { return write_spec(*o); }; });
}

}  // namespace strata::cli
