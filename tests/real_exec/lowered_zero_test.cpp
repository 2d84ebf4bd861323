// ZeRO-2 and ZeRO-3 (and FSDP, which is ZeRO-3's sharding) on the real executor: each layer's
// gradient accumulates unsharded and its bucket's reduce-scatter leaves every rank the sum of its
// chunk in a shard; the optimizer steps the shard; ZeRO-2 all-gathers the updated chunks after the
// step, ZeRO-3 keeps only the weight shard and gathers the layer before each use. The sums are
// the ring allreduce's, chunked per layer instead of over the bucket: at two ranks a + b = b + a
// and the weights equal plain data parallelism's bit for bit; at four the additions come in
// another order (within 1e-12 relative).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "strata/real/exec/task_runner.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

// The whole weights that buffer `id` ("dp<d>/.../w/<layer>" of `reference`) holds in a trainer of
// `plan`: the buffer itself when it is whole, else (ZeRO-3) every dp rank's shard put in place.
std::vector<double> whole_weights(const Plan& plan, Trainer<double>& trainer, const std::string& id, int dp,
                                  std::int64_t elements) {
  std::map<std::string, BufferIndex> index;
  for (BufferIndex k = 0; k < plan.buffers().size(); ++k) index[plan.buffer(k).id] = k;
  Workspace<double>& ws = trainer.workspace();
  const BufferIndex own = index.at(id);
  if (ws.size(own) == elements) return {ws.data(own), ws.data(own) + elements};
  std::vector<double> whole(static_cast<std::size_t>(elements));
  const std::string rest = id.substr(id.find('/'));
  for (int p = 0; p < dp; ++p) {
    const BufferIndex shard = index.at("dp" + std::to_string(p) + rest);
    const RingChunk c = shard_chunk(static_cast<std::size_t>(p), whole.size(), static_cast<std::size_t>(dp));
    std::copy(ws.data(shard), ws.data(shard) + (c.end - c.begin),
              whole.begin() + static_cast<std::ptrdiff_t>(c.begin));
  }
  return whole;
}

// Three Adam steps of each Plan; every weight equal bit for bit, or within `relative` of the
// largest weight.
void expect_same_weights(const Plan& reference, const Plan& plan, int dp, double relative) {
  CpuBackend backend;
  Trainer<double> a(reference, backend, training_runs::train_config());
  Trainer<double> b(plan, backend, training_runs::train_config());
  training_runs::train_side_by_side(a, b, 3);
  int compared = 0;
  for (BufferIndex i = 0; i < reference.buffers().size(); ++i) {
    const std::string& id = reference.buffer(i).id;
    if (id.find("/w/") == std::string::npos) continue;
    const std::int64_t n = a.workspace().size(i);
    const double* want = a.workspace().data(i);
    const std::vector<double> got = whole_weights(plan, b, id, dp, n);
    if (relative == 0) {
      EXPECT_EQ(std::memcmp(want, got.data(), static_cast<std::size_t>(n) * sizeof(double)), 0) << id;
    } else {
      double largest = 0, worst = 0;
      for (std::int64_t k = 0; k < n; ++k) {
        largest = std::max(largest, std::fabs(want[k]));
        worst = std::max(worst, std::fabs(want[k] - got[static_cast<std::size_t>(k)]));
      }
      EXPECT_LE(worst, relative * largest) << id;
    }
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

Plan lowered(const std::string& model, StrategyConfig c, int zero) {
  c.zero = zero;
  Plan plan = lower(make_model(model, {}), c);
  plan.validate();
  check_kernels(plan, "zero.json");
  return plan;
}

TEST(LoweredZero, ZeroTwoAndThreeTrainToPlainDataParallelsWeights) {
  for (int dp : {2, 4})
    for (int zero : {2, 3}) {
      SCOPED_TRACE("dp=" + std::to_string(dp) + " zero=" + std::to_string(zero));
      // Two microbatches: the second adds into the unsharded gradient the first allocated.
      const StrategyConfig c =
          training_runs::mlp_config(dp, 1, 2, PipelineSchedule::one_f_one_b, Optimizer::adam);
      expect_same_weights(lowered("mlp", c, 0), lowered("mlp", c, zero), dp, dp == 2 ? 0.0 : 1e-12);
    }
}

// Pipelines too: ZeRO-3 over dp = 2 and two 1F1B stages of four microbatches, whose gathers of a
// layer wait for the previous microbatch's readers of the gathered copy.
TEST(LoweredZero, ZeroThreeWithPipelineStagesTrainsToPlainWeightsBitForBit) {
  const StrategyConfig c = training_runs::mlp_config(2, 2, 4, PipelineSchedule::one_f_one_b, Optimizer::adam);
  expect_same_weights(lowered("mlp", c, 0), lowered("mlp", c, 3), 2, 0.0);
}

// LeNet-5's convolutions and pooling, and offload (the shards' Adam on the host).
TEST(LoweredZero, LeNetAndOffloadTrainToPlainWeightsBitForBit) {
  StrategyConfig c = training_runs::mlp_config(2, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam);
  expect_same_weights(lowered("lenet5", c, 0), lowered("lenet5", c, 3), 2, 0.0);
  const Plan plain = lowered("mlp", c, 0);
  c.offload = true;
  for (int zero : {2, 3}) {
    SCOPED_TRACE("offload zero=" + std::to_string(zero));
    const Plan offloaded = lowered("mlp", c, zero);
    ASSERT_GE(offloaded.find("it0/dp1/pp0/tp0/opt/d2h"), 0);
    expect_same_weights(plain, offloaded, 2, 0.0);
  }
}

// ZeRO-3 on four workers, one bucket per layer, measured by the Workspace (float64): the model
// state each worker keeps (weights, gradients, Adam's state) is a quarter of plain data
// parallelism's, within the shards' padding; at the peak it holds besides what plain DP holds
// (its activations) at most one layer's gathered weights and one layer's unsharded gradient.
TEST(LoweredZero, ZeroThreeOnFourWorkersHoldsAQuarterOfTheModelState) {
  StrategyConfig c = training_runs::mlp_config(4, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam);
  c.bucket_bytes = 0;
  const Plan plain = lowered("mlp", c, 0);
  const Plan sharded = lowered("mlp", c, 3);
  CpuBackend backend;
  Trainer<double> a(plain, backend, training_runs::train_config());
  Trainer<double> b(sharded, backend, training_runs::train_config());
  std::vector<std::int64_t> kept_a, kept_b;  // held between runs: the model state (and the loss)
  for (WorkerId w = 0; w < 4; ++w) {
    kept_a.push_back(a.workspace().live_bytes(w));
    kept_b.push_back(b.workspace().live_bytes(w));
  }
  training_runs::train_side_by_side(a, b, 2);
  const std::vector<std::int64_t> peak_a = a.peak_memory_per_worker(), peak_b = b.peak_memory_per_worker();
  const double layer = (784.0 * 256 + 256) * sizeof(double);  // fc1, the largest
  for (std::size_t w = 0; w < 4; ++w) {
    SCOPED_TRACE("worker " + std::to_string(w));
    // Padding: at most 3 elements per shard of 3 layers' weights and gradients, and Adam's state
    // of ceil(params / 4) parameters; the loss and logits are the same in both.
    EXPECT_NEAR(static_cast<double>(kept_b[w]), static_cast<double>(kept_a[w]) / 4, 2048.0);
    EXPECT_LT(static_cast<double>(kept_b[w]), 0.26 * static_cast<double>(kept_a[w]));
    const double activations = static_cast<double>(peak_a[w] - kept_a[w]);
    EXPECT_GE(static_cast<double>(peak_b[w]), static_cast<double>(kept_b[w]) + layer);
    EXPECT_LE(static_cast<double>(peak_b[w]), static_cast<double>(kept_b[w]) + activations + 2 * layer);
    std::printf("worker %zu: plain kept %lld B, peak %lld B; zero=3 kept %lld B, peak %lld B\n", w,
                static_cast<long long>(kept_a[w]), static_cast<long long>(peak_a[w]),
                static_cast<long long>(kept_b[w]), static_cast<long long>(peak_b[w]));
  }
}

std::string error_of(const Plan& plan) {
  try {
    check_kernels(plan, "plan.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// What the kernels cannot run is refused in one line before anything runs: a layer task that
// reads a shard as if it were the layer, a per-layer reduce-scatter whose shard has the wrong
// size, and sequence parallelism's reduce-scatter of activations.
TEST(LoweredZero, ShardsUsedAsLayersAndMisSizedShardsAreRefusedInOneLine) {
  StrategyConfig c = training_runs::mlp_config(2, 1, 1);
  c.zero = 3;
  Plan plan = lower(make_model("mlp", {}), c);
  const TaskIndex fwd = static_cast<TaskIndex>(plan.find("it0/dp0/pp0/tp0/mb0/fwd/fc3"));
  const TaskIndex rs = static_cast<TaskIndex>(plan.find("it0/pp0/tp0/rs/b0"));
  Plan short_weights = plan;
  Task& reader = short_weights.mutable_task(fwd);
  reader.reads[1] =
      static_cast<BufferIndex>(std::find_if(short_weights.buffers().begin(), short_weights.buffers().end(),
                                            [](const Buffer& b) { return b.id == "dp0/pp0/tp0/w/fc3"; }) -
                               short_weights.buffers().begin());
  const std::string weights = error_of(short_weights);
  // fc3: (128 + 1) x 10 parameters, 645 on each of two ranks.
  EXPECT_NE(weights.find("plan.json"), std::string::npos) << weights;
  EXPECT_NE(weights.find("weight buffer dp0/pp0/tp0/w/fc3 holds 645 elements, the layer 1290 (a ZeRO-2 or -3 "
                         "shard: the layer's tasks use the unsharded \"/full\" buffers)"),
            std::string::npos)
      << weights;
  EXPECT_EQ(weights.find('\n'), std::string::npos) << weights;
  Plan mis_sized = plan;
  mis_sized.mutable_task(rs).writes[0] = mis_sized.task(rs).reads[0];  // the unsharded gradient
  const std::string shard = error_of(mis_sized);
  EXPECT_NE(
      shard.find("per_buffer shard dp0/pp0/tp0/wgrad/fc3/full is not a persistent buffer of ceil(1290 / 2) "
                 "elements"),
      std::string::npos)
      << shard;
  Plan sp_plan(2);
  Task sp;
  sp.id = "it0/pp0/tp0/rs";
  sp.kind = TaskKind::reduce_scatter;
  sp.group = {0, 1};
  for (WorkerId w : {0, 1}) {
    const BufferIndex b =
        sp_plan.add_buffer({"tp" + std::to_string(w) + "/act", w, 4096, DType::fp32, false});
    sp.reads.push_back(b);
    sp.writes.push_back(b);
  }
  sp_plan.add_task(sp);
  const std::string activations = error_of(sp_plan);
  EXPECT_NE(activations.find("reduce_scatter of activations (sequence parallelism) has no real kernel"),
            std::string::npos)
      << activations;
}

}  // namespace
}  // namespace strata::real
