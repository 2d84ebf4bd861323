// ADMM Plans run for real (AdmmPlanTrainer through the Interpreter): the layer-parallel pdADMM
// Plan on 2 workers and the serial dlADMM Plan give the iterates of admm.hpp's drivers (float64,
// same cold start, same columns); pdADMM-G-Q's Plan sends p as int8 codes, so the transport counts
// one byte per p value, and still gives the quantised driver's iterates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/reference/admm_train.hpp"
#include "strata/real/train/admm_plan.hpp"
#include "strata/real/transport/thread_transport.hpp"

namespace strata::real {
namespace {

constexpr std::int64_t kSamples = 200;
constexpr std::uint64_t kSeed = 3;
constexpr int kSweeps = 3;

const AdmmData<double>& columns() {
  static const AdmmData<double> data =
      admm_columns<double>(load_fashion_mnist(DatasetSplit::train), kSamples, kSeed);
  return data;
}

Plan admm_plan(Solver solver, int workers) {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = kSamples;
  std::map<std::string, std::string> sets{{"admm_iterations", std::to_string(kSweeps)}};
  const SolverConfig s = parse_solver_config(solver, sets);
  Plan plan = lower_solver(make_model("mlp", {{"sizes", "784,48,32,10"}}), c, s);
  plan.validate();
  return plan;
}

double max_difference(const AdmmNetwork<double>& a, const AdmmNetwork<double>& b) {
  double worst = 0;
  EXPECT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l)
    for (const auto member : {&AdmmLayer<double>::W, &AdmmLayer<double>::b}) {
      const Tensor<double>& x = a.layers[l].*member;
      const Tensor<double>& y = b.layers[l].*member;
      EXPECT_EQ(x.size(), y.size());
      for (std::int64_t i = 0; i < std::min(x.size(), y.size()); ++i)
        worst = std::max(worst, std::abs(x[i] - y[i]));
    }
  return worst;
}

struct PlanRun {
  AdmmNetwork<double> net;
  std::uint64_t bytes = 0;
};

PlanRun run_plan(const Plan& plan) {
  CpuBackend backend;
  ThreadTransport<double> transport;
  AdmmPlanTrainer<double> trainer(plan, columns(), kSeed, backend, transport, false);
  trainer.run();
  return {trainer.network(), trainer.bytes_sent()};
}

AdmmNetwork<double> driver(bool quantize) {
  CpuBackend backend;
  AdmmNetwork<double> net = cold_start(columns().x, columns().labels, {784, 48, 32, 10}, kSeed, backend);
  AdmmSettings s;
  s.quantize_p = quantize;
  for (int k = 0; k < kSweeps; ++k) iterate_parallel(net, s, backend);
  return net;
}

TEST(AdmmPlan, ShapeComesFromTheBackwardTasks) {
  const AdmmPlanShape shape = admm_plan_shape(admm_plan(Solver::pdadmm, 2));
  EXPECT_EQ(shape.widths, (std::vector<std::int64_t>{784, 48, 32, 10}));
  EXPECT_EQ(shape.samples, kSamples);
}

TEST(AdmmPlan, PdadmmOnTwoWorkersAndDladmmGiveTheDriversIterates) {
  const AdmmNetwork<double> expected = driver(false);
  EXPECT_LT(max_difference(run_plan(admm_plan(Solver::pdadmm, 2)).net, expected), 1e-12);
  EXPECT_LT(max_difference(run_plan(admm_plan(Solver::pdadmm, 3)).net, expected), 1e-12);
  EXPECT_LT(max_difference(run_plan(admm_plan(Solver::dladmm, 1)).net, expected), 1e-12);
  // And the iterates moved: the comparison is not of two cold starts.
  CpuBackend backend;
  const AdmmNetwork<double> start =
      cold_start(columns().x, columns().labels, {784, 48, 32, 10}, kSeed, backend);
  EXPECT_GT(max_difference(start, expected), 1e-6);
}

TEST(AdmmPlan, QuantizedPTravelsAsOneBytePerValue) {
  const PlanRun plain = run_plan(admm_plan(Solver::pdadmm, 2));
  const PlanRun quantized = run_plan(admm_plan(Solver::pdadmm_g_q, 2));
  EXPECT_LT(max_difference(quantized.net, driver(true)), 1e-12);
  // 2 workers on 3 layers (layer l on worker floor(2l/3): 0, 0, 1): one boundary, after layer 1
  // (32 units): per sweep p backward, q and u forward, 32 x 200 values each.
  const std::uint64_t values = 32 * kSamples * kSweeps;
  EXPECT_EQ(plain.bytes, 3 * values * sizeof(double));
  EXPECT_EQ(quantized.bytes, values * 1 + 2 * values * sizeof(double));
}

}  // namespace
}  // namespace strata::real
