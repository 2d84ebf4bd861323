// explore: the what-if search over parallel configurations of one model on one platform.
//
// Enumerates every valid configuration — dp·tp·pp = workers; tp divides the attention heads and
// fits in one host's slots unless cross-host TP is allowed; pp <= blocks; every microbatch size
// that divides the per-replica batch, down to one sample, with at least pp microbatches; for
// pp > 1 both GPipe and 1F1B; and every combination of the memory options of the search space
// (SearchDimension: recompute, sequence_parallel, zero, offload, interleave), each tried only
// where it means something — ranks all of them with the closed-form estimate
// (models/analytical.hpp; microseconds each, no SimGrid), then replays the best K on SimGrid, each
// in its own process, two at a time. Ranking: configurations that fit in a GPU's memory first,
// then estimated iteration time; the top K are re-ranked by simulated time (fitting first). A
// configuration the lowering does not build yet is not replayed: its row says why.
// The best configuration is the first row, and only if it fits: when none fits, there is no best,
// and best_line() names the configuration that needs the least memory and what it lacks.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/cost/analytical.hpp"
#include "strata/models/experiment.hpp"
#include "strata/models/schedule/plan_placement.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
inline namespace sim {

// One memory option the explorer searches: its `--set` key and the values tried, as `--set` writes
// them. values[0] is tried for every configuration; the others only where they mean something
// (sequence_parallel with tp > 1, zero with dp > 1, offload with zero >= 1 on a platform with
// pcie_bw, interleave with pp > 1 and 1F1B) and check_strategy accepts them.
struct SearchDimension {
  std::string key;
  std::vector<std::string> values;
};

// The search space of today's closed-form estimate: for each memory option, the values estimate()
// models (it refuses the others in one line). The list widens as the estimate learns options.
std::vector<SearchDimension> estimated_search_space();

// The --set keys a SearchDimension may name.
std::vector<std::string> searchable_keys();

struct ExploreRow;

// What the explorer ranks by, fitting configurations first: iteration time, money or energy per
// iteration (lowest first), or tokens per dollar (highest first).
enum class Objective : std::uint8_t { time, money, energy, tokens_per_dollar };
Objective parse_objective(const std::string& text);  // InputError naming --objective
std::string_view to_string(Objective objective);

// Sharding over the ranks of an MPI job (`mpirun -np N strata explore ...`): every rank computes
// the same estimates and the same lists of replays; each replays the jobs whose index modulo
// `size` is its `rank` (in child processes, `parallel` at a time), and `all_gather` gives every
// rank every rank's results. Rank 0 alone looks in the store (its answers reach the others by
// `broadcast`) and is given `estimated` and `replayed`. The replays are deterministic, so the
// sharded result is the serial one.
struct ExploreShards {
  int rank = 0;
  int size = 1;
  std::function<std::string(const std::string&)> broadcast;  // rank 0's text, on every rank
  // This rank's text in; every rank's text out, by rank.
  std::function<std::vector<std::string>(const std::string&)> all_gather;
};

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
  std::vector<SearchDimension> space = estimated_search_space();
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
  // A top-K row whose (reduced) Plan would still have more tasks is not replayed: its row says
  // so. A replay holds about 2 kB per task (tests/cli/big_plan_under_limit.sh replays 10^6 tasks
  // under 2 GB of address space), so 2 million tasks is about 4 GB per replay process, two at a
  // time; gpt3-175b's one-sequence microbatches on 1,024 GPUs (27.6 million tasks in one replica
  // by estimated_tasks) were killed for memory on a 23 GB machine.
  std::size_t max_replay_tasks = 2000000;
  // The results store's part (cli/db_flags.hpp), each optional:
  // - estimated: every configuration's estimate, ranked, before any replay;
  // - stored_replay: a replay of this configuration (as lowered: its lowered_replicas) already
  //   stored; the explorer takes it instead of replaying (a resumed sweep);
  // - replayed: each replay as it finishes (its configuration as lowered), in the top-K order.
  std::function<void(const std::vector<ExploreRow>&)> estimated;
  std::function<std::optional<Report>(const StrategyConfig&, CollectiveMode)> stored_replay;
  std::function<void(const StrategyConfig&, const Report&)> replayed;
  // Multi-fidelity search (explore_fidelities), instead of replaying the top K at
  // replay.collectives: `fidelity` the highest one reached (analytical: no replay), `eta` the
  // successive-halving factor (>= 2).
  std::optional<std::string> fidelity;
  int eta = 3;
  Objective objective = Objective::time;
  ExploreShards shards;  // one rank unless explore runs under mpirun
};

// One fidelity of a multi-fidelity search: how many configurations it evaluated, and how its
// ranking compares with the next fidelity's on the configurations both evaluated.
struct FidelityRung {
  std::string fidelity;  // analytical, aggregated, step
  std::size_t evaluated = 0;
  // Kendall's tau-b between this rung's and the next rung's iteration times over the
  // configurations the next rung evaluated (NaN for the last rung or fewer than 2 of them).
  double kendall_tau = 0;
  // Stopping here: the configuration this rung ranks first (fitting first) against the one the
  // last rung ranks first, both timed at the last rung's fidelity, in % (0 for the last rung).
  double regret_pct = 0;
  std::string choice;  // the configuration this rung ranks first (describe_config)
};

struct ExploreRow {
  StrategyConfig config;  // as ranked (lowered_replicas 0; `reduced` says how it was replayed)
  Estimate estimate;
  std::optional<Report> simulated;   // the highest fidelity replay
  std::optional<Report> aggregated;  // multi-fidelity: the aggregated replay when a step one followed
  bool reduced = false;              // replayed as one DP replica with full DP allreduce flows
  std::string not_replayed;          // why a top-K row was not replayed (the lowering's refusal), else ""

  bool fits() const;            // the replay's verdict, else the estimate's
  double peak_memory() const;   // B per GPU, the replay's, else the estimate's
  double iteration_s() const;   // s, the replay's, else the estimate's
  double cost_usd() const;      // USD per iteration, the replay's, else the estimate's
  double energy_j() const;      // J per iteration, the replay's, else the estimate's
  double tokens_per_s() const;  // the replay's, else the estimate's
  // The objective's value, lower is better (tokens per dollar negated; +inf when unpriced).
  double objective_value(Objective objective) const;
};

struct ExploreResult {
  std::string model;
  std::string platform;
  int workers = 0;
  double gpu_memory = 0;         // B per GPU of the platform (0 = unknown: everything fits)
  std::size_t candidates = 0;    // configurations enumerated (valid ones)
  std::vector<ExploreRow> rows;  // simulated rows first (by simulated time), then the rest
  double analytical_wall_s = 0;
  double replay_wall_s = 0;
  std::vector<FidelityRung> rungs;  // multi-fidelity: analytical, aggregated[, step]
  std::size_t replays = 0;          // simulations run (stored ones not counted)
};

// Kendall's tau-b of two equally long samples (pairs tied in both count for neither; O(n^2)).
double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b);

// "fidelities: analytical 720 configurations -> aggregated 240 (Kendall tau 0.81) -> step 80
// (tau 0.97); regret of stopping at analytical 1.2 %, aggregated 0.0 %".
std::string format_fidelity_line(const ExploreResult& result);

// Valid configurations, in a deterministic order.
std::vector<StrategyConfig> enumerate_configs(const Model& model, const ExploreOptions& options,
                                              const PlatformSummary& platform);

// `e`'s energy and money per iteration on the platform's hosts (models/cost/analytical.hpp).
void price_estimate(Estimate& e, int workers, const PlatformSummary& platform);

// Cluster figures for the analytical model, from a platform summary.
ClusterSpec cluster_spec(const PlatformSummary& platform);

// load_platform_summary run in a child process, so that this process can still load the
// platform into its own SimGrid engine (one per process) afterwards.
PlatformSummary load_platform_summary_apart(const std::string& platform_path,
                                            const NetworkOptions& network = {},
                                            double function_memory_mb = 0);

// replay() run in a child process, so that this process can replay again: its report (the
// trace is not kept). Throws as replay() does.
Report replay_report_apart(const Plan& plan, const std::string& platform_path, const ReplayOptions& options);

// The platform's worker slots for the placement policies (models/schedule/plan_placement.hpp):
// its hosts with their slots (the summary), the routes between hosts (platform_routes), and
// between two slots of one host the summary's intra-host latency and bandwidth. Both read in
// child processes.
SlotPlatform load_slot_platform(const std::string& platform_path, const NetworkOptions& network = {});

ExploreResult explore(const ExploreOptions& options);

// `base` with the strategy of `config` (dp, tp, pp, schedule, microbatches, global batch, the
// replicas a reduced replay lowers and every memory option): the spec that `strata simulate
// --spec` replays as explore did.
Experiment experiment_for(Experiment base, const StrategyConfig& config);

// The best row: the first one, if it fits; null when none fits (or there is no row).
const ExploreRow* best_row(const ExploreResult& result);

// "dp=8,tp=8,pp=16 1f1b microbatches=1024 (1 per microbatch) recompute=full ...": every option.
std::string describe_config(const StrategyConfig& c);

// The ranked table: rank, dp, tp, pp, fits, schedule, microbatches (mb), microbatch size in
// samples (mbs), the options as --set writes them (recompute, sequence_parallel, zero, offload,
// interleave), analytical and simulated iteration time (s), error (%), tokens/s, MFU (%),
// bubble (%), peak memory per GPU (GiB); then one line per top-K row that was not replayed.
std::string format_explore_table(const ExploreResult& result, std::size_t max_rows);

// "best: dp=8,tp=8,pp=16 1f1b mb=1024 mbs=1 recompute=full ... (fits: 65.1 GiB of 80.0 GiB per
// GPU)", or, when no configuration fits, "best: none — none of the N configurations fits in
// 80.0 GiB per GPU; least memory: <configuration> needs 95.2 GiB per GPU (15.2 GiB over)".
std::string best_line(const ExploreResult& result);

// Several platforms' explorations ranked together by `objective` (fitting first): rank, platform,
// fits, fidelity (estimate or the replay's), iteration (s), USD and J per iteration, tokens per
// USD, configuration; the first max_rows rows, then "best across platforms: <platform>: ...".
std::string format_platforms_table(const std::vector<ExploreResult>& results, Objective objective,
                                   std::size_t max_rows);
bool results_have_rows(const std::vector<ExploreResult>& results);

// The same rows as the table (every row up to max_rows), as CSV with a header line, and as JSON
// {"format":"strata-explore","schema_version":1, "model", "platform", "workers", "gpu_memory_bytes",
//  "candidates", "best": <index or null>, "rows":[{...}]}; times in s, memory in B.
std::string explore_csv(const ExploreResult& result, std::size_t max_rows);
std::string explore_json(const ExploreResult& result, std::size_t max_rows);

}  // namespace sim
}  // namespace strata
