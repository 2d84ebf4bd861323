// The MPI transport, with real processes: each test starts mpirun (strata_mpi_driver or the
// strata CLI) and compares what the ranks computed with in-process runs of the same Plans on the
// thread transport: float64 equivalence of dp=2/4 and 2-stage GPipe/1F1B with one worker (the
// claims of tests/real_exec/interpreter_test.cpp, now across processes), bit-identical results and
// equal byte counts against ThreadTransport for the same Plan, and the CLI's errors.
//
// mpirun runs with --oversubscribe (4 processes on a 2-core machine, more than its slots) and
// --allow-run-as-root (CI containers run as root; OpenMPI refuses root without it).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "mpi_test_runs.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata::real::mpi_test {
namespace {

constexpr int kSteps = 20;

std::string mpirun(int processes) {
  return std::string(STRATA_MPIEXEC) + " --oversubscribe --allow-run-as-root -np " +
         std::to_string(processes) + " ";
}

struct Outcome {
  int status = -1;  // exit status of the command
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh directory for one run's files.
std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("strata_mpi_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Outcome run(const std::string& command, const std::filesystem::path& dir) {
  const int raw =
      std::system((command + " >" + (dir / "stdout").string() + " 2>" + (dir / "stderr").string()).c_str());
  Outcome o;
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  o.out = slurp(dir / "stdout");
  o.err = slurp(dir / "stderr");
  return o;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Runs the Plan on dp·pp MPI processes; one result per rank.
std::vector<RankResult> run_over_mpi(int dp, int pp, int microbatches, PipelineSchedule schedule, int steps,
                                     std::int64_t test_images = 0) {
  const int processes = dp * pp;
  const std::string name = "dp" + std::to_string(dp) + "pp" + std::to_string(pp) +
                           (schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b");
  const auto dir = scratch(name);
  const Outcome o =
      run(mpirun(processes) + STRATA_MPI_DRIVER + " " + std::to_string(dp) + " " + std::to_string(pp) + " " +
              std::to_string(microbatches) + " " + (schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b") +
              " " + std::to_string(steps) + " " + std::to_string(test_images) + " " + dir.string(),
          dir);
  EXPECT_EQ(o.status, 0) << o.err;
  std::vector<RankResult> ranks;
  for (int r = 0; r < processes && o.status == 0; ++r)
    ranks.push_back(read_result((dir / ("rank" + std::to_string(r) + ".txt")).string()));
  return ranks;
}

// The same Plan and steps in this process, workers as threads. Weights by layer for one worker,
// by "layer@worker" for more.
RankResult run_with_threads(const Plan& plan, int steps, std::int64_t test_images = 0) {
  CpuBackend backend;
  Trainer<double> trainer(plan, backend, train_config());
  static const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  RankResult r;
  for (int s = 0; s < steps; ++s) r.losses.push_back(trainer.train_batch(train, batch_indices(s)));
  r.bytes = static_cast<double>(trainer.bytes_sent());
  if (test_images > 0)
    r.accuracy = trainer.test_accuracy(first_images(load_fashion_mnist(DatasetSplit::test), test_images));
  for (WorkerId w = 0; w < plan.num_workers(); ++w)
    for (const auto& [layer, values] : weights_of(plan, trainer.workspace(), w))
      r.weights[plan.num_workers() == 1 ? layer : layer + "@" + std::to_string(w)] = values;
  return r;
}

const Weights& serial_weights() {
  static const Weights w = run_with_threads(mlp_plan(1, 1, 1, PipelineSchedule::one_f_one_b), kSteps).weights;
  return w;
}

// Largest |a − b| over the layers of `part`, each of which `whole` must hold.
double max_abs_difference(const Weights& whole, const Weights& part) {
  double worst = 0;
  for (const auto& [layer, values] : part) {
    const auto it = whole.find(layer);
    if (it == whole.end()) {
      ADD_FAILURE() << "unexpected layer " << layer;
      continue;
    }
    EXPECT_EQ(values.size(), it->second.size()) << layer;
    for (std::size_t i = 0; i < values.size() && i < it->second.size(); ++i)
      worst = std::max(worst, std::abs(values[i] - it->second[i]));
  }
  return worst;
}

// Every replica (not only rank 0's) ends within 1e-9 of one worker; and bit-identical to the
// thread transport's run of the same Plan: with 4 ranks the order of the ring's additions shows
// in the last bits, so this checks that both transports cut and add the same chunks.
TEST(MpiTransport, DataParallelTwoAndFourMatchOneWorkerInFloat64) {
  ASSERT_EQ(serial_weights().size(), 3u);
  for (int dp : {2, 4}) {
    const auto ranks = run_over_mpi(dp, 1, 1, PipelineSchedule::one_f_one_b, kSteps);
    ASSERT_EQ(ranks.size(), static_cast<std::size_t>(dp));
    const Weights threads =
        run_with_threads(mlp_plan(dp, 1, 1, PipelineSchedule::one_f_one_b), kSteps).weights;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      EXPECT_EQ(ranks[r].weights.size(), 3u) << "dp=" << dp << " rank " << r;
      EXPECT_LT(max_abs_difference(serial_weights(), ranks[r].weights), 1e-9) << "dp=" << dp << " rank " << r;
      Weights replica;  // "layer@worker", as the thread run's
      for (const auto& [layer, values] : ranks[r].weights) replica[layer + "@" + std::to_string(r)] = values;
      EXPECT_EQ(max_abs_difference(threads, replica), 0.0) << "dp=" << dp << " rank " << r;
    }
  }
}

TEST(MpiTransport, GPipeAndOneFOneBWithTwoStagesMatchSerialInFloat64) {
  for (auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    const auto ranks = run_over_mpi(1, 2, 4, schedule, kSteps);
    ASSERT_EQ(ranks.size(), 2u);
    Weights stages;  // each stage's layers live on its own rank only
    for (const RankResult& r : ranks) {
      EXPECT_FALSE(r.weights.empty());
      for (const auto& [layer, values] : r.weights)
        EXPECT_TRUE(stages.emplace(layer, values).second) << layer;
    }
    EXPECT_EQ(stages.size(), serial_weights().size());
    EXPECT_LT(max_abs_difference(serial_weights(), stages), 1e-9)
        << (schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b");
  }
}

// dp=2 × pp=2 over 4 processes: allreduces, sends and recvs, all at once. Every worker's weights
// are bit-identical to the thread run's, the bytes are equal, and the forward-only test pass
// (tagged apart from the runs' messages) predicts the same classes.
TEST(MpiTransport, SamePlanGivesBitIdenticalWeightsAndEqualBytesAsThreads) {
  const Plan plan = mlp_plan(2, 2, 2, PipelineSchedule::one_f_one_b);
  const RankResult threads = run_with_threads(plan, 2, 256);
  const auto ranks = run_over_mpi(2, 2, 2, PipelineSchedule::one_f_one_b, 2, 256);
  ASSERT_EQ(ranks.size(), 4u);
  Weights over_mpi;  // "layer@worker"
  for (std::size_t w = 0; w < ranks.size(); ++w)
    for (const auto& [layer, values] : ranks[w].weights) over_mpi[layer + "@" + std::to_string(w)] = values;
  ASSERT_EQ(over_mpi.size(), threads.weights.size());
  EXPECT_EQ(max_abs_difference(threads.weights, over_mpi), 0.0);
  EXPECT_GT(threads.bytes, 0);
  EXPECT_GT(threads.accuracy, 0.1);
  for (const RankResult& r : ranks) {
    EXPECT_EQ(r.bytes, threads.bytes);
    EXPECT_EQ(r.accuracy, threads.accuracy);
    ASSERT_EQ(r.losses.size(), threads.losses.size());
    // The loss is summed over processes by MPI_Allreduce, in its own order.
    for (std::size_t s = 0; s < r.losses.size(); ++s) EXPECT_NEAR(r.losses[s], threads.losses[s], 1e-12);
  }
}

// --- the CLI: strata run --transport mpi ---------------------------------------------------------

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

TEST(MpiTransportCli, WorldSizeThatIsNotTheWorkerCountIsOneLineAndFails) {
  const auto dir = scratch("mismatch");
  const std::string args = " run --model mlp --strategy dp=2 --epochs 1 --transport mpi";
  // Three processes for two workers: rank 0 says so once (mpirun adds its own banner).
  const Outcome three = run(mpirun(3) + STRATA_BINARY + args, dir);
  EXPECT_NE(three.status, 0);
  const auto said = lines_starting(three.err, "strata:");
  ASSERT_EQ(said.size(), 1u) << three.err;
  EXPECT_NE(said[0].find("world size 3 does not match the strategy's 2 workers"), std::string::npos)
      << said[0];
  EXPECT_NE(said[0].find("mpirun -np 2"), std::string::npos) << said[0];
  EXPECT_EQ(three.out, "");
  // Without mpirun the world is this one process: the same line, and nothing else.
  const Outcome alone = run(std::string(STRATA_BINARY) + args, dir);
  EXPECT_NE(alone.status, 0);
  ASSERT_EQ(lines_of(alone.err).size(), 1u) << alone.err;
  EXPECT_NE(alone.err.find("strata: error: --transport mpi: world size 1 does not match"), std::string::npos)
      << alone.err;
}

TEST(MpiTransportCli, AnErrorOnTheRanksEndsTheJobInsteadOfHangingIt) {
  // Every rank fails to read the dataset after MPI is up: each says so and aborts the job.
  const auto dir = scratch("abort");
  const Outcome o = run(mpirun(2) + "-x STRATA_FASHION_MNIST=" + (dir / "nowhere").string() + " " +
                            STRATA_BINARY + " run --model mlp --strategy dp=2 --epochs 1 --transport mpi",
                        dir);
  EXPECT_NE(o.status, 0);
  const auto said = lines_starting(o.err, "strata: error: rank ");
  ASSERT_GE(said.size(), 1u) << o.err;
  EXPECT_NE(said[0].find("nowhere"), std::string::npos) << said[0];
}

// One epoch of dp=2 over 2 processes prints what the thread run prints (same loss, accuracy and
// bytes), once, and its measured trace holds every task, each timed by the rank that ran it.
// The text of `out` between `before` and the next `after`.
std::string field(const std::string& out, const std::string& before, const std::string& after) {
  const auto at = out.find(before);
  if (at == std::string::npos) return "(no '" + before + "')";
  const auto from = at + before.size();
  return out.substr(from, out.find(after, from) - from);
}

// ADMM Plans over two processes: pdADMM reports what the threads report, and pdADMM-G-Q's p
// crosses as int8 codes, counted by the MPI transport. 784-64-32-10's cost-balanced placement
// puts layers 0 and 1 on worker 0 and the output layer on worker 1 (its FISTA outweighs them):
// one boundary of 32 units, so 2 sweeps of 300 samples send p, q, u of 32 x 300 values each.
TEST(MpiTransportCli, AdmmOverTwoProcessesSendsQuantizedPAsOneBytePerValue) {
  const auto dir = scratch("admm");
  const std::string args = std::string(STRATA_BINARY) +
                           " run --model mlp --set sizes=784,64,32,10 --workers 2 --global-batch 300 "
                           "--epochs 2 --no-pin --solver ";
  const Outcome threads = run(args + "pdadmm", dir);
  ASSERT_EQ(threads.status, 0) << threads.err;
  const Outcome plain = run(mpirun(2) + args + "pdadmm --transport mpi", dir);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const Outcome quantized = run(mpirun(2) + args + "pdadmm-g-q --transport mpi", dir);
  ASSERT_EQ(quantized.status, 0) << quantized.err;
  EXPECT_EQ(field(plain.out, "epoch 2: train loss ", ","), field(threads.out, "epoch 2: train loss ", ","));
  EXPECT_EQ(field(plain.out, "test accuracy ", ","), field(threads.out, "test accuracy ", ","));
  const double values = 32.0 * 300 * 2;
  EXPECT_EQ(std::stod(field(plain.out, "bytes sent between workers: ", " B")), 3 * values * 4) << plain.out;
  EXPECT_EQ(std::stod(field(quantized.out, "bytes sent between workers: ", " B")),
            values * 1 + 2 * values * 4)
      << quantized.out;
}

// GIST over two processes (one site each, the global model on process 0) reports what the
// threads report: the same rounds, losses, accuracy and bytes.
TEST(MpiTransportCli, GistOverTwoProcessesReportsWhatTheThreadsReport) {
  const auto dir = scratch("gist");
  const std::string args =
      std::string(STRATA_BINARY) +
      " run --model gcn --set nodes=600 --set zeta=3 --solver gist --workers 2 --epochs 2 --no-pin";
  const Outcome threads = run(args, dir);
  ASSERT_EQ(threads.status, 0) << threads.err;
  const Outcome mpi = run(mpirun(2) + args + " --transport mpi", dir);
  ASSERT_EQ(mpi.status, 0) << mpi.err;
  EXPECT_NE(mpi.out.find("on 2 MPI process"), std::string::npos) << mpi.out;
  EXPECT_EQ(lines_starting(mpi.out, "round 2:").size(), 1u) << mpi.out;  // rank 0 alone prints
  EXPECT_EQ(field(mpi.out, "round 2: train loss ", ","), field(threads.out, "round 2: train loss ", ","));
  EXPECT_EQ(field(mpi.out, "test accuracy ", ","), field(threads.out, "test accuracy ", ","));
  EXPECT_EQ(field(mpi.out, "bytes sent between workers: ", "\n"),
            field(threads.out, "bytes sent between workers: ", "\n"));
}

// The serial-parallel hybrid's warm-up over two processes: the serial Plan's transport for epoch
// 1, the hybrid's for epoch 2 (two MpiTransports of one session), each epoch what the threads say.
TEST(MpiTransportCli, HybridWarmUpOverTwoProcessesReportsWhatTheThreadsReport) {
  const auto dir = scratch("hybrid-warmup");
  const std::string args = std::string(STRATA_BINARY) +
                           " run --model mlp --solver serial-parallel --workers 2 --set warmup_epochs=1 "
                           "--epochs 2 --no-pin";
  const Outcome threads = run(args, dir);
  ASSERT_EQ(threads.status, 0) << threads.err;
  const Outcome mpi = run(mpirun(2) + args + " --transport mpi", dir);
  ASSERT_EQ(mpi.status, 0) << mpi.err;
  EXPECT_NE(mpi.out.find("serial warm-up"), std::string::npos) << mpi.out;
  for (const char* epoch : {"epoch 1/2: train loss ", "epoch 2/2: train loss "})
    EXPECT_EQ(field(mpi.out, epoch, ","), field(threads.out, epoch, ",")) << epoch;
  EXPECT_EQ(field(mpi.out, "test accuracy ", ","), field(threads.out, "test accuracy ", ","));
  EXPECT_EQ(field(mpi.out, "bytes sent between workers: ", "\n"),
            field(threads.out, "bytes sent between workers: ", "\n"));
}

// A GCN graph split in 2 parts, one per process: the halo rows cross as MPI messages.
TEST(MpiTransportCli, SplitGraphOverTwoProcessesReportsWhatTheThreadsReport) {
  const auto dir = scratch("split-gcn");
  const std::string args = std::string(STRATA_BINARY) +
                           " run --model gcn --set nodes=3000 --set edges=30000 --set sizes=32,48,48,8 "
                           "--strategy dp=2 --epochs 2 --no-pin";
  const Outcome threads = run(args, dir);
  ASSERT_EQ(threads.status, 0) << threads.err;
  const Outcome mpi = run(mpirun(2) + args + " --transport mpi", dir);
  ASSERT_EQ(mpi.status, 0) << mpi.err;
  EXPECT_NE(mpi.out.find("2 parts by streaming"), std::string::npos) << mpi.out;
  EXPECT_EQ(lines_starting(mpi.out, "round 2:").size(), 1u) << mpi.out;
  EXPECT_EQ(field(mpi.out, "round 2: train loss ", ","), field(threads.out, "round 2: train loss ", ","));
  EXPECT_EQ(field(mpi.out, "bytes sent between workers: ", "\n"),
            field(threads.out, "bytes sent between workers: ", "\n"));
}

TEST(MpiTransportCli, OneEpochOverTwoProcessesReportsWhatTheThreadsReport) {
  const auto dir = scratch("cli");
  const std::string args =
      std::string(STRATA_BINARY) + " run --model mlp --strategy dp=2 --epochs 1 --no-pin";
  const Outcome threads = run(args + " --trace " + (dir / "threads.json").string(), dir);  // same iterations
  ASSERT_EQ(threads.status, 0) << threads.err;
  const auto trace = dir / "trace.json";
  const Outcome mpi = run(mpirun(2) + args + " --transport mpi --trace " + trace.string(), dir);
  ASSERT_EQ(mpi.status, 0) << mpi.err;
  EXPECT_EQ(field(mpi.out, "train loss ", ","), field(threads.out, "train loss ", ","));
  EXPECT_EQ(field(mpi.out, "test accuracy ", ","), field(threads.out, "test accuracy ", ","));
  EXPECT_EQ(field(mpi.out, "bytes sent between workers: ", "\n"),
            field(threads.out, "bytes sent between workers: ", "\n"));
  EXPECT_EQ(lines_starting(mpi.out, "epoch 1/1").size(), 1u) << mpi.out;  // rank 0 alone prints
  EXPECT_NE(mpi.out.find("on 2 MPI process"), std::string::npos) << mpi.out;
  const Trace measured = read_trace(trace.string());
  const Plan plan = [] {
    StrategyConfig c;
    c.dp = 2;
    c.global_batch = 128;
    c.optimizer = Optimizer::adam;
    return lower(make_model("mlp", {}), c);
  }();
  std::set<std::string> ids;
  for (const TraceRecord& r : measured.records) {
    ids.insert(r.id);
    EXPECT_GT(r.end, 0) << r.id;  // timed by its rank and merged
    EXPECT_LE(r.start, r.end) << r.id;
  }
  EXPECT_EQ(ids.size(), plan.size());
}

// `args` (a `strata run` over threads) and `mpi_args` (the same under mpirun) both succeed and
// print the same training loss, test accuracy and bytes sent.
void expect_same_report(const std::string& args, const std::string& mpi_args,
                        const std::filesystem::path& dir) {
  const Outcome threads = run(args, dir);
  ASSERT_EQ(threads.status, 0) << threads.err;
  const Outcome mpi = run(mpi_args, dir);
  ASSERT_EQ(mpi.status, 0) << mpi.err;
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"train loss ", ","},
                                 {"test accuracy ", ","},
                                 {"bytes sent between workers: ", "\n"}})
    EXPECT_EQ(field(mpi.out, from, to), field(threads.out, from, to)) << from;
}

// ZeRO-1 over two processes (a reduce-scatter of the gradients, each rank's step on its shard,
// an all-gather of the parameters) reports plain data parallelism's loss, accuracy and bytes
// over threads: the same ring chunks, so the same sums and the same traffic.
TEST(MpiTransportCli, ZeroOneOverTwoProcessesReportsWhatPlainDataParallelismReports) {
  const auto dir = scratch("zero");
  const std::string args =
      std::string(STRATA_BINARY) + " run --model mlp --strategy dp=2 --optimizer adam --epochs 1 --no-pin";
  expect_same_report(args, mpirun(2) + args + " --set zero=1 --transport mpi", dir);
}

// ZeRO-2 and -3 over two processes (one ring per layer into each rank's shard, ZeRO-3's gathers
// of every layer before its use) report what the same runs report over threads.
TEST(MpiTransportCli, ZeroTwoAndThreeOverTwoProcessesReportWhatTheThreadsReport) {
  for (const char* zero : {"2", "3"}) {
    SCOPED_TRACE(std::string("zero=") + zero);
    const auto dir = scratch(std::string("zero") + zero);
    const std::string args =
        std::string(STRATA_BINARY) +
        " run --model mlp --strategy dp=2 --optimizer adam --epochs 1 --no-pin --set zero=" + zero;
    expect_same_report(args, mpirun(2) + args + " --transport mpi", dir);
  }
}

// Gradient compression over two processes: the compressed ring (int8: codes and a scale per
// message), top-k's all-gathered selections and PowerSGD's two allreduces give the loss,
// accuracy and bytes the same run gives over threads.
TEST(MpiTransportCli, CompressedRunsOverTwoProcessesReportWhatTheThreadsReport) {
  for (const char* codec : {"int8", "topk", "powersgd"}) {
    SCOPED_TRACE(codec);
    const auto dir = scratch(std::string("compression_") + codec);
    const std::string args =
        std::string(STRATA_BINARY) +
        " run --model mlp --strategy dp=2 --epochs 1 --no-pin --set compression=" + codec;
    expect_same_report(args, mpirun(2) + args + " --transport mpi", dir);
  }
}

// Data parallelism through the object store of files (and the cache's, in RAM) over two
// processes: each rank PUTs and GETs its own objects in the folder rank 0 made; through a
// parameter server in rank 0's process, each rank's bucket crosses to it and the sum back. The
// run reports what it reports over threads (at two ranks a + b = b + a); every store folder is
// gone afterwards.
TEST(MpiTransportCli, StorageCollectivesOverTwoProcessesReportWhatTheThreadsReport) {
  for (const char* algo : {"storage_allreduce", "storage_scatter_reduce", "cache_allreduce",
                           "cache_scatter_reduce", "parameter_server"}) {
    SCOPED_TRACE(algo);
    const auto dir = scratch(std::string("store_") + algo);
    const auto tmp = dir / "tmp";
    std::filesystem::create_directories(tmp);
    const std::string args = std::string(STRATA_BINARY) +
                             " run --model mlp --strategy dp=2 --epochs 1 --no-pin --set dp_algo=" + algo;
    expect_same_report("TMPDIR=" + tmp.string() + " " + args,
                       mpirun(2) + "-x TMPDIR=" + tmp.string() + " " + args + " --transport mpi", dir);
    EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "an object store folder was left in " << tmp;
  }
}

// explore under mpirun: each rank replays its share of every rung (job n on rank n mod N), rank 0
// alone prints and commits; the sharded sweep prints the serial table and leaves the serial rows,
// with 2 ranks over successive halving (720 estimates, 240 aggregated and 80 step replays) and
// with 3 ranks over 7 replays (a share of 3, 2 and 2).
TEST(MpiExploreCli, AShardedSweepPrintsAndStoresWhatTheSerialOnePrintsAndStores) {
  const std::string platforms = std::string(STRATA_SOURCE_DIR) + "/platforms/";
  const std::vector<std::pair<int, std::string>> sweeps = {
      {2, "explore --platform " + platforms +
              "a100-node-8.xml --model gpt2-small --set layers=2 --fidelity step"},
      {3, "explore --platform " + platforms + "a100-cluster-64.xml --model gpt3-1.3b --workers 16 --top 7"}};
  for (const auto& [ranks, sweep] : sweeps) {
    SCOPED_TRACE(sweep);
    const auto dir = scratch("explore" + std::to_string(ranks));
    const std::string strata = std::string(STRATA_BINARY) + " ";
    const Outcome serial = run(strata + sweep + " --db " + (dir / "serial.db").string(), dir);
    ASSERT_EQ(serial.status, 0) << serial.err;
    const Outcome sharded =
        run(mpirun(ranks) + strata + sweep + " --db " + (dir / "sharded.db").string(), dir);
    ASSERT_EQ(sharded.status, 0) << sharded.err;
    const std::vector<std::string> a = lines_of(serial.out), b = lines_of(sharded.out);
    ASSERT_EQ(a.size(), b.size()) << sharded.out;
    EXPECT_NE(b[0].find(" over " + std::to_string(ranks) + " MPI ranks"), std::string::npos) << b[0];
    for (std::size_t i = 1; i < a.size(); ++i) EXPECT_EQ(b[i], a[i]);  // past the timings
    const Outcome rows_a = run(strata + "query --csv --db " + (dir / "serial.db").string(), dir);
    const Outcome rows_b = run(strata + "query --csv --db " + (dir / "sharded.db").string(), dir);
    ASSERT_EQ(rows_a.status, 0) << rows_a.err;
    EXPECT_GT(lines_of(rows_a.out).size(), 8u);
    EXPECT_EQ(rows_b.out, rows_a.out);
  }
}

TEST(MpiExploreCli, AnErrorOnTheRanksEndsTheSweepInOneLinePerRank) {
  const auto dir = scratch("explore_error");
  const Outcome o =
      run(mpirun(2) + STRATA_BINARY + " explore --model no-such-model --db " + (dir / "x.db").string(), dir);
  EXPECT_NE(o.status, 0);
  const auto said = lines_starting(o.err, "strata: error: rank ");
  ASSERT_GE(said.size(), 1u) << o.err;  // each rank that got there before the abort
  for (const std::string& line : said) EXPECT_NE(line.find("no-such-model"), std::string::npos) << line;
  EXPECT_EQ(o.out, "");
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db"));
}

}  // namespace
}  // namespace strata::real::mpi_test
