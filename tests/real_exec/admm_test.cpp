// The ADMM solver's numerics (admm.hpp) on tiny networks, float64: schedules agree, every update
// solves its subproblem, hand-derived q/u/z/b values, quantisation, traffic, errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "strata/real/kernels/admm.hpp"
#include "strata/real/reference/admm_train.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using ::testing::HasSubstr;
using T = double;

Tensor<T> random_tensor(Shape shape, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor<T> t = Tensor<T>::zeros(std::move(shape));
  for (std::int64_t i = 0; i < t.size(); ++i) t[i] = d(rng);
  return t;
}

// A 4-layer network 12-8-8-8-3 on 20 random samples, after `warmup` serial iterations (so that
// u, q and z are not at their initial values).
AdmmNetwork<T> tiny_network(Backend& backend, int warmup = 2, const AdmmSettings& s = {}) {
  std::mt19937_64 rng(7);
  const std::int64_t n = 20;
  Tensor<T> x = random_tensor({12, n}, 0, 1, rng);
  Tensor<T> labels = Tensor<T>::zeros({3, n});
  for (std::int64_t j = 0; j < n; ++j) labels[static_cast<std::int64_t>(rng() % 3) * n + j] = 1;
  AdmmNetwork<T> net = cold_start(x, labels, {12, 8, 8, 8, 3}, 3, backend);
  for (int k = 0; k < warmup; ++k) iterate_serial(net, s, backend);
  return net;
}

AdmmSettings strong_settings() {  // large ν, ρ: the iterates move visibly in a few iterations
  AdmmSettings s;
  s.rho = 0.5;
  s.nu = 0.3;
  s.p_curvature = 0.01;
  s.w_curvature = 0.01;
  return s;
}

void expect_identical(const Tensor<T>& a, const Tensor<T>& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (std::int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " element " << i;
}

void expect_identical(const AdmmNetwork<T>& a, const AdmmNetwork<T>& b) {
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const std::string at = "layer " + std::to_string(l) + " ";
    expect_identical(a.layers[l].p, b.layers[l].p, at + "p");
    expect_identical(a.layers[l].W, b.layers[l].W, at + "W");
    expect_identical(a.layers[l].b, b.layers[l].b, at + "b");
    expect_identical(a.layers[l].z, b.layers[l].z, at + "z");
    expect_identical(a.layers[l].q, b.layers[l].q, at + "q");
    expect_identical(a.layers[l].u, b.layers[l].u, at + "u");
    expect_identical(a.layers[l].wp, b.layers[l].wp, at + "wp");
  }
}

TEST(AdmmSchedules, SerialAndParallelGiveBitwiseIdenticalIterates) {
  CpuBackend backend;
  for (const bool quantized : {false, true}) {
    AdmmSettings s = strong_settings();
    s.quantize_p = quantized;
    AdmmNetwork<T> serial = tiny_network(backend, 0);
    AdmmNetwork<T> looped = serial, threaded = serial;
    for (int k = 0; k < 4; ++k) {
      iterate_serial(serial, s, backend);
      iterate_parallel(looped, s, backend, false);
      iterate_parallel(threaded, s, backend, true);
    }
    SCOPED_TRACE(quantized ? "pdADMM-G-Q" : "pdADMM");
    expect_identical(serial, looped);
    expect_identical(serial, threaded);
  }
}

// Each layer's update depends only on its own state and the neighbour snapshot it is handed:
// any order of the layers gives the same numbers (what lets a Plan run them on any worker).
TEST(AdmmSchedules, LayerUpdatesDependOnlyOnTheNeighbourSnapshot) {
  CpuBackend backend;
  const AdmmSettings s = strong_settings();
  const AdmmNetwork<T> start = tiny_network(backend, 2, s);
  const std::size_t count = start.layers.size();
  auto run = [&](bool backward_order) {
    AdmmNetwork<T> net = start;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t l = backward_order ? count - 1 - i : i;
      BackwardInputs<T> in;
      if (l > 0) in = {&start.layers[l - 1].q, &start.layers[l - 1].u, nullptr};  // iteration k-1
      if (l + 1 == count) in.labels = &start.labels;
      update_layer_backward(net.layers[l], in, s, backend);
    }
    const AdmmNetwork<T> after_backward = net;  // the p^k snapshot every forward phase reads
    for (std::size_t i = 0; i + 1 < count; ++i) {
      const std::size_t l = backward_order ? i : count - 2 - i;
      update_layer_forward(net.layers[l], after_backward.layers[l + 1].p, s);
    }
    return net;
  };
  const AdmmNetwork<T> a = run(true), b = run(false);
  expect_identical(a, b);
  AdmmNetwork<T> driver = start;
  iterate_serial(driver, s, backend);
  expect_identical(a, driver);
}

// ---- each update solves (or decreases) its subproblem ----

TEST(AdmmUpdates, BacktrackingDecreasesThePAndWSubproblems) {
  CpuBackend backend;
  AdmmSettings s = strong_settings();
  s.p_curvature = 1e-6;  // forces several doublings
  s.w_curvature = 1e-6;
  s.max_backtracks = 40;
  AdmmNetwork<T> net = tiny_network(backend, 2, s);
  AdmmLayer<T>& layer = net.layers.back();  // its z holds the labels' pull: far from optimal
  const AdmmLayer<T>& prev = net.layers[net.layers.size() - 2];
  const Tensor<T> p_old = layer.p;
  const double before_p = p_objective(layer, p_old, prev.q, prev.u, s, backend);
  const BacktrackResult bp = update_p(layer, prev.q, prev.u, s, backend);
  EXPECT_TRUE(bp.moved);
  EXPECT_GT(bp.doublings, 0);
  EXPECT_LT(p_objective(layer, layer.p, prev.q, prev.u, s, backend), before_p);

  const Tensor<T> w_old = layer.W;
  const double before_w = w_objective(layer, w_old, s, backend);
  const BacktrackResult bw = update_W(layer, s, backend);
  EXPECT_TRUE(bw.moved);
  EXPECT_GT(bw.doublings, 0);
  EXPECT_LT(w_objective(layer, layer.W, s, backend), before_w);
  // The cached W·p followed both steps.
  Tensor<T> wp = Tensor<T>::zeros(layer.wp.shape());
  backend.gemm(Transpose::no, Transpose::no, wp.dim(0), wp.dim(1), layer.W.dim(1), 1.0, layer.W.data(),
               layer.W.dim(1), layer.p.data(), layer.p.dim(1), 0.0, wp.data(), wp.dim(1));
  for (std::int64_t i = 0; i < wp.size(); ++i) EXPECT_NEAR(layer.wp[i], wp[i], 1e-12);
}

// Objective at the update vs at random perturbations of it, at several scales.
template <typename Objective>
void expect_minimum(const Tensor<T>& at, Objective objective, std::uint64_t seed, double slack = 0) {
  std::mt19937_64 rng(seed);
  const double best = objective(at);
  for (const double scale : {1e-5, 1e-3, 1e-1, 1.0}) {
    for (int trial = 0; trial < 5; ++trial) {
      Tensor<T> moved = at;
      const Tensor<T> delta = random_tensor(at.shape(), -scale, scale, rng);
      for (std::int64_t i = 0; i < moved.size(); ++i) moved[i] += delta[i];
      EXPECT_LE(best, objective(moved) + slack) << "perturbation scale " << scale;
    }
  }
}

TEST(AdmmUpdates, ClosedFormBAndHiddenZAndQMinimiseTheirSubproblems) {
  CpuBackend backend;
  const AdmmSettings s = strong_settings();
  AdmmNetwork<T> net = tiny_network(backend, 2, s);
  AdmmLayer<T>& layer = net.layers[1];
  update_b(layer);
  expect_minimum(
      layer.b,
      [&](const Tensor<T>& b) {
        AdmmLayer<T> at = layer;
        at.b = b;
        return w_objective(at, at.W, s, backend);
      },
      1);

  const Tensor<T> z_old = layer.z;
  update_z_hidden(layer, s);
  expect_minimum(
      layer.z, [&](const Tensor<T>& z) { return z_hidden_objective(layer, z, z_old, s); }, 2);

  const Tensor<T>& p_next = net.layers[2].p;
  update_q(layer, p_next, s);
  expect_minimum(
      layer.q,
      [&](const Tensor<T>& q) {
        double f = 0;
        for (std::int64_t i = 0; i < q.size(); ++i) {
          const double h = q[i] - std::max(layer.z[i], 0.0), d = p_next[i] - q[i];
          f += s.nu / 2 * h * h + layer.u[i] * d + s.rho / 2 * d * d;
        }
        return f;
      },
      3);
}

TEST(AdmmUpdates, FistaMinimisesTheOutputZSubproblem) {
  CpuBackend backend;
  AdmmSettings s = strong_settings();
  s.fista_iterations = 500;
  s.fista_tolerance = 0;
  AdmmNetwork<T> net = tiny_network(backend, 2, s);
  AdmmLayer<T>& out = net.layers.back();
  // The warm-up's last sweep may leave z at this subproblem's minimiser to the last bit (it is
  // the sweep's last update, with these settings): start it away from there.
  for (std::int64_t i = 0; i < out.z.size(); ++i) out.z[i] += 0.5;
  const int iterations = update_z_output(out, net.labels, s);
  EXPECT_GT(iterations, 1);
  expect_minimum(
      out.z, [&](const Tensor<T>& z) { return z_output_objective(out, z, net.labels, s); }, 4, 1e-12);
}

// ---- hand-derived values ----

AdmmLayer<T> one_row_layer(std::vector<T> z, std::vector<T> q, std::vector<T> u, std::vector<T> wp, T bias) {
  const auto n = static_cast<std::int64_t>(z.size());
  AdmmLayer<T> layer;
  layer.p = Tensor<T>::zeros({1, n});
  layer.W = Tensor<T>::zeros({1, 1});
  layer.b = Tensor<T>({1}, {bias});
  layer.z = Tensor<T>({1, n}, std::move(z));
  layer.q = Tensor<T>({1, n}, std::move(q));
  layer.u = Tensor<T>({1, n}, std::move(u));
  layer.wp = Tensor<T>({1, n}, std::move(wp));
  return layer;
}

TEST(AdmmUpdates, QAndUMatchHandDerivedValues) {
  AdmmSettings s;
  s.nu = 1;
  s.rho = 1;
  AdmmLayer<T> layer = one_row_layer({-1, 2}, {0, 0}, {0.5, -1}, {0, 0}, 0);
  const Tensor<T> p_next({1, 2}, {1.5, 3});
  update_q(layer, p_next, s);  // q = (ν ReLU(z) + u + ρ p) / (ν + ρ) = ((0+0.5+1.5)/2, (2−1+3)/2)
  EXPECT_DOUBLE_EQ(layer.q[0], 1.0);
  EXPECT_DOUBLE_EQ(layer.q[1], 2.0);
  update_u(layer, p_next, s);  // u + ρ (p − q) = (0.5 + 0.5, −1 + 1)
  EXPECT_DOUBLE_EQ(layer.u[0], 1.0);
  EXPECT_DOUBLE_EQ(layer.u[1], 0.0);

  s.nu = 2;
  s.rho = 0.5;
  AdmmLayer<T> other = one_row_layer({3, -4}, {0, 0}, {1, 0}, {0, 0}, 0);
  const Tensor<T> p2({1, 2}, {2, 6});
  update_q(other, p2, s);  // ((2·3 + 1 + 1) / 2.5, (0 + 0 + 3) / 2.5)
  EXPECT_DOUBLE_EQ(other.q[0], 3.2);
  EXPECT_DOUBLE_EQ(other.q[1], 1.2);
  update_u(other, p2, s);  // (1 + 0.5·(2 − 3.2), 0 + 0.5·(6 − 1.2))
  EXPECT_DOUBLE_EQ(other.u[0], 0.4);
  EXPECT_DOUBLE_EQ(other.u[1], 2.4);
}

TEST(AdmmUpdates, HiddenZAndBMatchHandDerivedValues) {
  // a = wp + b. Element 0: a = 1, old = 1, q = 1: z ≥ 0 branch (1+1+1)/3 = 1 costs 0 → 1.
  // Element 1: a = −2, old = 0, q = 0: z ≤ 0 branch −1 costs 2, z ≥ 0 branch 0 costs 4 → −1.
  // Element 2: a = 0.5, old = −3, q = 0: z ≤ 0 branch −1.25 costs 6.125, z ≥ 0: 0 costs 9.25 → −1.25.
  AdmmLayer<T> layer = one_row_layer({1, 0, -3}, {1, 0, 0}, {0, 0, 0}, {0.5, -2.5, 0}, 0.5);
  update_z_hidden(layer, AdmmSettings{});
  EXPECT_DOUBLE_EQ(layer.z[0], 1.0);
  EXPECT_DOUBLE_EQ(layer.z[1], -1.0);
  EXPECT_DOUBLE_EQ(layer.z[2], -1.25);
  update_b(layer);  // mean of z − wp = (0.5 + 1.5 − 1.25) / 3
  EXPECT_DOUBLE_EQ(layer.b[0], 0.25);
}

// ---- quantisation, traffic, warm start ----

TEST(AdmmQuantization, RoundTripErrorIsAtMostHalfAStepAndOneBytePerValue) {
  std::mt19937_64 rng(11);
  const QuantGrid grid{1.0 / 16};
  const Tensor<T> values = random_tensor({37, 29}, -128 * grid.step, 127 * grid.step, rng);
  const std::vector<std::int8_t> codes = quantize(values, grid);
  EXPECT_EQ(static_cast<std::int64_t>(codes.size()), values.size());
  const Tensor<T> back = dequantize<T>(codes, values.shape(), grid);
  for (std::int64_t i = 0; i < values.size(); ++i) EXPECT_LE(std::abs(back[i] - values[i]), grid.step / 2);
  const std::vector<std::int8_t> again = quantize(back, grid);
  EXPECT_EQ(again, codes);  // grid points are fixed points
  const std::vector<std::int8_t> ends = quantize(Tensor<T>({3}, {100.0, -100.0, 0.03}), grid);
  EXPECT_EQ(ends, (std::vector<std::int8_t>{127, -128, 0}));
}

TEST(AdmmQuantization, QuantizedPStaysOnTheGridAndTrafficCountsInt8) {
  CpuBackend backend;
  AdmmSettings s = strong_settings();
  AdmmNetwork<T> plain = tiny_network(backend, 0);
  const AdmmTraffic t = iterate_parallel(plain, s, backend);
  EXPECT_EQ(t.p_bytes, 3 * 8 * 20 * 8);  // three boundaries, 8 x 20 values, float64
  EXPECT_EQ(t.q_bytes, t.p_bytes);
  EXPECT_EQ(t.u_bytes, t.p_bytes);
  s.quantize_p = true;
  AdmmNetwork<T> quantized = tiny_network(backend, 0);
  const AdmmTraffic tq = iterate_parallel(quantized, s, backend);
  EXPECT_EQ(tq.p_bytes, 3 * 8 * 20);
  for (std::size_t l = 1; l < quantized.layers.size(); ++l) {
    const Tensor<T>& p = quantized.layers[l].p;
    expect_identical(dequantize<T>(quantize(p, s.grid), p.shape(), s.grid), p, "p on the grid");
  }
}

TEST(AdmmWarmStart, IdentityLayersKeepTheFunctionOfTheShallowNetwork) {
  CpuBackend backend;
  const AdmmNetwork<T> shallow = tiny_network(backend, 3, strong_settings());
  const AdmmNetwork<T> deep = warm_start_deeper(shallow, 2, backend);
  ASSERT_EQ(deep.layers.size(), shallow.layers.size() + 2);
  std::mt19937_64 rng(5);
  const Tensor<T> x = random_tensor({12, 9}, 0, 1, rng);
  const Tensor<T> a = forward_logits(shallow, x, backend), b = forward_logits(deep, x, backend);
  for (std::int64_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(a[i], b[i]);
  AdmmNetwork<T> trained = deep;
  iterate_parallel(trained, strong_settings(), backend);  // shapes chain: the updates accept it
  EXPECT_THROW(warm_start_deeper(shallow, -1, backend), InputError);
}

// ---- errors and the adaptive ρ rule ----

std::string error_of(const AdmmSettings& s) {
  try {
    validate(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(AdmmErrors, BadHyperparametersNameTheParameter) {
  AdmmSettings s;
  s.rho = 0;
  EXPECT_EQ(error_of(s), "admm: rho = 0: must be > 0");
  s = {};
  s.nu = -1e-3;
  EXPECT_EQ(error_of(s), "admm: nu = -0.001: must be > 0");
  s = {};
  s.nu = std::nan("");
  EXPECT_THAT(error_of(s), HasSubstr("admm: nu = nan"));
  s = {};
  s.grid.step = 0;
  EXPECT_THAT(error_of(s), HasSubstr("grid.step"));
  s = {};
  s.fista_iterations = 0;
  EXPECT_THAT(error_of(s), HasSubstr("fista_iterations = 0"));

  CpuBackend backend;
  const Tensor<T> x = Tensor<T>::zeros({4, 2}), y = Tensor<T>::zeros({3, 2});
  auto cold_error = [&](const std::vector<std::int64_t>& widths) {
    try {
      cold_start(x, y, widths, 0, backend);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(cold_error({4}), "admm: widths has 1 entries: a network needs at least 2 (one layer)");
  EXPECT_EQ(cold_error({4, 0, 3}), "admm: widths[1] = 0: must be >= 1");
  EXPECT_THAT(cold_error({5, 3}), HasSubstr("input must be [5, N]"));
  AdmmNetwork<T> net = cold_start(x, y, {4, 3}, 0, backend);
  AdmmSettings bad;
  bad.rho = -1;
  EXPECT_THROW(iterate_parallel(net, bad, backend), InputError);
  EXPECT_THROW(iterate_serial(net, bad, backend), InputError);
}

TEST(AdmmAdaptiveRho, RaisesRhoAndNuTenfoldWhenTheCostStallsTwice) {
  AdmmSettings s;
  s.rho = 1e-4;
  s.nu = 2e-4;
  AdaptiveRho rule(0.01, 1e-2);
  EXPECT_FALSE(rule.observe(2.0, s));
  EXPECT_FALSE(rule.observe(1.995, s));  // stalls, but k < 3
  EXPECT_FALSE(rule.observe(1.5, s));
  EXPECT_FALSE(rule.observe(1.495, s));  // one stall only
  EXPECT_TRUE(rule.observe(1.49, s));    // two in a row
  EXPECT_DOUBLE_EQ(s.rho, 1e-3);
  EXPECT_DOUBLE_EQ(s.nu, 2e-3);
  EXPECT_TRUE(rule.observe(1.6, s));  // still stalled (rising): again, capped at rho_max
  EXPECT_DOUBLE_EQ(s.rho, 1e-2);
  EXPECT_FALSE(rule.observe(1.7, s));  // at the cap
  EXPECT_DOUBLE_EQ(s.nu, 2e-2);
}

}  // namespace
}  // namespace strata::real
