// The CIFAR ResNets run for real: batch norm, the residual adds with their option-A shortcuts,
// and global average pooling give the gradient of the loss, checked against central finite
// differences in float64 on ResNet-20 (through a stage-changing block, whose shortcut subsamples
// and pads channels); backprop and the serial-parallel hybrid lower it to Plans the executor
// runs; and the kernels' hand values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/real/transport/thread_transport.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

constexpr std::int64_t kSamples = 4;

Plan resnet_plan(Solver solver = Solver::backprop, int workers = 1) {
  StrategyConfig c;
  c.dp = workers;
  c.global_batch = kSamples;
  c.optimizer = Optimizer::sgd;
  const Model model = make_model("resnet20");
  if (solver == Solver::backprop) {
    Plan plan = lower(model, c);
    plan.validate();
    return plan;
  }
  SolverConfig s;
  s.solver = solver;
  s.instances = 2;
  s.correction_period = 1;
  s.train_samples = 1000;  // the stores: rows for the samples the test binds
  return lower_solver(model, c, s);
}

BufferIndex buffer(const Plan& plan, const std::string& id) {
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b)
    if (plan.buffer(b).id == id) return b;
  ADD_FAILURE() << "no buffer " << id;
  return 0;
}

std::vector<std::int64_t> samples() {
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < kSamples; ++i) ids.push_back(100 + 7 * i);
  return ids;
}

// With plain SGD at rate eta, one step moves w by -eta dL/dw: the gradient is read back from the
// step. The loss at w +- h comes from steps at rate 0 (a forward and backward that move nothing).
TEST(ResNet, GradientsMatchFiniteDifferences) {
  const Plan plan = resnet_plan();
  CpuBackend backend;
  TrainConfig config = training_runs::train_config();
  config.release_buffers = false;
  const double eta = 1e-3;
  config.optimizer.learning_rate = eta;
  Trainer<double> stepping(plan, backend, config);
  config.optimizer.learning_rate = 0;
  Trainer<double> probing(plan, backend, config);
  const LabelledImages& images = training_runs::train_images();
  // conv1 (the stem), bn1's gamma and beta, the first conv of the block that halves the map and
  // doubles the channels (conv3_1/a, its shortcut pads), the last block's second BN, fc.
  const std::vector<std::pair<std::string, std::int64_t>> probes = {
      {"conv1", 5}, {"bn1", 3}, {"bn1", 16 + 3}, {"conv3_1/a", 123}, {"conv4_3/b_bn", 40}, {"fc", 77}};
  for (const auto& [layer, at] : probes) {
    const BufferIndex w = buffer(plan, "dp0/pp0/tp0/w/" + layer);
    std::vector<double>& weights = probing.workspace().array(w);
    const double w0 = weights[static_cast<std::size_t>(at)];
    const double h = 1e-7;
    weights[static_cast<std::size_t>(at)] = w0 + h;
    const double up = probing.train_batch(images, samples());
    probing.workspace().array(w)[static_cast<std::size_t>(at)] = w0 - h;
    const double down = probing.train_batch(images, samples());
    probing.workspace().array(w)[static_cast<std::size_t>(at)] = w0;
    const double numeric = (up - down) / (2 * h);

    const double before = stepping.workspace().array(w)[static_cast<std::size_t>(at)];
    ASSERT_EQ(before, w0) << layer;
    stepping.train_batch(images, samples());
    const double analytic = (before - stepping.workspace().array(w)[static_cast<std::size_t>(at)]) / eta;
    stepping.workspace().array(w)[static_cast<std::size_t>(at)] = before;  // undo the step for the next probe
    for (BufferIndex b = 0; b < plan.buffers().size(); ++b)
      if (plan.buffer(b).id.find("/w/") != std::string::npos)
        stepping.workspace().array(b) = probing.workspace().array(b);
    EXPECT_NEAR(analytic, numeric, 1e-5 + 1e-4 * std::abs(numeric)) << layer << "[" << at << "]";
    EXPECT_GT(std::abs(numeric), 1e-9) << layer << "[" << at << "]: a probe the loss does not feel";
  }
}

// Evaluation runs the model's whole forward pass, batch norms and residual adds included: ResNet-20
// fitted to 4 images for 12 steps classifies them all, in training and in evaluation alike (the
// evaluation takes them in reverse order, so that no activation training left behind can stand in).
TEST(ResNet, EvaluationRunsTheWholeForwardPass) {
  const Plan plan = resnet_plan();
  CpuBackend backend;
  TrainConfig config = training_runs::train_config();
  config.release_buffers = false;
  Trainer<double> trainer(plan, backend, config);
  const LabelledImages& images = training_runs::train_images();
  LabelledImages four;
  four.count = kSamples;
  four.rows = images.rows;
  four.cols = images.cols;
  four.images = Tensor<float>::zeros({kSamples, images.rows * images.cols});
  const std::vector<std::int64_t> ids = samples();
  for (std::int64_t i = 0; i < kSamples; ++i) {  // in reverse: no activation left from training fits
    const std::int64_t from = ids[static_cast<std::size_t>(kSamples - 1 - i)];
    for (std::int64_t p = 0; p < images.rows * images.cols; ++p)
      four.images[i * images.rows * images.cols + p] = images.images[from * images.rows * images.cols + p];
    four.labels.push_back(images.labels[static_cast<std::size_t>(from)]);
  }
  for (int step = 0; step < 12; ++step) trainer.train_batch(images, ids);
  trainer.train_batch(images, ids);
  const std::vector<double>& logits = training_runs::buffer_array(trainer, plan, "dp0/pp0/tp0/mb0/act/fc");
  ASSERT_EQ(logits.size(), static_cast<std::size_t>(kSamples * 10));
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const auto row = logits.begin() + i * 10;
    EXPECT_EQ(std::max_element(row, row + 10) - row, four.labels[static_cast<std::size_t>(kSamples - 1 - i)])
        << "sample " << i;
  }
  EXPECT_EQ(trainer.test_accuracy(four), 1.0);
}

// The serial-parallel hybrid with a correction every minibatch is backprop on a ResNet too: two
// minibatches on two workers give the weights two backprop steps give on one.
TEST(ResNet, SerialParallelWithPeriodOneIsBackprop) {
  CpuBackend backend;
  const TrainConfig config = training_runs::train_config();
  const Plan one = resnet_plan();
  const Plan hybrid = resnet_plan(Solver::serial_parallel, 2);
  Trainer<double> a(one, backend, config);
  Trainer<double> b(hybrid, backend, config);
  std::vector<std::int64_t> both = samples();
  for (std::int64_t i = 0; i < kSamples; ++i) both.push_back(200 + i);
  a.train_batch(training_runs::train_images(), samples());
  a.train_batch(training_runs::train_images(),
                std::vector<std::int64_t>(both.begin() + kSamples, both.end()));
  b.train_batch(training_runs::train_images(), both);
  double gap = 0;
  int layers = 0;
  for (BufferIndex i = 0; i < one.buffers().size(); ++i) {
    const std::string& id = one.buffer(i).id;
    if (id.find("/w/") == std::string::npos) continue;
    const std::string layer = id.substr(id.find("/w/"));
    for (BufferIndex j = 0; j < hybrid.buffers().size(); ++j)
      if (hybrid.buffer(j).id.size() >= layer.size() &&
          hybrid.buffer(j).id.compare(hybrid.buffer(j).id.size() - layer.size(), layer.size(), layer) == 0) {
        const std::vector<double>& x = a.workspace().array(i);
        const std::vector<double>& y = b.workspace().array(j);
        ASSERT_EQ(x.size(), y.size()) << layer;
        for (std::size_t k = 0; k < x.size(); ++k) gap = std::max(gap, std::abs(x[k] - y[k]));
        ++layers;
      }
  }
  EXPECT_EQ(layers, 39);  // 19 convs, 19 batch norms and fc: every layer with weights
  EXPECT_LT(gap, 1e-9);
}

// The option-A shortcut by hand: a 2-channel 4x4 block input added to a 4-channel 2x2 output
// lands in channels 1 and 2 (one zero channel on either side), taking rows and columns 0 and 2.
TEST(ResNet, OptionAShortcutSubsamplesAndPadsChannels) {
  Plan plan(1);
  const BufferIndex x = plan.add_buffer({"x", 0, 4 * 4 * 8.0, DType::fp64, false});         // 1 x 4 x 2 x 2
  const BufferIndex skip = plan.add_buffer({"skip", 0, 2 * 16 * 8.0, DType::fp64, false});  // 1 x 2 x 4 x 4
  const BufferIndex y = plan.add_buffer({"y", 0, 4 * 4 * 8.0, DType::fp64, false});
  Task t;
  t.id = "it0/dp0/pp0/tp0/mb0/fwd/add";
  t.kind = TaskKind::elementwise;
  t.worker = 0;
  t.dtype = DType::fp64;
  t.attrs = {{"span", std::int64_t{5}},   {"skip", std::int64_t{1}},   {"skip_c", std::int64_t{2}},
             {"skip_h", std::int64_t{4}}, {"skip_w", std::int64_t{4}}, {"c", std::int64_t{4}},
             {"h", std::int64_t{2}},      {"w", std::int64_t{2}}};
  t.reads = {x, skip};
  t.writes = {y};
  plan.add_task(t);
  EXPECT_EQ(resnet_kernel_problem(plan, plan.task(0)), "");
  Workspace<double> ws(plan);
  for (std::size_t i = 0; i < 16; ++i) ws.array(x)[i] = 1000;
  for (std::size_t i = 0; i < 32; ++i) ws.array(skip)[i] = static_cast<double>(i);
  ThreadTransport<double> transport;
  CpuBackend backend;
  TaskRunner<double> runner(plan, backend, ws, transport, OptimizerSettings{});
  runner.run(0);
  // Channel 0 and 3: padding (x alone); channel 1: skip channel 0 at (0,0), (0,2), (2,0), (2,2);
  // channel 2: skip channel 1 likewise.
  EXPECT_EQ(ws.array(y), (std::vector<double>{1000, 1000, 1000, 1000, 1000, 1002, 1008, 1010, 1016, 1018,
                                              1024, 1026, 1000, 1000, 1000, 1000}));
  Task odd = t;
  odd.attrs["skip_c"] = std::int64_t{1};  // 3 padding channels cannot split evenly
  EXPECT_NE(resnet_kernel_problem(plan, odd).find("not an option-A shortcut"), std::string::npos);
}

}  // namespace
}  // namespace strata::real
