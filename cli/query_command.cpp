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
#include "result_tables.hpp"
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
  add_store_reader_flags(*cmd, o->db, o->wait_s);
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
