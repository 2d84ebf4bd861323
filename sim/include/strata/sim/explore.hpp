// explore: the what-if search over parallel configurations of one model on one platform.
//
// Enumerates every valid configuration — dp·tp·pp = workers; tp divides the attention heads and
// fits in one host's slots unless cross-host TP is allowed; pp <= blocks; microbatch counts in
// {pp, 2pp, 4pp, 8pp} dividing the per-replica batch; for pp > 1 both GPipe and 1F1B — ranks all
// of them with the closed-form estimate (models/analytical.hpp; microseconds each, no SimGrid),
// then replays the best K on SimGrid, each in its own process, two at a time. Ranking: fitting
// configurations first, then estimated iteration time; the top K are re-ranked by simulated time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/cost/analytical.hpp"
#include "strata/models/experiment.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
inline namespace sim {

struct ExploreOptions {
  std::string model;
  std::map<std::string, std::string> model_overrides;
  StrategyConfig base;  // dtype, optimizer, global batch, seed, bucket size, algos
  // The experiment the options came from (strategy aside): the best configuration's files record
  // it with the best dp/tp/pp/schedule/microbatches/batch (experiment_for), and its hash.
  std::optional<Experiment> experiment;
  int workers = 0;  // 0 = every worker slot of the platform
  int top_k = 5;
  bool allow_cross_host_tp = false;
  std::string platform;
  ReplayOptions replay;
  // The best configuration is replayed once more (in its own process, which returns the files'
  // contents) and these are written by write_file_atomically here, so that a command's OutputSet
  // stages them with its other outputs; "" = none.
  std::string best_trace_path;               // strata Trace JSON
  std::string best_perfetto_path;            // Chrome trace event JSON
  std::string best_svg_path;                 // SVG timeline
  int parallel = 2;                          // replays at once
  bool progress = false;                     // progress lines on stderr
  std::size_t reduce_above_tasks = 1500000;  // replay one DP replica above this plan size
};

struct ExploreRow {
  StrategyConfig config;
  Estimate estimate;
  std::optional<Report> simulated;
  bool reduced = false;  // replayed as one DP replica with full DP allreduce flows
};

struct ExploreResult {
  std::string model;
  std::string platform;
  int workers = 0;
  std::size_t candidates = 0;    // configurations enumerated (valid ones)
  std::vector<ExploreRow> rows;  // simulated rows first (by simulated time), then the rest
  double analytical_wall_s = 0;
  double replay_wall_s = 0;
};

// Valid configurations, in a deterministic order.
std::vector<StrategyConfig> enumerate_configs(const Model& model, const ExploreOptions& options,
                                              const PlatformSummary& platform);

// Cluster figures for the analytical model, from a platform summary.
ClusterSpec cluster_spec(const PlatformSummary& platform);

ExploreResult explore(const ExploreOptions& options);

// `base` with the strategy of `config` (dp, tp, pp, schedule, microbatches, global batch and the
// replicas a reduced replay lowers): the spec that `strata simulate --spec` replays as explore did.
Experiment experiment_for(Experiment base, const StrategyConfig& config);

// The ranked table: rank, dp, tp, pp, schedule, microbatches, analytical and simulated
// iteration time (s), tokens/s, MFU (%), bubble (%), peak memory per GPU (GiB), fits.
std::string format_explore_table(const ExploreResult& result, std::size_t max_rows);

}  // namespace sim
}  // namespace strata
