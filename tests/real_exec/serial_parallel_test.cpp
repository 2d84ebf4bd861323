// The serial-parallel hybrid run for real through the Plan interpreter (float64, plain SGD): with a
// correction every minibatch it is backprop; the parallel phase trains from the stored states; the
// penalty method keeps the duals at 0 where the augmented Lagrangian moves them; the downsampling
// filter pools and unpools by hand-checked values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/real/transport/thread_transport.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"
#include "weights.hpp"

namespace strata::real {
namespace {

using training_runs::batch_indices;
using training_runs::kBatch;
using training_runs::max_abs_difference;
using training_runs::mlp_plan;
using training_runs::train_config;

Plan hybrid_plan(const std::string& model, int workers, int period, int instances, bool al = false,
                 int downsample = 1, Optimizer optimizer = Optimizer::sgd) {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = kBatch;  // per instance
  c.optimizer = optimizer;
  SolverConfig s;
  s.solver = Solver::serial_parallel;
  s.correction_period = period;
  s.instances = instances;
  s.augmented_lagrangian = al;
  s.downsample = downsample;
  return lower_solver(make_model(model), c, s);
}

const std::vector<double>& array(Trainer<double>& trainer, const Plan& plan, const std::string& id) {
  return training_runs::buffer_array(trainer, plan, id);
}

// Correction period 1: every minibatch is the serial forward-backward pass, no parallel phase,
// and 2 runs of 4 minibatches on 2 workers are 8 steps of minibatch SGD on one.
TEST(SerialParallel, CorrectionPeriodOneIsBackprop) {
  const auto sgd = training_runs::weights_after_runs(mlp_plan(1, 1, 1), 8);
  const auto hybrid = training_runs::weights_after_runs(hybrid_plan("mlp", 2, 1, 4), 2);
  ASSERT_EQ(hybrid.size(), 3u);
  EXPECT_LT(max_abs_difference(sgd, hybrid), 1e-9);
  // With a parallel phase it is another run.
  EXPECT_GT(max_abs_difference(sgd, training_runs::weights_after_runs(hybrid_plan("mlp", 2, 2, 4), 2)), 1e-6);
}

// A serial minibatch refreshes its samples' stored states to the forward pass; a parallel one
// starts from them: block 1 reads what block 0 stored (0 for a sample not seen), and the z update
// writes the rows back. Penalty: lambda stays 0, with no store; al: it moves once a state is read.
TEST(SerialParallel, TheParallelPhaseTrainsFromTheStoredStates) {
  for (const bool al : {false, true}) {
    const Plan plan = hybrid_plan("mlp", 2, 2, 2, al);  // minibatch 0 parallel, 1 serial
    CpuBackend backend;
    TrainConfig config = train_config();
    config.release_buffers = false;
    Trainer<double> trainer(plan, backend, config);
    std::vector<std::int64_t> twice = batch_indices(0);  // the same 64 samples in both minibatches
    twice.insert(twice.end(), twice.begin(), twice.end());
    trainer.train_batch(training_runs::train_images(), twice);
    const std::vector<double> seen = array(trainer, plan, "dp0/pp0/tp0/admm/b0/seen");
    const std::vector<double> z_in = array(trainer, plan, "dp0/pp0/tp0/mb0/admm/b0/z_in");
    const std::vector<double> z_store = array(trainer, plan, "dp0/pp0/tp0/admm/b0/z_store");
    const std::vector<double> a1 = array(trainer, plan, "dp0/pp0/tp0/mb1/act/relu1");
    ASSERT_EQ(seen.size(), 60000u);
    ASSERT_EQ(z_in.size(), static_cast<std::size_t>(kBatch * 256));
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i < 64 ? 1.0 : 0.0) << i;
    EXPECT_EQ(*std::max_element(z_in.begin(), z_in.end()), 0.0);  // nothing stored before the first visit
    // The serial minibatch ran after the parallel one's update: its forward pass is what is stored.
    for (std::size_t j = 0; j < z_in.size(); ++j) ASSERT_EQ(z_store[j], a1[j]) << j;
    // A second run: the parallel minibatch now reads the stored rows.
    trainer.train_batch(training_runs::train_images(), twice);
    const std::vector<double> again = array(trainer, plan, "dp0/pp0/tp0/mb0/admm/b0/z_in");
    EXPECT_EQ(again[0], z_store[0]);
    EXPECT_GT(*std::max_element(again.begin(), again.end()), 0.0);
    // The duals: al keeps a store of them, and they move once a stored state is read back; the
    // penalty method has no store and its lambda stays 0.
    const auto largest = [](const std::vector<double>& v) {
      double m = 0;
      for (double x : v) m = std::max(m, std::abs(x));
      return m;
    };
    bool has_store = false;
    for (const Buffer& b : plan.buffers())
      has_store = has_store || b.id == "dp0/pp0/tp0/admm/b0/lambda_store";
    EXPECT_EQ(has_store, al);
    if (al)
      EXPECT_GT(largest(array(trainer, plan, "dp0/pp0/tp0/admm/b0/lambda_store")), 1e-6)
          << "al moves the duals";
    else
      EXPECT_EQ(largest(array(trainer, plan, "dp0/pp0/tp0/mb0/admm/b0/lambda")), 0.0)
          << "penalty keeps them at 0";
  }
}

// --set warmup_epochs hands a run from one Trainer to another (Trainer::continue_from): a
// Trainer that continues from another's weights, Adam moments and step counts, stores and seen
// flags after 2 runs, then runs a third, ends where one Trainer running all 3 ends. The warm-up's
// serial Plan (correction period 1) hands over to the hybrid's; another model's Plan is refused.
TEST(SerialParallel, ATrainerContinuesFromAnotherExactly) {
  const Plan plan = hybrid_plan("mlp", 2, 2, 4, true, 1, Optimizer::adam);
  CpuBackend backend;
  TrainConfig config = train_config();
  config.optimizer.kind = Optimizer::adam;
  config.optimizer.learning_rate = 1e-3;
  const auto run_indices = [](int run) {
    std::vector<std::int64_t> indices;
    for (int k = 0; k < 4; ++k) {
      const std::vector<std::int64_t> b = batch_indices(4 * run + k);
      indices.insert(indices.end(), b.begin(), b.end());
    }
    return indices;
  };
  Trainer<double> whole(plan, backend, config);
  Trainer<double> first(plan, backend, config);
  for (int run = 0; run < 3; ++run) whole.train_batch(training_runs::train_images(), run_indices(run));
  for (int run = 0; run < 2; ++run) first.train_batch(training_runs::train_images(), run_indices(run));
  Trainer<double> second(plan, backend, config);
  second.continue_from(first);
  second.train_batch(training_runs::train_images(), run_indices(2));
  int compared = 0;
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    if (!plan.buffer(b).persistent || plan.buffer(b).id.find("/grad/") != std::string::npos) continue;
    const std::vector<double>& want = whole.workspace().array(b);
    const std::vector<double>& got = second.workspace().array(b);
    ASSERT_EQ(want.size(), got.size()) << plan.buffer(b).id;
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(want[i], got[i]) << plan.buffer(b).id << " [" << i << "]";
    ++compared;
  }
  EXPECT_GE(compared, 9) << "weights, both Adam moments, the z and lambda stores and the seen flags";
  // The warm-up's serial Plan hands over to the hybrid's: the same persistent buffers.
  const Plan serial = hybrid_plan("mlp", 2, 1, 4, true, 1, Optimizer::adam);
  Trainer<double> warm(serial, backend, config);
  warm.train_batch(training_runs::train_images(), run_indices(0));
  Trainer<double> hybrid(plan, backend, config);
  hybrid.continue_from(warm);
  EXPECT_EQ(array(hybrid, plan, "dp0/pp0/tp0/admm/b0/seen")[0], 1.0);
  const Plan lenet = hybrid_plan("lenet5", 2, 2, 4, true, 1, Optimizer::adam);
  Trainer<double> other(lenet, backend, config);
  try {
    other.continue_from(warm);
    ADD_FAILURE() << "another model's Plan continued";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("in the Plan it continues from"), std::string::npos) << e.what();
  }
}

// The downsampling filter: a 4x4 map pooled by 2 to the means of its 2x2 windows, and back by
// repetition; one Plan task each, run by the kernel.
TEST(SerialParallel, DownsamplingPoolsAndUnpoolsByHand) {
  Plan plan(1);
  const BufferIndex x = plan.add_buffer({"x", 0, 2 * 16 * 8.0, DType::fp64, false});  // 2 maps of 4x4
  const BufferIndex y = plan.add_buffer({"y", 0, 2 * 4 * 8.0, DType::fp64, false});
  const BufferIndex back = plan.add_buffer({"back", 0, 2 * 16 * 8.0, DType::fp64, false});
  for (const char* op : {"pool", "unpool"}) {
    Task t;
    t.id = std::string("it0/dp0/pp0/tp0/mb0/") + op + "/z/b0";
    t.kind = TaskKind::elementwise;
    t.worker = 0;
    t.dtype = DType::fp64;
    t.attrs = {{"block_admm", std::string(op)},
               {"factor", std::int64_t{2}},
               {"channels", std::int64_t{1}},
               {"height", std::int64_t{4}},
               {"width", std::int64_t{4}}};
    t.reads = {std::string(op) == "pool" ? x : y};
    t.writes = {std::string(op) == "pool" ? y : back};
    plan.add_task(std::move(t));
  }
  plan.add_data_dep(0, 1);
  for (TaskIndex i = 0; i < plan.size(); ++i) EXPECT_EQ(block_admm_problem(plan, plan.task(i)), "");
  Workspace<double> ws(plan);
  std::vector<double>& in = ws.array(x);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i);
  CpuBackend backend;
  ThreadTransport<double> transport;
  TaskRunner<double> runner(plan, backend, ws, transport, OptimizerSettings{});
  runner.run(0);
  runner.run(1);
  // Map 0 is 0..15 row-major: the top-left window holds 0, 1, 4, 5.
  EXPECT_EQ(ws.array(y), (std::vector<double>{2.5, 4.5, 10.5, 12.5, 18.5, 20.5, 26.5, 28.5}));
  EXPECT_EQ(ws.array(back)[0], 2.5);
  EXPECT_EQ(ws.array(back)[5], 2.5);
  EXPECT_EQ(ws.array(back)[15], 12.5);
  EXPECT_EQ(ws.array(back)[16 + 10], 28.5);  // map 1, row 2, column 2: window (1, 1)
  // A factor that does not divide the map is refused before anything runs.
  Task bad = plan.task(0);
  bad.attrs["factor"] = std::int64_t{3};
  EXPECT_NE(block_admm_problem(plan, bad).find("factor >= 1 dividing height and width"), std::string::npos);
}

// LeNet-5 with its states pooled by 2 across the workers trains: its loss falls.
TEST(SerialParallel, DownsampledLenetTrains) {
  const Plan plan = hybrid_plan("lenet5", 2, 2, 4, false, 2);
  CpuBackend backend;
  Trainer<double> trainer(plan, backend, train_config());
  std::vector<std::int64_t> indices;
  double first = 0, last = 0;
  for (int run = 0; run < 12; ++run) {
    std::vector<std::int64_t> batch;
    for (int s = 0; s < 4; ++s) {
      const std::vector<std::int64_t> b = batch_indices(4 * run + s);
      batch.insert(batch.end(), b.begin(), b.end());
    }
    const double loss = trainer.train_batch(training_runs::train_images(), batch);
    if (run == 0) first = loss;
    last = loss;
  }
  EXPECT_LT(last, 0.8 * first) << first << " -> " << last;
}

}  // namespace
}  // namespace strata::real
