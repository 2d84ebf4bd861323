// Importers of published cluster job traces: see job_traces.hpp.
#include "strata/models/search/job_traces.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "strata/traces/error.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace models {
namespace {

constexpr const char* kPolluxHeader = "name,time,application,num_replicas,batch_size";

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream split(line);
  for (std::string cell; std::getline(split, cell, ',');) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

// The whole of `text` as a finite number, or NaN (empty, trailing characters, out of range).
double finite_number(const std::string& text) {
  std::size_t used = 0;
  double v = NAN;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return NAN;
  }
  return used == text.size() && std::isfinite(v) ? v : NAN;
}

double number_of(const std::string& text, const std::string& at, const char* column) {
  const double v = finite_number(text);
  if (!(v >= 0)) throw InputError(at + ": " + column + ": not a number >= 0 '" + text + "'");
  return v;
}

int whole_of(const std::string& text, const std::string& at, const char* column) {
  const double v = number_of(text, at, column);
  if (v != std::floor(v) || v < 1 || v > (1 << 24))
    throw InputError(at + ": " + column + ": not a whole number >= 1");
  return static_cast<int>(v);
}

// The cells of a line split at commas as std::getline splits a stream (a trailing comma adds no
// empty cell), into `cells` (reused: no allocation per line once warm).
void split_cells(const std::string& line, std::vector<std::string>& cells) {
  cells.clear();
  std::size_t from = 0;
  for (std::size_t comma; (comma = line.find(',', from)) != std::string::npos; from = comma + 1)
    cells.emplace_back(line, from, comma - from);
  if (from < line.size()) cells.emplace_back(line, from);
}

// strata's trace: any finite number, and whole numbers from 1 to 1e12; `at` gives "path:line"
// (made only for a message).
template <typename At>
double real_of(const std::string& text, const At& at, const char* column) {
  const double v = finite_number(text);
  if (std::isnan(v)) throw InputError(at() + ": " + column + ": not a number '" + text + "'");
  return v;
}

template <typename At>
std::int64_t count_of(const std::string& text, const At& at, const char* column) {
  const double v = real_of(text, at, column);
  if (v != std::floor(v) || v < 1 || v > 1e12)
    throw InputError(at() + ": " + column + ": not a whole number >= 1");
  return static_cast<std::int64_t>(v);
}

std::string first_line(const std::string& path) {
  note_input(path);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// "YYYY-MM-DD HH:MM:SS" as seconds since 1970-01-01 00:00:00 (a proleptic Gregorian calendar);
// -1 when the text is not such a time.
double seconds_of(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  char tail = 0;
  if (text.size() != 19 ||
      std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6)
    return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return -1;
  // Days from civil (H. Hinnant's algorithm).
  const int yy = y - (mo <= 2 ? 1 : 0);
  const int era = (yy >= 0 ? yy : yy - 399) / 400;
  const int yoe = yy - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60 + se);
}

// Submission times made relative to the earliest, jobs sorted by them (stable).
ImportedTrace finish_import(std::vector<RoundJob> jobs, std::size_t left_out, const std::string& path) {
  if (jobs.empty()) throw InputError(path + ": no job with GPUs and a run time");
  double first = INFINITY;
  for (const RoundJob& j : jobs) first = std::min(first, j.arrival_s);
  for (RoundJob& j : jobs) j.arrival_s -= first;
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const RoundJob& a, const RoundJob& b) { return a.arrival_s < b.arrival_s; });
  return {std::move(jobs), left_out};
}

}  // namespace

StrataJobTrace read_strata_job_trace(const std::string& path) {
  note_input(path);
  std::error_code folder_error;
  if (std::filesystem::is_directory(path, folder_error))
    throw InputError(path + ": is a folder, not a job trace");
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the job trace");
  const std::string given = "id,arrival_s,gpus,service_s";
  const std::string modelled = "id,arrival_s,model,dp,tp,pp,global_batch,iterations";
  StrataJobTrace trace;
  std::vector<std::string> cells;
  std::string line, header;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const auto at = [&] { return path + ":" + std::to_string(number); };
    if (header.empty()) {
      if (line != given && line != modelled)
        throw InputError(at() + ": expected the header " + given + " or " + modelled);
      header = line;
      continue;
    }
    split_cells(line, cells);
    const std::size_t width = header == given ? 4 : 8;
    if (cells.size() != width)
      throw InputError(at() + ": expected " + std::to_string(width) + " cells, got " +
                       std::to_string(cells.size()));
    ClusterJob& j = trace.jobs.emplace_back();
    j.id = std::move(cells[0]);
    if (j.id.empty()) throw InputError(at() + ": id: empty");
    j.arrival_s = real_of(cells[1], at, "arrival_s");
    if (!(j.arrival_s >= 0 && j.arrival_s <= kMaxJobTimeS))
      require_in_range(at(), "arrival_s", j.arrival_s, 0, kMaxJobTimeS, "s");
    if (header == given) {
      j.gpus = static_cast<int>(std::min<std::int64_t>(count_of(cells[2], at, "gpus"), 1 << 24));
      j.service_s = real_of(cells[3], at, "service_s");
      if (!(j.service_s >= kMinServiceS && j.service_s <= kMaxJobTimeS))
        require_in_range(at(), "service_s", j.service_s, kMinServiceS, kMaxJobTimeS, "s");
      continue;
    }
    const nlohmann::json spec = {{"format", "strata-experiment"},
                                 {"schema_version", 1},
                                 {"model", {{"name", cells[2]}}},
                                 {"global_batch", count_of(cells[6], at, "global_batch")},
                                 {"strategy",
                                  {{"dp", count_of(cells[3], at, "dp")},
                                   {"tp", count_of(cells[4], at, "tp")},
                                   {"pp", count_of(cells[5], at, "pp")}}}};
    StrataJobTrace::Modelled& m = trace.modelled.emplace_back();
    m.job = trace.jobs.size() - 1;
    m.at = at();
    m.experiment = experiment_from_json(spec, m.at);
    m.iterations = count_of(cells[7], at, "iterations");
    j.gpus = static_cast<int>(m.experiment.workers());
  }
  if (header.empty()) throw InputError(path + ": no header " + given + " or " + modelled);
  if (trace.jobs.empty()) throw InputError(path + ": no job");
  return trace;
}

bool is_helios_log(const std::string& path) { return first_line(path).rfind("job_id,", 0) == 0; }

bool is_philly_log(const std::string& path) {
  note_input(path);
  std::ifstream in(path);
  char c = 0;
  while (in.get(c))
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '[';
  return false;
}

ImportedTrace read_philly_log(const std::string& path) {
  note_input(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the job trace");
  nlohmann::json log;
  try {
    log = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": not JSON: " + e.what());
  }
  if (!log.is_array()) throw InputError(path + ": expected a JSON array of jobs (Philly's cluster_job_log)");
  std::vector<RoundJob> jobs;
  std::size_t left_out = 0;
  for (std::size_t k = 0; k < log.size(); ++k) {
    const nlohmann::json& job = log[k];
    const std::string at = path + ": job " + std::to_string(k);
    if (!job.is_object() || !job.contains("jobid") || !job["jobid"].is_string())
      throw InputError(at + ": jobid: expected a string");
    const std::string id = job["jobid"].get<std::string>();
    const std::string named = path + ": job '" + id + "'";
    const double submitted = job.contains("submitted_time") && job["submitted_time"].is_string()
                                 ? seconds_of(job["submitted_time"].get<std::string>())
                                 : -1;
    if (submitted < 0) throw InputError(named + ": submitted_time: expected \"YYYY-MM-DD HH:MM:SS\"");
    if (!job.contains("attempts") || !job["attempts"].is_array())
      throw InputError(named + ": attempts: expected a list");
    double service = 0;
    int gpus = 0;
    bool usable = !job["attempts"].empty();
    for (const nlohmann::json& attempt : job["attempts"]) {
      if (!attempt.is_object()) throw InputError(named + ": attempts: expected objects");
      const auto time_of = [&](const char* key) {
        return attempt.contains(key) && attempt[key].is_string() ? seconds_of(attempt[key].get<std::string>())
                                                                 : -1;
      };
      const double start = time_of("start_time"), end = time_of("end_time");
      if (start < 0 || end < start) {
        usable = false;
        break;
      }
      service += end - start;
      gpus = 0;
      if (!attempt.contains("detail") || !attempt["detail"].is_array())
        throw InputError(named + ": attempts/detail: expected a list");
      for (const nlohmann::json& server : attempt["detail"]) {
        if (!server.is_object() || !server.contains("gpus") || !server["gpus"].is_array())
          throw InputError(named + ": attempts/detail/gpus: expected a list");
        gpus += static_cast<int>(server["gpus"].size());
      }
    }
    if (!usable || gpus < 1 || !(service > 0)) {
      ++left_out;
      continue;
    }
    RoundJob j;
    j.id = id;
    j.arrival_s = submitted;
    j.gpus = gpus;
    j.service_s = service;
    jobs.push_back(std::move(j));
  }
  return finish_import(std::move(jobs), left_out, path);
}

ImportedTrace read_helios_log(const std::string& path) {
  note_input(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the job trace");
  std::string line;
  int number = 0;
  std::vector<std::string> header;
  std::size_t id = 0, gpus = 0, submit = 0, duration = 0;
  std::vector<RoundJob> jobs;
  std::size_t left_out = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string at = path + ":" + std::to_string(number);
    if (number == 1) {
      header = cells_of(line);
      const auto column = [&](const char* name) {
        const auto it = std::find(header.begin(), header.end(), name);
        if (it == header.end())
          throw InputError(at + ": no column " + std::string(name) + " (Helios's cluster_log)");
        return static_cast<std::size_t>(it - header.begin());
      };
      id = column("job_id");
      gpus = column("gpu_num");
      submit = column("submit_time");
      duration = column("duration");
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string> cells = cells_of(line);
    if (cells.size() != header.size())
      throw InputError(at + ": expected " + std::to_string(header.size()) + " cells, got " +
                       std::to_string(cells.size()));
    const double g = number_of(cells[gpus], at, "gpu_num");
    const double service = number_of(cells[duration], at, "duration");
    const double submitted = seconds_of(cells[submit]);
    if (submitted < 0)
      throw InputError(at + ": submit_time: expected \"YYYY-MM-DD HH:MM:SS\", got '" + cells[submit] + "'");
    if (g != std::floor(g) || g > (1 << 24)) throw InputError(at + ": gpu_num: not a whole number");
    if (g < 1 || !(service > 0)) {
      ++left_out;
      continue;
    }
    RoundJob j;
    j.id = cells[id];
    if (j.id.empty()) throw InputError(at + ": job_id: empty");
    j.arrival_s = submitted;
    j.gpus = static_cast<int>(g);
    j.service_s = service;
    jobs.push_back(std::move(j));
  }
  if (number == 0) throw InputError(path + ": empty, expected Helios's cluster_log header");
  return finish_import(std::move(jobs), left_out, path);
}

bool is_pollux_workload(const std::string& path) { return first_line(path) == kPolluxHeader; }

std::vector<RoundJob> read_pollux_workload(const std::string& path,
                                           const std::map<std::string, TraceApplication>& apps) {
  note_input(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the job trace");
  std::vector<RoundJob> jobs;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string at = path + ":" + std::to_string(number);
    if (number == 1) {
      if (line != kPolluxHeader) throw InputError(at + ": expected the header " + std::string(kPolluxHeader));
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string> cells = cells_of(line);
    if (cells.size() != 5) throw InputError(at + ": expected 5 cells, got " + std::to_string(cells.size()));
    RoundJob j;
    j.id = cells[0];
    if (j.id.empty()) throw InputError(at + ": name: empty");
    j.arrival_s = number_of(cells[1], at, "time");
    const auto app = apps.find(cells[2]);
    if (app == apps.end()) throw InputError(at + ": application: no measured application '" + cells[2] + "'");
    j.app = &app->second;
    j.gpus = whole_of(cells[3], at, "num_replicas");
    j.batch = whole_of(cells[4], at, "batch_size");
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) throw InputError(path + ": no job");
  return jobs;
}

}  // namespace models
}  // namespace strata
