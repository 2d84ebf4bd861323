// Strategy parsing and checks, the pipeline partition, and lower(): task counts, ids,
// dependencies, priorities and a run of every lowered Plan through the Dispatcher on a virtual
// clock (a fake executor with unit durations).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

// ---------------------------------------------------------------- parsing and checks

TEST(Strategy, ParsesAnyOrderWithMissingDimensionsOne) {
  StrategyConfig config;
  parse_strategy("pp=4,dp=2", config);
  EXPECT_EQ(config.dp, 2);
  EXPECT_EQ(config.tp, 1);
  EXPECT_EQ(config.pp, 4);
  EXPECT_EQ(config.workers(), 8);
  parse_strategy("tp=8", config);
  EXPECT_EQ(config.to_string(), "dp=1,tp=8,pp=1");
  parse_strategy("dp=2,tp=2,pp=2", config);
  EXPECT_EQ(config.to_string(), "dp=2,tp=2,pp=2");
}

TEST(Strategy, ParseErrorsNameTheFlagAndTheProblem) {
  StrategyConfig config;
  EXPECT_EQ(input_error([&] { parse_strategy("dp=x", config); }),
            "--strategy 'dp=x': 'x' is not a positive integer");
  EXPECT_EQ(input_error([&] { parse_strategy("dp=2,pp=0", config); }),
            "--strategy 'pp=0': '0' is not a positive integer");
  EXPECT_EQ(input_error([&] { parse_strategy("tp=-2", config); }),
            "--strategy 'tp=-2': '-2' is not a positive integer");
  EXPECT_EQ(input_error([&] { parse_strategy("zz=2", config); }),
            "--strategy: unknown dimension 'zz' (known: dp, tp, pp)");
  EXPECT_EQ(input_error([&] { parse_strategy("dp=2,dp=4", config); }),
            "--strategy: dimension 'dp' given twice");
  EXPECT_NE(input_error([&] { parse_strategy("dp", config); }), "(no InputError)");
  EXPECT_NE(input_error([&] { parse_strategy("", config); }), "(no InputError)");
}

TEST(Strategy, EnumNames) {
  EXPECT_EQ(to_string(PipelineSchedule::gpipe), "gpipe");
  EXPECT_EQ(to_string(PipelineSchedule::one_f_one_b), "1f1b");
  EXPECT_EQ(to_string(Optimizer::sgd), "sgd");
  EXPECT_EQ(to_string(Optimizer::adam), "adam");
  EXPECT_EQ(parse_pipeline_schedule("1f1b"), PipelineSchedule::one_f_one_b);
  EXPECT_EQ(parse_optimizer("sgd"), Optimizer::sgd);
  EXPECT_FALSE(parse_optimizer("lamb").has_value());
}

TEST(Strategy, CheckRejectsWhatTheModelCannotTake) {
  const Model gpt2 = make_gpt("gpt2-small", GptConfig{});
  EXPECT_EQ(input_error([&] { check_strategy(gpt2, config_of(1, 5, 1)); }),
            "tp=5 does not divide the 12 attention heads of gpt2-small");
  EXPECT_EQ(input_error([&] { check_strategy(linear_model(4), config_of(1, 2, 1)); }),
            "tensor parallelism needs a transformer model (gpt*)");
  EXPECT_EQ(input_error([&] { check_strategy(fixed_model(4), config_of(1, 1, 5)); }),
            "pp=5 exceeds the 4 blocks of fixed4 (each pipeline stage needs at least one)");
  StrategyConfig batch = config_of(4, 1, 1);
  batch.global_batch = 10;
  EXPECT_EQ(input_error([&] { check_strategy(fixed_model(4), batch); }),
            "global batch 10 is not divisible by dp=4");
  StrategyConfig micro = config_of(2, 1, 1, 4);
  micro.global_batch = 12;
  EXPECT_EQ(input_error([&] { check_strategy(fixed_model(4), micro); }),
            "4 microbatches do not divide the per-replica batch of 6 (global batch 12 / dp=2)");
  EXPECT_EQ(input_error([&] { check_strategy(fixed_model(4), config_of(0, 1, 1)); }),
            "--strategy: dp must be a positive integer (got 0)");
  Model gap = fixed_model(3);
  gap.layers[2].block = 3;
  EXPECT_EQ(input_error([&] { check_strategy(gap, config_of(1, 1, 1)); }),
            "model fixed3: layer 'l2' is in block 3 after block 1 (blocks must be numbered 0, 1, "
            "2, ... in layer order)");
  EXPECT_NO_THROW(check_strategy(gpt2, config_of(2, 4, 3)));
  EXPECT_THROW(lower(linear_model(2), config_of(1, 2, 1)), InputError);
}

// The memory options: each bad value is one line naming its --set key (issue: ZeRO stage outside
// 0-3, a recomputation granularity larger than a stage's blocks, an interleaving that does not
// divide the blocks per stage).
TEST(Strategy, MemoryOptionsAreCheckedAgainstTheModel) {
  const Model gpt2 = make_gpt("gpt2-small", GptConfig{});  // 12 blocks
  StrategyConfig zero = config_of(2, 1, 1);
  zero.zero = 4;
  EXPECT_EQ(input_error([&] { check_strategy(gpt2, zero); }),
            "--set zero=4: ZeRO stage must be 0, 1, 2 or 3");
  StrategyConfig alone = config_of(1, 1, 1);  // dp = 1
  alone.zero = 1;
  EXPECT_EQ(
      input_error([&] { check_strategy(gpt2, alone); }),
      "--set zero=1: ZeRO shards over the data-parallel ranks, dp=1 has none to shard over (use dp >= 2)");
  StrategyConfig offload = config_of(2, 1, 1);
  offload.offload = true;
  EXPECT_EQ(
      input_error([&] { check_strategy(gpt2, offload); }),
      "--set offload=1: needs --set zero=1, 2 or 3 (the optimizer states are sharded, then offloaded, as "
      "ZeRO-Offload does)");
  StrategyConfig blocks = config_of(1, 1, 4);  // 3 blocks per stage
  blocks.recompute = Recompute::full;
  blocks.recompute_blocks = 4;
  EXPECT_EQ(input_error([&] { check_strategy(fixed_model(12), blocks); }),
            "--set recompute_blocks=4: larger than the 3 blocks of the smallest pipeline stage of fixed12");
  blocks.recompute_blocks = 3;
  EXPECT_NO_THROW(check_strategy(fixed_model(12), blocks));
  StrategyConfig interleave = config_of(1, 1, 4, 8);
  interleave.interleave = 2;  // 12 blocks do not make 8 chunks
  EXPECT_EQ(
      input_error([&] { check_strategy(gpt2, interleave); }),
      "--set interleave=2: the 12 blocks of gpt2-small do not split into pp x interleave = 8 equal model "
      "chunks");
  interleave.interleave = 3;
  EXPECT_NO_THROW(check_strategy(gpt2, interleave));
  interleave.microbatches = 6;
  EXPECT_EQ(
      input_error([&] { check_strategy(gpt2, interleave); }),
      "--set interleave=3: the interleaved schedule needs a microbatch count that is a multiple of pp=4 (got "
      "6)");
  StrategyConfig gpipe = config_of(1, 1, 2);
  gpipe.interleave = 2;
  gpipe.schedule = PipelineSchedule::gpipe;
  EXPECT_EQ(input_error([&] { check_strategy(gpt2, gpipe); }),
            "--set interleave=2: the interleaved schedule is 1F1B's (--schedule 1f1b), not gpipe");
  StrategyConfig selective = config_of(1, 1, 1);
  selective.recompute = Recompute::selective;
  EXPECT_EQ(
      input_error([&] { check_strategy(fixed_model(4), selective); }),
      "--set recompute=selective: model fixed4 has no attention core (selective recomputation re-runs a "
      "transformer's attention)");
  EXPECT_EQ(memory_option_set(StrategyConfig{}), "");
  StrategyConfig zb = config_of(1, 1, 2);
  zb.schedule = PipelineSchedule::zb_h1;
  EXPECT_EQ(memory_option_set(zb), "--schedule zb-h1");
  EXPECT_EQ(parse_pipeline_schedule("zb-h1"), PipelineSchedule::zb_h1);
  EXPECT_EQ(to_string(PipelineSchedule::zb_h1), "zb-h1");
  EXPECT_EQ(parse_recompute("selective"), Recompute::selective);
  EXPECT_EQ(parse_ddp_mode("after_flush"), DdpMode::after_flush);
  EXPECT_EQ(parse_recompute_method("block"), RecomputeMethod::block);
  EXPECT_FALSE(parse_recompute("partial"));
}

TEST(Strategy, DefaultGlobalBatchSplitsEvenly) {
  EXPECT_EQ(default_global_batch(fixed_model(4), config_of(4, 1, 1)), 4);    // synthetic: 1
  EXPECT_EQ(default_global_batch(fixed_model(4), config_of(2, 1, 2)), 4);    // m = pp = 2
  EXPECT_EQ(default_global_batch(tiny_gpt(), config_of(2, 1, 1)), 16);       // gpt: 8
  EXPECT_EQ(default_global_batch(tiny_gpt(), config_of(1, 1, 1, 3)), 9);     // round up to 3
  EXPECT_EQ(default_global_batch(linear_model(2), config_of(2, 1, 1)), 64);  // others: 32
  EXPECT_EQ(default_global_batch(linear_model(2), config_of(1, 1, 1, 64)), 64);
  for (int pp : {1, 2, 3, 4}) EXPECT_NO_THROW(check_strategy(tiny_gpt(4), config_of(3, 2, pp)));
}

TEST(Strategy, PartitionBalancesContiguousBlocks) {
  EXPECT_EQ(partition_blocks(fixed_model(8), 4), (std::vector<int>{0, 2, 4, 6, 8}));
  EXPECT_EQ(partition_blocks(fixed_model(8), 1), (std::vector<int>{0, 8}));
  EXPECT_EQ(partition_blocks(fixed_model(3), 3), (std::vector<int>{0, 1, 2, 3}));
  // One heavy block: the others share the remaining stages, each stage keeps a block.
  Model skewed = fixed_model(4);
  skewed.layers[0].fixed_fwd_s = 1.0;
  EXPECT_EQ(partition_blocks(skewed, 2), (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(partition_blocks(skewed, 4), (std::vector<int>{0, 1, 2, 3, 4}));
  // GPT: the LM head weighs on the last block, so the last stage gets fewer blocks.
  const std::vector<int> gpt = partition_blocks(make_gpt("gpt2-small", GptConfig{}), 4);
  ASSERT_EQ(gpt.size(), 5u);
  EXPECT_GT(gpt[4] - gpt[3], 0);
  EXPECT_LT(gpt[4] - gpt[3], gpt[1] - gpt[0]);
}

// ---------------------------------------------------------------- lowering: structure

TEST(Lowering, WorkersAndPlanInfo) {
  StrategyConfig config = config_of(2, 2, 2, 4);
  config.iterations = 2;
  config.seed = 7;
  const Model model = tiny_gpt(4);
  const Plan plan = lower(model, config);
  EXPECT_EQ(plan.num_workers(), 8);
  EXPECT_EQ(plan.num_iterations(), 2);
  EXPECT_EQ(plan.info.model, "tiny-gpt");
  EXPECT_EQ(plan.info.strategy, "dp=2,tp=2,pp=2");
  EXPECT_EQ(plan.info.schedule_label(), "1f1b");
  EXPECT_EQ(plan.info.optimizer, "adam");
  EXPECT_EQ(plan.info.global_batch, 16);
  EXPECT_EQ(plan.info.microbatches, 4);
  EXPECT_EQ(plan.info.tokens_per_sample, 8);
  EXPECT_DOUBLE_EQ(plan.info.model_flops_per_iteration, model.model_flops_per_token() * 8 * 16);
  EXPECT_EQ(plan.info.seed, 7);
  EXPECT_EQ(lower(model, config_of(1, 1, 1)).info.schedule_label(), "none");
}

TEST(Lowering, HandCountedTasksOfAFixedModel) {
  // 4 fixed layers (one per block), dp=2, pp=2 (2 layers per stage), 4 microbatches.
  StrategyConfig config = config_of(2, 1, 2, 4);
  config.bucket_bytes = 0;  // one bucket per block
  const Plan plan = lower(fixed_model(4), config);
  EXPECT_EQ(plan.num_workers(), 4);
  EXPECT_EQ(count_ids(plan, R"(.*/fwd/l\d)"), 2u * 4 * 4);  // dp * m * layers
  EXPECT_EQ(count_ids(plan, R"(.*/bwd/l\d)"), 2u * 4 * 4);
  EXPECT_EQ(count_ids(plan, R"(.*/bwdw/.*)"), 0u);       // fixed ops: one backward task
  EXPECT_EQ(count_ids(plan, R"(.*/send/fwd)"), 2u * 4);  // dp * (pp-1) * m
  EXPECT_EQ(count_ids(plan, R"(.*/recv/fwd)"), 2u * 4);
  EXPECT_EQ(count_ids(plan, R"(.*/send/bwd)"), 2u * 4);
  EXPECT_EQ(count_ids(plan, R"(.*/recv/bwd)"), 2u * 4);
  EXPECT_EQ(count_ids(plan, R"(it0/pp\d/tp0/ar/b\d)"), 2u * 2);  // pp * blocks per stage
  EXPECT_EQ(count_ids(plan, R"(.*/opt)"), 4u);
  EXPECT_EQ(plan.size(), 32u + 32 + 4 * 8 + 4 + 4);

  const Task& bucket = plan.task(index_of(plan, "it0/pp1/tp0/ar/b0"));
  EXPECT_EQ(bucket.kind, TaskKind::allreduce);
  EXPECT_EQ(bucket.group, (std::vector<WorkerId>{1, 3}));  // rank = (dp * pp + stage) * tp + tp
  EXPECT_DOUBLE_EQ(bucket.comm_bytes, 4000);               // 1000 fp32 parameters of l3
  const Task& send = plan.task(index_of(plan, "it0/dp1/pp0/tp0/mb2/send/fwd"));
  EXPECT_EQ(send.worker, 2);
  EXPECT_EQ(send.peer, 3);
  EXPECT_DOUBLE_EQ(send.comm_bytes, 100 * 1 * 4);  // out_elems * microbatch (1) * fp32
  const Task& recv = plan.task(index_of(plan, "it0/dp1/pp1/tp0/mb2/recv/fwd"));
  EXPECT_EQ(recv.worker, 3);
  EXPECT_EQ(recv.peer, 2);
  EXPECT_TRUE(has(recv.data_deps, index_of(plan, "it0/dp1/pp0/tp0/mb2/send/fwd")));
  const Task& fwd = plan.task(index_of(plan, "it0/dp0/pp0/tp0/mb0/fwd/l1"));
  EXPECT_EQ(fwd.kind, TaskKind::fixed);
  EXPECT_DOUBLE_EQ(*fwd.attr_real("duration_s"), 1e-3);

  config.bucket_bytes = 1e9;  // one bucket per stage
  EXPECT_EQ(count_ids(lower(fixed_model(4), config), R"(it0/pp\d/tp0/ar/b\d)"), 2u);
  EXPECT_EQ(count_ids(lower(fixed_model(4), config_of(1, 1, 2, 4)), R"(.*/ar/.*)"), 0u);
}

TEST(Lowering, LinearLayersGetBackwardWeightTasks) {
  const Plan plan = lower(linear_model(3), config_of(1, 1, 1, 2));
  EXPECT_EQ(count_ids(plan, R"(.*/bwdw/fc\d)"), 3u * 2);
  const TaskIndex bwdw = index_of(plan, "it0/dp0/pp0/tp0/mb1/bwdw/fc1");
  EXPECT_EQ(plan.task(bwdw).kind, TaskKind::linear_bwd_weight);
  // Its inputs: the output gradient (bwd of fc2) and the forward; accumulation after mb0.
  EXPECT_TRUE(has(plan.task(bwdw).data_deps, index_of(plan, "it0/dp0/pp0/tp0/mb1/bwd/fc2")));
  EXPECT_TRUE(has(plan.task(bwdw).data_deps, index_of(plan, "it0/dp0/pp0/tp0/mb1/fwd/fc1")));
  EXPECT_TRUE(has(plan.task(bwdw).data_deps, index_of(plan, "it0/dp0/pp0/tp0/mb0/bwdw/fc1")));
  // The loss-less last layer starts the backward right after its forward.
  EXPECT_EQ(plan.task(index_of(plan, "it0/dp0/pp0/tp0/mb0/bwd/fc2")).data_deps,
            (std::vector<TaskIndex>{index_of(plan, "it0/dp0/pp0/tp0/mb0/fwd/fc2")}));
  // dp = 1: the optimizer waits for the weight gradients directly.
  const Task& opt = plan.task(index_of(plan, "it0/dp0/pp0/tp0/opt"));
  EXPECT_EQ(opt.kind, TaskKind::optimizer_step);
  EXPECT_TRUE(has(opt.data_deps, index_of(plan, "it0/dp0/pp0/tp0/mb1/bwdw/fc0")));
  const double params = 3 * (64.0 * 64 + 64);
  EXPECT_DOUBLE_EQ(opt.flops, 10 * params);                           // adam
  EXPECT_DOUBLE_EQ(opt.bytes_read + opt.bytes_written, 16 * params);  // 4 + 4 + 8 (fp32 adam)
}

TEST(Lowering, MegatronHasTwoForwardAndTwoBackwardAllreducesPerBlock) {
  const int blocks = 3;
  const int m = 2;
  const Model model = tiny_gpt(blocks);
  const Plan plan = lower(model, config_of(1, 2, 1, m));
  EXPECT_EQ(count_ids(plan, R"(.*/fwd/l\d+/(proj|fc2)/ar)"), 2u * blocks * m);
  EXPECT_EQ(count_ids(plan, R"(.*/bwd/l\d+/(qkv|fc1)/ar)"), 2u * blocks * m);
  EXPECT_EQ(count_ids(plan, R"(.*/l\d+/.*/ar)"), 4u * blocks * m);  // nothing else in blocks
  // Vocab-parallel embedding (forward), head input gradient (backward) and cross-entropy.
  EXPECT_EQ(count_ids(plan, R"(.*/fwd/embed/ar)"), 1u * m);
  EXPECT_EQ(count_ids(plan, R"(.*/bwd/head/ar)"), 1u * m);
  EXPECT_EQ(count_ids(plan, R"(.*/fwd/loss/ar)"), 1u * m);
  const TaskIndex ar = index_of(plan, "it0/dp0/pp0/mb1/fwd/l1/proj/ar");
  const Task& task = plan.task(ar);
  EXPECT_EQ(task.group, (std::vector<WorkerId>{0, 1}));
  EXPECT_EQ(task.algo, CollectiveAlgo::ring);
  const double microbatch = 8.0 / m;                           // default batch: 8 sequences per replica
  EXPECT_DOUBLE_EQ(task.comm_bytes, microbatch * 8 * 64 * 4);  // mb * seq * hidden * fp32
  EXPECT_TRUE(has(task.data_deps, index_of(plan, "it0/dp0/pp0/tp0/mb1/fwd/l1/proj")));
  EXPECT_TRUE(has(task.data_deps, index_of(plan, "it0/dp0/pp0/tp1/mb1/fwd/l1/proj")));
  for (int t = 0; t < 2; ++t) {
    const std::string p = cat("it0/dp0/pp0/tp", t) + "/mb1/";
    EXPECT_TRUE(has(plan.task(index_of(plan, p + "fwd/l1/res1")).data_deps, ar));
    // The backward allreduce follows qkv's input gradient; ln1's backward waits for it.
    EXPECT_TRUE(has(plan.task(index_of(plan, p + "bwd/l1/ln1")).data_deps,
                    index_of(plan, "it0/dp0/pp0/mb1/bwd/l1/qkv/ar")));
  }
  // Split layers cost half on each rank; replicated ones are whole.
  const Plan single = lower(model, config_of(1, 1, 1, m));
  const auto flops = [](const Plan& p, const std::string& id) { return p.task(index_of(p, id)).flops; };
  EXPECT_DOUBLE_EQ(flops(plan, "it0/dp0/pp0/tp1/mb0/fwd/l0/fc1"),
                   flops(single, "it0/dp0/pp0/tp0/mb0/fwd/l0/fc1") / 2);
  EXPECT_DOUBLE_EQ(flops(plan, "it0/dp0/pp0/tp1/mb0/fwd/l0/ln1"),
                   flops(single, "it0/dp0/pp0/tp0/mb0/fwd/l0/ln1"));
}

TEST(Lowering, BucketAllreducesWaitForEveryReplica) {
  StrategyConfig config = config_of(3, 1, 1, 2);
  config.bucket_bytes = 0;
  config.dp_algo = CollectiveAlgo::tree;
  const Plan plan = lower(linear_model(2), config);
  // Backward order: fc1 first, so bucket 0 holds fc1.
  for (int k = 0; k < 2; ++k) {
    const std::string layer = k == 0 ? "fc1" : "fc0";
    const Task& bucket = plan.task(index_of(plan, cat("it0/pp0/tp0/ar/b", k)));
    EXPECT_EQ(bucket.group, (std::vector<WorkerId>{0, 1, 2}));
    EXPECT_EQ(bucket.algo, CollectiveAlgo::tree);
    EXPECT_EQ(bucket.priority < plan.task(index_of(plan, "it0/dp0/pp0/tp0/opt")).priority, true);
    for (int d = 0; d < 3; ++d)
      EXPECT_TRUE(has(bucket.data_deps, index_of(plan, cat("it0/dp", d) + "/pp0/tp0/mb1/bwdw/" + layer)));
    for (int d = 0; d < 3; ++d)
      EXPECT_TRUE(has(plan.task(index_of(plan, cat("it0/dp", d) + "/pp0/tp0/opt")).data_deps,
                      index_of(plan, cat("it0/pp0/tp0/ar/b", k))));
  }
  EXPECT_LT(plan.task(index_of(plan, "it0/pp0/tp0/ar/b0")).priority,
            plan.task(index_of(plan, "it0/pp0/tp0/ar/b1")).priority);
}

TEST(Lowering, OneFOneBBoundsMicrobatchesInFlightWithControlDeps) {
  const int pp = 2;
  StrategyConfig config = config_of(1, 1, pp, 4);
  const Plan plan = lower(fixed_model(4), config);
  // Stage 0 runs microbatch pp only after microbatch 0's backward; stage 1 after mb 1 - 1.
  EXPECT_TRUE(has(plan.task(index_of(plan, "it0/dp0/pp0/tp0/mb2/fwd/l0")).control_deps,
                  index_of(plan, "it0/dp0/pp0/tp0/mb0/bwd/l0")));
  EXPECT_TRUE(has(plan.task(index_of(plan, "it0/dp0/pp1/tp0/mb1/fwd/l2")).control_deps,
                  index_of(plan, "it0/dp0/pp1/tp0/mb0/bwd/l2")));
  EXPECT_TRUE(plan.task(index_of(plan, "it0/dp0/pp0/tp0/mb1/fwd/l0")).control_deps.empty());
  // Priorities follow F0 F1 B0 F2 B1 F3 B2 B3 at stage 0.
  const auto prio = [&](const std::string& id) { return plan.task(index_of(plan, id)).priority; };
  const std::string s0 = "it0/dp0/pp0/tp0/";
  EXPECT_LT(prio(s0 + "mb1/fwd/l1"), prio(s0 + "mb0/bwd/l1"));
  EXPECT_LT(prio(s0 + "mb0/bwd/l0"), prio(s0 + "mb2/fwd/l0"));
  EXPECT_LT(prio(s0 + "mb2/fwd/l1"), prio(s0 + "mb1/bwd/l1"));
  EXPECT_LT(prio(s0 + "mb0/fwd/l0"), prio(s0 + "mb0/fwd/l1"));
  EXPECT_LT(prio(s0 + "mb0/bwd/l1"), prio(s0 + "mb0/bwd/l0"));

  config.schedule = PipelineSchedule::gpipe;
  const Plan gpipe = lower(fixed_model(4), config);
  EXPECT_EQ(gpipe.info.schedule_label(), "gpipe");
  for (const Task& t : gpipe.tasks()) {
    if (t.id.find("/fwd/") != std::string::npos) {
      EXPECT_TRUE(t.control_deps.empty()) << t.id;
    }
  }
  const auto gprio = [&](const std::string& id) { return gpipe.task(index_of(gpipe, id)).priority; };
  EXPECT_LT(gprio(s0 + "mb3/fwd/l1"), gprio(s0 + "mb3/bwd/l1"));
  EXPECT_LT(gprio(s0 + "mb3/bwd/l0"), gprio(s0 + "mb2/bwd/l1"));  // backward in reverse order
}

TEST(Lowering, IterationsChainThroughTheOptimizer) {
  StrategyConfig config = config_of(2, 1, 2, 2);
  config.iterations = 3;
  const Plan plan = lower(fixed_model(4), config);
  EXPECT_EQ(plan.num_iterations(), 3);
  for (int j = 0; j < 2; ++j)
    EXPECT_TRUE(has(plan.task(index_of(plan, cat("it2/dp1/pp1/tp0/mb", j) + "/fwd/l2")).control_deps,
                    index_of(plan, "it1/dp1/pp1/tp0/opt")));
  EXPECT_EQ(plan.task(index_of(plan, "it1/dp0/pp0/tp0/mb0/fwd/l0")).iteration, 1);
  EXPECT_LT(plan.task(index_of(plan, "it0/dp0/pp0/tp0/opt")).priority,
            plan.task(index_of(plan, "it1/dp0/pp0/tp0/mb0/fwd/l0")).priority);
}

TEST(Lowering, IdsFollowTheGrammarAndNameNoHost) {
  const std::regex compute(
      R"(it(\d+)/dp(\d+)/pp(\d+)/tp(\d+)/mb\d+/(fwd|bwd|bwdw)/[A-Za-z0-9_]+(/[A-Za-z0-9_]+)?)");
  const std::regex p2p(R"(it(\d+)/dp(\d+)/pp(\d+)/tp(\d+)/mb\d+/(send|recv)/(fwd|bwd))");
  const std::regex opt(R"(it(\d+)/dp(\d+)/pp(\d+)/tp(\d+)/opt)");
  const std::regex tp_ar(R"(it\d+/dp\d+/pp\d+/mb\d+/(fwd|bwd)/[A-Za-z0-9_/]+/ar)");
  const std::regex dp_ar(R"(it\d+/pp\d+/tp\d+/ar/b\d+)");
  StrategyConfig config = config_of(2, 2, 2, 2);
  config.iterations = 2;
  const Plan plan = lower(tiny_gpt(2), config);
  for (const Task& t : plan.tasks()) {
    std::smatch match;
    if (std::regex_match(t.id, match, compute) || std::regex_match(t.id, match, p2p) ||
        std::regex_match(t.id, match, opt)) {
      const int d = std::stoi(match[2]), s = std::stoi(match[3]), tp = std::stoi(match[4]);
      EXPECT_EQ(t.worker, (d * 2 + s) * 2 + tp) << t.id;
      EXPECT_EQ(t.iteration, std::stoi(match[1])) << t.id;
    } else {
      EXPECT_TRUE(std::regex_match(t.id, tp_ar) || std::regex_match(t.id, dp_ar)) << t.id;
      EXPECT_EQ(t.kind, TaskKind::allreduce) << t.id;
    }
  }
  // The Plan is a function of the model and the strategy alone: lowering twice gives the same
  // ids in the same order (placement happens later, in sim/).
  const Plan again = lower(tiny_gpt(2), config);
  ASSERT_EQ(again.size(), plan.size());
  for (TaskIndex i = 0; i < plan.size(); ++i) ASSERT_EQ(again.task(i).id, plan.task(i).id);
}

// ---------------------------------------------------------------- a run on a virtual clock

TEST(Lowering, EveryPlanUpToEightWorkersRunsToTheEnd) {
  for (int dp : {1, 2, 4, 8})
    for (int tp : {1, 2, 4})
      for (int pp : {1, 2, 4}) {
        if (dp * tp * pp > 8) continue;
        for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
          for (std::int64_t m : {std::int64_t{0}, std::int64_t{2 * pp}}) {
            StrategyConfig config = config_of(dp, tp, pp, m);
            config.schedule = schedule;
            config.iterations = 2;
            config.bucket_bytes = 20000;
            const Model model = tiny_gpt(4);
            const Plan plan = lower(model, config);
            const RunResult run = run_unit_durations(plan);
            const std::string label =
                config.to_string() + " " + std::string(to_string(schedule)) + " m=" + std::to_string(m);
            EXPECT_TRUE(run.finished) << label;
            for (double net : run.net_memory) EXPECT_NEAR(net, 0, 1e-6) << label;
            if (tp == 1) {
              const Plan fixed = lower(fixed_model(4), config);
              EXPECT_TRUE(run_unit_durations(fixed).finished) << label << " fixed";
            }
          }
      }
}

TEST(Lowering, OneFOneBHoldsAtMostPpMicrobatchesGPipeHoldsAll) {
  const int pp = 4;
  const int m = 8;
  StrategyConfig config = config_of(1, 1, pp, m);
  const RunResult one_f_one_b = run_unit_durations(lower(fixed_model(8), config));
  config.schedule = PipelineSchedule::gpipe;
  const RunResult gpipe = run_unit_durations(lower(fixed_model(8), config));
  ASSERT_TRUE(one_f_one_b.finished);
  ASSERT_TRUE(gpipe.finished);
  EXPECT_EQ(one_f_one_b.max_in_flight, pp);
  EXPECT_EQ(gpipe.max_in_flight, m);
  // Stage 0 holds 2 layers x 100 elements x fp32 per microbatch in flight, and in a backward
  // the gradient a layer reads and the one it writes (100 elements each).
  const double per_microbatch = 2 * 100 * 4;
  const double gradient = 100 * 4;
  EXPECT_DOUBLE_EQ(one_f_one_b.peak_memory[0], pp * per_microbatch + 2 * gradient);
  EXPECT_DOUBLE_EQ(gpipe.peak_memory[0], m * per_microbatch + 2 * gradient);
  // The last stage of 1F1B holds a single microbatch; its first backward (the last layer's,
  // which reads no gradient) writes one while the microbatch's activations are held.
  EXPECT_DOUBLE_EQ(one_f_one_b.peak_memory[pp - 1], per_microbatch + gradient);
  // Without PP, microbatches accumulate one at a time.
  const RunResult accumulate = run_unit_durations(lower(fixed_model(8), config_of(1, 1, 1, m)));
  EXPECT_EQ(accumulate.max_in_flight, 1);
}

TEST(Lowering, ZooPresetsLower) {
  StrategyConfig anchor = config_of(4, 1, 1);
  anchor.dtype = DType::bf16;
  const Plan plan = lower(make_model("anchor-96"), anchor);
  EXPECT_EQ(plan.info.global_batch, 4);
  EXPECT_EQ(count_ids(plan, R"(it0/pp0/tp0/ar/b\d+)"), 96u);  // 48 MB per layer > 25 MB buckets
  EXPECT_DOUBLE_EQ(plan.task(index_of(plan, "it0/pp0/tp0/ar/b0")).comm_bytes, 48e6);
  EXPECT_TRUE(run_unit_durations(plan).finished);
  for (const std::string name : {"mlp", "lenet5", "resnet50"}) {
    const Plan p = lower(make_model(name), config_of(2, 1, 2));
    EXPECT_TRUE(run_unit_durations(p).finished) << name;
  }
}

}  // namespace
}  // namespace strata
