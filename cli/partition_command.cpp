// strata partition: a layer graph in Piper's input format cut into pipeline stages, each with
// its tensor-parallel degree (models/schedule/piper_input.hpp, partition.hpp; docs/
// scheduling.md), against every stage at one degree.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/schedule/piper_input.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/units.hpp"

namespace strata::cli {
namespace {

struct PartitionOptions {
  std::string piper;
  int stages = 0;
  int devices = 0;  // 0: the file's maxDevices
  std::string csv, json;
};

std::string layer_name(const PiperInput& in, int layer) {
  const auto i = static_cast<std::size_t>(layer);
  return std::to_string(in.node_ids[i]) + (in.names[i].empty() ? "" : " " + in.names[i]);
}

int partition(const PartitionOptions& o) {
  const PiperInput in = read_piper_input(o.piper, o.stages);
  const int devices = o.devices > 0 ? o.devices : in.max_devices;
  const TpPartition best = partition_layers_and_tp(in.degrees, in.problems, devices, o.piper);
  std::printf("%-6s %-44s %6s %14s %12s\n", "stage", "nodes", "degree", "time/sample", "memory");
  std::vector<nlohmann::json> rows;
  const Partition& p = best.partition;
  for (std::size_t s = 0; s < best.degree.size(); ++s) {
    const std::string nodes = layer_name(in, p.first[s]) + " .. " + layer_name(in, p.first[s + 1] - 1);
    std::printf("%-6zu %-44s %6d %14s %12s\n", s, nodes.c_str(), best.degree[s],
                format_seconds(p.stage_time_s[s]).c_str(), format_bytes(p.stage_bytes[s]).c_str());
    rows.push_back({{"stage", s},
                    {"first_node", in.node_ids[static_cast<std::size_t>(p.first[s])]},
                    {"last_node", in.node_ids[static_cast<std::size_t>(p.first[s + 1] - 1)]},
                    {"layers", p.first[s + 1] - p.first[s]},
                    {"degree", best.degree[s]},
                    {"time_per_sample_s", p.stage_time_s[s]},
                    {"memory_bytes", p.stage_bytes[s]}});
  }
  // Every stage at one degree, for comparison: the best cut at each degree that fits.
  std::string uniform;
  for (std::size_t k = 0; k < in.degrees.size(); ++k) {
    if (in.degrees[k] * o.stages > devices) continue;
    try {
      const Partition at = partition_layers(in.problems[k], o.piper);
      uniform += (uniform.empty() ? "" : ", ") + ("t=" + std::to_string(in.degrees[k])) + " " +
                 format_seconds(at.bottleneck_s);
    } catch (const InputError&) {
      uniform += (uniform.empty() ? "" : ", ") + ("t=" + std::to_string(in.degrees[k])) + " does not fit";
    }
  }
  std::printf(
      "%s: %zu nodes, %d stages on %d of %d devices; slowest stage %s per sample (every stage at one degree: "
      "%s)\n",
      o.piper.c_str(), in.node_ids.size(), o.stages, best.devices, devices,
      format_seconds(p.bottleneck_s).c_str(), uniform.empty() ? "none within the devices" : uniform.c_str());
  write_table_files(
      rows, {"stage", "first_node", "last_node", "layers", "degree", "time_per_sample_s", "memory_bytes"},
      o.csv, o.json,
      {{"schema_version", 1},
       {"format", "strata-partition"},
       {"input", o.piper},
       {"devices", best.devices},
       {"bottleneck_s", p.bottleneck_s}},
      "stages");
  return 0;
}

}  // namespace

void add_partition_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "partition",
      "cut a layer graph in Piper's input format into pipeline stages, one tensor-parallel degree each");
  auto o = std::make_shared<PartitionOptions>();
  add_input_option(*cmd, "--piper", o->piper, "Piper's input JSON (nodes with TMPCs per degree, edges)")
      ->required();
  cmd->add_option("--stages", o->stages, "pipeline stages")->required()->transform(whole_number(1));
  cmd->add_option("--devices", o->devices, "devices in all (default: the file's maxDevices)")
      ->transform(whole_number(1));
  add_output_option(*cmd, "--csv", o->csv, "the stages as CSV");
  add_output_option(*cmd, "--json", o->json, "the stages as JSON");
  cmd->callback([&action, o] { action = [o] { return partition(*o); }; });
}

}  // namespace strata::cli
