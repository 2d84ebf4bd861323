// strata query: the results store (traces/results_store.hpp) read back — every row, filtered
// and ranked rows, plain SQL, Pareto fronts, and two rows compared field by field.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "flags.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/results_store.hpp"

namespace strata::cli {
namespace {

struct QueryOptions {
  std::string db = "strata.db";
  double wait_s = 30;
  std::string where;
  std::string order_by;
  std::int64_t limit = 0;
  std::string sql;
  std::string pareto;
  std::vector<std::string> diff;
  bool csv = false;
  bool json = false;
};

// The columns of the plain listing: the key first, then what a reader compares; the hashes
// (in the key), the spec and the accuracy curve are in --csv and --json.
const std::vector<std::string> kListed = {"key",
                                          "command",
                                          "model",
                                          "strategy",
                                          "platform",
                                          "workers",
                                          "fits",
                                          "iteration_time_s",
                                          "tokens_per_s",
                                          "samples_per_s",
                                          "mfu",
                                          "bubble_fraction",
                                          "exposed_comm_s",
                                          "peak_memory_bytes",
                                          "energy_j",
                                          "cost_usd",
                                          "measured_iteration_time_s",
                                          "error_pct"};

// --pareto's objectives: each a column, minimised.
const std::map<std::string, std::string> kObjectives = {{"time", "iteration_time_s"},
                                                        {"money", "cost_usd"},
                                                        {"energy", "energy_j"},
                                                        {"memory", "peak_memory_bytes"}};

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

nlohmann::json cell_json(const ResultCell& cell) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  return nullptr;
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

std::string order_clause(const std::string& order_by) {
  std::istringstream in(order_by);
  std::string column, direction, extra;
  in >> column >> direction >> extra;
  const std::vector<std::string>& columns = result_columns();
  if (column.empty() || std::find(columns.begin(), columns.end(), column) == columns.end()) {
    std::string known;
    for (const std::string& c : columns) known += (known.empty() ? "" : ", ") + c;
    throw InputError("--order-by: unknown column '" + column + "' (known: " + known + ")");
  }
  std::transform(direction.begin(), direction.end(), direction.begin(), ::tolower);
  if (!extra.empty() || (!direction.empty() && direction != "asc" && direction != "desc"))
    throw InputError("--order-by: expected a column and optionally asc or desc, got '" + order_by + "'");
  // Rows without the value last, whichever the direction; the key breaks ties.
  return " ORDER BY " + column + " IS NULL, " + column + (direction == "desc" ? " DESC" : "") + ", key";
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

// Field by field: every column with both values, and for numbers the difference in %.
ResultTable diff_rows(ResultsStore& store, const std::string& a, const std::string& b) {
  auto row_of = [&](const std::string& text) {
    const std::optional<ResultKey> key = ResultKey::parse(text);
    if (!key)
      throw InputError("--diff: '" + text +
                       "' is not a row key (experiment_hash/platform_hash/fidelity/seed)");
    std::string quoted;
    for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    ResultTable t = store.query("SELECT * FROM results WHERE key = '" + quoted + "'");
    if (t.rows.empty()) throw InputError(input_error_message(store.path(), "", "no row with key " + text));
    return t;
  };
  const ResultTable ta = row_of(a), tb = row_of(b);
  ResultTable out;
  out.columns = {"field", "first", "second", "same", "difference_pct"};
  for (std::size_t c = 0; c < ta.columns.size(); ++c) {
    const ResultCell& x = ta.rows[0][c];
    const ResultCell& y = tb.rows[0][c];
    const std::string tx = cell_text(x, false), ty = cell_text(y, false);
    ResultCell pct = std::monostate{};
    const auto* dx = std::get_if<double>(&x);
    const auto* dy = std::get_if<double>(&y);
    if (dx != nullptr && dy != nullptr && *dx != 0) pct = 100 * (*dy - *dx) / std::fabs(*dx);
    out.rows.push_back({ta.columns[c], tx, ty, std::string(tx == ty ? "yes" : "no"), pct});
  }
  return out;
}

int query(const QueryOptions& o) {
  ResultsStore store(o.db, o.wait_s);
  const int modes = (o.sql.empty() ? 0 : 1) + (o.diff.empty() ? 0 : 1);
  if (modes > 1) throw InputError("--sql: conflicts with --diff");
  if (!o.sql.empty() && (!o.where.empty() || !o.order_by.empty() || o.limit > 0 || !o.pareto.empty()))
    throw InputError(
        "--sql: conflicts with --where, --order-by, --limit and --pareto (write them in the SQL)");
  if (!o.diff.empty() && o.diff.size() != 2) throw InputError("--diff: expected two row keys");
  ResultTable t;
  if (!o.sql.empty()) {
    t = store.query(o.sql);
  } else if (!o.diff.empty()) {
    t = diff_rows(store, o.diff[0], o.diff[1]);
  } else {
    std::string sql = "SELECT * FROM results";
    if (!o.where.empty()) sql += " WHERE (" + o.where + ")";
    sql += o.order_by.empty() ? " ORDER BY key" : order_clause(o.order_by);
    t = store.query(sql);
    if (!o.pareto.empty()) t = pareto_front(t, o.pareto);
    if (o.limit > 0 && t.rows.size() > static_cast<std::size_t>(o.limit))
      t.rows.resize(static_cast<std::size_t>(o.limit));
    if (!o.csv && !o.json) t = project(t, kListed);
  }
  if (o.csv)
    std::cout << csv_table(t);
  else if (o.json)
    std::cout << json_table(t, o.db);
  else
    std::cout << text_table(t);
  return 0;
}

}  // namespace

void add_query_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("query", "read the results store: rows, filters, Pareto fronts, diffs");
  auto o = std::make_shared<QueryOptions>();
  cmd->add_option("--db", o->db, "the results store (SQLite; default strata.db)");
  cmd->add_option("--db-wait", o->wait_s, "seconds to wait for another process's lock")
      ->transform(real_number(0, 86400));
  cmd->add_option("--where", o->where,
                  "SQL condition on the results' columns, e.g. \"model = 'mlp' and fits\"");
  cmd->add_option("--order-by", o->order_by, "a column, optionally followed by asc or desc");
  cmd->add_option("--limit", o->limit, "at most this many rows")->transform(whole_number(1, INT64_MAX));
  cmd->add_option("--sql", o->sql, "a SQL query of your own (read-only)");
  cmd->add_option("--pareto", o->pareto,
                  "the rows no other beats in two or three of time,money,energy,memory");
  cmd->add_option("--diff", o->diff, "two row keys: compare them field by field")->expected(2);
  auto* csv = cmd->add_flag("--csv", o->csv, "print CSV (every column)");
  cmd->add_flag("--json", o->json, "print JSON (every column)")->excludes(csv);
  cmd->callback([&action, o] { action = [o] { return query(*o); }; });
}

}  // namespace strata::cli
