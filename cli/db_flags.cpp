// The results store from the command line (db_flags.hpp).
#include "db_flags.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "file_flags.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/outputs.hpp"
#include "strata/traces/trace.hpp"

namespace strata::cli {
namespace {

std::string hex64(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string file_bytes(const std::string& path, const std::string& flag) {
  note_input(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(flag + " " + path + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<double> positive_or_none(double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; }

}  // namespace

void add_db_flags(CLI::App& cmd, DbFlags& flags, bool by_default) {
  flags.by_default = by_default;
  if (by_default) flags.db = "strata.db";
  auto* db = cmd.add_option("--db", flags.db,
                            by_default ? "results store to add this command's rows to (default strata.db)"
                                       : "results store to add this command's rows to (default: none)");
  if (by_default) cmd.add_flag("--no-db", flags.no_db, "keep no rows")->excludes(db);
  // The store is an input too: no output of the command may replace it (--no-db: no store).
  track_input(cmd, db, flags.db, &flags.no_db);
  cmd.add_option("--db-wait", flags.wait_s, "seconds to wait for another process's lock on the store")
      ->transform(real_number(0, 86400));
}

std::unique_ptr<ResultsStore> open_results_store(const DbFlags& flags) {
  if (flags.no_db || flags.db.empty()) return nullptr;
  auto store = std::make_unique<ResultsStore>(flags.db, flags.wait_s);
  store->check_writable();
  return store;
}

std::vector<std::string> replay_settings(const ReplayFlags& flags, const ReplayOptions& options) {
  std::vector<std::string> s;
  s.push_back("network: " + options.network.describe());
  s.push_back("calibration: " + (flags.calibration.empty()
                                     ? std::string("default")
                                     : hex64(fnv1a64(file_bytes(flags.calibration, "--calibration")))));
  s.push_back("comm_streams: " + flags.comm_streams);
  s.push_back(std::string("cold_starts: ") + (options.cold_starts ? "yes" : "no"));
  std::string placement;
  for (const std::string& h : options.placement) placement += h + ",";
  s.push_back("placement: " + placement);
  return s;
}

std::string platform_hash(const std::string& platform_path, const std::vector<std::string>& settings) {
  return platform_text_hash(platform_path.empty() ? std::string() : file_bytes(platform_path, "--platform"),
                            settings);
}

std::string platform_text_hash(std::string platform_text, const std::vector<std::string>& settings) {
  for (const std::string& s : settings) platform_text += std::string(1, '\0') + s;
  return hex64(fnv1a64(platform_text));
}

ResultRow report_row(const Report& r, const std::string& command, const std::optional<Experiment>& experiment,
                     const std::string& platform_hash, const std::string& strategy) {
  ResultRow row;
  row.key.experiment_hash = experiment ? experiment_hash(*experiment) : r.experiment_hash;
  row.key.platform_hash = platform_hash;
  row.key.fidelity = r.collectives.empty() ? "replay" : r.collectives;
  row.key.seed = experiment ? experiment->seed : 0;
  row.command = command;
  row.model = r.model;
  row.strategy = strategy.empty() ? r.strategy : strategy;
  row.platform = std::filesystem::path(r.platform).filename().string();
  row.workers = r.workers;
  row.fits = r.fits;
  row.iteration_time_s = r.iteration_time_s;
  row.tokens_per_s = positive_or_none(r.tokens_per_s);
  row.samples_per_s = positive_or_none(r.samples_per_s);
  row.mfu = r.mfu;
  row.bubble_fraction = r.bubble_fraction;
  row.exposed_comm_s = r.exposed_comm_s;
  row.peak_memory_bytes = r.peak_memory_bytes;
  row.energy_j = r.energy_j;
  row.cost_usd = r.cost_usd;
  row.spec = experiment ? canonical_json(*experiment).dump() : "";
  row.strata_version = std::string(strata_version());
  return row;
}

ResultRow estimate_row(const Estimate& e, const std::string& command, const Experiment& experiment,
                       const std::string& platform_hash, const std::string& platform, int workers,
                       const std::string& strategy) {
  ResultRow row;
  const nlohmann::json spec = canonical_json(experiment);
  const std::string text = spec.dump();
  // experiment_hash(experiment), from the canonical JSON the row keeps anyway
  row.key = ResultKey{hex64(fnv1a64(text)), platform_hash, "analytical", experiment.seed};
  row.command = command;
  row.model = experiment.model;
  row.strategy = strategy;
  row.platform = std::filesystem::path(platform).filename().string();
  row.workers = workers;
  row.fits = e.fits;
  row.iteration_time_s = e.iteration_s;
  row.tokens_per_s = positive_or_none(e.tokens_per_s);
  row.mfu = e.mfu;
  row.bubble_fraction = e.bubble_fraction;
  row.exposed_comm_s = e.exposed_comm_s;
  row.peak_memory_bytes = e.peak_memory_bytes;
  row.energy_j = positive_or_none(e.energy_j);
  row.cost_usd = positive_or_none(e.cost_usd);
  row.spec = text;
  row.strata_version = std::string(strata_version());
  return row;
}

Report report_of_row(const ResultRow& row) {
  Report r;
  r.model = row.model;
  r.workers = row.workers;
  r.collectives = row.key.fidelity;
  r.fits = row.fits.value_or(true);
  r.iteration_time_s = row.iteration_time_s.value_or(0);
  r.iteration_times_s = {r.iteration_time_s};
  r.tokens_per_s = row.tokens_per_s.value_or(0);
  r.samples_per_s = row.samples_per_s.value_or(0);
  r.mfu = row.mfu.value_or(0);
  r.bubble_fraction = row.bubble_fraction.value_or(0);
  r.exposed_comm_s = row.exposed_comm_s.value_or(0);
  r.peak_memory_bytes = row.peak_memory_bytes.value_or(0);
  r.energy_j = row.energy_j.value_or(0);
  r.cost_usd = row.cost_usd.value_or(0);
  r.experiment_hash = row.key.experiment_hash;
  return r;
}

std::vector<double> accuracy_curve(const ResultRow& row) {
  std::vector<double> curve;
  if (row.accuracy.empty()) return curve;
  const nlohmann::json j = nlohmann::json::parse(row.accuracy, nullptr, false);
  if (j.is_array())
    for (const auto& e : j)
      if (e.is_object() && e.contains("test_accuracy") && e["test_accuracy"].is_number())
        curve.push_back(e["test_accuracy"].get<double>());
  return curve;
}

std::map<std::string, std::string> row_files(const std::vector<std::pair<std::string, std::string>>& named) {
  std::map<std::string, std::string> out;
  for (const auto& [kind, path] : named)
    if (!path.empty()) out[kind] = std::filesystem::absolute(path).lexically_normal().string();
  return out;
}

}  // namespace strata::cli
