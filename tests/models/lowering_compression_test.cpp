// Gradient compression (--set compression=…) lowered to Plans: the codec tasks around each
// data-parallel bucket, the bytes of the smaller transfers (derived by hand for the MLP
// 784-256-128-10, one 235,146-value bucket), their dependencies, and the settings refused.
#include <algorithm>
#include <cmath>
#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/experiment.hpp"
#include "strata/models/solvers/solver.hpp"

namespace strata {
namespace {

using lowering_test::config_of;
using lowering_test::index_of;
using lowering_test::input_error;

constexpr double kParams = 235146;

Plan mlp_plan(Compression codec, int dp = 4, DType dtype = DType::fp32, int rank = 4) {
  StrategyConfig c = config_of(dp, 1, 1);
  c.compression = codec;
  c.dtype = dtype;
  c.powersgd_rank = rank;
  return lower(make_model("mlp", {}), c);
}

const Task& task_of(const Plan& plan, const std::string& id) { return plan.task(index_of(plan, id)); }

TEST(LoweringCompression, Int8AndFp8AllreducesCarryOneByteCodesAndAScalePerChunk) {
  for (Compression codec : {Compression::int8, Compression::fp8}) {
    const Plan plan = mlp_plan(codec);
    const Task& ar = task_of(plan, "it0/pp0/tp0/ar/b0");
    EXPECT_EQ(ar.kind, TaskKind::allreduce);
    EXPECT_EQ(ar.comm_bytes, kParams + 4 * 4);  // fp32 would be 4 x kParams
    EXPECT_EQ(ar.attr_string("compression"), std::string(to_string(codec)));
    for (int d = 0; d < 4; ++d) {
      const Task& enc = task_of(plan, "it0/dp" + std::to_string(d) + "/pp0/tp0/enc/b0");
      EXPECT_EQ(enc.kind, TaskKind::compress);
      EXPECT_EQ(enc.attr_int("member"), d);
      EXPECT_NE(std::find(ar.data_deps.begin(), ar.data_deps.end(), index_of(plan, enc.id)),
                ar.data_deps.end());
      EXPECT_EQ(enc.bytes_read, 2 * kParams * 4);  // G and E
    }
  }
}

// k = ceil(0.01 x 235,146) = 2,352 values and int32 indices per rank, all-gathered: 4 slots.
TEST(LoweringCompression, TopKAllGathersEachRanksValuesAndIndices) {
  const Plan fp32 = mlp_plan(Compression::topk);
  const Task& ag = task_of(fp32, "it0/pp0/tp0/ag/b0");
  EXPECT_EQ(ag.kind, TaskKind::allgather);
  EXPECT_EQ(ag.comm_bytes, 4 * 2352 * (4 + 4));
  EXPECT_EQ(task_of(fp32, "it0/dp0/pp0/tp0/enc/b0").attr_int("k"), 2352);
  const Plan bf16 = mlp_plan(Compression::topk, 4, DType::bf16);
  EXPECT_EQ(task_of(bf16, "it0/pp0/tp0/ag/b0").comm_bytes, 4 * 2352 * (2 + 4));
  // decode, then the step
  const Task& opt = task_of(fp32, "it0/dp2/pp0/tp0/opt");
  const TaskIndex dec = index_of(fp32, "it0/dp2/pp0/tp0/dec/b0");
  EXPECT_NE(std::find(opt.data_deps.begin(), opt.data_deps.end(), dec), opt.data_deps.end());
}

// PowerSGD rank r: P of r·m and Q of r·n values per m x n weight gradient, biases whole.
TEST(LoweringCompression, PowerSgdAllreducesRTimesMPlusNValuesPerMatrix) {
  for (int r : {1, 4, 10}) {
    const Plan plan = mlp_plan(Compression::powersgd, 2, DType::fp32, r);
    const double biases = 256 + 128 + 10;
    EXPECT_EQ(task_of(plan, "it0/pp0/tp0/ar/b0").comm_bytes, (r * (784.0 + 256 + 128) + biases) * 4) << r;
    EXPECT_EQ(task_of(plan, "it0/pp0/tp0/ar/b0/q").comm_bytes, r * (256.0 + 128 + 10) * 4) << r;
    const Task& enc = task_of(plan, "it0/dp1/pp0/tp0/enc/b0");
    EXPECT_EQ(enc.attr_string("matrices"), "128x10+10;256x128+128;784x256+256");  // backward order
    EXPECT_EQ(enc.flops, 2.0 * r * (784 * 256 + 256 * 128 + 128 * 10)) << r;      // P = M Q
  }
  // proj after the P allreduce, the Q allreduce after every proj
  const Plan plan = mlp_plan(Compression::powersgd, 2);
  const Task& q = task_of(plan, "it0/pp0/tp0/ar/b0/q");
  for (const char* proj : {"it0/dp0/pp0/tp0/proj/b0", "it0/dp1/pp0/tp0/proj/b0"})
    EXPECT_NE(std::find(q.data_deps.begin(), q.data_deps.end(), index_of(plan, proj)), q.data_deps.end());
}

// With the other strategies: tensor parallelism (each tp rank's shard compressed in its own DP
// group), interleaved 1F1B (every model chunk's buckets) and Megatron's after_flush reduction
// (the chained collectives): valid Plans with a codec task per rank and bucket, and the Q
// allreduce of PowerSGD on every bucket.
TEST(LoweringCompression, ComposesWithTensorParallelismInterleavingAndAfterFlush) {
  for (Compression codec : {Compression::int8, Compression::topk, Compression::powersgd}) {
    SCOPED_TRACE(std::string(to_string(codec)));
    StrategyConfig tp = config_of(2, 2, 1);
    tp.compression = codec;
    tp.powersgd_rank = 2;
    StrategyConfig interleaved = config_of(2, 1, 2, 4);
    interleaved.interleave = 2;
    interleaved.compression = codec;
    interleaved.powersgd_rank = 2;
    StrategyConfig flush = config_of(2, 1, 2, 2);
    flush.ddp = DdpMode::after_flush;
    flush.compression = codec;
    flush.powersgd_rank = 2;
    for (const StrategyConfig& c : {tp, interleaved, flush}) {
      const Plan plan = lower(lowering_test::tiny_gpt(4), c);
      ASSERT_NO_THROW(plan.validate()) << c.to_string();
      std::size_t encodes = 0, collectives = 0, q = 0;
      for (const Task& t : plan.tasks()) {
        encodes += t.kind == TaskKind::compress && t.attr_string("step") == "encode";
        collectives += is_collective(t.kind) && t.attr_string("compression").has_value();
        q += t.id.size() > 2 && t.id.compare(t.id.size() - 2, 2, "/q") == 0;
      }
      EXPECT_GT(encodes, 0u) << c.to_string();
      const std::size_t per_bucket = codec == Compression::powersgd ? 2 : 1;
      EXPECT_EQ(collectives, per_bucket * encodes / 2) << c.to_string();  // two replicas per group
      EXPECT_EQ(q, codec == Compression::powersgd ? encodes / 2 : 0u) << c.to_string();
    }
  }
}

// The residual, wire and Q buffers are persistent: error feedback and the warm start carry over.
TEST(LoweringCompression, CodecBuffersPersistAcrossIterations) {
  const Plan plan = mlp_plan(Compression::powersgd, 2);
  int codec = 0;
  for (const Buffer& b : plan.buffers())
    if (b.id.find("/codec/") != std::string::npos) {
      EXPECT_TRUE(b.persistent) << b.id;
      ++codec;
    }
  EXPECT_EQ(codec, 2 * 3);  // ef, p, q per rank
}

TEST(LoweringCompression, SettingsThatCannotApplyAreOneLineEach) {
  const Model mlp = make_model("mlp", {});
  StrategyConfig c = config_of(1, 1, 1);
  c.compression = Compression::int8;
  EXPECT_EQ(
      input_error([&] { check_strategy(mlp, c); }),
      "--set compression=int8: compresses the data-parallel gradient exchange, dp=1 has none (use dp >= 2)");
  c.dp = 2;
  c.zero = 1;
  EXPECT_EQ(input_error([&] { check_strategy(mlp, c); }),
            "--set compression=int8: with --set zero=1 is not lowered (compression applies to plain data "
            "parallelism's allreduce)");
  c.zero = 0;
  for (double ratio : {0.0, -0.1, 1.5, std::nan("")}) {
    c.topk_ratio = ratio;
    EXPECT_NE(input_error([&] { check_strategy(mlp, c); }).find("--set topk_ratio="), std::string::npos)
        << ratio;
  }
  c.topk_ratio = 1;
  EXPECT_NO_THROW(check_strategy(mlp, c));
  c.compression = Compression::powersgd;
  c.powersgd_rank = 11;
  EXPECT_EQ(input_error([&] { check_strategy(mlp, c); }),
            "--set powersgd_rank=11: above min(m, n) = 10 of layer fc3's 128 x 10 gradient");
  c.powersgd_rank = 0;
  EXPECT_EQ(input_error([&] { check_strategy(mlp, c); }), "--set powersgd_rank=0: must be >= 1");
  c.powersgd_rank = 10;
  EXPECT_NO_THROW(check_strategy(mlp, c));
}

TEST(LoweringCompression, SolversWithoutDataParallelGradientsRefuseIt) {
  Experiment e;
  e.model = "mlp";
  e.dp = 2;
  e.compression = Compression::topk;
  e.solver.solver = Solver::pdadmm;
  EXPECT_EQ(
      input_error([&] { (void)lower(e); }),
      "--set compression=topk: --solver pdadmm is gradient-free (ADMM): it has no gradients to compress");
  e.solver.solver = Solver::ampnet;
  EXPECT_NE(input_error([&] { (void)lower(e); }).find("exchanges no data-parallel gradients"),
            std::string::npos);
}

// The spec round trip keeps the codec, and leaves experiments without one as they were.
TEST(LoweringCompression, ExperimentJsonWritesTheCodecOnlyWhenSet) {
  Experiment e;
  e.model = "mlp";
  e.dp = 2;
  const std::string plain = canonical_json(e).dump();
  EXPECT_EQ(plain.find("compression"), std::string::npos);
  EXPECT_EQ(plain.find("topk_ratio"), std::string::npos);
  apply_set(e, "compression=topk");
  apply_set(e, "topk_ratio=0.05");
  const nlohmann::json j = canonical_json(e);
  EXPECT_EQ(j["strategy"]["compression"], "topk");
  EXPECT_EQ(j["strategy"]["topk_ratio"], 0.05);
  EXPECT_EQ(canonical_json(experiment_from_json(j, "s.json")), j);
}

}  // namespace
}  // namespace strata
