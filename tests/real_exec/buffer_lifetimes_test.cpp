// The Workspace's release mode and BufferLifetimes (workspace.hpp, buffer_lifetimes.hpp): a
// buffer holds memory from the first task that touches it to the last, a rewrite without a read
// starts a new lifetime, and the per-worker counts are the arrays' bytes, derived by hand here.
// Then the check of issue 16 on a real run: full recomputation lowers the measured high-water
// mark by exactly the activations it no longer keeps.
#include <gtest/gtest.h>

#include "strata/real/exec/buffer_lifetimes.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

// Worker 0: a persistent W (1,000 fp32) and a chain A -> X (100) -> B -> Y (50) -> C -> Z (10),
// then D rewrites X without reading it and E reads X: X lives twice.
struct Chain {
  Plan plan{1};
  BufferIndex w = 0, x = 0, y = 0, z = 0;
  TaskIndex a = 0, b = 0, c = 0, d = 0, e = 0;
  Chain() {
    w = plan.add_buffer({"w", 0, 4000, DType::fp32, true});
    x = plan.add_buffer({"x", 0, 400, DType::fp32, false});
    y = plan.add_buffer({"y", 0, 200, DType::fp32, false});
    z = plan.add_buffer({"z", 0, 40, DType::fp32, false});
    auto task = [&](const char* id, std::vector<BufferIndex> reads, std::vector<BufferIndex> writes) {
      Task t;
      t.id = id;
      t.kind = TaskKind::fixed;
      t.worker = 0;
      t.reads = std::move(reads);
      t.writes = std::move(writes);
      const TaskIndex i = plan.add_task(std::move(t));
      if (i > 0) plan.add_data_dep(i - 1, i);
      return i;
    };
    a = task("a", {w}, {x});
    b = task("b", {x}, {y});
    c = task("c", {y}, {z});
    d = task("d", {w}, {x});
    e = task("e", {x, z}, {});
    plan.validate();
  }
};

TEST(BufferLifetimes, ABufferHoldsMemoryFromFirstTouchToLastUseAndAgainAfterARewrite) {
  Chain chain;
  Workspace<float> ws(chain.plan);
  EXPECT_EQ(ws.live_bytes(0), 4000 + 400 + 200 + 40);  // everything, before release mode
  ws.set_releasing({});
  EXPECT_EQ(ws.live_bytes(0), 4000);
  ws.reset_peaks();
  BufferLifetimes<float> lifetimes(chain.plan, ws, [](TaskIndex) { return true; });
  for (int run = 0; run < 2; ++run) {
    lifetimes.begin_run();
    ws.data(chain.x)[0] = 1;  // a
    lifetimes.task_done(chain.a);
    EXPECT_EQ(ws.live_bytes(0), 4400);
    ws.data(chain.y)[0] = ws.data(chain.x)[0];  // b: x and y held together
    lifetimes.task_done(chain.b);
    EXPECT_EQ(ws.live_bytes(0), 4200);          // x's first life ends with b
    ws.data(chain.z)[0] = ws.data(chain.y)[0];  // c
    lifetimes.task_done(chain.c);
    EXPECT_EQ(ws.live_bytes(0), 4040);
    EXPECT_EQ(ws.data(chain.x)[0], 0.0F);  // d: x allocated again, zero-filled
    lifetimes.task_done(chain.d);
    EXPECT_EQ(ws.live_bytes(0), 4440);
    lifetimes.task_done(chain.e);
    EXPECT_EQ(ws.live_bytes(0), 4000);
    EXPECT_EQ(ws.peak_bytes(0), 4000 + 400 + 200);  // b: w, x and y
  }
}

// One worker, the MLP 784-1024x6-10 (seven linear blocks, ReLU between), one step of 1,024
// samples; the high-water mark is at the start of the backward. Each ReLU keeps its output,
// which is also the next block's input (its checkpoint), so recomputing single [linear, ReLU]
// blocks would drop nothing. Chunks of two blocks (recompute_blocks = 2) drop the ReLU output
// inside each of the three full chunks, but the last one is re-run at the start of the
// backward: the peak drops by two ReLU outputs, 2 x 1,024 values x 1,024 samples x 4 B =
// 8,388,608 B, measured from the Workspace's arrays; the replay's memory model (the lowering's
// mem_alloc/mem_free, other accounting) predicts the same drop.
TEST(BufferLifetimes, FullRecomputationLowersTheMeasuredPeakByTheActivationsItDrops) {
  const Model model = make_model("mlp", {{"sizes", "784,1024,1024,1024,1024,1024,1024,10"}});
  StrategyConfig c;
  c.global_batch = 1024;
  c.optimizer = Optimizer::adam;
  c.dtype = DType::fp32;
  const Plan plain = lower(model, c);
  c.recompute = Recompute::full;
  c.recompute_blocks = 2;
  const Plan rerun = lower(model, c);
  CpuBackend backend;
  Trainer<float> a(plain, backend, training_runs::train_config());
  Trainer<float> b(rerun, backend, training_runs::train_config());
  std::vector<std::int64_t> batch(1024);
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<std::int64_t>(i);
  a.train_batch(training_runs::train_images(), batch);
  b.train_batch(training_runs::train_images(), batch);
  const std::int64_t dropped = 2 * 1024 * 1024 * 4;
  ASSERT_EQ(dropped, 8388608);
  EXPECT_EQ(a.peak_memory_per_worker().at(0) - b.peak_memory_per_worker().at(0), dropped);
}

}  // namespace
}  // namespace strata::real
