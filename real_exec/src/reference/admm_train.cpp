// The reference drivers of reference/admm_train.hpp: whole-network iterations built from the
// per-layer updates of kernels/admm.hpp. Equations cite pdADMM (Wang, Chai, Cheng & Zhao, ICDM
// 2020) and its public code.
#include "strata/real/reference/admm_train.hpp"

#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using I64 = std::int64_t;

// ---- drivers ----

template <typename T>
BackwardInputs<T> backward_inputs(const AdmmNetwork<T>& net, std::size_t l, const Tensor<T>* q_prev,
                                  const Tensor<T>* u_prev) {
  BackwardInputs<T> in;
  if (l > 0) {
    in.q_prev = q_prev;
    in.u_prev = u_prev;
  }
  if (l + 1 == net.layers.size()) in.labels = &net.labels;
  return in;
}

template <typename T>
AdmmTraffic traffic_of(const AdmmNetwork<T>& net, const AdmmSettings& s) {
  AdmmTraffic t;
  for (std::size_t l = 1; l < net.layers.size(); ++l) {
    const I64 values = net.layers[l].p.size();
    t.p_bytes += values * (s.quantize_p ? 1 : static_cast<I64>(sizeof(T)));
    t.q_bytes += values * static_cast<I64>(sizeof(T));
    t.u_bytes += values * static_cast<I64>(sizeof(T));
  }
  return t;
}

// Runs work(l) for l in [0, count), on one thread each when `threads`; rethrows the first error.
void for_each_layer(std::size_t count, bool threads, const std::function<void(std::size_t)>& work) {
  if (!threads) {
    for (std::size_t l = 0; l < count; ++l) work(l);
    return;
  }
  std::vector<std::exception_ptr> errors(count);
  std::vector<std::thread> pool;
  pool.reserve(count);
  for (std::size_t l = 0; l < count; ++l) {
    pool.emplace_back([&, l] {
      try {
        work(l);
      } catch (...) {
        errors[l] = std::current_exception();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

template <typename T>
AdmmTraffic iterate_serial(AdmmNetwork<T>& net, const AdmmSettings& s, Backend& backend) {
  validate(s);
  STRATA_ASSERT(!net.layers.empty(), "admm: a network without layers");
  const std::size_t count = net.layers.size();
  for (std::size_t l = count; l-- > 0;) {
    const Tensor<T>* q_prev = l > 0 ? &net.layers[l - 1].q : nullptr;
    const Tensor<T>* u_prev = l > 0 ? &net.layers[l - 1].u : nullptr;
    update_layer_backward(net.layers[l], backward_inputs(net, l, q_prev, u_prev), s, backend);
  }
  for (std::size_t l = 0; l + 1 < count; ++l) update_layer_forward(net.layers[l], net.layers[l + 1].p, s);
  return traffic_of(net, s);
}

template <typename T>
AdmmTraffic iterate_parallel(AdmmNetwork<T>& net, const AdmmSettings& s, Backend& backend, bool threads) {
  validate(s);
  STRATA_ASSERT(!net.layers.empty(), "admm: a network without layers");
  const std::size_t count = net.layers.size();
  // Messages of iteration k-1, as layer l received them: q_{l-1}, u_{l-1}.
  std::vector<Tensor<T>> q_in(count), u_in(count), p_in(count);
  for (std::size_t l = 1; l < count; ++l) {
    q_in[l] = net.layers[l - 1].q;
    u_in[l] = net.layers[l - 1].u;
  }
  for_each_layer(count, threads, [&](std::size_t l) {
    update_layer_backward(net.layers[l], backward_inputs(net, l, &q_in[l], &u_in[l]), s, backend);
    if (l == 0) return;
    const Tensor<T>& p = net.layers[l].p;  // sent to layer l-1
    p_in[l - 1] = s.quantize_p ? dequantize<T>(quantize(p, s.grid), p.shape(), s.grid) : p;
  });
  for_each_layer(count - 1, threads, [&](std::size_t l) { update_layer_forward(net.layers[l], p_in[l], s); });
  return traffic_of(net, s);
}

#define STRATA_ADMM_INSTANTIATE(T)                                                     \
  template AdmmTraffic iterate_serial(AdmmNetwork<T>&, const AdmmSettings&, Backend&); \
  template AdmmTraffic iterate_parallel(AdmmNetwork<T>&, const AdmmSettings&, Backend&, bool);

STRATA_ADMM_INSTANTIATE(float)
STRATA_ADMM_INSTANTIATE(double)
#undef STRATA_ADMM_INSTANTIATE

}  // namespace strata::real
