// pdADMM's iteration (admm.hpp) on kAdmmWorkers worker threads, for strata_bench_solvers.
//
// reference/admm_train.hpp's iterate_parallel(threads = true) starts one thread per layer, more
// threads than cores on a small machine; this driver runs the same Jacobi iteration on a fixed number of
// workers, built from admm.hpp's public per-layer updates. Layer l lives on worker
// floor(l * W / L), as lower_admm places it. Every backward phase runs (each worker its layers),
// then, after a barrier, every forward phase. Only what crosses a worker boundary travels as a
// message: q and u of iteration k-1 forward, p of iteration k backward (int8 codes with
// quantize_p, decoded by the receiver, as iterate_parallel does). Within a worker a layer reads
// its neighbour in place, which is the same value: the backward phase writes no q or u, the
// forward phase no p, and with quantisation p already lies on the grid. The iterates are
// therefore bitwise those of iterate_serial (strata_bench_solvers checks it after timing).
// Thread safety: workers touch disjoint layers and share one Backend (CpuBackend allows it).
#pragma once

#include <time.h>

#include <array>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "strata/real/kernels/admm.hpp"

namespace strata::bench {

constexpr int kAdmmWorkers = 2;

// Layer `layer`'s worker, as the lowering places it (docs/solvers.md): floor(layer * W / layers).
inline int admm_worker(std::size_t layer, std::size_t layers) {
  return static_cast<int>(layer * kAdmmWorkers / layers);
}

// CPU seconds of each ADMM worker: its share of the work, whatever else runs on the machine.
using WorkerSeconds = std::array<double, kAdmmWorkers>;

inline double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs work(w) for every worker w, worker 0 on this thread, the others on one thread each, and
// adds each one's CPU seconds to busy[w]; rethrows the first error once all have finished.
template <typename F>
inline void on_workers(WorkerSeconds& busy, F&& work) {
  std::vector<std::exception_ptr> errors(kAdmmWorkers);
  auto guarded = [&](int w) {
    const double start = thread_cpu_seconds();
    try {
      work(w);
      busy[static_cast<std::size_t>(w)] += thread_cpu_seconds() - start;
    } catch (...) {
      errors[static_cast<std::size_t>(w)] = std::current_exception();
    }
  };
  std::vector<std::thread> others;
  for (int w = 1; w < kAdmmWorkers; ++w) others.emplace_back(guarded, w);
  guarded(0);
  for (std::thread& t : others) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// What crosses a worker boundary, as a transport would carry it: a copy, or int8 codes for p.
inline real::Tensor<float> message(const real::Tensor<float>& values, const real::AdmmSettings& s,
                                   bool is_p) {
  if (!is_p || !s.quantize_p) return values;
  return real::dequantize<float>(real::quantize(values, s.grid), values.shape(), s.grid);
}

// One pdADMM iteration on kAdmmWorkers workers: every backward phase, a barrier, every forward phase.
// Layer l is a boundary layer when layer l-1 is on another worker; its inputs are messages.
inline void admm_on_workers(real::AdmmNetwork<float>& net, const real::AdmmSettings& s,
                            real::Backend& backend, WorkerSeconds& busy) {
  const std::size_t count = net.layers.size();
  auto boundary = [&](std::size_t l) { return l > 0 && admm_worker(l, count) != admm_worker(l - 1, count); };
  std::vector<real::Tensor<float>> q_in(count), u_in(count), p_in(count);
  for (std::size_t l = 1; l < count; ++l) {
    if (!boundary(l)) continue;
    q_in[l] = message(net.layers[l - 1].q, s, false);
    u_in[l] = message(net.layers[l - 1].u, s, false);
  }
  on_workers(busy, [&](int w) {
    for (std::size_t l = 0; l < count; ++l) {
      if (admm_worker(l, count) != w) continue;
      real::BackwardInputs<float> in;
      if (l > 0) {
        in.q_prev = boundary(l) ? &q_in[l] : &net.layers[l - 1].q;
        in.u_prev = boundary(l) ? &u_in[l] : &net.layers[l - 1].u;
      }
      if (l + 1 == count) in.labels = &net.labels;
      real::update_layer_backward(net.layers[l], in, s, backend);
      if (boundary(l)) p_in[l - 1] = message(net.layers[l].p, s, true);
    }
  });
  on_workers(busy, [&](int w) {
    for (std::size_t l = 0; l + 1 < count; ++l) {
      if (admm_worker(l, count) != w) continue;
      real::update_layer_forward(net.layers[l], boundary(l + 1) ? p_in[l] : net.layers[l + 1].p, s);
    }
  });
}

// Whether two tensors / networks hold the same bits: the driver's check against iterate_serial.
inline bool bitwise_equal(const real::Tensor<float>& a, const real::Tensor<float>& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(float)) == 0;
}

inline bool bitwise_equal(const real::AdmmNetwork<float>& a, const real::AdmmNetwork<float>& b) {
  if (a.layers.size() != b.layers.size()) return false;
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const auto &x = a.layers[l], &y = b.layers[l];
    if (!bitwise_equal(x.p, y.p) || !bitwise_equal(x.W, y.W) || !bitwise_equal(x.b, y.b) ||
        !bitwise_equal(x.z, y.z) || !bitwise_equal(x.q, y.q) || !bitwise_equal(x.u, y.u))
      return false;
  }
  return true;
}

}  // namespace strata::bench
