// strata_bench_codec: the gradient codecs of docs/compression.md (core/grad_codec.hpp) on one
// thread, at 1x, 10x and 100x the MLP's bucket (235,146 fp32 values): int8 and fp8 messages
// (encode, then decode), top-k 1 % selection, and one PowerSGD rank-4 round (P = M Q,
// orthonormalisation, Q = M^T P, P Q^T) of the near-square matrix of that many values. The
// baseline, measured in the same run, is copying the values (what an uncompressed exchange does
// with them locally). The summary prints each codec's time per value and its ratio to the copy,
// and how the time grows from 1x to 10x and 100x (linear: 10 and 100; every codec is O(S), and
// PowerSGD's products are O(m n r)).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "bench_timing.hpp"
#include "strata/real/core/grad_codec.hpp"

namespace strata::bench {
namespace {

constexpr std::int64_t kBucket = 235146;  // the zoo MLP's parameters: one DDP bucket
constexpr int kScales[] = {1, 10, 100};
constexpr std::int64_t kRank = 4;

std::vector<float> gradient(std::int64_t n) {
  std::vector<float> g(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    g[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(0.37 * i) * 1e-3);
  return g;
}

// One run of `codec` on n values.
void run_codec(const std::string& codec, std::vector<float>& g, std::vector<float>& out,
               std::vector<std::uint8_t>& message) {
  const auto n = static_cast<std::int64_t>(g.size());
  if (codec == "copy") {
    std::memcpy(out.data(), g.data(), g.size() * sizeof(float));
  } else if (codec == "int8" || codec == "fp8") {
    const real::ByteCodec c = codec == "int8" ? real::ByteCodec::int8 : real::ByteCodec::fp8;
    message.clear();
    real::encode_message(g.data(), g.size(), c, message);
    real::decode_message(message.data(), g.size(), c, out.data());
  } else if (codec == "topk") {
    benchmark::DoNotOptimize(real::top_k_indices(g.data(), n, (n + 99) / 100).data());
  } else {  // powersgd: a rows x cols matrix, rows = floor(sqrt(n))
    const auto rows = static_cast<std::int64_t>(std::sqrt(static_cast<double>(n)));
    const std::int64_t cols = n / rows;
    static real::CpuBackend backend;
    std::vector<float> q(static_cast<std::size_t>(cols * kRank), 0.5F),
        p(static_cast<std::size_t>(rows * kRank));
    real::matmul_mq(backend, g.data(), q.data(), rows, cols, kRank, p.data());
    real::orthonormalize_columns(p.data(), rows, kRank);
    real::matmul_mtp(backend, g.data(), p.data(), rows, cols, kRank, q.data());
    real::matmul_pqt(backend, p.data(), q.data(), rows, cols, kRank, out.data());
  }
  benchmark::DoNotOptimize(out.data());
}

std::string key(const std::string& codec, int scale) { return codec + "/" + std::to_string(scale) + "x"; }

void bm_codec(benchmark::State& state, const std::string& codec, int scale) {
  std::vector<float> g = gradient(kBucket * scale), out(g.size());
  std::vector<std::uint8_t> message;
  message.reserve(g.size() + 4);
  run_codec(codec, g, out, message);  // warm: pages touched, message sized
  for (auto _ : state) {
    Stopwatch clock;
    run_codec(codec, g, out, message);
    const double wall = clock.wall_seconds();
    state.SetIterationTime(wall);
    record(key(codec, scale), wall, clock.cpu_seconds());
  }
  state.counters["values"] = static_cast<double>(g.size());
}

const std::vector<std::string>& codecs() {
  static const std::vector<std::string> all = {"copy", "int8", "fp8", "topk", "powersgd"};
  return all;
}

// CPU time (the machine may be shared), fastest sample of each.
void print_summary() {
  std::cout << "\n=== strata_bench_codec summary (one thread; fastest sample, CPU time)\n";
  for (const std::string& codec : codecs()) {
    bool all = true;  // a --benchmark_filter may have left some out
    for (int scale : kScales) all = all && has_samples(key(codec, scale));
    if (!all || !has_samples(key("copy", 1))) continue;
    std::cout << "  " << codec << ":";
    for (int scale : kScales) {
      const double t = best_cpu(key(codec, scale));
      std::cout << "  " << scale << "x " << fixed(1e9 * t / static_cast<double>(kBucket * scale), 2)
                << " ns/value";
    }
    const double one = best_cpu(key(codec, 1));
    std::cout << "\n    codec_" << codec << "_growth_10x = " << fixed(best_cpu(key(codec, 10)) / one, 1)
              << ", growth_100x = " << fixed(best_cpu(key(codec, 100)) / one, 1)
              << ", vs_copy_time_ratio_1x = " << fixed(one / best_cpu(key("copy", 1)), 1) << "\n";
  }
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  return run_benchmark_program(argc, argv, "strata_bench_codec", [] {
    for (const std::string& codec : codecs())
      for (int scale : kScales)
        benchmark::RegisterBenchmark(("codec/" + key(codec, scale)).c_str(),
                                     [codec, scale](benchmark::State& s) { bm_codec(s, codec, scale); })
            ->UseManualTime()
            ->Iterations(scale == 100 ? 3 : 10)
            ->Unit(benchmark::kMillisecond);
    benchmark::RunSpecifiedBenchmarks();
    print_summary();
  });
}
