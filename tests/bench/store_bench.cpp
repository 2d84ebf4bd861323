// strata_bench_store: rows per second into the results store (traces/results_store.hpp), one
// commit of kRows explore-like rows (a spec of ~700 B each) into a fresh file, beside the same
// rows inserted by hand through SQLite's C API (one prepared INSERT, one transaction, the same
// table) measured in the same run. Goal (issue 18): >= 10^4 rows/s.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "bench_timing.hpp"
#include "strata/traces/results_store.hpp"

namespace strata::bench {
namespace {

constexpr int kRows = 10000;

std::vector<ResultRow> rows() {
  std::vector<ResultRow> out;
  const std::string spec(700, 'x');
  for (int i = 0; i < kRows; ++i) {
    ResultRow r;
    char hash[20];
    std::snprintf(hash, sizeof hash, "%016x", i * 2654435761U);
    r.key = ResultKey{hash, "00000000000000aa", "analytical", 0};
    r.command = "explore";
    r.model = "gpt3-175b";
    r.strategy = "dp=8,tp=8,pp=16 1f1b microbatches=192 (1 per microbatch) recompute=full";
    r.platform = "h100-cluster-1024.xml";
    r.workers = 1024;
    r.fits = true;
    r.iteration_time_s = 1.0 + i;
    r.tokens_per_s = 1e6;
    r.mfu = 0.4;
    r.bubble_fraction = 0.1;
    r.exposed_comm_s = 0.01;
    r.peak_memory_bytes = 7e10;
    r.spec = spec;
    r.strata_version = "0.1.0";
    out.push_back(std::move(r));
  }
  return out;
}

std::string fresh(const char* name) {
  const std::string p = (std::filesystem::temp_directory_path() /
                         (std::string("strata-bench-") + name + "-" + std::to_string(::getpid()) + ".db"))
                            .string();
  std::filesystem::remove(p);
  return p;
}

std::vector<double> store_s, raw_s;

void BM_store(benchmark::State& state) {
  const std::vector<ResultRow> data = rows();
  for (auto _ : state) {
    const std::string p = fresh("store");
    Stopwatch w;
    ResultsStore(p).commit(data);
    store_s.push_back(w.wall_seconds());
    std::filesystem::remove(p);
  }
  state.counters["rows_per_s"] = kRows / *std::min_element(store_s.begin(), store_s.end());
}

// The same table and values through sqlite3 directly: the floor for one transaction of inserts.
void BM_raw_sqlite(benchmark::State& state) {
  const std::vector<ResultRow> data = rows();
  for (auto _ : state) {
    const std::string p = fresh("raw");
    Stopwatch w;
    sqlite3* db = nullptr;
    sqlite3_open(p.c_str(), &db);
    std::string create = "CREATE TABLE results (key TEXT PRIMARY KEY NOT NULL";
    for (std::size_t c = 1; c < result_columns().size(); ++c) create += ", " + result_columns()[c];
    sqlite3_exec(db, (create + ")").c_str(), nullptr, nullptr, nullptr);
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    std::string insert = "INSERT INTO results VALUES (?";
    for (std::size_t c = 1; c < result_columns().size(); ++c) insert += ", ?";
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, (insert + ")").c_str(), -1, &st, nullptr);
    for (const ResultRow& r : data) {
      sqlite3_reset(st);
      const std::string key = r.key.text();
      int i = 1;
      auto text = [&](const std::string& s) { sqlite3_bind_text(st, i++, s.c_str(), -1, SQLITE_TRANSIENT); };
      auto real = [&](const std::optional<double>& v) {
        v ? sqlite3_bind_double(st, i++, *v) : sqlite3_bind_null(st, i++);
      };
      text(key);
      text(r.key.experiment_hash);
      text(r.key.platform_hash);
      text(r.key.fidelity);
      sqlite3_bind_int64(st, i++, r.key.seed);
      text(r.command);
      text(r.model);
      text(r.strategy);
      text(r.platform);
      sqlite3_bind_int64(st, i++, r.workers);
      sqlite3_bind_int64(st, i++, 1);
      for (const auto* v : {&r.iteration_time_s, &r.tokens_per_s, &r.samples_per_s, &r.mfu,
                            &r.bubble_fraction, &r.exposed_comm_s, &r.peak_memory_bytes, &r.energy_j,
                            &r.cost_usd, &r.measured_iteration_time_s, &r.error_pct})
        real(*v);
      text(r.accuracy);
      text(r.spec);
      text(r.strata_version);
      sqlite3_step(st);
    }
    sqlite3_finalize(st);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    raw_s.push_back(w.wall_seconds());
    std::filesystem::remove(p);
  }
  state.counters["rows_per_s"] = kRows / *std::min_element(raw_s.begin(), raw_s.end());
}

BENCHMARK(BM_raw_sqlite)->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_store)->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  return strata::bench::run_benchmark_program(argc, argv, "strata_bench_store", [] {
    benchmark::RunSpecifiedBenchmarks();
    using strata::bench::raw_s;
    using strata::bench::store_s;
    if (store_s.empty() || raw_s.empty()) return;
    const double store = strata::bench::kRows / *std::min_element(store_s.begin(), store_s.end());
    const double raw = strata::bench::kRows / *std::min_element(raw_s.begin(), raw_s.end());
    std::printf("results store: %.0f rows/s (goal >= 10000), sqlite3 by hand %.0f rows/s: ratio %.2f\n",
                store, raw, store / raw);
  });
}
