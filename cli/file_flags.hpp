// The flags of a subcommand that name files: its outputs and its inputs. Registered with the
// subcommand's other options; after parsing, main() gathers those of the chosen subcommand into an
// OutputSet (strata/traces/outputs.hpp), checks them all before any work, stages the outputs while
// the command runs and commits them together at the end.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "strata/traces/outputs.hpp"

namespace strata::cli {

enum class OutputWrite : std::uint8_t {
  at_end,      // staged, written with the command's other outputs when it succeeds
  as_it_goes,  // checked up front, rewritten while the command runs (a run's --log)
};

// add_option(name, path, description), registered as an output. `companions` are suffixes of
// files written beside it ("--log run.csv" also writes run.csv.experiment.json).
CLI::Option* add_output_option(CLI::App& cmd, const std::string& name, std::string& path,
                               const std::string& description, OutputWrite write = OutputWrite::at_end,
                               std::vector<std::string> companions = {});

// add_option(name, path, description), registered as an input.
CLI::Option* add_input_option(CLI::App& cmd, const std::string& name, std::string& path,
                              const std::string& description);

// Registers an option already added (a shared flag such as --spec) as an input; with `unless`,
// not while *unless is true (--no-db).
void track_input(const CLI::App& cmd, const CLI::Option* option, std::string& path,
                 const bool* unless = nullptr);

// The files an input file names itself (a search spec's platform and curves), each with where it
// is named ("--spec srch.json: /search/platform"), read from the file at `path` before any work.
// Unreadable or malformed files give none: their reader reports them.
using NamedFiles = std::function<std::vector<std::pair<std::string, std::string>>(const std::string& path)>;

// Registers an input option whose file names other files: those are inputs too.
void track_input_naming(const CLI::App& cmd, const CLI::Option* option, std::string& path, NamedFiles named);

// Adds the file flags of `cmd` as parsed to `set`.
void add_file_flags(const CLI::App& cmd, OutputSet& set);

// Every subcommand's file flags as JSON, {"simulate": {"inputs": ["--platform", ...], "outputs":
// ["--trace", ...]}, ...}: what `strata --file-flags` prints for tests and tools that must cover
// every output of every command (tests/cli/outputs_never_inputs.sh).
nlohmann::json file_flags_json(const CLI::App& app);

// A table's rows (JSON objects) written as CSV (the `columns`, a header line, missing cells
// empty) to `csv` and as JSON (`doc` with the rows under `rows_key`, one element per line) to
// `json`; either path may be empty.
void write_table_files(const std::vector<nlohmann::json>& rows, std::initializer_list<const char*> columns,
                       const std::string& csv, const std::string& json, nlohmann::json doc,
                       const std::string& rows_key);
// The same, the rows made by `row(i)` for i < count one at a time as the files are written
// (streamed, in 1 MiB writes: a table of 10^6 rows is never held as JSON values, which take a
// kilobyte each). The same bytes as the above.
void write_table_files(std::size_t count, const std::function<nlohmann::json(std::size_t)>& row,
                       std::initializer_list<const char*> columns, const std::string& csv,
                       const std::string& json, const nlohmann::json& doc, const std::string& rows_key);

}  // namespace strata::cli
