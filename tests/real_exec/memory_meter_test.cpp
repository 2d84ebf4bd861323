// The measured memory's temporaries (memory_meter.hpp): a Held charges the worker of its scope
// until it ends, nothing outside a scope; a conv charges one image's column matrix, the bytes
// the lowering predicts as its mem_temp (lowering_temporaries.cpp: derived from the shape, not
// from the kernel); a ring allreduce runs in place, so it holds nothing beyond the buffers.
#include <gtest/gtest.h>

#include <vector>

#include "strata/real/kernels/kernels.hpp"
#include "strata/real/transport/thread_transport.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

TEST(MemoryMeter, HeldChargesItsScopesWorkerUntilItEndsAndNothingOutsideAScope) {
  auto meter = std::make_shared<MemoryMeter>(2);
  EXPECT_EQ(Held::here(1000).bytes(), 0);  // no scope: nothing charged
  {
    const MeterScope scope(meter, 1);
    Held a = Held::here(1000);
    {
      const MeterScope inner(meter, 0);  // scopes nest: the innermost counts
      const Held b = Held::here(300);
      EXPECT_EQ(meter->live(0), 300);
    }
    EXPECT_EQ(meter->live(0), 0);
    EXPECT_EQ(meter->peak(0), 300);
    Held moved = std::move(a);  // a move keeps one charge
    EXPECT_EQ(meter->live(1), 1000);
    moved.release();
    EXPECT_EQ(meter->live(1), 0);
    const Held c = Held::here(200);
    EXPECT_EQ(meter->live(1), 200);
  }
  EXPECT_EQ(meter->live(1), 0);
  EXPECT_EQ(meter->peak(1), 1000);
  meter->reset_peaks();
  EXPECT_EQ(meter->peak(1), 0);
}

TEST(MemoryMeter, AConvChargesOneImagesColumnMatrixAsTheLoweringPredicts) {
  StrategyConfig c;
  c.global_batch = 8;
  c.dtype = DType::fp32;
  const Plan plan = lower(make_model("lenet5", {}), c);
  const Task& conv1 = plan.task(static_cast<TaskIndex>(plan.find("it0/dp0/pp0/tp0/mb0/fwd/conv1")));
  const Task& conv2 = plan.task(static_cast<TaskIndex>(plan.find("it0/dp0/pp0/tp0/mb0/bwd/conv2")));
  // conv1: 1 x 5 x 5 window over a 28 x 28 output (padding 2): 25 x 784 fp32 values; conv2's
  // backward data: 6 x 5 x 5 over 10 x 10.
  EXPECT_DOUBLE_EQ(conv1.mem_temp, 25.0 * 784 * 4);
  EXPECT_DOUBLE_EQ(conv2.mem_temp, 150.0 * 100 * 4);
  CpuBackend backend;
  auto meter = std::make_shared<MemoryMeter>(1);
  {
    const Conv2dShape s = conv_shape(conv1);
    std::vector<float> x(static_cast<std::size_t>(s.input_size()), 1.0F);
    std::vector<float> w(static_cast<std::size_t>(s.weight_size() + s.out_channels), 0.5F);
    std::vector<float> y(static_cast<std::size_t>(s.output_size()));
    const MeterScope scope(meter, 0);
    conv2d_forward(backend, s, x.data(), w.data(), w.data() + s.weight_size(), y.data());
  }
  EXPECT_EQ(meter->peak(0), static_cast<std::int64_t>(conv1.mem_temp));
  EXPECT_EQ(meter->live(0), 0);
  meter->reset_peaks();
  {
    const Conv2dShape s = conv_shape(conv2);
    std::vector<float> dy(static_cast<std::size_t>(s.output_size()), 1.0F);
    std::vector<float> w(static_cast<std::size_t>(s.weight_size()), 0.5F);
    std::vector<float> dx(static_cast<std::size_t>(s.input_size()));
    const MeterScope scope(meter, 0);
    conv2d_backward_data(backend, s, dy.data(), w.data(), dx.data(), false);
  }
  EXPECT_EQ(meter->peak(0), static_cast<std::int64_t>(conv2.mem_temp));
}

TEST(MemoryMeter, ARingAllreduceRunsInPlaceAndHoldsNothingMore) {
  StrategyConfig c;
  c.dp = 2;
  c.global_batch = 8;
  c.dtype = DType::fp32;
  const Plan plan = lower(make_model("mlp", {}), c);
  Workspace<float> ws(plan);
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b)
    for (std::int64_t i = 0; i < ws.size(b); ++i)
      ws.data(b)[i] = static_cast<float>(plan.buffer(b).worker + 1);
  ThreadTransport<float> transport;
  int collectives = 0;
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    if (plan.task(t).kind != TaskKind::allreduce) continue;
    ws.reset_peaks();
    transport.collective(plan, t, ws);
    for (WorkerId w = 0; w < 2; ++w) EXPECT_EQ(ws.peak_bytes(w), ws.live_bytes(w));
    for (BufferIndex b : plan.task(t).reads) EXPECT_EQ(ws.data(b)[0], 3.0F);  // 1 + 2 on both ranks
    EXPECT_DOUBLE_EQ(plan.task(t).mem_temp, 0);
    ++collectives;
  }
  EXPECT_GT(collectives, 0);
}

}  // namespace
}  // namespace strata::real
