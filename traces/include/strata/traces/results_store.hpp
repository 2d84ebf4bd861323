// The results store: every answer strata computes (a closed-form estimate, a replay, a real run,
// a validation), kept as one row of a SQLite file (Debian's libsqlite3), so that sweeps resume,
// answers are queried, ranked and compared, and reports read their data from one place
// (docs/results.md).
//
// A row is keyed by (experiment hash, platform hash, fidelity, seed):
// - experiment hash: the Experiment's content hash (models/experiment.hpp), or for a Plan file
//   its plan's (Plan::info::experiment_hash) when it has one;
// - platform hash: FNV-1a 64 of where it ran and every setting outside the Experiment that
//   changes the answer (the platform file's bytes, network model and factors, calibration,
//   placement, ...: the caller says which; sim/results_rows.hpp);
// - fidelity: analytical (the closed form), aggregated or step (the replay's collectives), real
//   (a run on this machine), validate (a validation: prediction and measurement);
// - seed: the Experiment's seed.
// strata's version is recorded, not part of the key. A row written again under the same key
// replaces the old one (INSERT OR REPLACE), so a resumed sweep never duplicates a row.
//
// Files: the store is opened lazily; a writer creates the file only when it commits its first
// row. Every commit is one transaction (BEGIN IMMEDIATE ... COMMIT): a process killed in the
// middle leaves the store as it was before that transaction. Writers wait for a busy lock up to
// `wait_s` (SQLite's busy timeout) and then fail in one line. Schema: table `meta` (key, value)
// holds schema_version (kSchemaVersion) and format "strata-results"; table `results` one column
// per ResultRow field (result_columns()); table `files` (key, kind, path) the files written with
// a row (created at the first commit that has one; a store without it has none). A store of a newer schema, a
// file that is not a strata store, a read-only or locked file, a path that is not a regular file: InputError
// naming the file, nothing written.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

struct sqlite3;  // sqlite3.h's connection

namespace strata {
inline namespace traces {

struct ResultKey {
  std::string experiment_hash;
  std::string platform_hash;
  std::string fidelity;  // analytical | aggregated | step | real | validate
  std::int64_t seed = 0;

  // "experiment_hash/platform_hash/fidelity/seed", the first column of `strata query`.
  std::string text() const;
  // The inverse of text(); nullopt for anything else.
  static std::optional<ResultKey> parse(std::string_view text);
  bool operator==(const ResultKey&) const = default;
};

struct ResultRow {
  ResultKey key;
  std::string command;   // explore, simulate, run, validate
  std::string model;     // zoo name
  std::string strategy;  // "dp=8,tp=8,pp=16 1f1b mb=1024 ..." as the command prints it
  std::string platform;  // the platform's file name (what the hash covers is in the key)
  int workers = 0;
  std::optional<bool> fits;
  std::optional<double> iteration_time_s;           // s, predicted (or measured for a real run)
  std::optional<double> tokens_per_s;               // tokens/s
  std::optional<double> samples_per_s;              // samples/s
  std::optional<double> mfu;                        // fraction in [0, 1]
  std::optional<double> bubble_fraction;            // fraction in [0, 1]
  std::optional<double> exposed_comm_s;             // s per iteration
  std::optional<double> peak_memory_bytes;          // B, the largest worker's
  std::optional<double> energy_j;                   // J per iteration
  std::optional<double> cost_usd;                   // USD per iteration
  std::optional<double> measured_iteration_time_s;  // s, validations
  std::optional<double> error_pct;                  // %, (predicted - measured) / measured
  std::string accuracy;  // JSON array of per-epoch test accuracies of a real run, else ""
  std::string spec;      // the Experiment's canonical JSON, one line ("" for a bare Plan)
  std::string strata_version;
  // Files written with this row's answer, by kind (perfetto, trace, svg): absolute paths, kept
  // in table `files` (key, kind, path). A row committed again without a kind keeps the kind's
  // path; one with it replaces it.
  std::map<std::string, std::string> files;
};

// The `results` table's columns, in order: key, then every ResultRow field.
const std::vector<std::string>& result_columns();

// A query's answer: column names and cells (SQL NULL, integer, real or text).
using ResultCell = std::variant<std::monostate, std::int64_t, double, std::string>;
struct ResultTable {
  std::vector<std::string> columns;
  std::vector<std::vector<ResultCell>> rows;
};

class ResultsStore {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens nothing yet. `wait_s`: how long a writer waits for another one's lock (s, >= 0).
  explicit ResultsStore(std::string path, double wait_s = 30);
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  const std::string& path() const { return path_; }

  // Before any work: an existing file must be a store this strata can write (schema, not
  // read-only), a missing one must be creatable in its folder. InputError otherwise.
  void check_writable();
  // The keys (text()) of the rows already stored; empty when the file does not exist. Checks
  // the file as a writer would (a newer schema, not a store: InputError).
  std::set<std::string> keys();
  // One row by key, when stored.
  std::optional<ResultRow> find(const ResultKey& key);
  // Writes `rows` in one transaction, creating the file and its tables when needed; nothing
  // for no rows.
  void commit(const std::vector<ResultRow>& rows);

  // Read-only: `sql` run on the store as it is (the file must exist). InputError for SQL
  // SQLite refuses, naming the store and SQLite's message.
  ResultTable query(const std::string& sql);
  // Every row, ordered by key.
  std::vector<ResultRow> rows();

 private:
  void open(bool write);
  void check_schema();
  int schema_objects();

  std::string path_;
  double wait_s_ = 30;
  ::sqlite3* db_ = nullptr;
  bool writable_ = false;
};

// A ResultTable row as a ResultRow (the table must have result_columns(), in any order).
ResultRow result_row_of(const ResultTable& table, std::size_t row);

}  // namespace traces
}  // namespace strata
