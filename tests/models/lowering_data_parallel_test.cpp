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

}  // namespace
}  // namespace strata
