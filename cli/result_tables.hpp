// The results store's tables (traces/results_store.hpp) as people and tools read them: aligned
// text, CSV, JSON, a projection, and Pareto fronts; shared by strata query and strata report.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "strata/traces/results_store.hpp"

namespace strata::cli {

// --db (default strata.db) and --db-wait of a command that reads the store (query, report).
void add_store_reader_flags(CLI::App& cmd, std::string& db, double& wait_s);

// A cell as text: SQL NULL "-" (CSV: empty), numbers with 6 significant digits, text as is
// (CSV: quoted where it holds a comma, quote or newline).
std::string cell_text(const ResultCell& cell, bool csv);
// Aligned columns under one header, two spaces apart.
std::string text_table(const ResultTable& t);
std::string csv_table(const ResultTable& t);
// {"format": "strata-query", "schema_version": 1, "db": ..., "rows": [{column: value}, ...]}
std::string json_table(const ResultTable& t, const std::string& db);
// Keeps the columns in `keep` (in that order) of a table that has them all.
ResultTable project(const ResultTable& t, const std::vector<std::string>& keep);
// The rows no other row beats in every objective of `spec` (two or three of time, money,
// energy, memory, comma-separated: --pareto's text) and strictly in one, by the first objective;
// rows missing one are left out. O(n^2). InputError naming --pareto for a bad spec.
ResultTable pareto_front(const ResultTable& t, const std::string& spec);

}  // namespace strata::cli
