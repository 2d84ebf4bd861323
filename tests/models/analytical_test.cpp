// Layer tasks and the analytical estimate, on hand-built models with hand-derived numbers.
#include "strata/models/cost/analytical.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "estimate_fixtures.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

using namespace estimate_test;  // NOLINT(google-build-using-namespace): the fixtures of these tests

// --- layer tasks ---------------------------------------------------------------------------

TEST(LayerTasks, KindsPerOp) {
  EXPECT_EQ(forward_kind(LayerOp::linear), TaskKind::linear_fwd);
  EXPECT_EQ(backward_data_kind(LayerOp::conv), TaskKind::conv_bwd_data);
  EXPECT_EQ(backward_weight_kind(LayerOp::linear), TaskKind::linear_bwd_weight);
  EXPECT_EQ(backward_weight_kind(LayerOp::attention), std::nullopt);
  EXPECT_EQ(backward_data_kind(LayerOp::elementwise), TaskKind::elementwise);
  EXPECT_EQ(forward_kind(LayerOp::fixed), TaskKind::fixed);
  EXPECT_EQ(to_string(Phase::backward_weight), "bwdw");
}

TEST(LayerTasks, ColumnSplitLinear) {
  // Per sample m = 2 rows, k = 8 in, n = 16 out: 2·2·8·16 = 512 FLOP, 128 weights, input 16,
  // output 32. Microbatch 4 on one of 2 ranks, fp32: 512·4/2 = 1024 FLOP; the rank reads the
  // whole input (64 elements) and its half of the weights (64), writes half the output (64).
  Layer layer;
  layer.name = "fc";
  layer.op = LayerOp::linear;
  layer.split = TensorSplit::column;
  layer.params = 128;
  layer.fwd_flops = 512;
  layer.bwd_data_flops = 512;
  layer.bwd_weight_flops = 512;
  layer.out_elems = 32;
  layer.saved_elems = 16;
  layer.shape = {{"m", std::int64_t{2}}, {"k", std::int64_t{8}}, {"n", std::int64_t{16}}};
  const Task fwd = layer_task(layer, Phase::forward, 4, 2, DType::fp32);
  EXPECT_EQ(fwd.kind, TaskKind::linear_fwd);
  EXPECT_EQ(fwd.stream, Stream::compute);
  EXPECT_DOUBLE_EQ(fwd.flops, 1024);
  EXPECT_DOUBLE_EQ(fwd.bytes_read, (64 + 64) * 4.0);
  EXPECT_DOUBLE_EQ(fwd.bytes_written, 64 * 4.0);
  EXPECT_EQ(fwd.attr_int("m"), 8);  // rows of the microbatch
  EXPECT_EQ(fwd.attr_int("n"), 8);  // this rank's columns
  EXPECT_EQ(fwd.attr_int("k"), 8);
  const Task bwdw = layer_task(layer, Phase::backward_weight, 4, 2, DType::fp32);
  EXPECT_EQ(bwdw.kind, TaskKind::linear_bwd_weight);
  EXPECT_DOUBLE_EQ(bwdw.bytes_read, (64 + 64) * 4.0);  // X and dY
  EXPECT_DOUBLE_EQ(bwdw.bytes_written, 64 * 4.0);      // dW
  // Replicated: nothing divided.
  layer.split = TensorSplit::replicated;
  EXPECT_DOUBLE_EQ(layer_task(layer, Phase::backward_data, 4, 2, DType::bf16).flops, 2048);
}

TEST(LayerTasks, OpsWithoutWeightKindCarryTheWeightGradientInBackward) {
  Layer embed;
  embed.name = "embed";
  embed.op = LayerOp::embedding;
  embed.fwd_flops = 10;
  embed.bwd_weight_flops = 20;
  const Task bwd = layer_task(embed, Phase::backward_data, 3, 1, DType::fp32);
  EXPECT_EQ(bwd.kind, TaskKind::embedding_bwd);
  EXPECT_DOUBLE_EQ(bwd.flops, 60);
  EXPECT_THROW(layer_task(embed, Phase::backward_weight, 3, 1, DType::fp32), std::logic_error);
}

TEST(LayerTasks, FixedLayerCarriesItsDuration) {
  const Layer layer = fixed_layer(0, 1e-3, 2e-3);
  const Task fwd = layer_task(layer, Phase::forward, 8, 1, DType::bf16);
  EXPECT_EQ(fwd.kind, TaskKind::fixed);
  EXPECT_EQ(fwd.attr_real("duration_s"), 1e-3);
  EXPECT_EQ(layer_task(layer, Phase::backward_data, 8, 1, DType::bf16).attr_real("duration_s"), 2e-3);
  EXPECT_EQ(layer_cost_task(layer, Phase::backward_data, 8, 1, DType::bf16).attr_real("duration_s"), 2e-3);
}

// --- collectives ---------------------------------------------------------------------------

TEST(Analytical, CollectiveFormulas) {
  // Ring over 4 ranks, 4 MB at 1 GB/s, 10 µs: 2·3·10 µs + 2·3/4·4 ms = 6.06 ms.
  EXPECT_DOUBLE_EQ(allreduce_time(CollectiveAlgo::ring, 4, 4e6, 1e9, 1e-5), 6.06e-3);
  // Halving-doubling: 2·log2(4)·10 µs + 6 ms = 6.04 ms. Tree: 2·2·(10 µs + 4 ms) = 16.04 ms.
  EXPECT_DOUBLE_EQ(allreduce_time(CollectiveAlgo::halving_doubling, 4, 4e6, 1e9, 1e-5), 6.04e-3);
  EXPECT_DOUBLE_EQ(allreduce_time(CollectiveAlgo::tree, 4, 4e6, 1e9, 1e-5), 16.04e-3);
  EXPECT_DOUBLE_EQ(allreduce_time(CollectiveAlgo::ring, 1, 4e6, 1e9, 1e-5), 0);
  EXPECT_DOUBLE_EQ(p2p_time(4000, 4e6, 1e-4), 1.1e-3);
}

// --- pipeline ------------------------------------------------------------------------------

TEST(Analytical, UniformPipelineWithFreeCommunicationIsTheBubbleFormula) {
  // 4 stages of one fixed layer (t_f = 1 ms, t_b = 2 ms), 8 microbatches:
  // (m + p - 1)(t_f + t_b) = 11 x 3 ms = 33 ms, for GPipe and 1F1B alike.
  const Model model = fixed_model(4, 1e-3, 2e-3);
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    StrategyConfig config = config_with(1, 1, 4, 8, 8);
    config.schedule = schedule;
    const Estimate e = estimate(model, config, free_cluster(), CostModel());
    EXPECT_DOUBLE_EQ(e.iteration_s, 11 * (1e-3 + 2e-3));
    EXPECT_DOUBLE_EQ(e.compute_s, 8 * (1e-3 + 2e-3));
    EXPECT_DOUBLE_EQ(e.bubble_fraction, 3.0 / 11);
    EXPECT_DOUBLE_EQ(e.exposed_comm_s, 0);
    EXPECT_DOUBLE_EQ(e.tokens_per_s, 8 / e.iteration_s);  // seq = 1
  }
}

TEST(Analytical, PipelineBoundariesAddTwoTransfersEach) {
  // Each boundary sends 1000 elements x 1 sample x 4 B = 4000 B at 4 MB/s after 100 µs:
  // 1.1 ms, twice per boundary, 3 boundaries: 6.6 ms on top of 33 ms.
  const Model model = fixed_model(4, 1e-3, 2e-3);
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 4e6;
  cluster.intra_latency = 1e-4;
  const Estimate e = estimate(model, config_with(1, 1, 4, 8, 8), cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.pp_comm_s, 6 * 1.1e-3);
  EXPECT_DOUBLE_EQ(e.iteration_s, 33e-3 + 6.6e-3);
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 6.6e-3);
}

// --- data parallel -------------------------------------------------------------------------

TEST(Analytical, DataParallelRingIsFullyExposedWithoutBackward) {
  // One fixed layer (1 ms forward, 0 backward) of 1e6 fp32 parameters: S = 4 MB per worker.
  // dp = 4 on one host at 1 GB/s, 10 µs: 2(n-1)(α + S/(nB)) = 6 (10 µs + 1 ms) = 6.06 ms.
  // Optimizer step: 1e6 x (4 + 8 read + 4 written) B (fp32 Adam) at 16 GB/s x 0.8 = 1.25 ms.
  // Not "synthetic": synthetic models' optimizer steps cost nothing (layer_tasks.hpp).
  auto [model, cluster] = dp_ring_case();
  const Estimate e = estimate(model, config_with(4, 1, 1, 0, 4), cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.dp_comm_s, 6.06e-3);
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 6.06e-3);
  EXPECT_DOUBLE_EQ(e.iteration_s, 1e-3 + 6.06e-3 + 1.25e-3);
  // Four hosts of one slot at 0.5 GB/s, 20 µs: every hop crosses hosts,
  // 6 (20 µs + 4 MB / (4 x 0.5 GB/s)) = 12.12 ms.
  cluster.host.slots = 1;
  cluster.hosts = 4;
  cluster.inter_bw = 5e8;
  cluster.inter_latency = 2e-5;
  EXPECT_DOUBLE_EQ(estimate(model, config_with(4, 1, 1, 0, 4), cluster, CostModel()).dp_comm_s, 12.12e-3);
  // Two hosts of 2 slots: the ring leaves each host by one flow, which has the whole NIC
  // (2 x 0.5 GB/s = 1 GB/s, the intra-host rate too); the step waits for the 20 µs hop:
  // 6 (20 µs + 1 ms) = 6.12 ms.
  cluster.host.slots = 2;
  cluster.hosts = 2;
  EXPECT_DOUBLE_EQ(estimate(model, config_with(4, 1, 1, 0, 4), cluster, CostModel()).dp_comm_s, 6.12e-3);
  // Not enough slots.
  cluster.hosts = 1;
  EXPECT_THROW(estimate(model, config_with(4, 1, 1, 0, 4), cluster, CostModel()), InputError);
}

TEST(Analytical, BucketsOverlapTheLastBackward) {
  // Two blocks of 5e5 fp32 parameters: one 2 MB bucket each (bucket_bytes = 0). dp = 2 at
  // 1 GB/s, no latency: each allreduce 2·1/2·2 MB / 1 GB/s = 2 ms, 4 ms in all.
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 1e9;
  const auto config = config_with(2, 1, 1, 1, 2);
  // Backward 2 x 1.5 ms = 3 ms hides the first bucket: only the last one's 2 ms is exposed.
  Estimate e = estimate(fixed_model(2, 1e-3, 1.5e-3, 5e5), config, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.dp_comm_s, 4e-3);
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 2e-3);
  EXPECT_DOUBLE_EQ(e.iteration_s, 2e-3 + 3e-3 + 2e-3);
  // Backward 2 x 0.5 ms = 1 ms hides half of the first: (2 - 1) + 2 = 3 ms exposed.
  e = estimate(fixed_model(2, 1e-3, 0.5e-3, 5e5), config, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 3e-3);
  // Three layers of 1 MB in 2 MB buckets of whole layers: [2 MB, 1 MB] -> 2 ms + 1 ms; the
  // 1.5 ms backward hides 1.5 ms of the first: exposed (2 - 1.5) + 1 = 1.5 ms.
  auto bucketed = config;
  bucketed.bucket_bytes = 2e6;
  e = estimate(fixed_model(3, 1e-3, 0.5e-3, 2.5e5), bucketed, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.dp_comm_s, 3e-3);
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 1.5e-3);
  // A layer larger than the bucket is a bucket of its own: 1.5 MB buckets give [2, 2] MB for
  // the two 2 MB layers, as bucket_bytes = 0 did.
  bucketed.bucket_bytes = 1.5e6;
  e = estimate(fixed_model(2, 1e-3, 0.5e-3, 5e5), bucketed, cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.dp_comm_s, 4e-3);
  EXPECT_DOUBLE_EQ(e.exposed_comm_s, 3e-3);
}

// --- tensor parallel -----------------------------------------------------------------------

TEST(Analytical, TensorParallelAllreducesAfterRowAndBeforeColumnLinears) {
  // A column linear (input k = 1000) then a row linear (output 1000), no FLOPs. tp = 2, fp32,
  // microbatch 1: each allreduce moves 4000 B, 2·1·1 µs + 2·1/2·4000 B / 1 GB/s = 6 µs; one in
  // forward (row) and one in backward (column) per microbatch, 2 microbatches: 24 µs.
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
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 1e9;
  cluster.intra_latency = 1e-6;
  const Estimate e = estimate(model, config_with(1, 2, 1, 2, 2), cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.tp_comm_s, 24e-6);
  EXPECT_DOUBLE_EQ(e.iteration_s, 24e-6);
  // The two ranks on two hosts of one slot: 2·1·2 µs + 4000 B / 0.5 GB/s = 12 µs each, 48 µs.
  cluster.host.slots = 1;
  cluster.hosts = 2;
  cluster.inter_bw = 5e8;
  cluster.inter_latency = 2e-6;
  EXPECT_DOUBLE_EQ(estimate(model, config_with(1, 2, 1, 2, 2), cluster, CostModel()).tp_comm_s, 48e-6);
}

// --- zoo models ----------------------------------------------------------------------------

TEST(Analytical, AnchorDataParallelOverlapsAllButTheLastBucket) {
  // anchor-96: 96 fixed layers (300 µs forward, 600 µs backward, 24 M parameters = 48 MB of
  // bf16 gradient each). dp = 1: 96 x 0.9 ms = 86.4 ms (the optimizer step takes no time here).
  const Model model = make_model("anchor-96");
  ClusterSpec cluster = free_cluster();
  cluster.intra_bw = 100e9;
  StrategyConfig config = config_with(1, 1, 1, 1, 1);
  config.dtype = DType::bf16;
  EXPECT_NEAR(estimate(model, config, cluster, CostModel()).iteration_s, 86.4e-3, 1e-12);
  // dp = 8, one bucket per layer: each ring allreduce 2·7/8·48 MB / 100 GB/s = 0.84 ms. The
  // first 95 (79.8 ms) run during the last backward (57.6 ms): 22.2 ms left, plus the last
  // bucket's 0.84 ms = 23.04 ms exposed; iteration 86.4 + 23.04 = 109.44 ms.
  config = config_with(8, 1, 1, 1, 8);
  config.dtype = DType::bf16;
  const Estimate e = estimate(model, config, cluster, CostModel());
  EXPECT_NEAR(e.dp_comm_s, 96 * 0.84e-3, 1e-12);
  EXPECT_NEAR(e.exposed_comm_s, 23.04e-3, 1e-12);
  EXPECT_NEAR(e.iteration_s, 109.44e-3, 1e-12);
}

TEST(Analytical, GptComputeIsTheSumOfItsLayerTasks) {
  // The estimate costs the same tasks as the lowering: its compute time is m x the cost of
  // every layer task of one microbatch. gpt2-small on an A100-like GPU, batch 8 in 2
  // microbatches of 4.
  const Model model = make_model("gpt2-small");
  ClusterSpec cluster = free_cluster();
  cluster.host.flops_bf16 = 312e12;
  cluster.host.mem_bw = 2.039e12;
  cluster.host.gpu_memory = 80e9;
  StrategyConfig config = config_with(1, 1, 1, 2, 8);
  config.dtype = DType::bf16;
  const CostModel cost;
  // A GPT's tasks count Megatron-LM's kernels (the newest framework's, without --set framework).
  const LayerTaskOptions options = layer_task_options(config, model);
  EXPECT_EQ(options.kernels, KernelSet::megatron_2022);
  double per_microbatch = 0;
  for (const Layer& layer : model.layers) {
    for (Phase phase : {Phase::forward, Phase::backward_data, Phase::backward_weight})
      if (phase != Phase::backward_weight || backward_weight_kind(layer.op))
        per_microbatch +=
            cost.compute_time(layer_task(layer, phase, 4, 1, DType::bf16, options), cluster.host);
  }
  const Estimate e = estimate(model, config, cluster, CostModel());
  EXPECT_NEAR(e.compute_s, 2 * per_microbatch, 1e-9 * e.compute_s);
  // Plausibility, not a derivation: GEMMs at 0.7 of peak and the memory-bound layers put a
  // small GPT at roughly half of peak, as measured on A100s.
  EXPECT_GT(e.mfu, 0.35);
  EXPECT_LT(e.mfu, 0.7);
  EXPECT_TRUE(e.fits);
  EXPECT_DOUBLE_EQ(e.tokens_per_s, 8 * 1024 / e.iteration_s);
}

// --- throughput ----------------------------------------------------------------------------

TEST(Analytical, MfuOfPureGemmWorkloadIsTheGemmEfficiency) {
  // One linear of 1e12 FLOP per sample in each of forward, backward data and backward weight;
  // batch 2: 3 x 2e12 / (1e13 x 0.7) = 6/7 s, 2 samples of 1 token: 7/3 tokens/s; model FLOPs
  // 3e12 per token: MFU = 3e12 x 7/3 / 1e13 = 0.7.
  Layer layer;
  layer.name = "fc";
  layer.op = LayerOp::linear;
  layer.fwd_flops = layer.bwd_data_flops = layer.bwd_weight_flops = 1e12;
  Model model;
  model.name = "gemm";
  model.family = "synthetic";
  model.layers = {layer};
  ClusterSpec cluster = free_cluster();
  cluster.host.flops_fp32 = 1e13;
  cluster.host.gpu_memory = 1;  // no parameters, no saved activations: 0 B fits in 1 B
  const Estimate e = estimate(model, config_with(1, 1, 1, 1, 2), cluster, CostModel());
  EXPECT_NEAR(e.iteration_s, 6.0 / 7, 1e-12);
  EXPECT_NEAR(e.tokens_per_s, 7.0 / 3, 1e-12);
  EXPECT_NEAR(e.mfu, 0.7, 1e-12);
  EXPECT_TRUE(e.fits);
}

TEST(Analytical, FitsComparesPeakMemoryWithGpuMemory) {
  // 1e6 fp32 Adam parameters: 16 MB of states, more than a 1 MB GPU.
  ClusterSpec cluster = free_cluster();
  cluster.host.gpu_memory = 1e6;
  const Estimate e =
      estimate(fixed_model(1, 1e-3, 1e-3, 1e6), config_with(1, 1, 1, 1, 1), cluster, CostModel());
  EXPECT_DOUBLE_EQ(e.peak_memory_bytes, 16e6);
  EXPECT_FALSE(e.fits);
}

}  // namespace
}  // namespace strata
