// Hand-built models, configurations and clusters shared by the tests of the closed-form estimate
// and the memory model (analytical_test.cpp, analytical_options_test.cpp, memory_model_test.cpp)
// and by the estimate-against-replay test of sim/.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "strata/models/cost/analytical.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"

namespace strata::estimate_test {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A fixed layer of its own block. FLOPs are set only so that partition_blocks balances the
// blocks; the cost model times fixed tasks by their duration alone.
inline Layer fixed_layer(int block, double fwd_s, double bwd_s, double params = 0) {
  Layer layer;
  layer.name = std::string("l").append(std::to_string(block));
  layer.op = LayerOp::fixed;
  layer.block = block;
  layer.params = params;
  layer.fwd_flops = 1e6;
  layer.bwd_data_flops = 2e6;
  layer.fixed_fwd_s = fwd_s;
  layer.fixed_bwd_s = bwd_s;
  layer.out_elems = 1000;
  return layer;
}

// `blocks` fixed layers, one per block.
inline Model fixed_model(int blocks, double fwd_s, double bwd_s, double params = 0) {
  Model model;
  model.name = "fixed";
  model.family = "synthetic";
  for (int b = 0; b < blocks; ++b) model.layers.push_back(fixed_layer(b, fwd_s, bwd_s, params));
  return model;
}

// dp x tp x pp with m microbatches (0: the default) of a global batch, one bucket per block.
inline StrategyConfig config_with(int dp, int tp, int pp, std::int64_t microbatches,
                                  std::int64_t global_batch, DType dtype = DType::fp32,
                                  Optimizer optimizer = Optimizer::adam) {
  StrategyConfig config;
  config.dp = dp;
  config.tp = tp;
  config.pp = pp;
  config.microbatches = microbatches;
  config.global_batch = global_batch;
  config.dtype = dtype;
  config.optimizer = optimizer;
  config.bucket_bytes = 0;
  return config;
}

// One host of 8 slots with free communication and infinitely fast compute (fixed layers take
// their durations; optimizer steps take no time).
inline ClusterSpec free_cluster() {
  ClusterSpec cluster;
  cluster.host.name = "gpu";
  cluster.host.slots = 8;
  cluster.host.flops_fp32 = kInf;
  cluster.hosts = 1;
  cluster.intra_bw = kInf;
  cluster.inter_bw = kInf;
  return cluster;
}

// Analytical.DataParallelRingIsFullyExposedWithoutBackward's case: one fixed layer (1 ms forward,
// 0 backward) of 1e6 fp32 parameters ("custom": its optimizer step is priced), on one host at
// 1 GB/s and 10 µs between slots, 16 GB/s of memory bandwidth.
struct DpRingCase {
  Model model;
  ClusterSpec cluster;
};
inline DpRingCase dp_ring_case() {
  DpRingCase c{fixed_model(1, 1e-3, 0, 1e6), free_cluster()};
  c.model.family = "custom";
  c.cluster.host.mem_bw = 16e9;
  c.cluster.intra_bw = 1e9;
  c.cluster.intra_latency = 1e-5;
  return c;
}

}  // namespace strata::estimate_test
