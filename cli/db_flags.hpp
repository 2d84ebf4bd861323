// The results store from the command line (traces/results_store.hpp): the --db flags every
// command that computes an answer shares, the platform hash of a row's key, and the rows of a
// replay report or a closed-form estimate (docs/results.md).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flags.hpp"
#include "strata/models/cost/analytical.hpp"
#include "strata/models/experiment.hpp"
#include "strata/sim/report.hpp"
#include "strata/traces/results_store.hpp"

namespace strata::cli {

struct DbFlags {
  std::string db;      // --db FILE
  bool no_db = false;  // --no-db
  double wait_s = 30;  // --db-wait SECONDS
  bool by_default = false;
};

// --db, --db-wait and, where the command writes by default (explore, validate: `by_default`,
// to strata.db in the current folder), --no-db.
void add_db_flags(CLI::App& cmd, DbFlags& flags, bool by_default);

// The store the flags name, checked for writing (ResultsStore::check_writable), or null: --no-db,
// or no --db where the command writes only when asked (simulate, run).
std::unique_ptr<ResultsStore> open_results_store(const DbFlags& flags);

// What a replay's answer depends on outside the Experiment, as text: network model and factors,
// the calibration (its file's bytes), communication streams, cold starts, placement.
std::vector<std::string> replay_settings(const ReplayFlags& flags, const ReplayOptions& options);

// FNV-1a 64 (16 hex digits) of the platform file's bytes and each setting ("" path: no file).
std::string platform_hash(const std::string& platform_path, const std::vector<std::string>& settings);
// The same over a platform's text (one generated, not read from a file).
std::string platform_text_hash(std::string platform_text, const std::vector<std::string>& settings);

// The row of a replay: fidelity from the report's collectives (step or aggregated), the spec
// when `experiment` is known (else the Plan's hash from the report).
ResultRow report_row(const Report& report, const std::string& command,
                     const std::optional<Experiment>& experiment, const std::string& platform_hash,
                     const std::string& strategy);

// The row of a closed-form estimate of `experiment` (fidelity analytical); energy and money as
// the explorer priced them (price_estimate), empty where the platform gives no power or price.
ResultRow estimate_row(const Estimate& estimate, const std::string& command, const Experiment& experiment,
                       const std::string& platform_hash, const std::string& platform, int workers,
                       const std::string& strategy);

// A report with what a stored replay row holds (for ranking and the table): iteration time,
// tokens and samples per second, MFU, bubble, exposed communication, peak memory, fits, energy
// and money.
Report report_of_row(const ResultRow& row);

// A row's test accuracy per epoch, from its `accuracy` JSON ([{"epoch": e, "test_accuracy": a,
// ...}, ...], as strata run --db and strata search write it); empty when it holds none.
std::vector<double> accuracy_curve(const ResultRow& row);

// The files written with a row, by kind (perfetto, trace, svg, ...), as absolute paths; the
// kinds given an empty path are left out.
std::map<std::string, std::string> row_files(const std::vector<std::pair<std::string, std::string>>& named);

}  // namespace strata::cli
