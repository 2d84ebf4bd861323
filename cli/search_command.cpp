// strata search: a hyperparameter and system-configuration search played out on a simulated
// cluster (models/search/trial_search.hpp; docs/search.md). Each trial's epoch time comes from
// replaying its Plan on the search's platform (one replay per distinct timing, each in its own
// process); its accuracy per epoch from a curve file or the seeded curve family.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "commands.hpp"
#include "db_flags.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/models/search/curves.hpp"
#include "strata/models/search/space.hpp"
#include "strata/models/search/trial_search.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/platform.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/line_plot_svg.hpp"

namespace strata::cli {
namespace {

// Fashion-MNIST's training set (Xiao et al., 2017): the epoch of the zoo's image models.
constexpr double kFashionMnistTrainImages = 60000;

struct SearchFile {
  std::string path;
  Experiment base;
  std::vector<Domain> space;
  SearchSettings settings;
  std::string platform;
  std::string accuracy = "family";  // family | curves | real
  std::string curves_file;
  CurveFamily family;
  std::uint64_t seed = 0;
  int grid_points = 3;
  double samples_per_epoch = 0;
  double checkpoint_s = 0;
  double restore_s = 0;
  bool cluster_gpus_given = false;
  std::string timing = "replay";  // replay | closed-form
};

struct SearchOptions {
  std::string spec;
  std::string policy;
  std::string timing;
  DbFlags db;
  std::string csv, json, svg;
};

double positive(const JsonNode& n) {
  const double v = n.as_number();
  if (!(v > 0)) n.fail("must be > 0");
  return v;
}

// A curve file named by the search file at `spec`: as given where it exists, else beside the spec.
std::string curves_path(const std::string& named, const std::string& spec) {
  const std::filesystem::path relative(named);
  std::error_code ec;
  if (relative.is_relative() && !std::filesystem::exists(relative, ec))
    return (std::filesystem::path(spec).parent_path() / relative).string();
  return named;
}

// The files a search file names (its platform, its curves), as its reader will resolve them: they
// are inputs of the command too. A file that does not parse names none (read_search_file says why).
std::vector<std::pair<std::string, std::string>> search_file_inputs(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> named;
  nlohmann::json doc;
  try {
    doc = read_json_file(path);
  } catch (const InputError&) {
    return named;
  }
  const nlohmann::json* search = doc.is_object() && doc.contains("search") ? &doc["search"] : nullptr;
  if (search == nullptr || !search->is_object()) return named;
  if (const auto p = search->find("platform"); p != search->end() && p->is_string())
    named.emplace_back("/search/platform", resolve_platform(p->get<std::string>()));
  if (const auto a = search->find("accuracy"); a != search->end() && a->is_object())
    if (const auto file = a->find("file"); file != a->end() && file->is_string())
      named.emplace_back("/search/accuracy/file", curves_path(file->get<std::string>(), path));
  return named;
}

SearchFile read_search_file(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  if (!doc.is_object()) throw InputError(path + ": expected an Experiment spec with a \"search\" section");
  SearchFile f;
  f.path = path;
  nlohmann::json experiment = doc;
  experiment.erase("search");
  f.base = experiment_from_json(experiment, path);
  const JsonNode root(doc, path);
  const JsonNode s = root.at("search");
  s.reject_unknown_fields({"space", "policy", "platform", "cluster_gpus", "max_epochs", "min_epochs", "eta",
                           "trials", "budget_gpu_hours", "target_accuracy", "seed", "grid_points",
                           "samples_per_epoch", "checkpoint_s", "restore_s", "accuracy", "pop", "pbt",
                           "timing"});
  SearchSettings& st = f.settings;
  if (const auto p = s.find("policy")) {
    const std::optional<SearchPolicyKind> kind = parse_search_policy(p->as_string());
    if (!kind)
      p->fail("unknown policy '" + p->as_string() +
              "' (known: asha, asha-stop, grid, hyperband, pbt, pop, random, sha)");
    st.policy = *kind;
  }
  f.platform = s.at("platform").as_string();
  if (const auto g = s.find("cluster_gpus")) {
    st.cluster_gpus = static_cast<int>(g->as_int(1, 1 << 20));
    f.cluster_gpus_given = true;
  }
  st.max_epochs = static_cast<int>(s.at("max_epochs").as_int(1, 100000));
  if (const auto v = s.find("min_epochs")) st.min_epochs = static_cast<int>(v->as_int(1, st.max_epochs));
  if (const auto v = s.find("eta")) st.eta = static_cast<int>(v->as_int(2, 1000));
  if (const auto v = s.find("trials")) st.trials = static_cast<int>(v->as_int(1, 10000000));
  if (const auto v = s.find("budget_gpu_hours")) st.budget_gpu_s = positive(*v) * 3600;
  if (const auto v = s.find("target_accuracy")) {
    st.target_accuracy = v->as_number();
    if (st.target_accuracy < 0 || st.target_accuracy > 1) v->fail("an accuracy is in [0, 1]");
  }
  if (const auto v = s.find("seed")) f.seed = static_cast<std::uint64_t>(v->as_int(0));
  if (const auto v = s.find("grid_points")) f.grid_points = static_cast<int>(v->as_int(1, 1000));
  if (const auto v = s.find("samples_per_epoch")) f.samples_per_epoch = positive(*v);
  if (const auto v = s.find("checkpoint_s")) f.checkpoint_s = v->as_size();
  if (const auto v = s.find("restore_s")) f.restore_s = v->as_size();
  if (const auto p = s.find("pop")) {
    p->reject_unknown_fields({"promising", "poor"});
    if (const auto v = p->find("promising")) st.pop.promising = v->as_number();
    if (const auto v = p->find("poor")) st.pop.poor = v->as_number();
    if (!(0 <= st.pop.poor && st.pop.poor <= st.pop.promising && st.pop.promising <= 1))
      p->fail("need 0 <= poor <= promising <= 1");
  }
  if (const auto v = s.find("timing")) {
    f.timing = v->as_string();
    if (f.timing != "replay" && f.timing != "closed-form")
      v->fail("unknown timing '" + f.timing + "' (known: closed-form, replay)");
  }
  if (const auto p = s.find("pbt")) {
    p->reject_unknown_fields({"quantile", "resample", "interval"});
    if (const auto v = p->find("quantile")) {
      st.pbt.quantile = v->as_number();
      if (!(st.pbt.quantile > 0 && st.pbt.quantile <= 0.5)) v->fail("a quantile in (0, 0.5]");
    }
    if (const auto v = p->find("resample")) {
      st.pbt.resample = v->as_number();
      if (!(st.pbt.resample >= 0 && st.pbt.resample <= 1)) v->fail("a probability in [0, 1]");
    }
    if (const auto v = p->find("interval")) st.pbt_interval = static_cast<int>(v->as_int(1, st.max_epochs));
  }
  if (const auto a = s.find("accuracy")) {
    a->reject_unknown_fields({"source", "file", "c", "a", "alpha", "noise"});
    f.accuracy = a->at("source").as_string();
    if (f.accuracy != "family" && f.accuracy != "curves" && f.accuracy != "real")
      a->at("source").fail("unknown accuracy source '" + f.accuracy + "' (known: curves, family, real)");
    if (f.accuracy == "curves") f.curves_file = curves_path(a->at("file").as_string(), path);
    const auto range = [&](const char* key, double& lo, double& hi) {
      if (const auto r = a->find(key)) {
        if (r->size() != 2) r->fail("two numbers [lo, hi]");
        lo = r->at(std::size_t{0}).as_number();
        hi = r->at(std::size_t{1}).as_number();
        if (lo > hi) r->fail("need lo <= hi");
      }
    };
    range("c", f.family.c_lo, f.family.c_hi);
    range("a", f.family.a_lo, f.family.a_hi);
    range("alpha", f.family.alpha_lo, f.family.alpha_hi);
    if (const auto v = a->find("noise")) f.family.noise = v->as_size();
  }
  if (f.accuracy != "curves") {
    f.space = parse_space(s.at("space").value(), path + ": /search/space");
  } else if (s.find("space")) {
    s.at("space").fail("the space of a curve file is its curves' assignments (leave space out)");
  }
  return f;
}

// The assignment applied to an Experiment: a --set key, or a JSON pointer into the spec
// ("/strategy/dp", "/global_batch", "/optimizer/kind"), the value a number where it reads as one.
Experiment with_assignment(const Experiment& base, const Assignment& a, const std::string& where) {
  Experiment e = base;
  std::vector<std::pair<std::string, std::string>> pointers;
  for (const auto& [key, value] : a) {
    if (!key.empty() && key[0] == '/') {
      pointers.emplace_back(key, value);
    } else {
      apply_set(e, key, value);
    }
  }
  if (pointers.empty()) return e;
  nlohmann::json j = to_json(e);
  for (const auto& [pointer, value] : pointers) {
    nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
    if (v.is_discarded() || (!v.is_number() && !v.is_boolean())) v = value;
    try {
      j[nlohmann::json::json_pointer(pointer)] = v;
    } catch (const nlohmann::json::exception&) {
      throw InputError(where + ": " + pointer + ": not a place in an Experiment spec");
    }
  }
  return experiment_from_json(j, where);
}

// The Experiment with the fields that change only what is learnt (learning rate, momentum,
// Adam's constants, seed) at fixed values: trials that differ only there have one epoch time.
std::string timing_hash(const Experiment& e) {
  nlohmann::json j = canonical_json(e);
  if (j.contains("optimizer"))
    for (const char* k : {"lr", "momentum", "eps", "beta1", "beta2"}) j["optimizer"].erase(k);
  j.erase("seed");
  return std::to_string(fnv1a64(j.dump()));
}

struct Timing {
  int gpus = 1;
  double iteration_s = 0;
  double iterations_per_epoch = 0;
  std::optional<Report> report;      // the replay's, for the store
  std::optional<Estimate> estimate;  // or the closed form's
};

class TrialTimes {
 public:
  TrialTimes(const SearchFile& f, std::string platform, const PlatformSummary& summary)
      : f_(f), platform_(std::move(platform)), cluster_(cluster_spec(summary)) {}

  const Timing& of(const Assignment& a) {
    const Experiment e = with_assignment(f_.base, a, f_.path);
    const std::string key = timing_hash(e);
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (e.global_batch < 1)
      throw InputError(f_.path +
                       ": /global_batch: a search needs the global batch (samples per iteration) to time "
                       "an epoch");
    const Model model = model_of(e);
    const StrategyConfig config = strategy_of(e, model);
    Timing t;
    if (f_.timing == "closed-form") {
      check_strategy(model, config);
      t.gpus = static_cast<int>(config.workers());
      t.estimate = estimate(model, config, cluster_, cost_);
      t.iteration_s = t.estimate->iteration_s;
    } else {
      const Plan plan = lower(e);
      t.gpus = plan.num_workers();
      const ReplayOptions options;
      t.report = replay_report_apart(plan, platform_, options);
      t.iteration_s = t.report->iteration_time_s;
    }
    double samples = f_.samples_per_epoch;
    if (samples <= 0) {
      if (e.model != "mlp" && e.model != "cnn")
        throw InputError(f_.path + ": /search/samples_per_epoch: required for model '" + e.model +
                         "' (only mlp and cnn default to Fashion-MNIST's 60,000 images)");
      samples = kFashionMnistTrainImages;
    }
    t.iterations_per_epoch =
        std::ceil(samples / static_cast<double>(std::max<std::int64_t>(1, config.global_batch)));
    ++replays_;
    return cache_.emplace(key, t).first->second;
  }
  int replays() const { return replays_; }

  static std::string describe(const Assignment& a) {
    std::string out;
    for (const auto& [k, v] : a) out += (out.empty() ? "" : ",") + k + "=" + v;
    return out;
  }

 private:
  const SearchFile& f_;
  std::string platform_;
  ClusterSpec cluster_;
  CostModel cost_;  // the default calibration, as a replay without --calibration
  std::map<std::string, Timing> cache_;
  int replays_ = 0;
};

// A seeded Fisher-Yates shuffle through strata's own draws (the same order on every library).
void shuffle(std::vector<Assignment>& order, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(unit_draw(rng) * static_cast<double>(i))]);
}

std::string end_text(TrialEnd e) {
  switch (e) {
    case TrialEnd::completed:
      return "completed";
    case TrialEnd::stopped:
      return "ended early";
    case TrialEnd::unfinished:
      return "budget out";
  }
  return "";
}

int search(const SearchOptions& o, const CurveTrainer& trainer, const LineageTrainer& lineage_trainer) {
  SearchFile f = read_search_file(o.spec);
  if (f.accuracy == "real" && !trainer)
    throw InputError(o.spec +
                     ": /search/accuracy/source: real trials train for real; run strata, not strata-sim");
  if (!o.policy.empty()) {
    const std::optional<SearchPolicyKind> kind = parse_search_policy(o.policy);
    if (!kind) throw InputError("--policy: unknown policy '" + o.policy + "'");
    f.settings.policy = *kind;
  }
  if (!o.timing.empty()) f.timing = o.timing;
  if (f.settings.policy == SearchPolicyKind::pbt) {
    if (f.accuracy == "curves")
      throw InputError(o.spec +
                       ": /search/accuracy/source: pbt trains perturbed assignments a curve file does not "
                       "hold; use family or real");
    check_pbt_space(f.space, o.spec + ": /search/space");
    f.settings.space = f.space;
    f.settings.seed = f.seed;
  }
  std::unique_ptr<ResultsStore> store = open_results_store(o.db);  // checked before any work
  const std::string platform = resolve_platform(f.platform);
  const NetworkOptions network;
  check_platform(platform, network);
  const PlatformSummary summary = load_platform_summary_apart(platform, network);
  if (!f.cluster_gpus_given) f.settings.cluster_gpus = summary.total_slots();
  if (f.settings.cluster_gpus > summary.total_slots())
    throw InputError(o.spec + ": /search/cluster_gpus: " + std::to_string(f.settings.cluster_gpus) +
                     " GPUs, the platform has " + std::to_string(summary.total_slots()) + " worker slots");

  // Where trials come from.
  std::vector<Assignment> order;  // curves, grid: every assignment in its order
  std::map<Assignment, std::vector<double>> curves;
  if (f.accuracy == "curves") {
    for (LearningCurve& c : read_curve_file(f.curves_file)) {
      if (static_cast<int>(c.accuracy.size()) < f.settings.max_epochs)
        throw InputError(f.curves_file + ": the curve of " + TrialTimes::describe(c.assignment) + " has " +
                         std::to_string(c.accuracy.size()) + " epochs, the search trains to " +
                         std::to_string(f.settings.max_epochs));
      order.push_back(c.assignment);
      curves[c.assignment] = std::move(c.accuracy);
    }
    if (f.settings.policy != SearchPolicyKind::grid) shuffle(order, f.seed);
  } else if (f.settings.policy == SearchPolicyKind::grid ||
             std::none_of(f.space.begin(), f.space.end(), [](const Domain& d) { return d.numeric(); })) {
    // A grid, or a space of choices alone: every assignment once (random draws from a finite
    // space would repeat some and miss others), shuffled by the seed unless the policy is grid.
    order = grid_assignments(f.space, f.grid_points, 1000000);
    if (f.settings.policy != SearchPolicyKind::grid) shuffle(order, f.seed);
  }
  if (f.settings.policy == SearchPolicyKind::grid) f.settings.trials = static_cast<int>(order.size());
  auto rng = std::make_shared<std::mt19937_64>(f.seed);
  auto at = std::make_shared<std::size_t>(0);
  TrialTimes times(f, platform, summary);
  TrialSource source;
  const bool sampled = order.empty();
  source.next = [&, rng, at, sampled]() -> std::optional<Assignment> {
    if (sampled) return sample_assignment(f.space, *rng);
    if (*at >= order.size()) return std::nullopt;
    return order[(*at)++];
  };
  source.cost = [&](const Assignment& a) {
    const Timing& t = times.of(a);
    return TrialCost{t.gpus, t.iteration_s * t.iterations_per_epoch, f.checkpoint_s, f.restore_s};
  };
  std::map<Assignment, std::vector<double>> drawn;
  source.accuracy = [&](const Assignment& a, int epoch) {
    if (f.accuracy == "curves") return curves.at(a).at(static_cast<std::size_t>(epoch - 1));
    auto it = drawn.find(a);
    if (it == drawn.end() && f.accuracy == "real") {
      // The whole curve once, the first time a trial needs it (what a trial learns by an epoch
      // does not depend on the policy); from the store when it was measured before.
      const std::string what = TrialTimes::describe(a);
      const auto progress = [&](int e) {
        if (progress_wanted())
          std::fprintf(stderr, "\rsearch: training %s for real: epoch %d of %d%s", what.c_str(), e,
                       f.settings.max_epochs, e == f.settings.max_epochs ? "\n" : "");
      };
      it = drawn
               .emplace(a, trainer(with_assignment(f.base, a, f.path), f.settings.max_epochs, store.get(),
                                   progress))
               .first;
    }
    if (it == drawn.end())
      it = drawn.emplace(a, family_curve(f.family, a, f.seed, f.settings.max_epochs)).first;
    return it->second.at(static_cast<std::size_t>(epoch - 1));
  };
  if (f.accuracy == "real" && lineage_trainer)
    source.lineage_accuracy = [&](const Lineage& lineage) {
      std::vector<std::pair<Experiment, int>> segments;
      int epochs = 0;
      for (const LineageSegment& seg : lineage) {
        segments.emplace_back(with_assignment(f.base, seg.assignment, f.path), seg.epochs);
        epochs += seg.epochs;
      }
      if (progress_wanted())
        std::fprintf(stderr, "\rsearch: pbt: training %s for real, epoch %d   ",
                     TrialTimes::describe(lineage.back().assignment).c_str(), epochs);
      return lineage_trainer(segments);
    };
  const SearchResult r = run_search(f.settings, source);
  if (f.settings.policy == SearchPolicyKind::pbt && progress_wanted()) std::fprintf(stderr, "\n");

  // The table: one row per trial.
  std::printf("search %s: %zu trials of %s on %s (%d GPUs), %d epochs at most; %d %s for their epoch times\n",
              std::string(to_string(f.settings.policy)).c_str(), r.trials.size(), f.base.model.c_str(),
              std::filesystem::path(platform).filename().c_str(), f.settings.cluster_gpus,
              f.settings.max_epochs, times.replays(),
              f.timing == "closed-form" ? "closed-form estimates" : "replays");
  std::printf("%5s  %-40s %4s %12s %7s %10s %9s  %-11s %s\n", "trial", "assignment", "GPUs", "epoch (s)",
              "epochs", "best (%)", "GPU-h", "end", "pop class");
  std::vector<nlohmann::json> rows;
  for (const TrialRecord& t : r.trials) {
    const std::string cls = t.last_class ? std::string(to_string(*t.last_class)) : "-";
    std::printf("%5d  %-40s %4d %12.4g %7zu %10.2f %9.4f  %-11s %s\n", t.id,
                TrialTimes::describe(t.assignment).c_str(), t.cost.gpus, t.cost.epoch_s, t.accuracy.size(),
                100 * t.best(), t.gpu_s / 3600, end_text(t.end).c_str(), cls.c_str());
    rows.push_back({{"trial", t.id},
                    {"assignment", TrialTimes::describe(t.assignment)},
                    {"gpus", t.cost.gpus},
                    {"epoch_s", t.cost.epoch_s},
                    {"epochs", t.accuracy.size()},
                    {"best_accuracy", t.best()},
                    {"gpu_hours", t.gpu_s / 3600},
                    {"end", end_text(t.end)},
                    {"pop_class", cls}});
  }
  std::printf("best: trial %d, accuracy %.2f %%\n", r.best_trial, 100 * r.best_accuracy);
  if (r.time_to_target_s)
    std::printf("time to %.2f %% accuracy: %.1f s\n", 100 * f.settings.target_accuracy, *r.time_to_target_s);
  else
    std::printf("time to %.2f %% accuracy: not reached\n", 100 * f.settings.target_accuracy);
  std::printf("makespan %.1f s, %.4f GPU-hours, %.4f GPU-hours (%.1f %%) on trials ended early\n",
              r.makespan_s, r.gpu_s / 3600, r.ended_early_gpu_s / 3600,
              r.gpu_s > 0 ? 100 * r.ended_early_gpu_s / r.gpu_s : 0.0);
  if (f.settings.policy == SearchPolicyKind::pbt) {
    int clones = 0;
    for (const TrialRecord& t : r.trials) clones += t.clones;
    std::printf("pbt: %d clones (a member taking another's checkpoint and a perturbed assignment)%s\n",
                clones,
                f.accuracy == "real" ? "" : "; accuracies after a clone: the progress-equivalent model");
  }
  if (f.settings.policy == SearchPolicyKind::pop) {
    // Against each trial's accuracy at max_epochs (from its curve): a trial is good when it
    // reaches the target there.
    int poor = 0, poor_right = 0, bad = 0;
    for (const TrialRecord& t : r.trials) {
      const bool good = source.accuracy(t.assignment, f.settings.max_epochs) >= f.settings.target_accuracy;
      bad += good ? 0 : 1;
      if (t.last_class == CurveClass::poor) {
        ++poor;
        poor_right += good ? 0 : 1;
      }
    }
    std::printf(
        "pop: %d trials classified poor, %d of them below the target at %d epochs (precision %.1f %%, "
        "recall %.1f %% of the %d below it)\n",
        poor, poor_right, f.settings.max_epochs, poor > 0 ? 100.0 * poor_right / poor : 0.0,
        bad > 0 ? 100.0 * poor_right / bad : 0.0, bad);
  }
  // Each trial's row: its replay's figures with the accuracy of every epoch it trained.
  if (store) {
    const std::string hash = platform_hash(
        platform, f.timing == "closed-form"
                      ? std::vector<std::string>{"search: " + std::string(to_string(f.settings.policy)),
                                                 "timing: closed-form"}
                      : std::vector<std::string>{"search: " + std::string(to_string(f.settings.policy))});
    std::vector<ResultRow> out;
    for (const TrialRecord& t : r.trials) {
      if (t.accuracy.empty()) continue;
      const Experiment e = with_assignment(f.base, t.assignment, f.path);
      const Timing& timing = times.of(t.assignment);
      ResultRow row = timing.report
                          ? report_row(*timing.report, "search", e, hash, TrialTimes::describe(t.assignment))
                          : estimate_row(*timing.estimate, "search", e, hash, platform, timing.gpus,
                                         TrialTimes::describe(t.assignment));
      row.key.fidelity = "search";
      nlohmann::json curve = nlohmann::json::array();
      for (std::size_t i = 0; i < t.accuracy.size(); ++i)
        curve.push_back({{"epoch", i + 1}, {"test_accuracy", t.accuracy[i]}});
      row.accuracy = curve.dump();
      out.push_back(std::move(row));
    }
    store->commit(out);
  }
  nlohmann::json incumbent = nlohmann::json::array();  // (s, accuracy) at each rise
  for (const auto& [time, acc] : r.incumbent) incumbent.push_back({{"time_s", time}, {"accuracy", acc}});
  write_table_files(
      rows,
      {"trial", "assignment", "gpus", "epoch_s", "epochs", "best_accuracy", "gpu_hours", "end", "pop_class"},
      o.csv, o.json,
      {{"format", "strata-search"},
       {"schema_version", 1},
       {"policy", to_string(f.settings.policy)},
       {"makespan_s", r.makespan_s},
       {"gpu_hours", r.gpu_s / 3600},
       {"time_to_target_s", r.time_to_target_s ? nlohmann::json(*r.time_to_target_s) : nlohmann::json()},
       {"best_accuracy", r.best_accuracy},
       {"incumbent", incumbent}},
      "trials");
  if (!o.svg.empty()) {
    LinePlot plot;
    plot.title = "incumbent accuracy over time, " + std::string(to_string(f.settings.policy));
    plot.x_label = "simulated cluster time (s)";
    plot.y_label = "best test accuracy so far (%)";
    plot.y_from_zero = false;
    PlotSeries s{"incumbent", {}, true};
    for (const auto& [time, acc] : r.incumbent) {
      if (!s.points.empty()) s.points.emplace_back(time, s.points.back().second);  // a step
      s.points.emplace_back(time, 100 * acc);
    }
    if (!s.points.empty()) s.points.emplace_back(r.makespan_s, s.points.back().second);
    plot.series = {s};
    write_line_plot_svg(plot, o.svg);
  }
  return 0;
}

}  // namespace

void add_search_command(CLI::App& app, Action& action, CurveTrainer trainer, LineageTrainer lineage) {
  auto* cmd = app.add_subcommand("search", "a hyperparameter search played out on a simulated cluster");
  auto o = std::make_shared<SearchOptions>();
  auto* spec =
      cmd->add_option("--spec", o->spec, "the search file: an Experiment spec with a search section");
  spec->required();
  track_input_naming(*cmd, spec, o->spec, search_file_inputs);
  cmd->add_option("--timing", o->timing, "override the search's trial timing: replay or closed-form")
      ->check(CLI::IsMember({"replay", "closed-form"}));
  cmd->add_option("--policy", o->policy, "override the search's policy")
      ->check(CLI::IsMember({"random", "grid", "sha", "hyperband", "asha", "asha-stop", "pop", "pbt"}));
  add_output_option(*cmd, "--csv", o->csv, "write the trials as CSV (default: none)");
  add_output_option(*cmd, "--json", o->json, "write the trials and the summary as JSON (default: none)");
  add_output_option(*cmd, "--svg", o->svg, "plot the incumbent accuracy over time (default: none)");
  add_db_flags(*cmd, o->db, true);
  cmd->callback([&action, o, trainer, lineage] {
    action = [o, trainer, lineage] { return search(*o, trainer, lineage); };
  });
}

}  // namespace strata::cli
