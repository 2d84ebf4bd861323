#include "file_flags.hpp"

#include <cmath>
#include <map>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {
namespace {

struct FileFlag {
  std::string flag;  // as shown in messages: "--trace", "-o"
  std::string* path;
  bool output;
  OutputWrite write;
  std::vector<std::string> companions;
  const bool* unless = nullptr;  // an input not used while *unless is true
  NamedFiles named;              // an input's own inputs
};

// The file flags of every subcommand. The paths live in the subcommands' option structs, which
// live as long as the app.
std::map<const CLI::App*, std::vector<FileFlag>>& registry() {
  static std::map<const CLI::App*, std::vector<FileFlag>> flags;
  return flags;
}

// The name a message shows: the first long name ("-o,--output" -> "--output"), or the option's
// own name for a positional argument.
std::string shown_name(const CLI::Option* option) {
  const std::vector<std::string>& names = option->get_lnames();
  return names.empty() ? option->get_name() : "--" + names.front();
}

}  // namespace

CLI::Option* add_output_option(CLI::App& cmd, const std::string& name, std::string& path,
                               const std::string& description, OutputWrite write,
                               std::vector<std::string> companions) {
  CLI::Option* option = cmd.add_option(name, path, description);
  registry()[&cmd].push_back({shown_name(option), &path, true, write, std::move(companions), nullptr, {}});
  return option;
}

CLI::Option* add_input_option(CLI::App& cmd, const std::string& name, std::string& path,
                              const std::string& description) {
  CLI::Option* option = cmd.add_option(name, path, description);
  track_input(cmd, option, path);
  return option;
}

void track_input(const CLI::App& cmd, const CLI::Option* option, std::string& path, const bool* unless) {
  registry()[&cmd].push_back({shown_name(option), &path, false, OutputWrite::at_end, {}, unless, {}});
}

void track_input_naming(const CLI::App& cmd, const CLI::Option* option, std::string& path, NamedFiles named) {
  registry()[&cmd].push_back(
      {shown_name(option), &path, false, OutputWrite::at_end, {}, nullptr, std::move(named)});
}

void add_file_flags(const CLI::App& cmd, OutputSet& set) {
  const auto it = registry().find(&cmd);
  if (it == registry().end()) return;
  for (const FileFlag& f : it->second) {
    if (!f.output) {
      if (f.unless != nullptr && *f.unless) continue;
      set.add_input(f.flag, *f.path);
      if (f.named && !f.path->empty() && *f.path != "-")
        for (const auto& [where, named] : f.named(*f.path))
          set.add_input(f.flag + " " + *f.path + ": " + where, named);
      continue;
    }
    const bool deferred = f.write == OutputWrite::at_end;
    set.add_output(f.flag, *f.path, deferred);
    if (!f.path->empty())
      for (const std::string& suffix : f.companions) set.add_output(f.flag, *f.path + suffix, deferred);
  }
}

nlohmann::json file_flags_json(const CLI::App& app) {
  nlohmann::json out = nlohmann::json::object();
  for (const CLI::App* cmd : app.get_subcommands({})) {
    nlohmann::json flags = {{"inputs", nlohmann::json::array()}, {"outputs", nlohmann::json::array()}};
    if (const auto it = registry().find(cmd); it != registry().end())
      for (const FileFlag& f : it->second) flags[f.output ? "outputs" : "inputs"].push_back(f.flag);
    out[cmd->get_name()] = flags;
  }
  return out;
}

void write_table_files(const std::vector<nlohmann::json>& rows, std::initializer_list<const char*> columns,
                       const std::string& csv, const std::string& json, nlohmann::json doc,
                       const std::string& rows_key) {
  std::string text;
  for (const char* c : columns) text += (text.empty() ? "" : ",") + std::string(c);
  text += "\n";
  for (const nlohmann::json& row : rows) {
    std::string line;
    for (const char* c : columns)
      line += (line.empty() ? "" : ",") + csv_cell(row.value(c, nlohmann::json()));
    text += line + "\n";
  }
  if (!csv.empty()) write_file_atomically(csv, text);
  if (json.empty()) return;
  doc[rows_key] = rows;
  write_file_atomically(json, dump_one_element_per_line(doc, json));
}

namespace {

std::string csv_line(const nlohmann::json& row, std::initializer_list<const char*> columns) {
  std::string line;
  for (const char* c : columns) line += (line.empty() ? "" : ",") + csv_cell(row.value(c, nlohmann::json()));
  return line + "\n";
}

// A row as dump_one_element_per_line writes an element of an array, refusing a non-finite number
// as it does (a row is an object of scalars).
std::string json_row(const nlohmann::json& row, const std::string& json, const std::string& pointer) {
  for (auto it = row.begin(); it != row.end(); ++it)
    if (it->is_number_float() && !std::isfinite(it->get<double>()))
      throw InputError(input_error_message(
          json, pointer + "/" + it.key(),
          "cannot write " + format_number(it->get<double>()) + ": JSON has no non-finite numbers"));
  return row.dump();
}

}  // namespace

void write_table_files(std::size_t count, const std::function<nlohmann::json(std::size_t)>& row,
                       std::initializer_list<const char*> columns, const std::string& csv,
                       const std::string& json, const nlohmann::json& doc, const std::string& rows_key) {
  if (!csv.empty())
    write_file_atomically(csv, [&](const ChunkWriter& write) {
      std::string header;
      for (const char* c : columns) header += (header.empty() ? "" : ",") + std::string(c);
      write(header + "\n");
      for (std::size_t i = 0; i < count; ++i) write(csv_line(row(i), columns));
    });
  if (json.empty()) return;
  // The document's other members as dump_one_element_per_line writes them (each dumped alone, so
  // checked alike), in its key order, the rows in their place, one per line.
  nlohmann::json head = doc;
  head[rows_key] = nlohmann::json::array();
  std::string before = "{", after;
  bool rows_passed = false;
  for (auto it = head.begin(); it != head.end(); ++it) {
    std::string& out = rows_passed ? after : before;
    if (it != head.begin()) out += ',';
    if (it.key() == rows_key) {
      before += nlohmann::json(rows_key).dump() + ':';
      rows_passed = true;
      continue;
    }
    const std::string one = dump_one_element_per_line(nlohmann::json{{it.key(), *it}}, json);
    out += one.substr(1, one.size() - 3);  // less the braces and the newline
  }
  after += "}\n";
  write_file_atomically(json, [&](const ChunkWriter& write) {
    write(before);
    write(count > 0 ? "[\n" : "[");
    for (std::size_t i = 0; i < count; ++i)
      write(json_row(row(i), json, "/" + rows_key + "/" + std::to_string(i)) +
            (i + 1 < count ? ",\n" : "\n"));
    write("]");
    write(after);
  });
}

}  // namespace strata::cli
