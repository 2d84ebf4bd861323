// The explorer's outputs: the ranked table, the best line, CSV and JSON (explore.hpp). Every
// option column prints the value as `--set` writes it, so a row can be re-run as printed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "strata/sim/explore.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace sim {
namespace {

constexpr double kGiB = 1073741824.0;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string schedule_text(const StrategyConfig& c) {
  return c.pp > 1 ? std::string(to_string(c.schedule)) : std::string("-");
}

std::int64_t microbatch_size(const StrategyConfig& c) {
  return c.global_batch / c.dp / std::max<std::int64_t>(1, c.microbatches);
}

// The searched options of a configuration as `--set` writes them, in the table's column order.
struct OptionValues {
  std::string recompute, sequence_parallel, zero, offload, interleave;
};

OptionValues option_values(const StrategyConfig& c) {
  return {std::string(to_string(c.recompute)), c.sequence_parallel ? "1" : "0", std::to_string(c.zero),
          c.offload ? "1" : "0", std::to_string(c.interleave)};
}

}  // namespace

std::string describe_config(const StrategyConfig& c) {
  const OptionValues o = option_values(c);
  return c.to_string() + " " + schedule_text(c) + " microbatches=" + std::to_string(c.microbatches) + " (" +
         std::to_string(microbatch_size(c)) + " per microbatch) recompute=" + o.recompute +
         " sequence_parallel=" + o.sequence_parallel + " zero=" + o.zero + " offload=" + o.offload +
         " interleave=" + o.interleave;
}

bool results_have_rows(const std::vector<ExploreResult>& results) {
  for (const ExploreResult& r : results)
    if (!r.rows.empty()) return true;
  return false;
}

std::string format_platforms_table(const std::vector<ExploreResult>& results, Objective objective,
                                   std::size_t max_rows) {
  struct Entry {
    const ExploreResult* result;
    const ExploreRow* row;
  };
  std::vector<Entry> all;
  for (const ExploreResult& r : results)
    for (const ExploreRow& row : r.rows) all.push_back({&r, &row});
  std::stable_sort(all.begin(), all.end(), [objective](const Entry& a, const Entry& b) {
    if (a.row->fits() != b.row->fits()) return a.row->fits();
    return a.row->objective_value(objective) < b.row->objective_value(objective);
  });
  auto name = [](const std::string& path) { return path.substr(path.find_last_of('/') + 1); };
  std::string s = "across platforms, by " + std::string(to_string(objective)) + " (fitting first):\n";
  char line[768];
  std::snprintf(line, sizeof line, "%4s  %-24s %4s %-10s %12s %14s %14s %14s  %s\n", "rank", "platform",
                "fits", "fidelity", "iteration(s)", "USD/iteration", "J/iteration", "tokens/USD",
                "configuration");
  s += line;
  for (std::size_t i = 0; i < all.size() && i < max_rows; ++i) {
    const ExploreRow& r = *all[i].row;
    const double usd = r.cost_usd();
    std::snprintf(line, sizeof line, "%4zu  %-24s %4s %-10s %12.5g %14.6g %14.6g %14s  %s\n", i + 1,
                  name(all[i].result->platform).c_str(), r.fits() ? "yes" : "no",
                  r.simulated ? r.simulated->collectives.c_str() : "analytical", r.iteration_s(), usd,
                  r.energy_j(), usd > 0 ? fmt("%.6g", r.tokens_per_s() * r.iteration_s() / usd).c_str() : "-",
                  describe_config(r.config).c_str());
    s += line;
  }
  if (all.empty() || !all.front().row->fits()) return s + "best across platforms: none fits\n";
  return s + "best across platforms: " + name(all.front().result->platform) + ": " +
         describe_config(all.front().row->config) + "\n";
}

std::string format_fidelity_line(const ExploreResult& result) {
  if (result.rungs.empty()) return "";
  auto number = [](double v, const char* f) { return std::isnan(v) ? std::string("-") : fmt(f, v); };
  std::string s = "fidelities:";
  for (std::size_t i = 0; i < result.rungs.size(); ++i) {
    const FidelityRung& r = result.rungs[i];
    s += (i == 0 ? " " : " -> ") + r.fidelity + " " + std::to_string(r.evaluated) +
         (i == 0 ? " configurations" : " replayed");
    if (i + 1 < result.rungs.size()) s += " (Kendall tau to the next " + number(r.kendall_tau, "%.3f") + ")";
  }
  s += "; " + std::to_string(result.replays) + " simulations run; regret of stopping at";
  for (std::size_t i = 0; i < result.rungs.size(); ++i)
    s += std::string(i == 0 ? " " : ", ") + result.rungs[i].fidelity + " " +
         number(result.rungs[i].regret_pct, "%.2f %%");
  return s + "\n";
}

std::string format_explore_table(const ExploreResult& result, std::size_t max_rows) {
  std::string s;
  std::string notes;
  bool any_reduced = false, any_symmetric = false;
  char line[640];
  std::snprintf(line, sizeof line,
                "%4s %4s %3s %3s %4s %-5s %12s %4s %-9s %17s %4s %7s %10s %12s %12s %7s %12s %7s %9s %10s\n",
                "rank", "dp", "tp", "pp", "fits", "sched", "microbatches", "mbs", "recompute",
                "sequence_parallel", "zero", "offload", "interleave", "analytic(s)", "simulated(s)", "err(%)",
                "tokens/s", "MFU(%)", "bubble(%)", "mem(GiB)");
  s += line;
  for (std::size_t i = 0; i < result.rows.size() && i < max_rows; ++i) {
    const ExploreRow& r = result.rows[i];
    const bool sim = r.simulated.has_value();
    const double t = r.iteration_s();
    const double tokens = sim ? r.simulated->tokens_per_s : r.estimate.tokens_per_s;
    const double mfu = sim ? r.simulated->mfu : r.estimate.mfu;
    const double bubble = sim ? r.simulated->bubble_fraction : r.estimate.bubble_fraction;
    const OptionValues o = option_values(r.config);
    // An exact symmetry reduction (its report's line names the replicas replayed) is no
    // approximation, whatever the explorer asked for.
    const bool symmetric =
        sim && !r.simulated->symmetry.empty() && r.simulated->symmetry.rfind("none", 0) != 0;
    const bool approximate = r.reduced && !symmetric;
    std::snprintf(
        line, sizeof line,
        "%4zu %4d %3d %3d %4s %-5s %12lld %4lld %-9s %17s %4s %7s %10s %12.4f %12s %7s %12.0f %7.1f "
        "%9.1f %10.2f\n",
        i + 1, r.config.dp, r.config.tp, r.config.pp, r.fits() ? "yes" : "no",
        schedule_text(r.config).c_str(), static_cast<long long>(r.config.microbatches),
        static_cast<long long>(microbatch_size(r.config)), o.recompute.c_str(), o.sequence_parallel.c_str(),
        o.zero.c_str(), o.offload.c_str(), o.interleave.c_str(), r.estimate.iteration_s,
        sim ? (fmt("%.4f", t) + (approximate ? "*"
                                 : symmetric ? "="
                                             : ""))
                  .c_str()
            : "-",
        sim ? fmt("%+.1f", 100 * (r.estimate.iteration_s - t) / t).c_str() : "-", tokens, 100 * mfu,
        100 * bubble, r.peak_memory() / kGiB);
    s += line;
    any_reduced = any_reduced || approximate;
    any_symmetric = any_symmetric || symmetric;
    if (!r.not_replayed.empty())
      notes += "rank " + std::to_string(i + 1) + " not replayed: " + r.not_replayed + "\n";
  }
  if (any_reduced) s += "* replayed as one data-parallel replica with its full DP allreduce flows\n";
  if (any_symmetric)
    s += "= replayed as representative data-parallel replicas standing for the rest (symmetry reduction, "
         "exact: "
         "docs/simulator.md)\n";
  return s + notes;
}

std::string best_line(const ExploreResult& result) {
  const std::string capacity =
      result.gpu_memory > 0 ? fmt("%.1f GiB per GPU", result.gpu_memory / kGiB) : "an unknown GPU memory";
  if (const ExploreRow* best = best_row(result))
    return "best: " + describe_config(best->config) +
           " (fits: " + fmt("%.1f GiB", best->peak_memory() / kGiB) + " of " + capacity + ")";
  if (result.rows.empty()) return "best: none (no valid configuration)";
  const ExploreRow* least = &result.rows.front();
  for (const ExploreRow& r : result.rows)
    if (r.peak_memory() < least->peak_memory()) least = &r;
  return "best: none - none of the " + std::to_string(result.candidates) + " configurations fits in " +
         capacity + "; least memory: " + describe_config(least->config) + " needs " +
         fmt("%.1f GiB", least->peak_memory() / kGiB) + " per GPU (" +
         fmt("%.1f GiB", (least->peak_memory() - result.gpu_memory) / kGiB) + " over)";
}

namespace {

nlohmann::json row_json(const ExploreRow& r, std::size_t rank) {
  const OptionValues o = option_values(r.config);
  nlohmann::json j = {
      {"rank", rank},
      {"dp", r.config.dp},
      {"tp", r.config.tp},
      {"pp", r.config.pp},
      {"fits", r.fits()},
      {"schedule", schedule_text(r.config)},
      {"microbatches", r.config.microbatches},
      {"microbatch_size", microbatch_size(r.config)},
      {"recompute", o.recompute},
      {"sequence_parallel", std::stoi(o.sequence_parallel)},
      {"zero", r.config.zero},
      {"offload", std::stoi(o.offload)},
      {"interleave", r.config.interleave},
      {"analytical_s", r.estimate.iteration_s},
      {"simulated_s", nullptr},
      {"tokens_per_s", r.simulated ? r.simulated->tokens_per_s : r.estimate.tokens_per_s},
      {"mfu", r.simulated ? r.simulated->mfu : r.estimate.mfu},
      {"bubble_fraction", r.simulated ? r.simulated->bubble_fraction : r.estimate.bubble_fraction},
      {"peak_memory_bytes", r.peak_memory()},
      {"reduced", r.reduced},
      {"not_replayed", r.not_replayed}};
  if (r.simulated) j["simulated_s"] = r.simulated->iteration_time_s;
  return j;
}

}  // namespace

std::string explore_json(const ExploreResult& result, std::size_t max_rows) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < result.rows.size() && i < max_rows; ++i)
    rows.push_back(row_json(result.rows[i], i + 1));
  const ExploreRow* best = best_row(result);
  return nlohmann::json{{"format", "strata-explore"},
                        {"schema_version", 1},
                        {"model", result.model},
                        {"platform", result.platform},
                        {"workers", result.workers},
                        {"gpu_memory_bytes", result.gpu_memory},
                        {"candidates", result.candidates},
                        {"best", best != nullptr ? nlohmann::json(1) : nlohmann::json(nullptr)},
                        {"best_line", best_line(result)},
                        {"rows", rows}}
             .dump(1) +
         "\n";
}

std::string explore_csv(const ExploreResult& result, std::size_t max_rows) {
  std::string s;
  const nlohmann::json header = row_json(ExploreRow{}, 0);
  // nlohmann::json orders keys by name; the CSV keeps the table's order instead.
  static const char* const kColumns[] = {"rank",
                                         "dp",
                                         "tp",
                                         "pp",
                                         "fits",
                                         "schedule",
                                         "microbatches",
                                         "microbatch_size",
                                         "recompute",
                                         "sequence_parallel",
                                         "zero",
                                         "offload",
                                         "interleave",
                                         "analytical_s",
                                         "simulated_s",
                                         "tokens_per_s",
                                         "mfu",
                                         "bubble_fraction",
                                         "peak_memory_bytes",
                                         "reduced",
                                         "not_replayed"};
  for (const char* c : kColumns) {
    STRATA_ASSERT(header.contains(c), std::string("explore_csv: column ") + c);
    s += (s.empty() ? "" : ",") + std::string(c);
  }
  s += "\n";
  for (std::size_t i = 0; i < result.rows.size() && i < max_rows; ++i) {
    const nlohmann::json row = row_json(result.rows[i], i + 1);
    std::string line;
    for (const char* c : kColumns) line += (line.empty() ? "" : ",") + csv_cell(row[c]);
    s += line + "\n";
  }
  return s;
}

}  // namespace sim
}  // namespace strata
