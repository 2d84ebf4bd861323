// Backprop Plans lowered with memory options, on the real executor: activation recomputation's
// re-run forwards are ordinary forward tasks and train to the same weights bit for bit; ZeRO-1
// (reduce-scattered gradients, a sharded step, all-gathered parameters) and its offload (the step
// on the host) train to plain data parallelism's weights bit for bit. ZeRO-2 and -3:
// lowered_zero_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "strata/real/exec/task_runner.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

TEST(LoweredMemoryOptions, RecomputationTrainsToTheSameWeightsBitForBit) {
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
  training_runs::train_side_by_side(a, b, 3);
  for (BufferIndex i = 0; i < plain.buffers().size(); ++i) {
    if (!plain.buffer(i).persistent) continue;
    ASSERT_EQ(a.workspace().size(i), b.workspace().size(i)) << plain.buffer(i).id;
    EXPECT_EQ(std::memcmp(a.workspace().data(i), b.workspace().data(i),
                          static_cast<std::size_t>(a.workspace().size(i)) * sizeof(double)),
              0)
        << plain.buffer(i).id;
  }
}

// Three Adam steps of a Plan and of a reference Plan; every weight buffer ("/w/") equal bit for bit.
void expect_same_weights(const Plan& reference, const Plan& plan) {
  CpuBackend backend;
  Trainer<double> a(reference, backend, training_runs::train_config());
  Trainer<double> b(plan, backend, training_runs::train_config());
  training_runs::train_side_by_side(a, b, 3);
  std::map<std::string, BufferIndex> index;
  for (BufferIndex k = 0; k < plan.buffers().size(); ++k) index[plan.buffer(k).id] = k;
  int compared = 0;
  for (BufferIndex i = 0; i < reference.buffers().size(); ++i) {
    const std::string& id = reference.buffer(i).id;
    if (id.find("/w/") == std::string::npos) continue;
    ASSERT_EQ(index.count(id), 1u) << id;
    const BufferIndex k = index.at(id);
    ASSERT_EQ(a.workspace().size(i), b.workspace().size(k)) << id;
    EXPECT_EQ(std::memcmp(a.workspace().data(i), b.workspace().data(k),
                          static_cast<std::size_t>(a.workspace().size(i)) * sizeof(double)),
              0)
        << id;
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

// ZeRO-1 reduce-scatters the gradients, steps each rank's shard (its owned chunk of the bucket)
// and all-gathers the parameters: the same ring chunks and additions as plain data parallelism's
// allreduce, so the same weights bit for bit. Four ranks cut the MLP's 235,146 parameters
// unevenly (58,786 or 58,787 each; the state holds the larger).
TEST(LoweredMemoryOptions, ZeroOneTrainsToPlainDataParallelsWeightsBitForBit) {
  for (int dp : {2, 4}) {
    SCOPED_TRACE("dp=" + std::to_string(dp));
    StrategyConfig c = training_runs::mlp_config(dp, 1, 2, PipelineSchedule::one_f_one_b, Optimizer::adam);
    const Plan plain = lower(make_model("mlp", {}), c);
    c.zero = 1;
    const Plan sharded = lower(make_model("mlp", {}), c);
    sharded.validate();
    ASSERT_NO_THROW(check_kernels(sharded, "zero.json"));
    ASSERT_GT(std::count_if(sharded.tasks().begin(), sharded.tasks().end(),
                            [](const Task& t) { return t.kind == TaskKind::reduce_scatter; }),
              0);
    expect_same_weights(plain, sharded);
  }
}

// Offload (ZeRO-Offload over ZeRO-1): the reduced gradient shard goes to the host, Adam runs on
// the CPU, the weights come back. Here host and device memory are one, so the copies move nothing
// and the arithmetic is ZeRO-1's: plain data parallelism's weights, bit for bit.
TEST(LoweredMemoryOptions, OffloadTrainsToPlainDataParallelsWeightsBitForBit) {
  StrategyConfig c = training_runs::mlp_config(2, 1, 2, PipelineSchedule::one_f_one_b, Optimizer::adam);
  const Plan plain = lower(make_model("mlp", {}), c);
  c.zero = 1;
  c.offload = true;
  const Plan offloaded = lower(make_model("mlp", {}), c);
  offloaded.validate();
  ASSERT_NO_THROW(check_kernels(offloaded, "offload.json"));
  ASSERT_GE(offloaded.find("it0/dp1/pp0/tp0/opt/d2h"), 0);
  expect_same_weights(plain, offloaded);
}

// A hand-edited Plan whose host step lost its d2h copy is refused in one line.
TEST(LoweredMemoryOptions, OffloadedStepWithoutItsCopiesIsRefusedInOneLine) {
  StrategyConfig c = training_runs::mlp_config(2, 1, 2, PipelineSchedule::one_f_one_b, Optimizer::adam);
  c.zero = 1;
  c.offload = true;
  Plan plan = lower(make_model("mlp", {}), c);
  const long step = plan.find("it0/dp0/pp0/tp0/opt");
  ASSERT_GE(step, 0);
  plan.mutable_task(static_cast<TaskIndex>(step)).data_deps.clear();  // its d2h no longer feeds it
  try {
    check_kernels(plan, "offload.json");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(
        what.find("offloaded optimizer step without its 'it0/dp0/pp0/tp0/opt/d2h' (a data dependency) and "
                  "'it0/dp0/pp0/tp0/opt/h2d' copies"),
        std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace strata::real
