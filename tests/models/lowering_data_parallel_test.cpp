// Data-parallel gradient reduction in lower(): when the buckets are reduced (ddp=overlap,
// PyTorch DDP; ddp=after_flush, Megatron's local DDP).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

// Position of task `id` in the Dispatcher's start order.
std::size_t started_at(const Plan& plan, const RunResult& run, const std::string& id) {
  const TaskIndex task = index_of(plan, id);
  return static_cast<std::size_t>(std::find(run.started.begin(), run.started.end(), task) -
                                  run.started.begin());
}

// 3 linear layers, dp = 2, 2 microbatches, one bucket per layer in backward order: b0 = fc2,
// b1 = fc1, b2 = fc0.
TEST(LoweringDataParallel, AfterFlushReducesOnlyOnceTheLastMicrobatchsBackwardEnded) {
  StrategyConfig config = config_of(2, 1, 1, 2);
  config.bucket_bytes = 0;
  const Plan overlap = lower(linear_model(3), config);
  const RunResult overlap_run = run_unit_durations(overlap);
  ASSERT_TRUE(overlap_run.finished);
  // Overlap: fc2's bucket is reduced while the backward of fc0 is still to run.
  EXPECT_LT(started_at(overlap, overlap_run, "it0/pp0/tp0/ar/b0"),
            started_at(overlap, overlap_run, "it0/dp0/pp0/tp0/mb1/bwd/fc0"));

  config.ddp = DdpMode::after_flush;
  const Plan flush = lower(linear_model(3), config);
  const Task& b0 = flush.task(index_of(flush, "it0/pp0/tp0/ar/b0"));
  for (int d = 0; d < 2; ++d)
    for (const char* task : {"bwd/fc0", "bwdw/fc0", "bwd/fc1", "bwdw/fc2"})
      EXPECT_TRUE(has(b0.control_deps, index_of(flush, cat("it0/dp", d) + "/pp0/tp0/mb1/" + task))) << task;
  EXPECT_TRUE(has(flush.task(index_of(flush, "it0/pp0/tp0/ar/b1")).control_deps,
                  index_of(flush, "it0/pp0/tp0/ar/b0")));
  EXPECT_TRUE(has(flush.task(index_of(flush, "it0/pp0/tp0/ar/b2")).control_deps,
                  index_of(flush, "it0/pp0/tp0/ar/b1")));
  const RunResult flush_run = run_unit_durations(flush);
  ASSERT_TRUE(flush_run.finished);
  // Same tasks and bytes, later: after both replicas' last backward.
  EXPECT_EQ(flush.size(), overlap.size());
  EXPECT_DOUBLE_EQ(b0.comm_bytes, overlap.task(index_of(overlap, "it0/pp0/tp0/ar/b0")).comm_bytes);
  for (int d = 0; d < 2; ++d)
    EXPECT_GT(started_at(flush, flush_run, "it0/pp0/tp0/ar/b0"),
              started_at(flush, flush_run, cat("it0/dp", d) + "/pp0/tp0/mb1/bwdw/fc0"));
  EXPECT_GT(flush_run.makespan, overlap_run.makespan);
}

TEST(LoweringDataParallel, AfterFlushPlansRunToTheEnd) {
  for (int pp : {1, 2})
    for (int tp : {1, 2}) {
      StrategyConfig config = config_of(2, tp, pp, 2 * pp);
      config.iterations = 2;
      config.bucket_bytes = 20000;
      config.ddp = DdpMode::after_flush;
      const RunResult run = run_unit_durations(lower(tiny_gpt(4), config));
      EXPECT_TRUE(run.finished) << config.to_string();
    }
}

// Bytes of the persistent buffers (weights, gradients, optimizer state) of `worker`.
double persistent_bytes(const Plan& plan, WorkerId worker) {
  double sum = 0;
  for (const Buffer& b : plan.buffers())
    if (b.persistent && b.worker == worker) sum += b.bytes;
  return sum;
}

// 3 linear layers of 64 x 64 + 64 = 4,160 parameters (16,640 B in fp32), one bucket per layer
// (b0 = fc2, b1 = fc1, b2 = fc0), dp = 4, fp32 Adam (8 B of state per parameter).
TEST(LoweringDataParallel, ZeroOneAndTwoReduceScatterStepOnAShardAndGatherTheParameters) {
  const double params = 3 * 4160.0;
  StrategyConfig config = config_of(4, 1, 1, 2);
  config.bucket_bytes = 0;
  config.iterations = 2;
  const Plan plain = lower(linear_model(3), config);
  config.zero = 1;
  const Plan plan = lower(linear_model(3), config);
  EXPECT_EQ(count_ids(plan, R"(it\d/pp0/tp0/ar/b\d)"), 0u);
  EXPECT_EQ(count_ids(plan, R"(it\d/pp0/tp0/rs/b\d)"), 2u * 3);
  EXPECT_EQ(count_ids(plan, R"(it\d/pp0/tp0/ag/b\d)"), 2u * 3);
  EXPECT_EQ(plan.size(), plain.size() + 2 * 3);
  const Task& rs = plan.task(index_of(plan, "it0/pp0/tp0/rs/b0"));
  const Task& ag = plan.task(index_of(plan, "it0/pp0/tp0/ag/b0"));
  EXPECT_EQ(rs.kind, TaskKind::reduce_scatter);
  EXPECT_EQ(ag.kind, TaskKind::allgather);
  EXPECT_EQ(ag.group, (std::vector<WorkerId>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(rs.comm_bytes, 16640);
  EXPECT_DOUBLE_EQ(ag.comm_bytes, 16640);
  const Task& opt = plan.task(index_of(plan, "it0/dp2/pp0/tp0/opt"));
  EXPECT_TRUE(has(opt.data_deps, index_of(plan, "it0/pp0/tp0/rs/b0")));
  EXPECT_DOUBLE_EQ(opt.flops, 10 * params / 4);  // Adam on a quarter of the parameters
  for (int d = 0; d < 4; ++d)
    EXPECT_TRUE(has(ag.data_deps, index_of(plan, cat("it0/dp", d) + "/pp0/tp0/opt")));
  EXPECT_GT(ag.priority, opt.priority);
  // The next iteration reads fc2's weights (bucket 0) only once they are gathered again.
  EXPECT_TRUE(has(plan.task(index_of(plan, "it1/dp3/pp0/tp0/mb1/fwd/fc2")).control_deps,
                  index_of(plan, "it0/pp0/tp0/ag/b0")));
  EXPECT_TRUE(has(plan.task(index_of(plan, "it1/dp3/pp0/tp0/mb0/fwd/fc0")).control_deps,
                  index_of(plan, "it0/pp0/tp0/ag/b2")));
  EXPECT_TRUE(run_unit_durations(plan).finished);

  // Persistent bytes per worker (Rajbhandari et al. 2020, Fig. 1, with fp32 weights and
  // gradients, 4 B each, and K = 8 B of Adam state): 16·Ψ without ZeRO, 4Ψ + 4Ψ + 8Ψ/N with
  // stage 1, 4Ψ + (4 + 8)Ψ/N with stage 2; Ψ = 12,480, N = 4.
  EXPECT_DOUBLE_EQ(persistent_bytes(plain, 0), 16 * params);
  EXPECT_DOUBLE_EQ(persistent_bytes(plan, 0), 8 * params + 8 * params / 4);
  config.zero = 2;
  const Plan two = lower(linear_model(3), config);
  EXPECT_DOUBLE_EQ(persistent_bytes(two, 0), 4 * params + 12 * params / 4);
  EXPECT_EQ(two.size(), plan.size());
  EXPECT_TRUE(run_unit_durations(two).finished);
}

TEST(LoweringDataParallel, ShardedPlansRunToTheEnd) {
  for (int zero : {1, 2})
    for (int pp : {1, 2})
      for (int tp : {1, 2}) {
        StrategyConfig config = config_of(2, tp, pp, 2 * pp);
        config.iterations = 2;
        config.bucket_bytes = 20000;
        config.zero = zero;
        const RunResult run = run_unit_durations(lower(tiny_gpt(4), config));
        EXPECT_TRUE(run.finished) << config.to_string() << " zero=" << zero;
      }
}

// The same 3 linear layers (one per block), dp = 2, 2 microbatches of 16 samples, ZeRO-3.
TEST(LoweringDataParallel, ZeroThreeGathersEachBlockBeforeItsUseOneAheadAndReleasesIt) {
  const double params = 3 * 4160.0;
  StrategyConfig config = config_of(2, 1, 1, 2);
  config.bucket_bytes = 0;
  config.iterations = 2;
  config.zero = 3;
  const Plan plan = lower(linear_model(3), config);
  EXPECT_EQ(count_ids(plan, R"(it0/pp0/tp0/mb\d/fwd/b\d/ag)"), 2u * 3);  // m x blocks
  EXPECT_EQ(count_ids(plan, R"(it0/pp0/tp0/mb\d/bwd/b\d/ag)"), 2u * 3);
  EXPECT_EQ(count_ids(plan, R"(it0/pp0/tp0/rs/b\d)"), 3u);
  EXPECT_EQ(count_ids(plan, R"(it0/pp0/tp0/ag/b\d)"), 0u);  // no gather after the step
  const std::string w = "it0/dp1/pp0/tp0/mb1/";
  const TaskIndex fwd_b1 = index_of(plan, "it0/pp0/tp0/mb1/fwd/b1/ag");
  const TaskIndex bwd_b1 = index_of(plan, "it0/pp0/tp0/mb1/bwd/b1/ag");
  EXPECT_EQ(plan.task(fwd_b1).kind, TaskKind::allgather);
  EXPECT_EQ(plan.task(fwd_b1).group, (std::vector<WorkerId>{0, 1}));
  EXPECT_DOUBLE_EQ(plan.task(fwd_b1).comm_bytes, 16640);
  EXPECT_TRUE(has(plan.task(index_of(plan, w + "fwd/fc1")).data_deps, fwd_b1));
  EXPECT_TRUE(has(plan.task(index_of(plan, w + "bwd/fc1")).data_deps, bwd_b1));
  // One ahead: fc1's gather after fc0's forward began; in backward, fc1's after fc2's backward,
  // and fc2's (the first) after the loss-less last layer's forward.
  EXPECT_TRUE(has(plan.task(fwd_b1).control_deps, index_of(plan, w + "fwd/fc0")));
  EXPECT_TRUE(has(plan.task(bwd_b1).control_deps, index_of(plan, w + "bwd/fc2")));
  EXPECT_TRUE(has(plan.task(index_of(plan, "it0/pp0/tp0/mb1/bwd/b2/ag")).control_deps,
                  index_of(plan, w + "fwd/fc2")));
  // The next iteration gathers the updated shards.
  EXPECT_TRUE(has(plan.task(index_of(plan, "it1/pp0/tp0/mb0/fwd/b0/ag")).data_deps,
                  index_of(plan, "it0/dp1/pp0/tp0/opt")));
  // The gather reads each rank's shard and writes its unsharded copy, one ring per layer.
  const Task& gather = plan.task(fwd_b1);
  EXPECT_EQ(gather.attr_int("per_buffer"), 1);
  ASSERT_EQ(gather.reads.size(), 2u);
  EXPECT_EQ(plan.buffer(gather.reads[1]).id, "dp1/pp0/tp0/w/fc1");
  EXPECT_DOUBLE_EQ(plan.buffer(gather.reads[1]).bytes, 16640 / 2);
  EXPECT_TRUE(plan.buffer(gather.reads[1]).persistent);
  EXPECT_EQ(plan.buffer(gather.writes[1]).id, "dp1/pp0/tp0/w/fc1/full");
  EXPECT_DOUBLE_EQ(plan.buffer(gather.writes[1]).bytes, 16640);
  EXPECT_FALSE(plan.buffer(gather.writes[1]).persistent);
  // It writes the copy the previous microbatch's backward read: after that backward (control).
  EXPECT_TRUE(has(gather.control_deps, index_of(plan, "it0/dp1/pp0/tp0/mb0/bwd/fc1")));
  // Every member holds the whole unit (16,640 B) from the gather's start to its last use; fc0
  // keeps its input (64 x 16 samples x 4 B = 4,096 B a microbatch), both microbatches' from the
  // first forward (the host binds the batch before the iteration).
  EXPECT_DOUBLE_EQ(gather.mem_alloc, 16640);
  const Task& fwd0 = plan.task(index_of(plan, w + "fwd/fc0"));
  EXPECT_DOUBLE_EQ(fwd0.mem_alloc, 0);
  EXPECT_DOUBLE_EQ(fwd0.mem_free, 16640);
  EXPECT_DOUBLE_EQ(plan.task(index_of(plan, "it0/dp1/pp0/tp0/mb0/fwd/fc0")).mem_alloc, 2 * 4096);
  // The weight gradient accumulates unsharded (after its backward data) and the bucket's
  // reduce-scatter adds it into the shard and frees it.
  const Task& bwdw0 = plan.task(index_of(plan, "it0/dp1/pp0/tp0/mb0/bwdw/fc1"));
  EXPECT_EQ(plan.buffer(bwdw0.writes[0]).id, "dp1/pp0/tp0/wgrad/fc1/full");
  EXPECT_DOUBLE_EQ(bwdw0.mem_alloc, 16640);
  EXPECT_TRUE(has(bwdw0.control_deps, index_of(plan, "it0/dp1/pp0/tp0/mb0/bwd/fc1")));
  const Task& bwdw1 = plan.task(index_of(plan, w + "bwdw/fc1"));
  EXPECT_TRUE(has(bwdw1.reads, bwdw0.writes[0]));  // microbatch 1 adds into it
  EXPECT_DOUBLE_EQ(bwdw1.mem_alloc, 0);
  const Task& rs = plan.task(index_of(plan, "it0/pp0/tp0/rs/b1"));
  EXPECT_EQ(rs.attr_int("per_buffer"), 1);
  EXPECT_EQ(plan.buffer(rs.reads[1]).id, "dp1/pp0/tp0/wgrad/fc1/full");
  EXPECT_EQ(plan.buffer(rs.writes[1]).id, "dp1/pp0/tp0/wgrad/fc1");
  EXPECT_DOUBLE_EQ(rs.mem_free, 16640);
  // 16Ψ/N persistent bytes (Rajbhandari et al. 2020, Fig. 1, fp32 Adam), N = 2.
  EXPECT_DOUBLE_EQ(persistent_bytes(plan, 0), 16 * params / 2);
  const RunResult run = run_unit_durations(plan);
  ASSERT_TRUE(run.finished);
  for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6);
}

TEST(LoweringDataParallel, ZeroThreePlansWithRecomputationRunToTheEnd) {
  for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full})
    for (int pp : {1, 2})
      for (int tp : {1, 2}) {
        StrategyConfig config = config_of(2, tp, pp, 2 * pp);
        config.iterations = 2;
        config.zero = 3;
        config.recompute = recompute;
        config.recompute_blocks = 2;
        const RunResult run = run_unit_durations(lower(tiny_gpt(4), config));
        EXPECT_TRUE(run.finished) << config.to_string() << " " << to_string(recompute);
        for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6);
      }
}

}  // namespace
}  // namespace strata
