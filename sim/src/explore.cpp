#include "strata/sim/explore.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "strata/models/cost/bus_bandwidth.hpp"
#include "strata/sim/process.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/perfetto.hpp"
#include "strata/traces/timeline_svg.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata {
inline namespace sim {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A host's fabric across the process boundary: null (links at peak), a shipped fabric's name, or
// a platform's curves with their resolved nominal.
nlohmann::json fabric_to_json(const Fabric* f) {
  if (f == nullptr) return nullptr;
  if (f->name != "platform") return f->name;
  nlohmann::json curves = nlohmann::json::array();
  for (const BusCurve& c : f->curves) curves.push_back({c.bytes, c.busbw});
  return {{"curves", curves}, {"nominal", f->nominal}, {"source", f->source}};
}

std::shared_ptr<const Fabric> fabric_from_json(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  if (j.is_string()) {
    const Fabric* shipped = shipped_fabric(j.get<std::string>());
    STRATA_ASSERT(shipped != nullptr, "unknown shipped fabric " + j.dump());
    return {std::shared_ptr<const Fabric>{}, shipped};  // static storage: not owned
  }
  auto f = std::make_shared<Fabric>();
  f->name = "platform";
  for (std::size_t c = 0; c < f->curves.size(); ++c) {
    f->curves[c].bytes = j["curves"][c][0].get<std::vector<double>>();
    f->curves[c].busbw = j["curves"][c][1].get<std::vector<double>>();
  }
  f->nominal = j["nominal"].get<double>();
  f->source = j["source"].get<std::string>();
  return f;
}

nlohmann::json summary_to_json(const PlatformSummary& p) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const HostSpec& h : p.hosts)
    hosts.push_back({h.name, h.slots, h.flops_fp32, h.flops_bf16, h.flops_fp16, h.flops_fp64, h.mem_bw,
                     h.gpu_memory, h.price_per_hour, h.watts_idle, h.watts_busy, static_cast<int>(h.gpu),
                     h.pcie_bw, fabric_to_json(h.fabric_intra.get()), fabric_to_json(h.fabric_inter.get())});
  const NetworkSummary& n = p.network;
  return {{"path", p.path},
          {"hosts", hosts},
          {"network", {n.intra_bw, n.intra_latency, n.inter_bw, n.inter_latency, n.intra_shared}}};
}

PlatformSummary summary_from_json(const nlohmann::json& j) {
  PlatformSummary p;
  p.path = j["path"].get<std::string>();
  for (const auto& h : j["hosts"]) {
    HostSpec s;
    s.name = h[0].get<std::string>();
    s.slots = h[1].get<int>();
    s.flops_fp32 = h[2].get<double>();
    s.flops_bf16 = h[3].get<double>();
    s.flops_fp16 = h[4].get<double>();
    s.flops_fp64 = h[5].get<double>();
    s.mem_bw = h[6].get<double>();
    s.gpu_memory = h[7].get<double>();
    s.price_per_hour = h[8].get<double>();
    s.watts_idle = h[9].get<double>();
    s.watts_busy = h[10].get<double>();
    s.gpu = static_cast<GpuType>(h[11].get<int>());  // the estimate prices GPU hosts as the replay does
    s.pcie_bw = h[12].get<double>();
    s.fabric_intra = fabric_from_json(h[13]);  // collectives priced as the replay prices them
    s.fabric_inter = fabric_from_json(h[14]);
    p.hosts.push_back(s);
  }
  const auto& n = j["network"];
  p.network = {n[0].get<double>(), n[1].get<double>(), n[2].get<double>(), n[3].get<double>(),
               n[4].get<bool>()};
  return p;
}

// The divisors of n in increasing order, in O(sqrt(n)) (a global batch of 10^15 samples: 3·10^7
// steps, not 10^15).
std::vector<std::int64_t> divisors_of(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d <= n / d; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (const std::int64_t d : divisors_of(n)) out.push_back(static_cast<int>(d));
  return out;
}

// An objective's value from a time, money and energy per iteration and tokens per second:
// lower is better (tokens per dollar negated); +inf where the platform gives no price or power.
double objective_of(Objective objective, double time_s, double cost_usd, double energy_j,
                    double tokens_per_s) {
  switch (objective) {
    case Objective::time:
      return time_s;
    case Objective::money:
      return cost_usd > 0 ? cost_usd : INFINITY;
    case Objective::energy:
      return energy_j > 0 ? energy_j : INFINITY;
    case Objective::tokens_per_dollar:
      return cost_usd > 0 ? -tokens_per_s * time_s / cost_usd : INFINITY;
  }
  return INFINITY;
}

// Fitting first, then the objective: by the estimates alone, or by the replay where there is one.
auto better_estimate(Objective objective) {
  return [objective](const ExploreRow& a, const ExploreRow& b) {
    if (a.estimate.fits != b.estimate.fits) return a.estimate.fits;
    const Estimate &x = a.estimate, &y = b.estimate;
    return objective_of(objective, x.iteration_s, x.cost_usd, x.energy_j, x.tokens_per_s) <
           objective_of(objective, y.iteration_s, y.cost_usd, y.energy_j, y.tokens_per_s);
  };
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Replays one configuration in this (child) process and returns its report as JSON, or
// {"not_replayed": <the lowering's one-line refusal>} for an option lower() does not build yet.
std::string replay_job(const Model& model, const StrategyConfig& config, const ExploreOptions& options,
                       CollectiveMode mode) {
  ReplayOptions replay_options = options.replay;
  replay_options.keep_trace = false;
  replay_options.collectives = mode;
  try {
    return report_to_json(replay_strategy(model, config, options.platform, replay_options).report).dump();
  } catch (const LoweringRefused& e) {
    return nlohmann::json{{"not_replayed", e.what()}}.dump();
  }
}

// The contents of the files the best configuration's replay gives, framed as "<bytes>\n<content>"
// per file: the trace, the Perfetto file and the SVG (empty when not asked for).
std::string frame(const std::string& content) { return std::to_string(content.size()) + "\n" + content; }

std::vector<std::string> unframe(const std::string& framed, std::size_t count) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (out.size() < count) {
    const std::size_t newline = framed.find('\n', at);
    STRATA_ASSERT(newline != std::string::npos, "explore: truncated output of the best replay");
    const std::size_t size = std::stoull(framed.substr(at, newline - at));
    STRATA_ASSERT(newline + 1 + size <= framed.size(), "explore: truncated output of the best replay");
    out.push_back(framed.substr(newline + 1, size));
    at = newline + 1 + size;
  }
  return out;
}

// Replays the best configuration again, keeping its trace, and returns the requested files'
// contents (frame()): the parent writes them, so that they are committed with its other outputs
// (all or none) and a replay that dies leaves no file behind.
std::string best_files_job(const Model& model, const StrategyConfig& config, const ExploreOptions& options) {
  ReplayOptions replay_options = options.replay;
  replay_options.keep_trace = true;
  Plan plan = lower(model, config);
  Experiment experiment;
  if (options.experiment) {
    experiment = experiment_for(*options.experiment, config);
    plan.info.experiment_hash = experiment_hash(experiment);
  }
  ReplayResult result = replay(plan, options.platform, replay_options);
  if (options.experiment) {
    result.trace.experiment = canonical_json(experiment);
    result.trace.experiment_hash = plan.info.experiment_hash;
  }
  std::string out;
  out += frame(options.best_trace_path.empty() ? "" : trace_json_text(result.trace, options.best_trace_path));
  out += frame(
      options.best_perfetto_path.empty() ? "" : chrome_trace_text(result.trace, options.best_perfetto_path));
  std::string svg;
  if (!options.best_svg_path.empty()) {
    TimelineOptions timeline;
    timeline.title = "best: " + config.to_string() + " " + model.name + " on " + options.platform;
    svg = trace_to_svg(result.trace, timeline);
  }
  return out + frame(svg);
}

void write_best_files(const std::string& framed, const ExploreOptions& options) {
  const std::vector<std::string> files = unframe(framed, 3);
  const std::string* paths[] = {&options.best_trace_path, &options.best_perfetto_path,
                                &options.best_svg_path};
  for (std::size_t i = 0; i < 3; ++i)
    if (!paths[i]->empty()) write_file_atomically(*paths[i], files[i]);
}

// Tasks the lowering will emit, roughly (forward, backward, weight gradient and a share of the
// collectives per layer, microbatch and worker): decides whether a replay is reduced.
double estimated_tasks(const Model& model, const StrategyConfig& c) {
  const double layers_per_stage = static_cast<double>(model.layers.size()) / c.pp;
  return static_cast<double>(c.workers()) * static_cast<double>(std::max<std::int64_t>(1, c.microbatches)) *
         layers_per_stage * 3.5 * c.iterations;
}

}  // namespace

ClusterSpec cluster_spec(const PlatformSummary& platform) {
  ClusterSpec c;
  c.host = platform.hosts.front();
  c.hosts = static_cast<int>(platform.hosts.size());
  c.intra_bw = platform.network.intra_bw;
  c.intra_latency = platform.network.intra_latency;
  // A host's NIC is shared by its slots when they all send across hosts at once, as the
  // DP and PP groups of a 3D configuration do.
  c.inter_bw = platform.network.inter_bw / std::max(1, c.host.slots);
  c.inter_latency = platform.network.inter_latency;
  return c;
}

namespace {

// How a --set value of a searched option goes into a configuration, and where a value other than
// the dimension's first means something (the others would only repeat a configuration).
struct SearchOption {
  const char* key;
  void (*set)(StrategyConfig&, const std::string&);
  bool (*meaningful)(const StrategyConfig&, const PlatformSummary&);
};

int option_int(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  const int v = std::stoi(value, &used);
  STRATA_ASSERT(used == value.size(), "explore: search space value " + key + "=" + value);
  return v;
}

// One line per searchable option, in the order they are expanded (zero before offload: offload's
// condition reads the stage).
const std::vector<SearchOption>& search_options() {
  static const std::vector<SearchOption> options = {
      {"recompute",
       [](StrategyConfig& c, const std::string& v) {
         const auto r = parse_recompute(v);
         STRATA_ASSERT(r.has_value(), "explore: search space value recompute=" + v);
         c.recompute = *r;
       },
       [](const StrategyConfig&, const PlatformSummary&) { return true; }},
      {"sequence_parallel",
       [](StrategyConfig& c, const std::string& v) { c.sequence_parallel = option_int("sp", v) != 0; },
       [](const StrategyConfig& c, const PlatformSummary&) { return c.tp > 1; }},
      {"zero", [](StrategyConfig& c, const std::string& v) { c.zero = option_int("zero", v); },
       [](const StrategyConfig& c, const PlatformSummary&) { return c.dp > 1; }},
      {"offload", [](StrategyConfig& c, const std::string& v) { c.offload = option_int("offload", v) != 0; },
       [](const StrategyConfig& c, const PlatformSummary& p) {
         return c.zero >= 1 && p.hosts.front().pcie_bw > 0;
       }},
      {"interleave",
       [](StrategyConfig& c, const std::string& v) { c.interleave = option_int("interleave", v); },
       [](const StrategyConfig& c, const PlatformSummary&) {
         return c.pp > 1 && c.schedule == PipelineSchedule::one_f_one_b;
       }},
  };
  return options;
}

const SearchOption& search_option(const std::string& key) {
  for (const SearchOption& o : search_options())
    if (key == o.key) return o;
  throw InputError("explore: '" + key +
                   "' is not a searchable option (searchable: recompute, sequence_parallel, "
                   "zero, offload, interleave)");
}

// Appends every valid configuration of `c` over the dimensions from `d` on.
void expand_options(const std::vector<SearchDimension>& space, std::size_t d, const StrategyConfig& c,
                    const Model& model, const PlatformSummary& platform, std::vector<StrategyConfig>& out) {
  if (d == space.size()) {
    try {
      check_strategy(model, c);
    } catch (const InputError&) {
      return;
    }
    out.push_back(c);
    return;
  }
  const SearchOption& option = search_option(space[d].key);
  for (std::size_t i = 0; i < space[d].values.size(); ++i) {
    StrategyConfig next = c;
    if (i > 0 && !option.meaningful(next, platform)) break;
    option.set(next, space[d].values[i]);
    expand_options(space, d + 1, next, model, platform, out);
  }
}

std::int64_t explored_global_batch(const Model& model, const ExploreOptions& options) {
  if (options.base.global_batch != 0) return options.base.global_batch;
  // One global batch for every configuration, so that iteration times compare: the default is
  // the one of the fully data-parallel configuration (e.g. 8 sequences per GPU for GPT).
  StrategyConfig all_dp = options.base;
  all_dp.dp = options.workers;
  all_dp.tp = all_dp.pp = 1;
  all_dp.microbatches = 0;
  return default_global_batch(model, all_dp);
}

}  // namespace

// The values the explorer tries by default: the options both of its fidelity levels take, the
// closed-form estimate (analytical.cpp) and the replay of the lowered Plan (lowering.cpp), so
// that its top rows are replayed. Interleaving: 2 and 4 model chunks per device (Narayanan et
// al. 2021 ran 2 to 6), where the blocks and microbatches divide as check_strategy requires.
std::vector<SearchDimension> estimated_search_space() {
  return {
      {"recompute", {"none", "selective", "full"}},
      {"sequence_parallel", {"0", "1"}},
      {"zero", {"0", "1", "2", "3"}},
      {"offload", {"0", "1"}},
      {"interleave", {"1", "2", "4"}},
  };
}

std::vector<std::string> searchable_keys() {
  std::vector<std::string> keys;
  for (const SearchOption& o : search_options()) keys.emplace_back(o.key);
  return keys;
}

std::vector<StrategyConfig> enumerate_configs(const Model& model, const ExploreOptions& options,
                                              const PlatformSummary& platform) {
  std::vector<StrategyConfig> out;
  const int slots_per_host = platform.hosts.front().slots;
  const std::int64_t global_batch = explored_global_batch(model, options);
  for (int tp : divisors(options.workers)) {
    if (tp > 1 && model.heads == 0) continue;
    if (model.heads > 0 && model.heads % tp != 0) continue;
    if (tp > slots_per_host && !options.allow_cross_host_tp) continue;
    for (int pp : divisors(options.workers / tp)) {
      if (pp > model.num_blocks_or_layers()) continue;
      const int dp = options.workers / (tp * pp);
      if (global_batch % dp != 0) continue;
      const std::int64_t per_replica = global_batch / dp;
      StrategyConfig c = options.base;
      c.dp = dp;
      c.tp = tp;
      c.pp = pp;
      c.global_batch = global_batch;
      // Every microbatch size down to one sample; fewer than pp microbatches only lengthen the
      // bubble at the same activation memory (1F1B and GPipe alike hold the whole replica batch).
      for (const std::int64_t m : divisors_of(per_replica)) {
        if (m < pp) continue;
        c.microbatches = m;
        std::vector<PipelineSchedule> schedules = {PipelineSchedule::one_f_one_b};
        if (pp > 1) schedules.push_back(PipelineSchedule::gpipe);
        for (PipelineSchedule s : schedules) {
          c.schedule = s;
          expand_options(options.space, 0, c, model, platform, out);
        }
      }
    }
  }
  return out;
}

Experiment experiment_for(Experiment base, const StrategyConfig& config) {
  base.dp = config.dp;
  base.tp = config.tp;
  base.pp = config.pp;
  base.schedule = config.schedule;
  base.microbatches = config.microbatches;
  base.global_batch = config.global_batch;
  base.replicas = config.lowered_replicas;
  base.recompute = config.recompute;
  base.recompute_method = config.recompute_method;
  base.recompute_blocks = config.recompute_blocks;
  base.sequence_parallel = config.sequence_parallel;
  base.zero = config.zero;
  base.offload = config.offload;
  base.interleave = config.interleave;
  base.ddp = config.ddp;
  base.flash_attention = config.flash_attention;
  return base;
}

bool ExploreRow::fits() const { return simulated ? simulated->fits : estimate.fits; }
double ExploreRow::peak_memory() const {
  return simulated ? simulated->peak_memory_bytes : estimate.peak_memory_bytes;
}
double ExploreRow::iteration_s() const {
  return simulated ? simulated->iteration_time_s : estimate.iteration_s;
}
double ExploreRow::cost_usd() const { return simulated ? simulated->cost_usd : estimate.cost_usd; }
double ExploreRow::energy_j() const { return simulated ? simulated->energy_j : estimate.energy_j; }
double ExploreRow::tokens_per_s() const {
  return simulated ? simulated->tokens_per_s : estimate.tokens_per_s;
}

double ExploreRow::objective_value(Objective objective) const {
  return objective_of(objective, iteration_s(), cost_usd(), energy_j(), tokens_per_s());
}

Objective parse_objective(const std::string& text) {
  if (text == "time") return Objective::time;
  if (text == "money") return Objective::money;
  if (text == "energy") return Objective::energy;
  if (text == "tokens-per-dollar") return Objective::tokens_per_dollar;
  throw InputError("--objective: unknown '" + text + "' (known: time, money, energy, tokens-per-dollar)");
}

std::string_view to_string(Objective objective) {
  switch (objective) {
    case Objective::time:
      return "time";
    case Objective::money:
      return "money";
    case Objective::energy:
      return "energy";
    case Objective::tokens_per_dollar:
      return "tokens-per-dollar";
  }
  return "time";
}

void price_estimate(Estimate& e, int workers, const PlatformSummary& platform) {
  price_estimate(e, workers, platform.hosts);
}

double kendall_tau_b(const std::vector<double>& a, const std::vector<double>& b) {
  STRATA_ASSERT(a.size() == b.size(), "kendall_tau_b: samples of different lengths");
  if (a.size() < 2) return NAN;
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  const double denominator =
      std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denominator > 0 ? (concordant - discordant) / denominator : NAN;
}

const ExploreRow* best_row(const ExploreResult& result) {
  if (result.rows.empty() || !result.rows.front().fits()) return nullptr;
  return &result.rows.front();
}

namespace {

auto better_replay(Objective objective) {
  return [objective](const ExploreRow& a, const ExploreRow& b) {
    if (a.fits() != b.fits()) return a.fits();
    return a.objective_value(objective) < b.objective_value(objective);
  };
}

// Replays the rows `which` with collectives `mode` (two at a time, each in its own process), or
// takes a stored replay (`lookup`: the fidelity a stored row must have); a row the lowering
// refuses, or too large to replay, keeps its estimate and says why. Returns the reports by
// position in `which`.
std::vector<std::optional<Report>> replay_rows(ExploreResult& result, const std::vector<std::size_t>& which,
                                               CollectiveMode mode, CollectiveMode lookup, const Model& model,
                                               const ExploreOptions& options) {
  const auto t1 = Clock::now();
  std::vector<std::optional<Report>> out(which.size());
  std::vector<std::pair<std::size_t, StrategyConfig>> wanted;  // positions in `which`, as lowered
  for (std::size_t w = 0; w < which.size(); ++w) {
    ExploreRow& row = result.rows[which[w]];
    StrategyConfig config = row.config;
    double tasks = estimated_tasks(model, config);
    if (config.dp > 1 && tasks > static_cast<double>(options.reduce_above_tasks)) {
      config.lowered_replicas = 1;
      row.reduced = true;
      tasks /= config.dp;
    }
    if (tasks > static_cast<double>(options.max_replay_tasks)) {
      row.reduced = false;
      row.not_replayed = fmt("about %.1f million tasks", tasks / 1e6) +
                         (config.lowered_replicas == 1 ? " in one data-parallel replica" : "") +
                         fmt(", above the explorer's replay bound of %.1f million",
                             static_cast<double>(options.max_replay_tasks) / 1e6);
      continue;
    }
    wanted.emplace_back(w, config);
  }
  // A resumed sweep takes what the store holds; under MPI, rank 0's store answers for every rank.
  std::vector<std::optional<Report>> stored(wanted.size());
  if (options.stored_replay)
    for (std::size_t i = 0; i < wanted.size(); ++i)
      stored[i] = options.stored_replay(wanted[i].second, lookup);
  const ExploreShards& shards = options.shards;
  if (shards.size > 1) {
    nlohmann::json found = nlohmann::json::array();
    for (const std::optional<Report>& r : stored) found.push_back(r ? report_to_json(*r) : nlohmann::json());
    const nlohmann::json all = nlohmann::json::parse(shards.broadcast(found.dump()));
    for (std::size_t i = 0; i < wanted.size(); ++i)
      stored[i] = all.at(i).is_null() ? std::nullopt : std::optional<Report>(report_from_json(all.at(i)));
  }
  std::vector<std::function<std::string()>> jobs;
  std::vector<std::size_t> replayed;  // positions in `which`
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (stored[i]) {
      out[wanted[i].first] = std::move(stored[i]);
      continue;
    }
    replayed.push_back(wanted[i].first);
    jobs.push_back([&model, config = wanted[i].second, &options, mode] {
      return replay_job(model, config, options, mode);
    });
  }
  const auto record = [&](std::size_t n, const std::string& report) {
    const nlohmann::json j = nlohmann::json::parse(report);
    if (!options.replayed || j.contains("not_replayed")) return;
    const ExploreRow& row = result.rows[which[replayed[n]]];
    StrategyConfig config = row.config;
    if (row.reduced) config.lowered_replicas = 1;
    options.replayed(config, report_from_json(j));
  };
  std::vector<std::string> reports;
  if (shards.size <= 1) {
    reports = run_in_children(jobs, options.parallel, [&](std::size_t n, const std::string& report) {
      if (options.progress)
        std::cerr << "explore: replayed " << n + 1 << " of " << jobs.size() << " ("
                  << fmt("%.1f s", seconds_since(t1)) << ")\n";
      record(n, report);
    });
  } else {
    // Job n is rank n % size's; every rank's results come back to every rank, and rank 0
    // records them all (in job order) once they are in.
    std::vector<std::function<std::string()>> mine;
    for (std::size_t n = static_cast<std::size_t>(shards.rank); n < jobs.size();
         n += static_cast<std::size_t>(shards.size))
      mine.push_back(jobs[n]);
    const std::vector<std::string> done =
        run_in_children(mine, options.parallel, [&](std::size_t n, const std::string&) {
          if (options.progress)
            std::cerr << "explore: rank " << shards.rank << " replayed " << n + 1 << " of " << mine.size()
                      << " (" << fmt("%.1f s", seconds_since(t1)) << ")\n";
        });
    const std::vector<std::string> by_rank = shards.all_gather(nlohmann::json(done).dump());
    STRATA_ASSERT(by_rank.size() == static_cast<std::size_t>(shards.size),
                  "explore: a rank's results missing");
    std::vector<std::vector<std::string>> parts;
    for (const std::string& text : by_rank)
      parts.push_back(nlohmann::json::parse(text).get<std::vector<std::string>>());
    reports.resize(jobs.size());
    for (std::size_t n = 0; n < jobs.size(); ++n) {
      const std::size_t r = n % static_cast<std::size_t>(shards.size),
                        at = n / static_cast<std::size_t>(shards.size);
      STRATA_ASSERT(at < parts[r].size(), "explore: rank " + std::to_string(r) + " returned too few results");
      reports[n] = parts[r][at];
      record(n, reports[n]);
    }
  }
  result.replays += jobs.size();
  for (std::size_t n = 0; n < replayed.size(); ++n) {
    ExploreRow& row = result.rows[which[replayed[n]]];
    const nlohmann::json j = nlohmann::json::parse(reports[n]);
    if (j.contains("not_replayed")) {
      row.not_replayed = j["not_replayed"].get<std::string>();
      row.reduced = false;
    } else {
      out[replayed[n]] = report_from_json(j);
    }
  }
  result.replay_wall_s += seconds_since(t1);
  return out;
}

std::vector<std::size_t> first(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

// Replays the top k rows at the requested collectives and re-ranks them by the replay where
// there is one (fitting first); the rest keep their rank by estimate.
void replay_top(ExploreResult& result, std::size_t k, const Model& model, const ExploreOptions& options) {
  const std::vector<std::optional<Report>> reports =
      replay_rows(result, first(k), options.replay.collectives, options.replay.collectives, model, options);
  for (std::size_t i = 0; i < k; ++i)
    if (reports[i]) result.rows[i].simulated = reports[i];
  std::stable_sort(result.rows.begin(), result.rows.begin() + static_cast<std::ptrdiff_t>(k),
                   better_replay(options.objective));
}

std::size_t ceil_div(std::size_t n, double d) {
  return static_cast<std::size_t>(std::ceil(static_cast<double>(n) / d));
}

// Successive halving across fidelities: the closed form for every row (done), aggregated replays
// for the best ceil(N / eta) by estimate, step replays (below the replay's step flow limit: a row
// whose Plan has more flows stays aggregated) for the best ceil(N / eta^2) by the aggregated
// replay; each rung re-ranks what it evaluated. Then each rung's Kendall tau against the next
// and the regret of stopping at it.
void explore_fidelities(ExploreResult& result, const Model& model, const ExploreOptions& options) {
  const std::string top = *options.fidelity;
  const std::size_t n = result.rows.size();
  const double eta = options.eta;
  FidelityRung analytical{"analytical", n, NAN, 0, ""};
  result.rungs = {analytical};
  if (top == "analytical" || n == 0) {
    result.rungs[0].choice = describe_config(result.rows[0].config);
    return;
  }
  // The rows' estimates by position before any re-ranking: the rungs' choices are read from them.
  const std::size_t n1 = std::min(n, ceil_div(n, eta));
  std::vector<std::optional<Report>> aggregated =
      replay_rows(result, first(n1), CollectiveMode::aggregated, CollectiveMode::aggregated, model, options);
  for (std::size_t i = 0; i < n1; ++i)
    if (aggregated[i]) result.rows[i].simulated = aggregated[i];
  std::vector<double> est, agg;
  for (std::size_t i = 0; i < n1; ++i)
    if (result.rows[i].simulated) {
      est.push_back(result.rows[i].estimate.iteration_s);
      agg.push_back(result.rows[i].simulated->iteration_time_s);
    }
  result.rungs[0].kendall_tau = kendall_tau_b(est, agg);
  result.rungs[0].choice = describe_config(result.rows[0].config);  // ranked by estimate
  std::stable_sort(result.rows.begin(), result.rows.begin() + static_cast<std::ptrdiff_t>(n1),
                   better_replay(options.objective));
  result.rungs.push_back(FidelityRung{"aggregated", n1, NAN, 0, describe_config(result.rows[0].config)});
  if (top == "step") {
    const std::size_t n2 = std::min(n1, ceil_div(n, eta * eta));
    const std::vector<std::optional<Report>> step =
        replay_rows(result, first(n2), CollectiveMode::automatic, CollectiveMode::step, model, options);
    std::vector<double> a, b;
    std::size_t stepped = 0;
    for (std::size_t i = 0; i < n2; ++i) {
      ExploreRow& row = result.rows[i];
      if (!step[i] || step[i]->collectives != "step" || !row.simulated) continue;
      a.push_back(row.simulated->iteration_time_s);
      b.push_back(step[i]->iteration_time_s);
      row.aggregated = row.simulated;
      row.simulated = step[i];
      ++stepped;
    }
    result.rungs[1].kendall_tau = kendall_tau_b(a, b);
    std::stable_sort(result.rows.begin(), result.rows.begin() + static_cast<std::ptrdiff_t>(n2),
                     better_replay(options.objective));
    result.rungs.push_back(FidelityRung{"step", stepped, NAN, 0, describe_config(result.rows[0].config)});
  }
  // Regret: every rung's choice timed at the last rung's fidelity (found among the rows, which
  // hold each configuration once; a choice the last rung did not reach is replayed at it).
  const std::string last = result.rungs.back().fidelity;
  auto final_time = [&](const std::string& choice) -> std::optional<double> {
    for (std::size_t i = 0; i < result.rows.size(); ++i) {
      const ExploreRow& row = result.rows[i];
      if (describe_config(row.config) != choice) continue;
      if (row.simulated && row.simulated->collectives == last) return row.simulated->iteration_time_s;
      const CollectiveMode mode = last == "step" ? CollectiveMode::step : CollectiveMode::aggregated;
      const std::vector<std::optional<Report>> again = replay_rows(result, {i}, mode, mode, model, options);
      if (again[0]) return again[0]->iteration_time_s;
      return std::nullopt;
    }
    return std::nullopt;
  };
  const std::optional<double> best = final_time(result.rungs.back().choice);
  for (FidelityRung& rung : result.rungs) {
    const std::optional<double> t = final_time(rung.choice);
    rung.regret_pct = best && t && *best > 0 ? 100 * (*t - *best) / *best : NAN;
  }
}

}  // namespace

PlatformSummary load_platform_summary_apart(const std::string& platform_path, const NetworkOptions& network,
                                            double function_memory_mb) {
  return summary_from_json(nlohmann::json::parse(run_in_child([&] {
    return summary_to_json(load_platform_summary(platform_path, network, function_memory_mb)).dump();
  })));
}

Report replay_report_apart(const Plan& plan, const std::string& platform_path, const ReplayOptions& options) {
  ReplayOptions apart = options;
  apart.keep_trace = false;
  return report_from_json(nlohmann::json::parse(
      run_in_child([&] { return report_to_json(replay(plan, platform_path, apart).report).dump(); })));
}

SlotPlatform load_slot_platform(const std::string& platform_path, const NetworkOptions& network) {
  const PlatformSummary summary = load_platform_summary_apart(platform_path, network);
  const PlatformRoutes routes = platform_routes(platform_path);
  SlotPlatform out;
  out.path = platform_path;
  out.hosts = summary.hosts;
  // platform_routes and the summary list the hosts in the same (natural) order.
  out.latency = routes.latency;
  out.bandwidth = routes.bandwidth;
  out.local_latency = summary.network.intra_latency;
  out.local_bandwidth = summary.network.intra_bw > 0 ? summary.network.intra_bw : 1;
  return out;
}

ExploreResult explore(const ExploreOptions& requested) {
  ExploreOptions options = requested;
  const Model model = make_model(options.model, options.model_overrides);
  for (const SearchDimension& d : options.space) search_option(d.key);  // a bad key: one line
  // Checked here, in the parent, so that every replay's child (forked after) skips the check.
  check_platform(options.platform, options.replay.network);
  const PlatformSummary platform = load_platform_summary_apart(options.platform, options.replay.network);
  if (options.workers == 0) options.workers = platform.total_slots();
  check_worker_slots(options.platform, options.workers, platform.total_slots());
  ExploreResult result;
  result.model = model.name;
  result.platform = options.platform;
  result.workers = options.workers;
  result.gpu_memory = platform.hosts.front().gpu_memory;
  const auto t0 = Clock::now();
  const ClusterSpec cluster = cluster_spec(platform);
  const CostModel cost(options.replay.calibration);
  check_calibration_for_hosts(options.replay.calibration, platform.hosts);
  // One Estimator for the whole space: it keeps the layer costs, cuts and memory per model
  // across configurations (the per-configuration work is then O(stages + buckets)).
  Estimator estimator(model, cluster, cost);
  for (const StrategyConfig& c : enumerate_configs(model, options, platform)) {
    result.rows.push_back(ExploreRow{c, estimator(c), std::nullopt, std::nullopt, false, ""});
    price_estimate(result.rows.back().estimate, c.workers(), platform);
  }
  result.candidates = result.rows.size();
  std::stable_sort(result.rows.begin(), result.rows.end(), better_estimate(options.objective));
  result.analytical_wall_s = seconds_since(t0);
  if (options.estimated) options.estimated(result.rows);
  const std::size_t k =
      std::min<std::size_t>(result.rows.size(), static_cast<std::size_t>(std::max(0, options.top_k)));
  if (options.progress)
    std::cerr << "explore: " << result.candidates << " configurations estimated in "
              << fmt("%.3f s", result.analytical_wall_s) << "; replaying the top " << k << "\n";
  if (options.fidelity)
    explore_fidelities(result, model, options);
  else
    replay_top(result, k, model, options);

  const bool outputs = !options.best_trace_path.empty() || !options.best_perfetto_path.empty() ||
                       !options.best_svg_path.empty();
  const ExploreRow* best = best_row(result);
  if (outputs && best != nullptr && best->simulated) {
    StrategyConfig config = best->config;
    if (best->reduced) config.lowered_replicas = 1;
    write_best_files(run_in_child([&] { return best_files_job(model, config, options); }), options);
  }
  return result;
}

}  // namespace sim
}  // namespace strata
