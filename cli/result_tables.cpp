// The results store's tables as text, CSV and JSON, and their Pareto fronts: see
// result_tables.hpp.
#include "result_tables.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/traces/error.hpp"

namespace strata::cli {
namespace {

// --pareto's objectives: each a column, minimised.
const std::map<std::string, std::string> kObjectives = {{"time", "iteration_time_s"},
                                                        {"money", "cost_usd"},
                                                        {"energy", "energy_j"},
                                                        {"memory", "peak_memory_bytes"}};

nlohmann::json cell_json(const ResultCell& cell) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  return nullptr;
}

}  // namespace

std::string cell_text(const ResultCell& cell, bool csv) {
  if (std::holds_alternative<std::monostate>(cell)) return csv ? "" : "-";
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&cell)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", *d);
    return buf;
  }
  const std::string& s = std::get<std::string>(cell);
  if (!csv) return s.empty() ? "-" : s;
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// Aligned columns under one header, two spaces apart.
std::string text_table(const ResultTable& t) {
  std::vector<std::size_t> width(t.columns.size());
  for (std::size_t c = 0; c < t.columns.size(); ++c) width[c] = t.columns[c].size();
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : t.rows) {
    cells.emplace_back();
    for (std::size_t c = 0; c < row.size(); ++c) {
      cells.back().push_back(cell_text(row[c], false));
      width[c] = std::max(width[c], cells.back().back().size());
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& v) {
    std::string l;
    for (std::size_t c = 0; c < v.size(); ++c) {
      l += v[c];
      if (c + 1 < v.size()) l += std::string(width[c] - v[c].size() + 2, ' ');
    }
    out += l + "\n";
  };
  line(t.columns);
  for (const auto& row : cells) line(row);
  return out;
}

std::string csv_table(const ResultTable& t) {
  std::string out;
  for (std::size_t c = 0; c < t.columns.size(); ++c) out += (c ? "," : "") + t.columns[c];
  out += "\n";
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + cell_text(row[c], true);
    out += "\n";
  }
  return out;
}

std::string json_table(const ResultTable& t, const std::string& db) {
  std::string out =
      "{\"format\": \"strata-query\", \"schema_version\": 1, \"db\": " + nlohmann::json(db).dump() +
      ", \"rows\": [";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    nlohmann::ordered_json row;
    for (std::size_t c = 0; c < t.columns.size(); ++c) row[t.columns[c]] = cell_json(t.rows[r][c]);
    out += std::string(r ? ",\n  " : "\n  ") + row.dump();
  }
  return out + (t.rows.empty() ? "]}\n" : "\n]}\n");
}

// Keeps the columns in `keep` (in that order) of a table that has them all.
ResultTable project(const ResultTable& t, const std::vector<std::string>& keep) {
  std::vector<std::size_t> at;
  for (const std::string& k : keep) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), k);
    STRATA_ASSERT(it != t.columns.end(), "results table without column " + k);
    at.push_back(static_cast<std::size_t>(it - t.columns.begin()));
  }
  ResultTable out;
  out.columns = keep;
  for (const auto& row : t.rows) {
    out.rows.emplace_back();
    for (std::size_t i : at) out.rows.back().push_back(row[i]);
  }
  return out;
}

// Rows no other row beats in every objective (and strictly in one); rows missing one are left
// out. O(n^2) over the rows compared.
ResultTable pareto_front(const ResultTable& t, const std::string& spec) {
  std::vector<std::string> names;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) names.push_back(item);
  if (names.size() < 2 || names.size() > 3)
    throw InputError("--pareto: two or three of time, money, energy, memory, comma-separated (got '" + spec +
                     "')");
  std::vector<std::size_t> at;
  for (const std::string& n : names) {
    const auto it = kObjectives.find(n);
    if (it == kObjectives.end())
      throw InputError("--pareto: unknown objective '" + n + "' (known: energy, memory, money, time)");
    const auto c = std::find(t.columns.begin(), t.columns.end(), it->second);
    STRATA_ASSERT(c != t.columns.end(), "results table without " + it->second);
    at.push_back(static_cast<std::size_t>(c - t.columns.begin()));
  }
  std::vector<std::vector<double>> values;
  std::vector<std::size_t> rows;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    std::vector<double> v;
    for (std::size_t c : at)
      if (const auto* d = std::get_if<double>(&t.rows[r][c])) v.push_back(*d);
    if (v.size() == at.size()) {
      values.push_back(v);
      rows.push_back(r);
    }
  }
  ResultTable out;
  out.columns = t.columns;
  for (std::size_t i = 0; i < values.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < values.size() && !dominated; ++j) {
      if (i == j) continue;
      bool no_worse = true, better = false;
      for (std::size_t k = 0; k < at.size(); ++k) {
        no_worse = no_worse && values[j][k] <= values[i][k];
        better = better || values[j][k] < values[i][k];
      }
      dominated = no_worse && better;
    }
    if (!dominated) out.rows.push_back(t.rows[rows[i]]);
  }
  // By the first objective, then the key.
  std::stable_sort(out.rows.begin(), out.rows.end(), [&](const auto& a, const auto& b) {
    return std::get<double>(a[at[0]]) < std::get<double>(b[at[0]]);
  });
  return out;
}

void add_store_reader_flags(CLI::App& cmd, std::string& db, double& wait_s) {
  track_input(cmd, cmd.add_option("--db", db, "the results store (SQLite; default strata.db)"), db);
  cmd.add_option("--db-wait", wait_s, "seconds to wait for another process's lock")
      ->transform(real_number(0, 86400));
}

}  // namespace strata::cli
