// The analytical estimate with the memory options of issue 15 (docs/memory.md): recomputation,
// ZeRO, offload, ddp=after_flush, interleaved 1F1B and ZB-H1, on hand-built models with
// hand-derived numbers.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "estimate_fixtures.hpp"
#include "strata/models/cost/analytical.hpp"
#include "strata/models/cost/memory_model.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using namespace estimate_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

TEST(AnalyticalOptions, ReduceScatterAndAllGatherAreHalfARingAllreduce) {
  // Ring over 4 ranks, 4 MB at 1 GB/s, 10 µs: 3·10 µs + 3/4·4 ms = 3.03 ms each, and the two
  // together are the allreduce's 6.06 ms. Recursive halving / doubling: 2·10 µs + 3 ms.
  EXPECT_DOUBLE_EQ(reduce_scatter_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5), 3.03e-3);
  EXPECT_DOUBLE_EQ(allgather_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5), 3.03e-3);
  EXPECT_DOUBLE_EQ(reduce_scatter_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5) +
                       allgather_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5),
                   allreduce_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5));
  EXPECT_DOUBLE_EQ(reduce_scatter_time(CollectiveAlgo::halving_doubling, 4, 4e6, 1e9, 1e-5), 3.02e-3);
  EXPECT_DOUBLE_EQ(allgather_time(CollectiveAlgo::ring, 1, 4e6, 1e9, 1e-5), 0);
}

TEST(AnalyticalOptions, FullRecomputationAddsTheForwardToEachBackward) {
  // 4 blocks of 1 ms forward, 2 ms backward, pp = 1, one microbatch: 4 + 8 = 12 ms; full
  // recomputation re-runs every block's forward in backward: 12 + 4 = 16 ms.
  const Model model = fixed_model(4, 1e-3, 2e-3);
  StrategyConfig config = config_with(1, 1, 1, 1, 1);
  EXPECT_DOUBLE_EQ(estimate(model, config, free_cluster(), CostModel()).iteration_s, 12e-3);
  config.recompute = Recompute::full;
  Estimate e = estimate(model, config, free_cluster(), CostModel());
  EXPECT_DOUBLE_EQ(e.iteration_s, 16e-3);
  EXPECT_DOUBLE_EQ(e.compute_s, 16e-3);
  // Method block, one block per stage, pp = 2, 4 microbatches: a stage re-runs one of its two
  // blocks: t_stage = 2 + 4 + 1 = 7 ms, (m + p - 1) t_stage = 5 x 7 = 35 ms.
  config = config_with(1, 1, 2, 4, 4);
  config.recompute = Recompute::full;
  config.recompute_method = RecomputeMethod::block;
  e = estimate(model, config, free_cluster(), CostModel());
  EXPECT_DOUBLE_EQ(e.iteration_s, 35e-3);
  // Selective recomputation re-runs only attention cores: none here.
  config.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(estimate(model, config, free_cluster(), CostModel()).iteration_s, 5 * 6e-3);
}

// A column linear (input 1000, output 4000) then a row linear (output 1000): one TP allreduce of
// 1000 elements per microbatch in forward (after the row linear), one in backward (the column
// linear's input gradient).
Model tp_linears() {
  Layer column;
  column.name = "fc1";
  column.op = LayerOp::linear;
  column.split = TensorSplit::column;
  column.out_elems = 4000;
  column.shape = {{"m", std::int64_t{1}}, {"k", std::int64_t{1000}}, {"n", std::int64_t{4000}}};
  Layer row = column;
  row.name = "fc2";
  row.split = TensorSplit::row;
  row.out_elems = 1000;
  row.shape = {{"m", std::int64_t{1}}, {"k", std::int64_t{4000}}, {"n", std::int64_t{1000}}};
  Model model;
  model.name = "tp";
  model.layers = {column, row};
  return model;
}

TEST(AnalyticalOptions, RecomputationRepeatsTheForwardTensorParallelAllreduces) {
  // A column linear (input 1000) then a row linear (output 1000), tp = 2, fp32, microbatch 1:
  // each allreduce 2·1·1 µs + 4000 B / 1 GB/s = 6 µs; per microbatch one in forward (row), one
  // in backward (column) and, with full recomputation, the row's forward one again: 18 µs,
  // 36 µs for 2 microbatches.
  const Model model = tp_linears();
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 1e9;
  cluster.intra_latency = 1e-6;
  StrategyConfig config = config_with(1, 2, 1, 2, 2);
  config.recompute = Recompute::full;
  const Estimate e = estimate(model, config, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.tp_comm_s, 36e-6);
  EXPECT_DOUBLE_EQ(e.iteration_s, 36e-6);
}

TEST(AnalyticalOptions, SelectiveRecomputationReRunsTheAttentionCores) {
  // gpt2-small, batch 8 in 2 microbatches of 4: the compute grows by 2 x the forward of its 12
  // attention cores, as the cost model times them.
  const Model model = make_model("gpt2-small");
  ClusterSpec cluster = free_cluster();
  cluster.host.flops_bf16 = 312e12;
  cluster.host.mem_bw = 2.039e12;
  StrategyConfig config = config_with(1, 1, 1, 2, 8);
  config.dtype = DType::bf16;
  const CostModel cost;
  double attention_fwd = 0;
  for (const Layer& layer : model.layers)
    if (layer.op == LayerOp::attention)
      attention_fwd += cost.compute_time(
          layer_task(layer, Phase::forward, 4, 1, DType::bf16, layer_task_options(config, model)),
          cluster.host);
  const Estimate plain = estimate(model, config, cluster, cost);
  config.recompute = Recompute::selective;
  const Estimate selective = estimate(model, config, cluster, cost);
  EXPECT_NEAR(selective.compute_s - plain.compute_s, 2 * attention_fwd, 1e-9 * plain.compute_s);
  // Model FLOPs do not count the re-run, hardware FLOPs do.
  EXPECT_LT(selective.mfu, plain.mfu);
  EXPECT_GT(selective.hfu, selective.mfu);
  EXPECT_LE(selective.hfu, 1);
  EXPECT_NEAR(plain.hfu, plain.mfu, 0.1 * plain.mfu);
}

TEST(AnalyticalOptions, InterleavingDividesTheBubbleByV) {
  // 8 blocks of 1 + 2 ms, pp = 2, 4 microbatches: a device holds 4 blocks, t_stage = 12 ms.
  // 1F1B: (m + p - 1) 12 = 60 ms; interleaved, v = 2: (m + (p - 1)/v) 12 = 4.5 x 12 = 54 ms,
  // bubble 6/54.
  const Model model = fixed_model(8, 1e-3, 2e-3);
  StrategyConfig config = config_with(1, 1, 2, 4, 4);
  EXPECT_DOUBLE_EQ(estimate(model, config, free_cluster(), CostModel()).iteration_s, 60e-3);
  config.interleave = 2;
  Estimate e = estimate(model, config, free_cluster(), CostModel());
  EXPECT_DOUBLE_EQ(e.iteration_s, 54e-3);
  EXPECT_DOUBLE_EQ(e.bubble_fraction, 6.0 / 54);
  // The boundary is crossed v times as often: 4000 B at 4 MB/s after 100 µs = 1.1 ms, twice
  // per crossing, 2 crossings: 4.4 ms.
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 4e6;
  cluster.intra_latency = 1e-4;
  e = estimate(model, config, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.pp_comm_s, 4 * 1.1e-3);
  EXPECT_DOUBLE_EQ(e.iteration_s, 54e-3 + 4.4e-3);
}

TEST(AnalyticalOptions, ZeroBubbleH1FillsTheBubbleWithWeightGradients) {
  // 4 blocks of one linear layer, pp = 2, 4 microbatches of 1: with T_F, T_B (input gradient)
  // and T_W (weight gradient) as the cost model times one stage's tasks, 1F1B takes
  // (m + p - 1)(T_F + T_B + T_W) and ZB-H1 m (T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W):
  // the difference is (p - 1) 2 T_W.
  Model model;
  model.name = "linears";
  model.family = "synthetic";
  for (int b = 0; b < 4; ++b) {
    Layer layer;
    layer.name = std::string("fc").append(std::to_string(b));
    layer.op = LayerOp::linear;
    layer.block = b;
    layer.fwd_flops = layer.bwd_data_flops = layer.bwd_weight_flops = 1e12;
    layer.shape = {{"m", std::int64_t{1000}}, {"k", std::int64_t{1000}}, {"n", std::int64_t{500}}};
    model.layers.push_back(layer);
  }
  ClusterSpec cluster = free_cluster();
  cluster.host.flops_fp32 = 1e13;
  const CostModel cost;
  const double w =
      cost.compute_time(layer_task(model.layers[0], Phase::backward_weight, 1, 1, DType::fp32), cluster.host);
  StrategyConfig config = config_with(1, 1, 2, 4, 4);
  const Estimate one_f_one_b = estimate(model, config, cluster, cost);
  config.schedule = PipelineSchedule::zb_h1;
  const Estimate zb = estimate(model, config, cluster, cost);
  EXPECT_NEAR(one_f_one_b.iteration_s - zb.iteration_s, 1 * 2 * (2 * w), 1e-12);
  EXPECT_LT(zb.bubble_fraction, one_f_one_b.bubble_fraction);
}

// dp = 4 on one host at 1 GB/s, 10 µs, one fixed layer (1 ms forward, no backward) of 1e6
// fp32 parameters (S = 4 MB); the optimizer step, 1e6 x 16 B at 16 GB/s x 0.8, takes 1.25 ms
// (as analytical_test.cpp's DataParallelRingIsFullyExposedWithoutBackward).
struct DpSetup {
  Model model = fixed_model(1, 1e-3, 0, 1e6);
  ClusterSpec cluster = free_cluster();
  StrategyConfig config = config_with(4, 1, 1, 0, 4);
  DpSetup() {
    model.family = "custom";
    cluster.host.mem_bw = 16e9;
    cluster.intra_bw = 1e9;
    cluster.intra_latency = 1e-5;
  }
};

TEST(AnalyticalOptions, ZeroOneAndTwoReduceScatterGradientsAndGatherParameters) {
  // Reduce-scatter of the 4 MB gradient: 3.03 ms; the step on a quarter of the parameters:
  // 0.3125 ms; the all-gather of the 4 MB of updated parameters: 3.03 ms.
  DpSetup d;
  for (int stage : {1, 2}) {
    d.config.zero = stage;
    const Estimate e = estimate(d.model, d.config, d.cluster, CostModel());
    EXPECT_DOUBLE_EQ(e.dp_comm_s, 3.03e-3) << "zero " << stage;
    EXPECT_DOUBLE_EQ(e.iteration_s, 1e-3 + 3.03e-3 + 0.3125e-3 + 3.03e-3) << "zero " << stage;
  }
}

TEST(AnalyticalOptions, ZeroThreeGathersParametersInForwardAndBackward) {
  // ZeRO-3 gathers the layer's 4 MB before its forward (3.03 ms) and before its backward
  // (3.03 ms): the one unit's gather cannot hide behind its own use (the lowering's first
  // gather of a phase waits with the compute, lowering_zero3.cpp); then it reduce-scatters the
  // gradient (3.03 ms) and steps its quarter (0.3125 ms); no gather after.
  DpSetup d;
  d.config.zero = 3;
  const Estimate e = estimate(d.model, d.config, d.cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.iteration_s, 1e-3 + 3.03e-3 + 3.03e-3 + 3.03e-3 + 0.3125e-3);
}

TEST(AnalyticalOptions, OffloadCrossesPcieAndStepsOnTheHost) {
  // ZeRO-1 with offload: the 2.5e5-parameter shard's gradient goes to the host and its
  // parameters come back, 2.5e5 x (4 + 4) B at 1 GB/s = 2 ms; CPU Adam 2.5e5 x 28 B at
  // 51.2 GB/s = 0.13671875 ms; then the parameters' all-gather, 3.03 ms.
  DpSetup d;
  d.config.zero = 1;
  d.config.offload = true;
  EXPECT_THROW(estimate(d.model, d.config, d.cluster, CostModel()), InputError);  // no pcie_bw
  d.cluster.host.pcie_bw = 1e9;
  const Estimate e = estimate(d.model, d.config, d.cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.iteration_s, 1e-3 + 3.03e-3 + 2e-3 + 0.13671875e-3 + 3.03e-3);
}

// Gradient compression (docs/compression.md) on DpSetup's 1e6 fp32 gradients: the encode reads
// and writes G and the residual E (16 MB at 16 GB/s x 0.8 = 1.25 ms), then int8's ring carries
// 1e6 one-byte codes and four 4-byte scales: 2·3·10 µs + 2·(3/4)·(1e6 + 16) B / 1 GB/s =
// 1.560024 ms. The residual is one more gradient's worth of memory: 4 MB.
TEST(AnalyticalOptions, CompressionShrinksTheExchangeAndAddsTheCodecAndItsResidual) {
  DpSetup d;
  const Estimate plain = estimate(d.model, d.config, d.cluster, CostModel());
  EXPECT_DOUBLE_EQ(plain.dp_comm_s, allreduce_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5));
  d.config.compression = Compression::int8;
  const Estimate int8 = estimate(d.model, d.config, d.cluster, CostModel());
  EXPECT_DOUBLE_EQ(int8.dp_comm_s, 1.25e-3 + 1.560024e-3);
  EXPECT_DOUBLE_EQ(int8.peak_memory_bytes - plain.peak_memory_bytes, 4e6);
  // top-k 1 %: two codec passes, and an all-gather of 4 slots of 10,000 (value, index) pairs:
  // 3·10 µs + 3/4·320 kB / 1 GB/s = 0.27 ms.
  d.config.compression = Compression::topk;
  EXPECT_DOUBLE_EQ(estimate(d.model, d.config, d.cluster, CostModel()).dp_comm_s, 2 * 1.25e-3 + 0.27e-3);
}

TEST(AnalyticalOptions, AllreduceAfterTheFlushOverlapsNothing) {
  // Two blocks of 5e5 fp32 parameters, dp = 2 at 1 GB/s: two 2 MB buckets, 2 ms each. With
  // overlap the 3 ms backward hides the first (7 ms in all, analytical_test.cpp); after the
  // flush both are exposed: 2 + 3 + 4 = 9 ms.
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 1e9;
  StrategyConfig config = config_with(2, 1, 1, 1, 2);
  config.ddp = DdpMode::after_flush;
  const Estimate e = estimate(fixed_model(2, 1e-3, 1.5e-3, 5e5), config, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 4e-3);
  EXPECT_DOUBLE_EQ(e.iteration_s, 9e-3);
}

TEST(AnalyticalOptions, SequenceParallelismTurnsEachAllreduceIntoReduceScatterAndAllGather) {
  // The two linears of RecomputationRepeatsTheForwardTensorParallelAllreduces, tp = 2, without
  // recomputation: per microbatch one collective in forward, one in backward. Each allreduce is
  // 6 µs; with sequence parallelism each becomes a ring reduce-scatter (1 µs + 0.5 x 4000 B / 1
  // GB/s = 3 µs) and a ring all-gather (3 µs): the same 6 µs, 24 µs for 2 microbatches; and the
  // column-parallel linear's weight gradient all-gathers its sharded input again in backward
  // (3 µs per microbatch): 30 µs.
  const Model model = tp_linears();
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 1e9;
  cluster.intra_latency = 1e-6;
  StrategyConfig config = config_with(1, 2, 1, 2, 2);
  const Estimate plain = estimate(model, config, cluster, CostModel());
  config.sequence_parallel = true;
  const Estimate sp = estimate(model, config, cluster, CostModel());
  EXPECT_DOUBLE_EQ(plain.tp_comm_s, 24e-6);
  EXPECT_DOUBLE_EQ(sp.tp_comm_s, 30e-6);
}

TEST(AnalyticalOptions, FlashAttentionKeepsNoScoresAndRecomputesThemInBackward) {
  // A small GPT on one CPU-like host (roofline): FlashAttention's backward re-runs QK^T (2.5 x
  // the forward instead of 2 x, layer_tasks.hpp), so compute grows; no s x s scores are kept, so
  // the peak memory falls.
  const Model model = make_gpt("g", GptConfig{2, 64, 4, 128, 100});
  ClusterSpec cluster = free_cluster();
  cluster.host.flops_fp32 = 1e12;
  StrategyConfig config = config_with(1, 1, 1, 1, 4);
  const Estimate plain = estimate(model, config, cluster, CostModel());
  config.flash_attention = true;
  const Estimate flash = estimate(model, config, cluster, CostModel());
  EXPECT_GT(flash.compute_s, plain.compute_s);
  EXPECT_LT(flash.peak_memory_bytes, plain.peak_memory_bytes);
}

TEST(AnalyticalOptions, EstimatorGivesWhatEstimateGives) {
  // One Estimator over a grid of a 8-block GPT (its caches shared across configurations) against
  // a fresh estimate() for each: the same figures, bit for bit.
  const Model model = make_gpt("small", {8, 64, 4, 32, 128});
  ClusterSpec cluster = free_cluster();
  cluster.host.flops_bf16 = 312e12;
  cluster.host.mem_bw = 2.039e12;
  cluster.host.pcie_bw = 32e9;
  cluster.hosts = 2;
  cluster.intra_bw = 300e9;
  cluster.intra_latency = 1e-6;
  cluster.inter_bw = 25e9;
  cluster.inter_latency = 5e-6;
  const CostModel cost;
  Estimator estimator(model, cluster, cost);
  int checked = 0;
  for (int tp : {1, 2, 4}) {
    for (int pp : {1, 2, 4}) {
      for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
        for (int zero : {0, 1, 3}) {
          for (int interleave : {1, 2}) {
            StrategyConfig c = config_with(16 / (tp * pp), tp, pp, 2 * pp, 64);
            c.dtype = DType::bf16;
            c.bucket_bytes = 25e6;
            c.recompute = recompute;
            c.zero = zero;
            c.offload = zero == 3;
            c.interleave = interleave;
            c.schedule = interleave == 1 && pp > 1 ? PipelineSchedule::zb_h1 : PipelineSchedule::one_f_one_b;
            try {
              check_strategy(model, c);
            } catch (const InputError&) {
              continue;
            }
            const Estimate a = estimator(c);
            const Estimate b = estimate(model, c, cluster, cost);
            EXPECT_EQ(a.iteration_s, b.iteration_s) << c.to_string();
            EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes) << c.to_string();
            EXPECT_EQ(a.peak_memory_bytes, peak_worker_memory(model, c)) << c.to_string();
            EXPECT_EQ(a.hfu, b.hfu) << c.to_string();
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace strata
