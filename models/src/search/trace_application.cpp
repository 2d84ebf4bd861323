// Measured training job types: see trace_application.hpp.
#include "strata/models/search/trace_application.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "strata/traces/error.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace models {
namespace {

// A numeric CSV with a fixed header; the placement column of placements.csv is read as a number
// too (its digits) and kept as text by the caller.
std::vector<std::vector<double>> read_numbers(const std::string& path, const std::string& header,
                                              std::vector<std::string>* first_column = nullptr) {
  note_input(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the trace");
  std::vector<std::vector<double>> rows;
  std::string line;
  int number = 0;
  std::size_t width = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string at = path + ":" + std::to_string(number);
    if (width == 0) {
      if (line != header) throw InputError(at + ": expected the header " + header);
      width = static_cast<std::size_t>(std::count(header.begin(), header.end(), ',')) + 1;
      continue;
    }
    std::vector<double> row;
    std::stringstream split(line);
    std::size_t column = 0;
    for (std::string cell; std::getline(split, cell, ',');) {
      ++column;
      std::size_t used = 0;
      double v = NAN;
      try {
        v = std::stod(cell, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (cell.empty() || used != cell.size() || !std::isfinite(v) || v < 0)
        throw InputError(at + ": column " + std::to_string(column) + ": not a number >= 0 '" + cell + "'");
      if (column == 1 && first_column) first_column->push_back(cell);
      row.push_back(v);
    }
    if (row.size() != width)
      throw InputError(at + ": expected " + std::to_string(width) + " cells, got " +
                       std::to_string(row.size()));
    rows.push_back(std::move(row));
  }
  if (width == 0) throw InputError(path + ": no header " + header);
  if (rows.empty()) throw InputError(path + ": no row");
  return rows;
}

// Linear interpolation of (step, sync) at local batch b over rising samples, clamped to their range.
std::pair<double, double> along_batch(const std::vector<StepSample>& s, double b) {
  if (b <= s.front().local_bsz) return {s.front().step_s, s.front().sync_s};
  if (b >= s.back().local_bsz) return {s.back().step_s, s.back().sync_s};
  const auto hi =
      std::lower_bound(s.begin(), s.end(), b, [](const StepSample& x, double v) { return x.local_bsz < v; });
  const auto lo = hi - 1;
  const double w = (b - lo->local_bsz) / (hi->local_bsz - lo->local_bsz);
  return {lo->step_s + w * (hi->step_s - lo->step_s), lo->sync_s + w * (hi->sync_s - lo->sync_s)};
}

std::pair<double, double> mix(std::pair<double, double> a, std::pair<double, double> b, double w) {
  return {a.first + w * (b.first - a.first), a.second + w * (b.second - a.second)};
}

// The two keys around v in a rising list (equal when v is one of them or outside the list).
std::pair<int, int> around(const std::vector<int>& keys, double v) {
  if (v <= keys.front()) return {keys.front(), keys.front()};
  if (v >= keys.back()) return {keys.back(), keys.back()};
  const auto hi = std::lower_bound(keys.begin(), keys.end(), v);
  if (*hi == v) return {*hi, *hi};
  return {*(hi - 1), *hi};
}

std::vector<StepSample> sorted_samples(std::vector<StepSample> s) {
  std::stable_sort(s.begin(), s.end(),
                   [](const StepSample& a, const StepSample& b) { return a.local_bsz < b.local_bsz; });
  return s;
}

std::string placement_key(std::vector<int> counts) {
  counts.erase(std::remove(counts.begin(), counts.end(), 0), counts.end());
  std::vector<int> best = counts;
  for (std::size_t i = 1; i < counts.size(); ++i) {
    std::rotate(counts.begin(), counts.begin() + 1, counts.end());
    best = std::min(best, counts);
  }
  std::string key;
  for (int c : best) {
    if (c > 9) return {};  // never a measured placement
    key += static_cast<char>('0' + c);
  }
  return key;
}

}  // namespace

std::pair<double, double> TraceApplication::step_time(const std::vector<int>& placement,
                                                      double local_bsz) const {
  const std::string key = placement_key(placement);
  STRATA_ASSERT(!key.empty() || !placement.empty(), "step_time: an empty placement");
  if (const auto it = placements.find(key); it != placements.end()) return along_batch(it->second, local_bsz);
  int nodes = 0, replicas = 0;
  for (int c : placement)
    if (c > 0) {
      ++nodes;
      replicas += c;
    }
  nodes = std::min(nodes, 16);
  std::vector<int> node_keys;
  for (const auto& [nr, samples] : grid)
    if (node_keys.empty() || node_keys.back() != nr.first) node_keys.push_back(nr.first);
  const auto at_nodes = [&](int n) {
    std::vector<int> replica_keys;
    for (const auto& [nr, samples] : grid)
      if (nr.first == n) replica_keys.push_back(nr.second);
    const auto [r0, r1] = around(replica_keys, replicas);
    const auto a = along_batch(grid.at({n, r0}), local_bsz);
    if (r0 == r1) return a;
    return mix(a, along_batch(grid.at({n, r1}), local_bsz),
               (static_cast<double>(replicas) - r0) / static_cast<double>(r1 - r0));
  };
  const auto [n0, n1] = around(node_keys, nodes);
  const auto a = at_nodes(n0);
  if (n0 == n1) return a;
  return mix(a, at_nodes(n1), (static_cast<double>(nodes) - n0) / static_cast<double>(n1 - n0));
}

double TraceApplication::progress_at(int epoch) const {
  if (epoch <= 0) return 0;
  double least = INFINITY;
  for (const auto& [batch, epochs] : validation) {
    STRATA_ASSERT(static_cast<std::size_t>(epoch) <= epochs.size(), "progress_at: past the traces");
    least = std::min(least, epochs[static_cast<std::size_t>(epoch) - 1].progress);
  }
  return least;
}

std::pair<double, double> TraceApplication::grad_stats(double batch, int epoch) const {
  auto hi = validation.lower_bound(static_cast<int>(std::ceil(batch)));
  if (hi == validation.end()) hi = std::prev(validation.end());
  auto lo = hi;
  if (hi->first > batch && hi != validation.begin()) lo = std::prev(hi);
  const auto e = static_cast<std::size_t>(epoch);
  STRATA_ASSERT(e < lo->second.size() && e < hi->second.size(), "grad_stats: past the traces");
  const EpochSample& a = lo->second[e];
  const EpochSample& b = hi->second[e];
  if (lo->first == hi->first || batch <= lo->first) return {a.grad_sqr, a.grad_var};
  const double w = (batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return {a.grad_sqr + w * (b.grad_sqr - a.grad_sqr), a.grad_var + w * (b.grad_var - a.grad_var)};
}

AtomicBatch atomic_batch(const TraceApplication& app, int batch, int replicas) {
  constexpr double kEps = 1e-8;
  const double local = std::ceil(static_cast<double>(batch) / replicas - kEps);
  int accum = static_cast<int>(std::ceil(local / app.max_local_bsz - kEps)) - 1;
  if (replicas == 1 && batch > app.init_batch) accum = std::max(1, accum);
  int atomic = static_cast<int>(std::ceil(local / (accum + 1) - kEps));
  const int count = replicas * (accum + 1);
  atomic = std::min(atomic, app.max_batch / count);
  return {atomic, accum};
}

TraceApplication read_trace_application(const std::string& dir, const std::string& name,
                                        const TraceApplicationSettings& settings) {
  namespace fs = std::filesystem;
  TraceApplication app;
  app.name = name;
  std::vector<std::string> ids;
  const std::string placements = (fs::path(dir) / "placements.csv").string();
  const auto rows = read_numbers(placements, "placement,local_bsz,step_time,sync_time", &ids);
  std::map<std::tuple<int, int, double>, std::pair<std::pair<double, double>, int>> means;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<int> counts;
    for (char c : ids[i]) {
      if (c < '1' || c > '9')
        throw InputError(placements + ": row " + std::to_string(i + 1) + ": placement '" + ids[i] +
                         "' is not GPUs per node as digits 1-9");
      counts.push_back(c - '0');
    }
    const StepSample s{rows[i][1], rows[i][2], rows[i][3]};
    app.placements[placement_key(counts)].push_back(s);
    int replicas = 0;
    for (int c : counts) replicas += c;
    auto& m = means[{static_cast<int>(counts.size()), replicas, s.local_bsz}];
    m.first.first += s.step_s;
    m.first.second += s.sync_s;
    ++m.second;
  }
  for (auto& [key, samples] : app.placements) samples = sorted_samples(std::move(samples));
  for (const auto& [key, m] : means)
    app.grid[{std::get<0>(key), std::get<1>(key)}].push_back(
        {std::get<2>(key), m.first.first / m.second, m.first.second / m.second});
  const std::string scalability = (fs::path(dir) / "scalability.csv").string();
  for (const auto& r : read_numbers(scalability, "num_nodes,num_replicas,local_bsz,step_time,sync_time"))
    app.grid[{static_cast<int>(r[0]), static_cast<int>(r[1])}].push_back({r[2], r[3], r[4]});
  for (auto& [key, samples] : app.grid) samples = sorted_samples(std::move(samples));
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) files.push_back(entry.path());
  if (ec) throw InputError(dir + ": cannot list the traces: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string stem = file.stem().string();
    if (stem.rfind("validation-", 0) != 0 || file.extension() != ".csv") continue;
    const std::string digits = stem.substr(11);
    if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit) ||
        std::stoi(digits) < 1)
      throw InputError(file.string() + ": the batch size in the name is not a whole number >= 1");
    std::vector<EpochSample> epochs;
    for (const auto& r : read_numbers(file.string(), "progress,iteration,metric,grad_sqr,grad_var"))
      epochs.push_back({r[0], r[3], r[4]});
    app.validation[std::stoi(digits)] = std::move(epochs);
  }
  if (app.validation.empty()) throw InputError(dir + ": no validation-<batch>.csv trace");
  std::size_t shortest = SIZE_MAX;
  for (const auto& [batch, epochs] : app.validation) shortest = std::min(shortest, epochs.size());
  double least_local = INFINITY, largest_local = 0;
  for (const auto& [key, samples] : app.placements) {
    least_local = std::min(least_local, samples.front().local_bsz);
    largest_local = std::max(largest_local, samples.back().local_bsz);
  }
  const auto pick = [](int given, int fallback) { return given > 0 ? given : fallback; };
  app.init_batch = pick(settings.init_batch, app.validation.begin()->first);
  app.max_batch = pick(settings.max_batch, app.validation.rbegin()->first);
  app.min_local_bsz = pick(settings.min_local_bsz, static_cast<int>(least_local));
  app.max_local_bsz = pick(settings.max_local_bsz, static_cast<int>(largest_local));
  app.max_epochs = pick(settings.max_epochs, static_cast<int>(shortest));
  if (static_cast<std::size_t>(app.max_epochs) > shortest)
    throw InputError(dir + ": max_epochs " + std::to_string(app.max_epochs) +
                     " is past the shortest trace (" + std::to_string(shortest) + " epochs)");
  if (app.max_batch < app.min_local_bsz || app.max_local_bsz < app.min_local_bsz)
    throw InputError(dir + ": the batch limits contradict each other");
  return app;
}

std::map<std::string, TraceApplication> read_trace_applications(const std::string& path) {
  namespace fs = std::filesystem;
  note_input(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the applications file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || j.value("format", "") != "strata-pollux-applications")
    throw InputError(path + ": format: expected \"strata-pollux-applications\"");
  if (j.value("schema_version", 0) != 1) throw InputError(path + ": schema_version: expected 1");
  if (!j.contains("traces") || !j["traces"].is_string())
    throw InputError(path + ": traces: expected a folder");
  if (!j.contains("applications") || !j["applications"].is_object() || j["applications"].empty())
    throw InputError(path + ": applications: expected an object of applications");
  const fs::path traces = fs::path(path).parent_path() / j["traces"].get<std::string>();
  std::map<std::string, TraceApplication> apps;
  for (const auto& [name, value] : j["applications"].items()) {
    const std::string at = path + ": applications/" + name;
    if (!value.is_object()) throw InputError(at + ": expected an object");
    TraceApplicationSettings s;
    const std::map<std::string, int*> keys = {{"max_epochs", &s.max_epochs},
                                              {"max_local_bsz", &s.max_local_bsz},
                                              {"min_local_bsz", &s.min_local_bsz},
                                              {"init_batch", &s.init_batch},
                                              {"max_batch", &s.max_batch}};
    for (const auto& [key, v] : value.items()) {
      const auto it = keys.find(key);
      if (it == keys.end()) throw InputError(at + ": unknown key '" + key + "'");
      if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1LL << 30))
        throw InputError(at + "/" + key + ": expected a whole number >= 1");
      *it->second = v.get<int>();
    }
    apps.emplace(name, read_trace_application((traces / name).string(), name, s));
  }
  return apps;
}

}  // namespace models
}  // namespace strata
