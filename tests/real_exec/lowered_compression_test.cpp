// Gradient compression on the real executor (lowering_compression.cpp, task_runner_codec.cpp,
// the transports' compressed ring): the bytes each codec moves, derived by hand for the MLP's
// single 235,146-value bucket over four ranks; replicas that stay identical; error feedback
// that keeps what was not sent; and Plans the codec kernels refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "../input_error.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

constexpr double kParams = 235146;  // the MLP 784-256-128-10: 200,960 + 32,896 + 1,290
constexpr int kRanks = 4;

Plan compressed_plan(Compression codec, double topk_ratio = 0.01, int rank = 4) {
  StrategyConfig c = training_runs::mlp_config(kRanks, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam);
  c.compression = codec;
  c.topk_ratio = topk_ratio;
  c.powersgd_rank = rank;
  Plan plan = lower(make_model("mlp", {}), c);
  plan.validate();
  return plan;
}

// Bytes the four thread workers send in `steps` steps (float: 4 B per value sent as a value).
std::uint64_t bytes_of(const Plan& plan, int steps) {
  CpuBackend backend;
  Trainer<float> trainer(plan, backend, training_runs::train_config());
  for (int s = 0; s < steps; ++s)
    trainer.train_batch(training_runs::train_images(), training_runs::batch_indices(s));
  return trainer.bytes_sent();
}

// Compares every replica's weight buffers ("/w/") with dp0's, bit for bit; returns how many
// buffers it compared.
template <typename T>
int expect_replicas_identical(const Plan& plan, Workspace<T>& ws) {
  std::map<std::string, BufferIndex> first;  // layer name -> dp0's buffer
  int compared = 0;
  for (BufferIndex i = 0; i < plan.buffers().size(); ++i) {
    const std::string& id = plan.buffer(i).id;
    const std::size_t w = id.find("/w/");
    if (w == std::string::npos) continue;
    const std::string layer = id.substr(w);
    if (id.rfind("dp0/", 0) == 0) {
      first[layer] = i;
      continue;
    }
    EXPECT_EQ(first.count(layer), 1u) << id;
    if (first.count(layer) == 0) continue;
    EXPECT_EQ(
        std::memcmp(ws.data(i), ws.data(first[layer]), static_cast<std::size_t>(ws.size(i)) * sizeof(T)), 0)
        << id;
    ++compared;
  }
  return compared;
}

// A ring allreduce of S values over n ranks sends 2(n-1) chunks per rank, 2(n-1)·S values in all.
TEST(LoweredCompression, Int8AndFp8SendAQuarterOfFp32sBytesPlusAScalePerMessage) {
  const double ring_values = 2.0 * (kRanks - 1) * kParams;
  const double scales = 2.0 * (kRanks - 1) * kRanks * 4;  // one 4-byte scale per message
  EXPECT_EQ(bytes_of(compressed_plan(Compression::none), 2), 2 * ring_values * 4);
  EXPECT_EQ(bytes_of(compressed_plan(Compression::int8), 2), 2 * (ring_values + scales));
  EXPECT_EQ(bytes_of(compressed_plan(Compression::fp8), 2), 2 * (ring_values + scales));
}

// Each rank's k = ceil(0.01·S) = 2,352 values and their indices (as 4-byte floats, exact below
// 2^24) reach the n - 1 other ranks through the ring allgather.
TEST(LoweredCompression, TopKSendsKValuesAndTheirIndicesToEveryOtherRank) {
  const double k = std::ceil(0.01 * kParams);
  ASSERT_EQ(k, 2352);
  EXPECT_EQ(bytes_of(compressed_plan(Compression::topk), 1), kRanks * (kRanks - 1) * k * (4 + 4));
  EXPECT_EQ(bytes_of(compressed_plan(Compression::topk, 0.1), 1),
            kRanks * (kRanks - 1) * std::ceil(0.1 * kParams) * 8);
}

// PowerSGD rank r allreduces r·(m + n) values per m x n gradient (P and Q) and the biases whole:
// 784x256, 256x128 and 128x10 weights with 256 + 128 + 10 biases.
TEST(LoweredCompression, PowerSgdSendsRTimesMPlusNValuesPerMatrixPlusTheBiases) {
  for (int r : {1, 4}) {
    const double values = r * ((784 + 256) + (256 + 128) + (128 + 10)) + (256 + 128 + 10);
    EXPECT_EQ(bytes_of(compressed_plan(Compression::powersgd, 0.01, r), 1), 2.0 * (kRanks - 1) * values * 4)
        << "rank " << r;
  }
}

// Every replica applies the same decoded gradient, so their weights stay bit-identical, and the
// weights move away from plain data parallelism's (the gradient is compressed).
TEST(LoweredCompression, ReplicasStayBitIdenticalUnderEveryCodec) {
  for (Compression codec : {Compression::int8, Compression::fp8, Compression::topk, Compression::powersgd}) {
    SCOPED_TRACE(std::string(to_string(codec)));
    const Plan plan = compressed_plan(codec);
    ASSERT_NO_THROW(check_kernels(plan, "c.json"));
    CpuBackend backend;
    Trainer<double> trainer(plan, backend, training_runs::train_config());
    for (int s = 0; s < 3; ++s)
      trainer.train_batch(training_runs::train_images(), training_runs::batch_indices(s));
    EXPECT_EQ(expect_replicas_identical(plan, trainer.workspace()), 3 * (kRanks - 1));
  }
}

// Error feedback: after top-k's encode, a rank's residual holds exactly what it did not send —
// S - k values of M nonzero at most, and the k sent ones zero.
TEST(LoweredCompression, TopKResidualKeepsEveryValueNotSent) {
  const Plan plan = compressed_plan(Compression::topk);
  CpuBackend backend;
  Trainer<double> trainer(plan, backend, training_runs::train_config());
  trainer.train_batch(training_runs::train_images(), training_runs::batch_indices(0));
  BufferIndex ef = 0;
  for (BufferIndex i = 0; i < plan.buffers().size(); ++i)
    if (plan.buffer(i).id == "dp0/pp0/tp0/codec/ef/b0") ef = i;
  ASSERT_NE(ef, 0u);
  ASSERT_EQ(trainer.workspace().size(ef), static_cast<std::int64_t>(kParams));
  std::int64_t zeros = 0;
  for (std::int64_t i = 0; i < trainer.workspace().size(ef); ++i)
    zeros += trainer.workspace().data(ef)[i] == 0;
  EXPECT_GE(zeros, 2352);  // the sent values (and gradients that were zero, e.g. dead ReLUs)
  EXPECT_LT(zeros, static_cast<std::int64_t>(kParams));
}

TEST(LoweredCompression, CodecTasksTheKernelsCannotRunAreRefusedInOneLine) {
  Plan plan = compressed_plan(Compression::topk);
  for (TaskIndex i = 0; i < plan.size(); ++i)
    if (plan.task(i).kind == TaskKind::compress && plan.task(i).attr_string("step") == "encode") {
      plan.mutable_task(i).attrs["codec"] = std::string("qsgd");
      break;
    }
  const std::string what = test::error_of([&] { check_kernels(plan, "bad.json"); });
  ASSERT_FALSE(what.empty()) << "accepted an unknown codec";
  EXPECT_NE(what.find("bad.json"), std::string::npos) << what;
  EXPECT_NE(what.find("compress codec 'qsgd' has no kernel (int8, fp8, topk, powersgd)"), std::string::npos)
      << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  Plan low = compressed_plan(Compression::powersgd);
  for (TaskIndex i = 0; i < low.size(); ++i)
    if (low.task(i).kind == TaskKind::compress)
      low.mutable_task(i).attrs["matrices"] = std::string("784x256+3");
  EXPECT_THROW(check_kernels(low, "bad.json"), InputError);
}

// LeNet-5's conv kernels compress as c_out x c_in·kh·kw matrices: PowerSGD's P and Q of every
// gradient (from the encode task's matrices) are what the transport counts, and the replicas
// stay identical.
TEST(LoweredCompression, LeNet5ConvGradientsCompressAsMatrices) {
  StrategyConfig c = training_runs::mlp_config(2, 1, 1, PipelineSchedule::one_f_one_b, Optimizer::adam);
  c.compression = Compression::powersgd;
  c.powersgd_rank = 2;
  const Plan plan = lower(make_model("lenet5", {}), c);
  ASSERT_NO_THROW(check_kernels(plan, "lenet.json"));
  double values = 0;
  int conv = 0;
  for (const Task& t : plan.tasks())
    if (t.kind == TaskKind::compress && t.attr_string("step") == "encode" && t.worker == 0)
      for (const CodecMatrix& m : parse_codec_matrices(*t.attr_string("matrices"))) {
        values += 2.0 * (m.rows + m.cols) + static_cast<double>(m.rest);
        conv += m.rows == 6 && m.cols == 25;  // conv1: 6 kernels of 1 x 5 x 5
      }
  EXPECT_EQ(conv, 1);
  CpuBackend backend;
  Trainer<float> trainer(plan, backend, training_runs::train_config());
  trainer.train_batch(training_runs::train_images(), training_runs::batch_indices(0));
  EXPECT_EQ(trainer.bytes_sent(), 2.0 * (2 - 1) * values * 4);         // two ring allreduces' worth of values
  EXPECT_EQ(expect_replicas_identical(plan, trainer.workspace()), 5);  // the 5 layers with weights
}

// The CUDA executor has no codec kernels and its allreduce sends values: refused before a run.
TEST(LoweredCompression, CudaRefusesCodecTasksInOneLine) {
  ASSERT_NO_THROW(check_cuda_kernels(compressed_plan(Compression::none), "--device cuda"));
  const std::string what =
      test::error_of([] { check_cuda_kernels(compressed_plan(Compression::int8), "--device cuda"); });
  ASSERT_FALSE(what.empty()) << "accepted a codec task";
  EXPECT_NE(
      what.find("--device cuda: task it0/pp0/tp0/ar/b0 (allreduce, compression int8) has no CUDA kernel; "
                "run it with --device cpu"),
      std::string::npos)
      << what;
}

}  // namespace
}  // namespace strata::real
