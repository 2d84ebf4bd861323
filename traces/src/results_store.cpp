// The results store on SQLite (results_store.hpp).
#include "strata/traces/results_store.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <map>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace traces {
namespace {

enum class ColumnType : std::uint8_t { text, integer, real, boolean };

struct Column {
  const char* name;
  ColumnType type;
};

// Every column after `key`, in the table's order; ResultRow's fields (field_of) follow it.
constexpr Column kColumns[] = {
    {"experiment_hash", ColumnType::text},
    {"platform_hash", ColumnType::text},
    {"fidelity", ColumnType::text},
    {"seed", ColumnType::integer},
    {"command", ColumnType::text},
    {"model", ColumnType::text},
    {"strategy", ColumnType::text},
    {"platform", ColumnType::text},
    {"workers", ColumnType::integer},
    {"fits", ColumnType::boolean},
    {"iteration_time_s", ColumnType::real},
    {"tokens_per_s", ColumnType::real},
    {"samples_per_s", ColumnType::real},
    {"mfu", ColumnType::real},
    {"bubble_fraction", ColumnType::real},
    {"exposed_comm_s", ColumnType::real},
    {"peak_memory_bytes", ColumnType::real},
    {"energy_j", ColumnType::real},
    {"cost_usd", ColumnType::real},
    {"measured_iteration_time_s", ColumnType::real},
    {"error_pct", ColumnType::real},
    {"accuracy", ColumnType::text},
    {"spec", ColumnType::text},
    {"strata_version", ColumnType::text},
};

using Field = std::variant<std::string*, std::int64_t*, int*, std::optional<bool>*, std::optional<double>*>;

// The row's field of each kColumns entry, in order.
std::vector<Field> fields_of(ResultRow& r) {
  return {&r.key.experiment_hash,
          &r.key.platform_hash,
          &r.key.fidelity,
          &r.key.seed,
          &r.command,
          &r.model,
          &r.strategy,
          &r.platform,
          &r.workers,
          &r.fits,
          &r.iteration_time_s,
          &r.tokens_per_s,
          &r.samples_per_s,
          &r.mfu,
          &r.bubble_fraction,
          &r.exposed_comm_s,
          &r.peak_memory_bytes,
          &r.energy_j,
          &r.cost_usd,
          &r.measured_iteration_time_s,
          &r.error_pct,
          &r.accuracy,
          &r.spec,
          &r.strata_version};
}

const char* sql_type(ColumnType t) {
  switch (t) {
    case ColumnType::text:
      return "TEXT";
    case ColumnType::integer:
    case ColumnType::boolean:
      return "INTEGER";
    case ColumnType::real:
      return "REAL";
  }
  return "TEXT";
}

std::string create_results_sql() {
  std::string sql = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY NOT NULL";
  for (const Column& c : kColumns) sql += std::string(", ") + c.name + " " + sql_type(c.type);
  return sql + ")";
}

// A statement, finalized when it goes.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw InputError(input_error_message(path, "", sqlite3_errmsg(db)));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

bool regular_or_missing(const std::string& path, bool& exists) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    exists = false;
    return true;
  }
  exists = true;
  return S_ISREG(st.st_mode);
}

}  // namespace

std::string ResultKey::text() const {
  return experiment_hash + "/" + platform_hash + "/" + fidelity + "/" + std::to_string(seed);
}

std::optional<ResultKey> ResultKey::parse(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '/') {
      parts.emplace_back(text.substr(begin, i - begin));
      begin = i + 1;
    }
  if (parts.size() != 4 || parts[0].empty() || parts[1].empty() || parts[2].empty() || parts[3].empty())
    return std::nullopt;
  ResultKey key{parts[0], parts[1], parts[2], 0};
  std::size_t used = 0;
  try {
    key.seed = std::stoll(parts[3], &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != parts[3].size() || key.text() != text) return std::nullopt;
  return key;
}

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> c{"key"};
    for (const Column& column : kColumns) c.emplace_back(column.name);
    return c;
  }();
  return columns;
}

ResultsStore::ResultsStore(std::string path, double wait_s) : path_(std::move(path)), wait_s_(wait_s) {
  if (!(wait_s >= 0) || !std::isfinite(wait_s))
    throw InputError("--db-wait: not a finite number of seconds >= 0");
}

ResultsStore::~ResultsStore() {
  if (db_ != nullptr) sqlite3_close(db_);
}

void ResultsStore::open(bool write) {
  if (db_ != nullptr && (writable_ || !write)) return;
  if (db_ != nullptr) {
    sqlite3_close(db_);
    db_ = nullptr;
  }
  bool exists = false;
  if (!regular_or_missing(path_, exists))
    throw InputError(input_error_message(path_, "", "not a regular file (a results store is a SQLite file)"));
  if (!exists && !write) throw InputError(input_error_message(path_, "", "no such results store"));
  if (exists && write) {
    // No write bit for anyone counts as read-only even where the user could write it (root).
    struct stat st {};
    const bool marked = ::stat(path_.c_str(), &st) == 0 && (st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0;
    if (marked || ::access(path_.c_str(), W_OK) != 0)
      throw InputError(input_error_message(path_, "", "read-only: cannot write results to it"));
  }
  const int flags = write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(input_error_message(path_, "", "cannot open the results store: " + why));
  }
  writable_ = write;
  sqlite3_busy_timeout(db_, static_cast<int>(std::min(wait_s_ * 1000, 2e9)));
  sqlite3_extended_result_codes(db_, 1);
  if (exists) check_schema();
}

// Entries of sqlite_master (tables, indexes, ...); -1 when they cannot be read.
int ResultsStore::schema_objects() {
  sqlite3_stmt* raw = nullptr;
  int count = -1;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_master", -1, &raw, nullptr) == SQLITE_OK &&
      sqlite3_step(raw) == SQLITE_ROW)
    count = sqlite3_column_int(raw, 0);
  sqlite3_finalize(raw);
  return count;
}

// An existing file: a strata store of a schema this strata reads.
void ResultsStore::check_schema() {
  sqlite3_stmt* raw = nullptr;
  const int rc =
      sqlite3_prepare_v2(db_, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    const std::string why = sqlite3_errmsg(db_);
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
      throw InputError(input_error_message(
          path_, "",
          "locked by another process (waited " + std::to_string(static_cast<int>(wait_s_)) + " s)"));
    // A writer killed inside its first commit leaves the file with no schema at all (SQLite rolls
    // the hot journal back to the empty database): a store never written, which a writer takes
    // as new (the commit creates the tables). Anything with tables of its own is not a store.
    if (writable_ && schema_objects() == 0) return;
    throw InputError(input_error_message(path_, "", "not a strata results store (" + why + ")"));
  }
  const int step = sqlite3_step(raw);
  std::string version = step == SQLITE_ROW && sqlite3_column_text(raw, 0) != nullptr
                            ? reinterpret_cast<const char*>(sqlite3_column_text(raw, 0))
                            : "";
  sqlite3_finalize(raw);
  if ((step & 0xff) == SQLITE_BUSY)
    throw InputError(input_error_message(
        path_, "", "locked by another process (waited " + std::to_string(static_cast<int>(wait_s_)) + " s)"));
  if (version.empty())
    throw InputError(input_error_message(path_, "", "not a strata results store (no schema_version)"));
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(version, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != version.size() || v < 1)
    throw InputError(input_error_message(path_, "/meta/schema_version", "not a schema version: " + version));
  if (v > kSchemaVersion)
    throw InputError(input_error_message(path_, "",
                                         "written by a newer strata (store schema " + version +
                                             "; this strata reads up to " + std::to_string(kSchemaVersion) +
                                             ")"));
}

void ResultsStore::check_writable() {
  bool exists = false;
  if (!regular_or_missing(path_, exists))
    throw InputError(input_error_message(path_, "", "not a regular file (a results store is a SQLite file)"));
  if (exists) {
    open(true);
    return;
  }
  const std::string::size_type slash = path_.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw InputError(input_error_message(path_, "", "cannot create the results store: no folder " + folder));
  if (::access(folder.c_str(), W_OK) != 0)
    throw InputError(input_error_message(
        path_, "", "cannot create the results store: folder " + folder + " is read-only"));
}

std::set<std::string> ResultsStore::keys() {
  bool exists = false;
  regular_or_missing(path_, exists);
  if (!exists) return {};
  open(false);
  std::set<std::string> out;
  for (const auto& row : query("SELECT key FROM results").rows)
    if (const auto* s = std::get_if<std::string>(&row[0])) out.insert(*s);
  return out;
}

std::optional<ResultRow> ResultsStore::find(const ResultKey& key) {
  bool exists = false;
  regular_or_missing(path_, exists);
  if (!exists) return std::nullopt;
  std::string quoted;
  for (char c : key.text()) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  const ResultTable t = query("SELECT * FROM results WHERE key = '" + quoted + "'");
  if (t.rows.empty()) return std::nullopt;
  return result_row_of(t, 0);
}

void ResultsStore::commit(const std::vector<ResultRow>& rows) {
  if (rows.empty()) return;
  bool existed = false;
  regular_or_missing(path_, existed);
  open(true);
  auto exec = [&](const char* sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
    const std::string why = error != nullptr ? error : "";
    sqlite3_free(error);
    return std::make_pair(rc, why);
  };
  auto fail = [&](int rc, const std::string& why) {
    if (sqlite3_get_autocommit(db_) == 0) exec("ROLLBACK");
    if (!existed) {  // the file this commit created goes with it
      sqlite3_close(db_);
      db_ = nullptr;
      ::unlink(path_.c_str());
    }
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
      throw InputError(input_error_message(path_, "",
                                           "locked by another process (waited " +
                                               std::to_string(static_cast<int>(wait_s_)) + " s; --db-wait)"));
    if ((rc & 0xff) == SQLITE_READONLY)
      throw InputError(input_error_message(path_, "", "read-only: cannot write results to it"));
    throw InputError(input_error_message(path_, "", "cannot write results: " + why));
  };
  if (auto [rc, why] = exec("BEGIN IMMEDIATE"); rc != SQLITE_OK) fail(rc, why);
  std::string create_meta = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT)";
  for (const std::string& sql :
       {create_meta, create_results_sql(),
        std::string("INSERT OR IGNORE INTO meta VALUES ('schema_version', '") +
            std::to_string(kSchemaVersion) + "')",
        std::string("INSERT OR IGNORE INTO meta VALUES ('format', 'strata-results')"),
        std::string("CREATE TABLE IF NOT EXISTS files (key TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT "
                    "NULL, PRIMARY KEY (key, kind))")})
    if (auto [rc, why] = exec(sql.c_str()); rc != SQLITE_OK) fail(rc, why);
  std::string insert = "INSERT OR REPLACE INTO results VALUES (?";
  for (std::size_t i = 0; i < std::size(kColumns); ++i) insert += ", ?";
  insert += ")";
  {
    sqlite3_stmt* raw = nullptr;
    if (const int rc = sqlite3_prepare_v2(db_, insert.c_str(), -1, &raw, nullptr); rc != SQLITE_OK) {
      sqlite3_finalize(raw);
      fail(rc, sqlite3_errmsg(db_));
    }
    for (const ResultRow& row : rows) {
      ResultRow copy = row;
      const std::string key = copy.key.text();
      sqlite3_reset(raw);
      sqlite3_bind_text(raw, 1, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
      int at = 2;
      for (const Field& f : fields_of(copy)) {
        std::visit(
            [&](auto* p) {
              using P = std::remove_pointer_t<decltype(p)>;
              if constexpr (std::is_same_v<P, std::string>)
                sqlite3_bind_text(raw, at, p->c_str(), static_cast<int>(p->size()), SQLITE_TRANSIENT);
              else if constexpr (std::is_same_v<P, std::int64_t>)
                sqlite3_bind_int64(raw, at, *p);
              else if constexpr (std::is_same_v<P, int>)
                sqlite3_bind_int64(raw, at, *p);
              else if constexpr (std::is_same_v<P, std::optional<bool>>)
                *p ? sqlite3_bind_int64(raw, at, **p ? 1 : 0) : sqlite3_bind_null(raw, at);
              else
                *p&& std::isfinite(**p) ? sqlite3_bind_double(raw, at, **p) : sqlite3_bind_null(raw, at);
            },
            f);
        ++at;
      }
      if (const int rc = sqlite3_step(raw); rc != SQLITE_DONE) {
        const std::string why = sqlite3_errmsg(db_);
        sqlite3_finalize(raw);
        fail(rc, why);
      }
    }
    sqlite3_finalize(raw);
  }
  {
    sqlite3_stmt* raw = nullptr;
    if (const int rc =
            sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO files VALUES (?, ?, ?)", -1, &raw, nullptr);
        rc != SQLITE_OK) {
      sqlite3_finalize(raw);
      fail(rc, sqlite3_errmsg(db_));
    }
    for (const ResultRow& row : rows)
      for (const auto& [kind, file] : row.files) {
        const std::string key = row.key.text();
        sqlite3_reset(raw);
        sqlite3_bind_text(raw, 1, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(raw, 2, kind.c_str(), static_cast<int>(kind.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(raw, 3, file.c_str(), static_cast<int>(file.size()), SQLITE_TRANSIENT);
        if (const int rc = sqlite3_step(raw); rc != SQLITE_DONE) {
          const std::string why = sqlite3_errmsg(db_);
          sqlite3_finalize(raw);
          fail(rc, why);
        }
      }
    sqlite3_finalize(raw);
  }
  if (auto [rc, why] = exec("COMMIT"); rc != SQLITE_OK) fail(rc, why);
}

ResultTable ResultsStore::query(const std::string& sql) {
  open(false);
  ResultTable t;
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, &tail) != SQLITE_OK) {
    const std::string why = sqlite3_errmsg(db_);
    sqlite3_finalize(raw);
    throw InputError(input_error_message(path_, "", "SQL: " + why));
  }
  if (raw == nullptr) throw InputError(input_error_message(path_, "", "SQL: no statement"));
  if (sqlite3_stmt_readonly(raw) == 0) {
    sqlite3_finalize(raw);
    throw InputError(input_error_message(path_, "", "SQL: a query may only read (SELECT)"));
  }
  for (const char* p = tail; p != nullptr && *p != '\0'; ++p)
    if (*p != ' ' && *p != '\n' && *p != '\t' && *p != ';') {
      sqlite3_finalize(raw);
      throw InputError(input_error_message(path_, "", "SQL: one statement at a time"));
    }
  for (int c = 0; c < sqlite3_column_count(raw); ++c) t.columns.emplace_back(sqlite3_column_name(raw, c));
  int rc = 0;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    std::vector<ResultCell> row;
    for (int c = 0; c < sqlite3_column_count(raw); ++c) switch (sqlite3_column_type(raw, c)) {
        case SQLITE_INTEGER:
          row.emplace_back(static_cast<std::int64_t>(sqlite3_column_int64(raw, c)));
          break;
        case SQLITE_FLOAT:
          row.emplace_back(sqlite3_column_double(raw, c));
          break;
        case SQLITE_NULL:
          row.emplace_back(std::monostate{});
          break;
        default: {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(raw, c));
          row.emplace_back(std::string(text != nullptr ? text : "",
                                       static_cast<std::size_t>(sqlite3_column_bytes(raw, c))));
        }
      }
    t.rows.push_back(std::move(row));
  }
  const std::string why = sqlite3_errmsg(db_);
  sqlite3_finalize(raw);
  if (rc != SQLITE_DONE) {
    if ((rc & 0xff) == SQLITE_BUSY)
      throw InputError(input_error_message(
          path_, "",
          "locked by another process (waited " + std::to_string(static_cast<int>(wait_s_)) + " s)"));
    throw InputError(input_error_message(path_, "", "SQL: " + why));
  }
  return t;
}

std::vector<ResultRow> ResultsStore::rows() {
  const ResultTable t = query("SELECT * FROM results ORDER BY key");
  std::vector<ResultRow> out;
  out.reserve(t.rows.size());
  for (std::size_t i = 0; i < t.rows.size(); ++i) out.push_back(result_row_of(t, i));
  if (!query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'files'").rows.empty()) {
    const ResultTable f = query("SELECT key, kind, path FROM files ORDER BY key, kind");
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < out.size(); ++i) at[out[i].key.text()] = i;
    for (const auto& cells : f.rows) {
      const auto* key = std::get_if<std::string>(&cells[0]);
      const auto* kind = std::get_if<std::string>(&cells[1]);
      const auto* file = std::get_if<std::string>(&cells[2]);
      if (key == nullptr || kind == nullptr || file == nullptr) continue;
      if (const auto it = at.find(*key); it != at.end()) out[it->second].files[*kind] = *file;
    }
  }
  return out;
}

ResultRow result_row_of(const ResultTable& table, std::size_t row) {
  std::map<std::string, std::size_t> at;
  for (std::size_t c = 0; c < table.columns.size(); ++c) at[table.columns[c]] = c;
  ResultRow r;
  std::vector<Field> fields = fields_of(r);
  for (std::size_t i = 0; i < std::size(kColumns); ++i) {
    const auto it = at.find(kColumns[i].name);
    STRATA_ASSERT(it != at.end(), std::string("results table without column ") + kColumns[i].name);
    const ResultCell& cell = table.rows[row][it->second];
    std::visit(
        [&](auto* p) {
          using P = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<P, std::string>) {
            if (const auto* s = std::get_if<std::string>(&cell)) *p = *s;
          } else if constexpr (std::is_same_v<P, std::int64_t> || std::is_same_v<P, int>) {
            if (const auto* v = std::get_if<std::int64_t>(&cell)) *p = static_cast<P>(*v);
          } else if constexpr (std::is_same_v<P, std::optional<bool>>) {
            if (const auto* v = std::get_if<std::int64_t>(&cell)) *p = *v != 0;
          } else {
            if (const auto* v = std::get_if<double>(&cell)) *p = *v;
            if (const auto* v = std::get_if<std::int64_t>(&cell)) *p = static_cast<double>(*v);
          }
        },
        fields[i]);
  }
  return r;
}

}  // namespace traces
}  // namespace strata
