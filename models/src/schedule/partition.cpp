// The pipeline partitioner of partition.hpp.
#include "strata/models/schedule/partition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Sums {
  std::vector<double> time, stat, act;        // prefix sums over layers
  std::vector<std::vector<double>> on_stage;  // per stage with its own layer times: their prefix sums
  explicit Sums(const PartitionProblem& p) : time(1, 0), stat(1, 0), act(1, 0), on_stage(p.stages.size()) {
    for (const PartitionLayer& l : p.layers) {
      time.push_back(time.back() + l.time_s);
      stat.push_back(stat.back() + l.static_bytes);
      act.push_back(act.back() + l.activation_bytes);
    }
    for (std::size_t s = 0; s < p.stages.size(); ++s) {
      if (p.stages[s].layer_time_s.empty()) continue;
      on_stage[s].push_back(0);
      for (double t : p.stages[s].layer_time_s) on_stage[s].push_back(on_stage[s].back() + t);
    }
  }
};

double stage_time(const PartitionProblem& p, const Sums& sums, std::size_t s, int a, int b) {
  const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
  const double compute = sums.on_stage[s].empty() ? (sums.time[ub] - sums.time[ua]) / p.stages[s].speed
                                                  : sums.on_stage[s][ub] - sums.on_stage[s][ua];
  const bool last = s + 1 == p.stages.size();
  return compute + (last ? 0 : p.layers[static_cast<std::size_t>(b - 1)].transfer_s);
}

double stage_bytes(const PartitionProblem& p, const Sums& sums, std::size_t s, int a, int b) {
  const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
  return sums.stat[ub] - sums.stat[ua] + p.stages[s].in_flight * (sums.act[ub] - sums.act[ua]);
}

double overflow(const PartitionProblem& p, const Sums& sums, std::size_t s, int a, int b) {
  const double cap = p.stages[s].memory_bytes;
  return cap > 0 ? std::max(0.0, stage_bytes(p, sums, s, a, b) - cap) : 0.0;
}

// min over partitions of max over stages of cost(s, a, b), with the boundaries: best[s][j] for
// the first s stages on the first j layers. `cost` may return infinity (not allowed).
template <typename Cost>
std::pair<double, std::vector<int>> minimax(const PartitionProblem& p, Cost cost) {
  const int layers = static_cast<int>(p.layers.size());
  const std::size_t stages = p.stages.size();
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(static_cast<std::size_t>(layers) + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(static_cast<std::size_t>(layers) + 1, -1));
  best[0][0] = 0;
  for (std::size_t s = 1; s <= stages; ++s)
    for (int j = static_cast<int>(s); j <= layers - static_cast<int>(stages - s); ++j)
      for (int i = static_cast<int>(s) - 1; i < j; ++i) {
        const double before = best[s - 1][static_cast<std::size_t>(i)];
        if (!std::isfinite(before)) continue;
        const double value = std::max(before, cost(s - 1, i, j));
        if (value < best[s][static_cast<std::size_t>(j)]) {  // strict: the smallest i wins ties
          best[s][static_cast<std::size_t>(j)] = value;
          cut[s][static_cast<std::size_t>(j)] = i;
        }
      }
  std::vector<int> first(stages + 1, 0);
  first[stages] = layers;
  for (std::size_t s = stages; s > 0; --s) {
    const int c = cut[s][static_cast<std::size_t>(first[s])];
    first[s - 1] = std::max(c, 0);
  }
  return {best[stages][static_cast<std::size_t>(layers)], first};
}

Partition describe(const PartitionProblem& p, const Sums& sums, std::vector<int> first) {
  Partition out;
  out.first = std::move(first);
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    out.stage_time_s.push_back(stage_time(p, sums, s, out.first[s], out.first[s + 1]));
    out.stage_bytes.push_back(stage_bytes(p, sums, s, out.first[s], out.first[s + 1]));
    out.bottleneck_s = std::max(out.bottleneck_s, out.stage_time_s.back());
  }
  return out;
}

void check(const PartitionProblem& p, const std::string& source) {
  auto fail = [&](const std::string& place, const std::string& problem) {
    throw InputError(input_error_message(source, place, problem));
  };
  if (p.stages.empty()) fail("", "no stage to partition into");
  if (p.layers.size() < p.stages.size())
    fail("", std::to_string(p.layers.size()) + " layers cannot fill " + std::to_string(p.stages.size()) +
                 " stages (each needs one)");
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const PartitionLayer& l = p.layers[i];
    for (double v : {l.time_s, l.transfer_s, l.static_bytes, l.activation_bytes})
      if (!std::isfinite(v) || v < 0)
        fail("layer " + std::to_string(i), "time, transfer and bytes must be finite numbers >= 0");
  }
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const PartitionStage& st = p.stages[s];
    if (!std::isfinite(st.speed) || st.speed <= 0) fail("stage " + std::to_string(s), "speed must be > 0");
    if (!std::isfinite(st.memory_bytes) || st.memory_bytes < 0)
      fail("stage " + std::to_string(s), "memory must be a finite number of bytes >= 0 (0: unlimited)");
    if (!std::isfinite(st.in_flight) || st.in_flight < 0)
      fail("stage " + std::to_string(s), "microbatches in flight must be >= 0");
    if (!st.layer_time_s.empty() && st.layer_time_s.size() != p.layers.size())
      fail("stage " + std::to_string(s), "one layer time per layer");
    for (double t : st.layer_time_s)
      if (!std::isfinite(t) || t < 0)
        fail("stage " + std::to_string(s), "layer times must be finite numbers >= 0");
  }
}

}  // namespace

std::vector<double> one_f_one_b_in_flight(int pp) {
  std::vector<double> in_flight;
  for (int s = 0; s < pp; ++s) in_flight.push_back(static_cast<double>(pp - s));
  return in_flight;
}

Partition partition_layers(const PartitionProblem& p, const std::string& source) {
  check(p, source);
  const Sums sums(p);
  const auto [bottleneck, first] = minimax(p, [&](std::size_t s, int a, int b) {
    return overflow(p, sums, s, a, b) > 0 ? kInf : stage_time(p, sums, s, a, b);
  });
  if (std::isfinite(bottleneck)) return describe(p, sums, first);
  // No partition fits: the one whose worst overflow is smallest says how far off it is.
  const auto [over, closest] =
      minimax(p, [&](std::size_t s, int a, int b) { return overflow(p, sums, s, a, b); });
  std::size_t worst = 0;
  double worst_over = -1;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const double o = overflow(p, sums, s, closest[s], closest[s + 1]);
    if (o > worst_over) worst_over = o, worst = s;
  }
  throw InputError(input_error_message(
      source, "",
      "no partition of " + std::to_string(p.layers.size()) + " layers into " +
          std::to_string(p.stages.size()) + " stages fits: at best stage " + std::to_string(worst) +
          " (layers " + std::to_string(closest[worst]) + "-" + std::to_string(closest[worst + 1] - 1) +
          ") needs " + format_number(std::ceil(over)) + " B more than its " +
          format_number(p.stages[worst].memory_bytes) + " B"));
}

TpPartition partition_layers_and_tp(const std::vector<int>& degrees,
                                    const std::vector<PartitionProblem>& problems, int devices,
                                    const std::string& source) {
  if (degrees.empty() || degrees.size() != problems.size())
    throw InputError(input_error_message(source, "", "one problem per tensor-parallel degree"));
  for (const PartitionProblem& p : problems) check(p, source);
  for (int d : degrees)
    if (d < 1) throw InputError(input_error_message(source, "", "tensor-parallel degrees must be >= 1"));
  const std::size_t stages = problems.front().stages.size(), layers = problems.front().layers.size();
  for (const PartitionProblem& p : problems)
    if (p.stages.size() != stages || p.layers.size() != layers)
      throw InputError(
          input_error_message(source, "", "every degree's problem needs the same layers and stages"));
  std::vector<Sums> sums;
  for (const PartitionProblem& p : problems) sums.emplace_back(p);
  const std::size_t T = degrees.size();
  // Stage s on layers [a, b) with degree k: its time, or infinity where it does not fit.
  auto time_of = [&](std::size_t k, std::size_t s, int a, int b) {
    return overflow(problems[k], sums[k], s, a, b) > 0 ? kInf : stage_time(problems[k], sums[k], s, a, b);
  };
  constexpr int kNone = std::numeric_limits<int>::max();
  struct Step {
    int devices = kNone;
    int from = -1;
    std::size_t degree = 0;
  };
  std::vector<std::vector<Step>> table(stages + 1, std::vector<Step>(layers + 1));
  // The fewest devices for which every stage runs within `bound`; fills `table`.
  auto fewest = [&](double bound) {
    for (auto& row : table) std::fill(row.begin(), row.end(), Step{});
    table[0][0].devices = 0;
    for (std::size_t s = 1; s <= stages; ++s)
      for (int j = static_cast<int>(s); j <= static_cast<int>(layers - (stages - s)); ++j) {
        Step& best = table[s][static_cast<std::size_t>(j)];
        for (int i = j - 1; i >= static_cast<int>(s) - 1; --i) {  // the stage grows as i falls
          bool any_within = false;
          const Step& before = table[s - 1][static_cast<std::size_t>(i)];
          for (std::size_t k = 0; k < T; ++k) {
            const double t = time_of(k, s - 1, i, j);
            if (t > bound) continue;
            any_within = true;
            if (before.devices == kNone) continue;
            const int used = before.devices + degrees[k];
            if (used < best.devices || (used == best.devices && i < best.from)) best = {used, i, k};
          }
          // Times only grow with more layers; memory too: once no degree is within the bound
          // (for time), no longer stage is.
          bool slower_everywhere = !any_within;
          for (std::size_t k = 0; k < T && slower_everywhere; ++k)
            slower_everywhere = stage_time(problems[k], sums[k], s - 1, i, j) > bound;
          if (slower_everywhere) break;
        }
      }
    return table[stages][layers].devices;
  };
  // Upper bound: every stage at the degree that makes its whole-model time smallest, one stage
  // holding all but one layer each; simply the slowest stage of the fastest uniform split.
  double hi = 0;
  for (std::size_t k = 0; k < T; ++k)
    for (std::size_t s = 0; s < stages; ++s)
      hi = std::max(hi, stage_time(problems[k], sums[k], s, 0, static_cast<int>(layers)));
  hi = std::max(hi * 2, 1e-30);
  if (fewest(hi) > devices) {
    const int need = fewest(hi);
    if (need == kNone) {
      partition_layers(problems.front(), source);  // throws the memory message for the first degree
      throw InputError(input_error_message(source, "", "no split fits the memory caps at any degree"));
    }
    throw InputError(input_error_message(source, "",
                                         std::to_string(stages) + " stages need at least " +
                                             std::to_string(need) + " devices, there are " +
                                             std::to_string(devices)));
  }
  double lo = 0;
  while (hi - lo > 1e-9 * hi) {
    const double mid = (lo + hi) / 2;
    if (fewest(mid) <= devices) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  fewest(hi);
  TpPartition out;
  out.degree.assign(stages, 0);
  std::vector<int> first(stages + 1, 0);
  first[stages] = static_cast<int>(layers);
  for (std::size_t s = stages; s > 0; --s) {
    const Step& step = table[s][static_cast<std::size_t>(first[s])];
    first[s - 1] = step.from;
    out.degree[s - 1] = degrees[step.degree];
  }
  out.partition.first = first;
  for (std::size_t s = 0; s < stages; ++s) {
    std::size_t k = 0;
    while (degrees[k] != out.degree[s]) ++k;
    out.partition.stage_time_s.push_back(stage_time(problems[k], sums[k], s, first[s], first[s + 1]));
    out.partition.stage_bytes.push_back(stage_bytes(problems[k], sums[k], s, first[s], first[s + 1]));
    out.partition.bottleneck_s = std::max(out.partition.bottleneck_s, out.partition.stage_time_s.back());
    out.devices += out.degree[s];
  }
  return out;
}

Partition timed_partition(const PartitionProblem& problem, std::vector<int> first) {
  return describe(problem, Sums(problem), std::move(first));
}

Partition uniform_partition(const PartitionProblem& p) {
  const Sums sums(p);
  const int layers = static_cast<int>(p.layers.size());
  const int stages = static_cast<int>(p.stages.size());
  std::vector<int> first(static_cast<std::size_t>(stages) + 1, 0);
  for (int s = 0; s < stages; ++s)
    first[static_cast<std::size_t>(s) + 1] =
        first[static_cast<std::size_t>(s)] + layers / stages + (s < layers % stages ? 1 : 0);
  return describe(p, sums, first);
}

}  // namespace models
}  // namespace strata
