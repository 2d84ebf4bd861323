// run_benchmark_program(): the main() every strata_bench_* program shares.
#pragma once

#include <benchmark/benchmark.h>

#include <exception>
#include <functional>
#include <iostream>

namespace strata::bench {

// The main() of a strata_bench_* program: Google Benchmark reads its flags (an unknown one ends
// the program), then `body` registers and runs the benchmarks and prints the summary; what it
// throws is one line naming `program`, and exit status 1.
inline int run_benchmark_program(int argc, char** argv, const char* program,
                                 const std::function<void()>& body) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int status = 0;
  try {
    body();
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << '\n';
    status = 1;
  }
  benchmark::Shutdown();
  return status;
}

}  // namespace strata::bench
