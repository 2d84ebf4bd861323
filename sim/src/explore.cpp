#include "strata/sim/explore.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

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

nlohmann::json summary_to_json(const PlatformSummary& p) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const HostSpec& h : p.hosts)
    hosts.push_back({h.name, h.slots, h.flops_fp32, h.flops_bf16, h.flops_fp16, h.flops_fp64, h.mem_bw,
                     h.gpu_memory, h.price_per_hour, h.watts_idle, h.watts_busy, static_cast<int>(h.gpu)});
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
    p.hosts.push_back(s);
  }
  const auto& n = j["network"];
  p.network = {n[0].get<double>(), n[1].get<double>(), n[2].get<double>(), n[3].get<double>(),
               n[4].get<bool>()};
  return p;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

bool better_estimate(const ExploreRow& a, const ExploreRow& b) {
  if (a.estimate.fits != b.estimate.fits) return a.estimate.fits;
  return a.estimate.iteration_s < b.estimate.iteration_s;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Replays one configuration in this (child) process and returns its report as JSON.
std::string replay_job(const Model& model, const StrategyConfig& config, const ExploreOptions& options) {
  ReplayOptions replay_options = options.replay;
  replay_options.keep_trace = false;
  return report_to_json(replay(lower(model, config), options.platform, replay_options).report).dump();
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

std::vector<StrategyConfig> enumerate_configs(const Model& model, const ExploreOptions& options,
                                              const PlatformSummary& platform) {
  std::vector<StrategyConfig> out;
  const int slots_per_host = platform.hosts.front().slots;
  // One global batch for every configuration, so that iteration times compare: the default is
  // the one of the fully data-parallel configuration (e.g. 8 sequences per GPU for GPT).
  std::int64_t global_batch = options.base.global_batch;
  if (global_batch == 0) {
    StrategyConfig all_dp = options.base;
    all_dp.dp = options.workers;
    all_dp.tp = all_dp.pp = 1;
    all_dp.microbatches = 0;
    global_batch = default_global_batch(model, all_dp);
  }
  for (int tp : divisors(options.workers)) {
    if (tp > 1 && model.heads == 0) continue;
    if (model.heads > 0 && model.heads % tp != 0) continue;
    if (tp > slots_per_host && !options.allow_cross_host_tp) continue;
    for (int pp : divisors(options.workers / tp)) {
      if (pp > model.num_blocks_or_layers()) continue;
      const int dp = options.workers / (tp * pp);
      StrategyConfig c = options.base;
      c.dp = dp;
      c.tp = tp;
      c.pp = pp;
      c.global_batch = global_batch;
      if (c.global_batch % dp != 0) continue;
      const std::int64_t per_replica = c.global_batch / dp;
      for (int mult : {1, 2, 4, 8}) {
        c.microbatches = static_cast<std::int64_t>(pp) * mult;
        if (per_replica % c.microbatches != 0) continue;
        std::vector<PipelineSchedule> schedules = {PipelineSchedule::one_f_one_b};
        if (pp > 1) schedules.push_back(PipelineSchedule::gpipe);
        for (PipelineSchedule s : schedules) {
          c.schedule = s;
          try {
            check_strategy(model, c);
          } catch (const InputError&) {
            continue;
          }
          out.push_back(c);
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
  return base;
}

ExploreResult explore(const ExploreOptions& requested) {
  ExploreOptions options = requested;
  const Model model = make_model(options.model, options.model_overrides);
  // Checked here, in the parent, so that every replay's child (forked after) skips the check.
  check_platform(options.platform, options.replay.network);
  const PlatformSummary platform = summary_from_json(nlohmann::json::parse(run_in_child([&] {
    return summary_to_json(load_platform_summary(options.platform, options.replay.network)).dump();
  })));
  if (options.workers == 0) options.workers = platform.total_slots();
  if (options.workers > platform.total_slots())
    throw InputError(input_error_message(
        options.platform, "",
        std::to_string(options.workers) + " workers need " + std::to_string(options.workers) +
            " worker slots, the platform has " + std::to_string(platform.total_slots())));
  ExploreResult result;
  result.model = model.name;
  result.platform = options.platform;
  result.workers = options.workers;
  const auto t0 = Clock::now();
  const ClusterSpec cluster = cluster_spec(platform);
  const CostModel cost(options.replay.calibration);
  for (const StrategyConfig& c : enumerate_configs(model, options, platform))
    result.rows.push_back(ExploreRow{c, estimate(model, c, cluster, cost), std::nullopt, false});
  result.candidates = result.rows.size();
  std::stable_sort(result.rows.begin(), result.rows.end(), better_estimate);
  result.analytical_wall_s = seconds_since(t0);
  if (options.progress)
    std::cerr << "explore: " << result.candidates << " configurations estimated in "
              << fmt("%.3f s", result.analytical_wall_s) << "; replaying the top "
              << std::min<std::size_t>(result.rows.size(), static_cast<std::size_t>(options.top_k)) << "\n";

  const auto t1 = Clock::now();
  const std::size_t k =
      std::min<std::size_t>(result.rows.size(), static_cast<std::size_t>(std::max(0, options.top_k)));
  std::vector<std::function<std::string()>> jobs;
  for (std::size_t i = 0; i < k; ++i) {
    StrategyConfig config = result.rows[i].config;
    if (config.dp > 1 && estimated_tasks(model, config) > static_cast<double>(options.reduce_above_tasks)) {
      config.lowered_replicas = 1;
      result.rows[i].reduced = true;
    }
    jobs.push_back([&model, config, &options] { return replay_job(model, config, options); });
  }
  std::vector<std::string> reports = run_in_children(jobs, options.parallel, [&](std::size_t done) {
    if (options.progress)
      std::cerr << "explore: replayed " << done << " of " << k << " (" << fmt("%.1f s", seconds_since(t1))
                << ")\n";
  });
  for (std::size_t i = 0; i < k; ++i)
    result.rows[i].simulated = report_from_json(nlohmann::json::parse(reports[i]));
  result.replay_wall_s = seconds_since(t1);

  // Re-rank the replayed rows by simulated time (fitting first); keep the rest by estimate.
  std::vector<std::size_t> order(k);
  for (std::size_t i = 0; i < k; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Report& ra = *result.rows[a].simulated;
    const Report& rb = *result.rows[b].simulated;
    if (ra.fits != rb.fits) return ra.fits;
    return ra.iteration_time_s < rb.iteration_time_s;
  });
  std::vector<ExploreRow> ranked;
  for (std::size_t i : order) ranked.push_back(result.rows[i]);
  for (std::size_t i = k; i < result.rows.size(); ++i) ranked.push_back(result.rows[i]);
  result.rows = std::move(ranked);
  const bool outputs = !options.best_trace_path.empty() || !options.best_perfetto_path.empty() ||
                       !options.best_svg_path.empty();
  if (k > 0 && outputs) {
    StrategyConfig best = result.rows.front().config;
    if (result.rows.front().reduced) best.lowered_replicas = 1;
    write_best_files(run_in_child([&] { return best_files_job(model, best, options); }), options);
  }
  return result;
}

std::string format_explore_table(const ExploreResult& result, std::size_t max_rows) {
  std::string s;
  bool any_reduced = false;
  char line[512];
  std::snprintf(line, sizeof line, "%4s %4s %3s %3s %-5s %5s %12s %12s %7s %12s %7s %8s %10s %5s\n", "rank",
                "dp", "tp", "pp", "sched", "mb", "analytic(s)", "simulated(s)", "err(%)", "tokens/s",
                "MFU(%)", "bubble(%)", "mem(GiB)", "fits");
  s += line;
  for (std::size_t i = 0; i < result.rows.size() && i < max_rows; ++i) {
    const ExploreRow& r = result.rows[i];
    const bool sim = r.simulated.has_value();
    const double t = sim ? r.simulated->iteration_time_s : r.estimate.iteration_s;
    const double tokens = sim ? r.simulated->tokens_per_s : r.estimate.tokens_per_s;
    const double mfu = sim ? r.simulated->mfu : r.estimate.mfu;
    const double bubble = sim ? r.simulated->bubble_fraction : r.estimate.bubble_fraction;
    const double mem = sim ? r.simulated->peak_memory_bytes : r.estimate.peak_memory_bytes;
    const bool fits = sim ? r.simulated->fits : r.estimate.fits;
    std::snprintf(line, sizeof line,
                  "%4zu %4d %3d %3d %-5s %5lld %12.4f %12s %7s %12.0f %7.1f %8.1f %10.2f %5s\n", i + 1,
                  r.config.dp, r.config.tp, r.config.pp,
                  r.config.pp > 1 ? std::string(to_string(r.config.schedule)).c_str() : "-",
                  static_cast<long long>(r.config.microbatches), r.estimate.iteration_s,
                  sim ? (fmt("%.4f", t) + (r.reduced ? "*" : "")).c_str() : "-",
                  sim ? fmt("%+.1f", 100 * (r.estimate.iteration_s - t) / t).c_str() : "-", tokens, 100 * mfu,
                  100 * bubble, mem / 1073741824.0, fits ? "yes" : "no");
    s += line;
    any_reduced = any_reduced || r.reduced;
  }
  if (any_reduced) s += "* replayed as one data-parallel replica with its full DP allreduce flows\n";
  return s;
}

}  // namespace sim
}  // namespace strata
