// Backprop Plans lowered with memory options, on the real executor: activation recomputation's
// re-run forwards are ordinary forward tasks and train to the same weights bit for bit; the
// collectives of sharded data parallelism and sequence parallelism (reduce_scatter, allgather)
// have no kernel yet and are refused in one line before anything runs, as are offload's copies
// between device and host memory (host_copy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

TEST(LoweredMemoryOptions, RecomputationTrainsToTheSameWeightsBitForBit) {
  const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  StrategyConfig c = training_runs::mlp_config(1, 2, 2);
  const Plan plain = lower(make_model("mlp", {}), c);
  c.recompute = Recompute::full;
  const Plan rerun = lower(make_model("mlp", {}), c);
  ASSERT_GT(std::count_if(rerun.tasks().begin(), rerun.tasks().end(),
                          [](const Task& t) { return t.id.find("/rfwd/") != std::string::npos; }),
            0);
  ASSERT_EQ(plain.buffers().size(), rerun.buffers().size());
  CpuBackend backend;
  Trainer<double> a(plain, backend, training_runs::train_config());
  Trainer<double> b(rerun, backend, training_runs::train_config());
  for (int step = 0; step < 3; ++step) {
    a.train_batch(train, training_runs::batch_indices(step));
    b.train_batch(train, training_runs::batch_indices(step));
  }
  for (BufferIndex i = 0; i < plain.buffers().size(); ++i) {
    if (!plain.buffer(i).persistent) continue;
    ASSERT_EQ(a.workspace().size(i), b.workspace().size(i)) << plain.buffer(i).id;
    EXPECT_EQ(std::memcmp(a.workspace().data(i), b.workspace().data(i),
                          static_cast<std::size_t>(a.workspace().size(i)) * sizeof(double)),
              0)
        << plain.buffer(i).id;
  }
}

TEST(LoweredMemoryOptions, ShardedCollectivesAreRefusedInOneLine) {
  StrategyConfig c = training_runs::mlp_config(1, 2, 2);
  c.dp = 2;
  c.zero = 1;
  const Plan plan = lower(make_model("mlp", {}), c);
  try {
    check_kernels(plan, "zero.json");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("zero.json"), std::string::npos) << what;
    EXPECT_NE(what.find("'reduce_scatter' has no real kernel"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(LoweredMemoryOptions, OffloadIsRefusedInOneLine) {
  StrategyConfig c = training_runs::mlp_config(1, 2, 2);
  c.dp = 2;
  c.zero = 1;
  c.offload = true;
  const Plan plan = lower(make_model("mlp", {}), c);
  try {
    check_kernels(plan, "offload.json");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("task kind host_copy: not run by the real executor"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace strata::real
