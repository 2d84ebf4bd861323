// The reference drivers of ADMM training: one iteration of every layer of an AdmmNetwork, run
// serially (dlADMM's backward-forward sweep) or as pdADMM's message-passing Jacobi sweep. They
// call the per-layer updates of strata/real/kernels/admm.hpp (see there for the problem, the
// iteration order and the layout) and serve as test oracles: a Plan run through the Interpreter
// (train/admm_plan.hpp) must give their numbers (admm_plan_test.cpp).
//
// Ownership: the network is the caller's; drivers borrow it for the call. Thread safety: with
// `threads`, iterate_parallel runs each layer's phase on its own std::thread and joins them
// before it returns; the caller's Backend must allow concurrent calls (CpuBackend does).
// Errors: settings are validated first (InputError naming the parameter).
#pragma once

#include <cstdint>

#include "strata/real/core/backend.hpp"
#include "strata/real/kernels/admm.hpp"

namespace strata::real {

// Bytes one iteration sends across the layer boundaries.
struct AdmmTraffic {
  std::int64_t p_bytes = 0;  // backward: sizeof(T) per value, 1 with quantize_p (int8 codes)
  std::int64_t q_bytes = 0;  // forward
  std::int64_t u_bytes = 0;  // forward
};

// The dlADMM schedule: backward phases for l = L−1..0, then forward phases for l = 0..L−2, each
// reading its neighbours' current values in place.
template <typename T>
AdmmTraffic iterate_serial(AdmmNetwork<T>& net, const AdmmSettings& s, Backend& backend);
// pdADMM (Jacobi): every layer works from messages: it receives copies of q_{l-1}, u_{l-1} of
// the previous iteration, runs its backward phase, sends p_l (int8 codes with quantize_p,
// decoded by the receiver), then runs its forward phase on the received p_{l+1} and sends q, u.
// With `threads`, each layer's phase runs on its own std::thread (a barrier between phases).
template <typename T>
AdmmTraffic iterate_parallel(AdmmNetwork<T>& net, const AdmmSettings& s, Backend& backend,
                             bool threads = false);

}  // namespace strata::real
