// The strata command end to end: bad input gives one line on stderr, a non-zero exit and no
// output file; the same inputs give byte-identical files.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli_process.hpp"

namespace {

namespace fs = std::filesystem;

using strata_test::Outcome;

class Cli : public strata_test::CliProcess {
 protected:
  Cli() : CliProcess("strata-cli-", false) {}
};

const std::string kPlatforms = std::string(STRATA_SOURCE_DIR) + "/platforms/";

std::string small_plan(const std::string& tasks) {
  return "{\"schema_version\":1,\"format\":\"strata-plan\",\"num_workers\":1,\"info\":{},\"buffers\":[],"
         "\"tasks\":[" +
         tasks + "]}";
}

TEST_F(Cli, ModelsListsTheZoo) {
  Outcome r = run("models");
  EXPECT_EQ(r.rc, 0);
  for (const char* m : {"mlp", "lenet5", "vgg16", "resnet50", "gpt2-small", "gpt3-175b", "anchor-96"})
    EXPECT_NE(r.out.find(m), std::string::npos) << m;
}

TEST_F(Cli, MalformedPlatformXml) {
  write("bad.xml",
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n<host id=\"a\" speed=\"1f\">\n"
        "</zone>\n</platform>\n");
  Outcome r = run("simulate --platform " + path("bad.xml") + " --model mlp --report " + path("r.json"));
  expect_one_line_error(r, "bad.xml:6", path("r.json"));
}

TEST_F(Cli, FewerSlotsThanWorkers) {
  Outcome r = run("simulate --platform " + kPlatforms +
                  "test-flat-4.xml --model mlp --strategy dp=8 --trace " + path("t.json"));
  expect_one_line_error(r, "8 workers need 8 worker slots, the platform has 4", path("t.json"));
}

TEST_F(Cli, UnknownHostInPlacement) {
  write("place.txt", "node-0\nnode-7\n");
  Outcome r =
      run("simulate --platform " + kPlatforms + "test-flat-4.xml --model mlp --strategy dp=2 --placement " +
          path("place.txt") + " --report " + path("r.json"));
  expect_one_line_error(r, "placement: worker 1: unknown host 'node-7'", path("r.json"));
}

TEST_F(Cli, PlanWithCycle) {
  write(
      "cycle.json",
      small_plan(
          R"({"id":"a","kind":"fixed","worker":0,"flops":0,"attrs":{"duration_s":1.0},"data_deps":["b"]},)"
          R"({"id":"b","kind":"fixed","worker":0,"flops":0,"attrs":{"duration_s":1.0},"data_deps":["a"]})"));
  Outcome r = run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan " + path("cycle.json") +
                  " --report " + path("r.json"));
  expect_one_line_error(r, "cycle", path("r.json"));
  EXPECT_NE(r.err.find("/tasks/"), std::string::npos) << r.err;
}

TEST_F(Cli, NegativeSize) {
  write("neg.json", small_plan(R"({"id":"a","kind":"linear_fwd","worker":0,"flops":-3})"));
  Outcome r = run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan " + path("neg.json"));
  expect_one_line_error(r, "/tasks/0/flops");
}

TEST_F(Cli, MissingSize) {
  write("missing.json", small_plan(R"({"id":"a","kind":"linear_fwd","worker":0})"));
  Outcome r = run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan " + path("missing.json"));
  expect_one_line_error(r, "/tasks/0/flops: missing");
}

TEST_F(Cli, UnknownTaskKind) {
  write("kind.json", small_plan(R"({"id":"a","kind":"warp_drive","worker":0,"flops":1})"));
  Outcome r = run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan " + path("kind.json"));
  expect_one_line_error(r, "/tasks/0/kind: unknown task kind 'warp_drive'");
}

// /dev/zero never ends: the Plan reader stops at its first byte (and a pipe at 4 GiB) instead of
// reading it into memory for ever.
TEST_F(Cli, DevZeroAsPlanIsOneLine) {
  Outcome r = run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan /dev/zero --report " +
                  path("r.json"));
  expect_one_line_error(r, "/dev/zero:1:1: parse error: ", path("r.json"));
}

TEST_F(Cli, UnknownModel) {
  Outcome r = run("plan --model gpt5 -o " + path("p.json"));
  expect_one_line_error(r, "unknown model 'gpt5'", path("p.json"));
}

TEST_F(Cli, UnknownStrategyDimension) {
  Outcome r = run("plan --model mlp --strategy dp=2,zz=2 -o " + path("p.json"));
  expect_one_line_error(r, "unknown dimension 'zz'", path("p.json"));
}

TEST_F(Cli, StrategyNotMatchingWorkers) {
  Outcome r = run("plan --model gpt2-small --workers 16 --strategy dp=2,tp=2,pp=2 -o " + path("p.json"));
  expect_one_line_error(r, "dp·tp·pp = 8 does not equal --workers 16", path("p.json"));
}

TEST_F(Cli, MissingFiles) {
  expect_one_line_error(run("simulate --platform " + path("nope.xml") + " --model mlp"), "nope.xml");
  expect_one_line_error(
      run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan " + path("nope.json")), "nope.json");
  expect_one_line_error(run("trace-export " + path("nope.json") + " -o " + path("x.json")), "nope.json",
                        path("x.json"));
}

TEST_F(Cli, RunWithoutTheDatasetIsOneLine) {
  ::setenv("STRATA_FASHION_MNIST", path("no-data").c_str(), 1);  // inherited by the strata child
  Outcome r = run("run --model mlp --epochs 1 --trace " + path("t.json"));
  ::unsetenv("STRATA_FASHION_MNIST");
  expect_one_line_error(r, "missing file", path("t.json"));
}

TEST_F(Cli, RunRefusesAPlanWithAKindWithoutKernel) {
  ASSERT_EQ(run("plan --model gpt2-small --set layers=1 --set seq=16 -o " + path("gpt.json")).rc, 0);
  Outcome r = run("run --plan " + path("gpt.json") + " --epochs 1");
  expect_one_line_error(r, "has no real kernel");
}

// run trains a one-iteration Plan once per batch: more iterations are refused in one line (they
// once tripped an internal invariant), as are ZeRO-2's sharded gradient buffers.
TEST_F(Cli, RunRefusesPlansItCannotTrain) {
  expect_one_line_error(
      run("run --model mlp --strategy dp=2 --iterations 2"),
      "--iterations: a backprop Plan of 2 iterations: run and validate train a one-iteration "
      "Plan once per batch");
  expect_one_line_error(run("run --model gpt2-small --strategy dp=2"),
                        "task it0/dp0/pp0/tp0/mb0/fwd/embed: kind 'embedding_fwd' has no real kernel");
}

TEST_F(Cli, RunRejectsAnUnavailableTransport) {
  expect_one_line_error(run("run --model mlp --transport carrier-pigeon"), "--transport: 'carrier-pigeon'");
}

// --device: cpu or cuda. Without a GPU (CI) cuda is refused in one line, whether the build has
// the CUDA backend ("no CUDA GPU is visible") or not ("has no CUDA backend"); under MPI it is
// refused too, since a cuda run's workers are streams of one process's GPU.
TEST_F(Cli, RunValidateAndCalibrateRefuseAnUnavailableDevice) {
  expect_one_line_error(run("run --model mlp --device tpu"), "--device: 'tpu' is not a device (cpu, cuda)");
  for (const std::string& command :
       std::vector<std::string>{"run --model mlp --epochs 1 --device cuda",
                                "validate --model mlp --device cuda --calibration x.json",
                                "calibrate -o " + path("c.json") + " --device cuda"}) {
    Outcome r = run(command);
    if (r.rc == 0 || r.err.find("--device cuda") == std::string::npos) continue;  // a GPU is visible here
    expect_one_line_error(r, "--device cuda: ");
    const bool said_why = r.err.find("no CUDA GPU is visible") != std::string::npos ||
                          r.err.find("has no CUDA backend") != std::string::npos ||
                          r.err.find("use --transport threads") != std::string::npos;
    EXPECT_TRUE(said_why) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("c.json")));
  }
}

TEST_F(Cli, RunTrainsAndWritesTheMeasuredTraceWithThePlansIds) {
  Outcome r = run("run --model mlp --strategy dp=2 --epochs 1 --trace " + path("m.json") + " --no-pin");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("epoch 1/1: train loss"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;
  ASSERT_EQ(run("plan --model mlp --strategy dp=2 --global-batch 128 -o " + path("p.json")).rc, 0);
  const std::string trace = slurp(path("m.json"));
  const std::string plan = slurp(path("p.json"));
  for (const char* id : {"it0/dp1/pp0/tp0/mb0/fwd/fc1", "it0/pp0/tp0/ar/b0", "it0/dp0/pp0/tp0/opt"}) {
    EXPECT_NE(plan.find(id), std::string::npos) << id;
    EXPECT_NE(trace.find(id), std::string::npos) << id;
  }
  EXPECT_NE(trace.find("\"executor\":\"real\""), std::string::npos);
}

TEST_F(Cli, SameInputsGiveByteIdenticalFiles) {
  const std::string args = "--model gpt2-small --set layers=4 --strategy dp=2,tp=2,pp=2 --microbatches 4";
  ASSERT_EQ(run("plan " + args + " -o " + path("p1.json")).rc, 0);
  ASSERT_EQ(run("plan " + args + " -o " + path("p2.json")).rc, 0);
  EXPECT_EQ(slurp(path("p1.json")), slurp(path("p2.json")));
  for (const char* n : {"1", "2"}) {
    Outcome r =
        run("simulate --platform " + kPlatforms + "a100-node-8.xml --plan " + path("p1.json") + " --trace " +
            path(std::string("t") + n + ".json") + " --report " + path(std::string("r") + n + ".json") +
            " --perfetto " + path(std::string("f") + n + ".json"));
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  EXPECT_EQ(slurp(path("t1.json")), slurp(path("t2.json")));
  EXPECT_EQ(slurp(path("r1.json")), slurp(path("r2.json")));
  EXPECT_EQ(slurp(path("f1.json")), slurp(path("f2.json")));
  Outcome e = run("trace-export " + path("t1.json") + " -o " + path("e.json"));
  ASSERT_EQ(e.rc, 0) << e.err;
  EXPECT_EQ(slurp(path("e.json")), slurp(path("f1.json")));
}

TEST_F(Cli, ExplorePrintsTheRankedTableAndWritesTheBestTrace) {
  Outcome r = run(
      "explore --platform a100-node-8.xml --model gpt2-small --set layers=4 --workers 8 --top 2 --trace " +
      path("best.json") + " --perfetto " + path("best.perfetto.json") + " --svg " + path("best.svg"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("analytic(s) simulated(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mem(GiB)"), std::string::npos);
  EXPECT_NE(r.out.find("best: dp="), std::string::npos);
  // The two replayed rows come first and carry a simulated time; the third carries none.
  const auto row = [&](int rank) {
    const std::string key = "\n   " + std::to_string(rank) + " ";
    const auto at = r.out.find(key);
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  // Columns: rank dp tp pp fits sched microbatches mbs recompute sequence_parallel zero offload
  // interleave analytic simulated ...
  const auto simulated_column = [](const std::string& line) {
    std::istringstream in(line);
    std::string column;
    for (int i = 0; i < 15; ++i) in >> column;
    return column;
  };
  EXPECT_NE(simulated_column(row(1)), "-") << row(1);
  EXPECT_NE(simulated_column(row(2)), "-") << row(2);
  EXPECT_EQ(simulated_column(row(3)), "-") << row(3);
  EXPECT_TRUE(fs::exists(path("best.json")));
  EXPECT_TRUE(fs::exists(path("best.perfetto.json")));
  EXPECT_NE(slurp(path("best.svg")).find("<svg"), std::string::npos);
}

// --- calibrate and validate ----------------------------------------------------------------

// A schema-2 calibration of a made-up 2-core machine: enough for validate to build its platform.
const char* const kCalibration = R"({"schema_version": 2, "format": "strata-calibration",
  "flops_efficiency": {"linear_fwd/fp32": 0.5},
  "transports": {"threads": {"p2p_alpha_s": 2e-5, "p2p_beta_s_per_byte": 1e-10, "allreduce_alpha_s": 1e-5,
                             "allreduce_beta_s_per_byte": 2e-10, "allreduce_ranks": 2}},
  "host": {"name": "box", "cores": 2, "flops_fp32": 8e10, "flops_fp64": 4e10, "mem_bw": 2e10}})";

TEST_F(Cli, CalibrateWritesWhatSimulateReadsAndThePlatformOfThisMachine) {
  Outcome r = run("calibrate -o " + path("c.json") + " --emit-platform " + path("me.xml"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("GFLOP/s fp32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("transport threads: point-to-point"), std::string::npos) << r.out;
  const std::string c = slurp(path("c.json"));
  for (const char* key : {"\"schema_version\": 2", "\"linear_fwd/fp32/1e7\"", "\"threads\"",
                          "\"p2p_beta_s_per_byte\"", "\"cores\""})
    EXPECT_NE(c.find(key), std::string::npos) << key;
  const std::string xml = slurp(path("me.xml"));
  EXPECT_NE(xml.find("<link id=\"loopback\""), std::string::npos) << xml;
  // The object store of files, measured: the platform's store and a function per core.
  EXPECT_NE(r.out.find("transport files: point-to-point"), std::string::npos) << r.out;
  EXPECT_NE(c.find("\"files\""), std::string::npos);
  EXPECT_NE(xml.find("<host id=\"store\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<host id=\"fn-0\""), std::string::npos) << xml;
  // The same store in RAM, measured: the platform's cache VM.
  EXPECT_NE(r.out.find("transport cache: point-to-point"), std::string::npos) << r.out;
  EXPECT_NE(c.find("\"cache\""), std::string::npos);
  EXPECT_NE(xml.find("<host id=\"cache\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<prop id=\"storage_kind\" value=\"cache\"/>"), std::string::npos) << xml;
  EXPECT_NE(r.out.find("object store cache at 1 MiB, one request alone: PUT "), std::string::npos) << r.out;
  // The simulator takes both: two workers of the MLP on the two slots of this machine.
  r = run("simulate --platform " + path("me.xml") + " --calibration " + path("c.json") +
          " --model mlp --strategy dp=2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("iteration"), std::string::npos) << r.out;
}

// ZeRO-2 and -3 and full recomputation run for real: the replay's memory model (the unsharded
// gradients until the reduce-scatter, the gathered weights from each gather to their last use,
// the gradient tensors of the backward, each chunk's kept input and its re-run, the kernels'
// temporaries as Task::mem_temp) against each worker's measured peak (the Plan's buffers and
// every temporary the kernels and transports allocate), within 5 % for every worker.
TEST_F(Cli, ValidateMeasuresMemoryOptionsWithinFivePercentOfTheMemoryModel) {
  write("c.json", kCalibration);
  for (const char* args :
       {"--model mlp --strategy dp=2 --set zero=2", "--model mlp --strategy dp=2 --set zero=3",
        "--model lenet5 --strategy dp=2 --set zero=3", "--model mlp --strategy dp=2 --set recompute=full",
        "--model lenet5 --strategy dp=2 --set recompute=full"}) {
    SCOPED_TRACE(args);
    const Outcome r = run(std::string("validate ") + args + " --calibration " + path("c.json") +
                          " --runs 2 --warmup 1 --no-pin");
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto memory = r.out.find("peak memory per worker: ");
    ASSERT_NE(memory, std::string::npos) << r.out;
    const std::string line = r.out.substr(memory, r.out.find('\n', memory) - memory);
    int workers = 0;
    for (auto open = line.find("MiB ("); open != std::string::npos; open = line.find("MiB (", open + 1)) {
      const auto close = line.find(" %)", open);
      ASSERT_NE(close, std::string::npos) << line;
      EXPECT_LT(std::abs(std::stod(line.substr(open + 5, close - open - 5))), 5.0) << line;
      ++workers;
    }
    EXPECT_EQ(workers, 2) << line;
  }
}

// Data parallelism through the object store of files, each worker a function of half a vCPU on
// this machine's platform: the replay puts the workers in fn-0 and fn-1 at half speed, the real
// run holds each worker to half its core, and the exchange's PUTs and GETs go through files; the
// same through the cache (files in RAM) and through a parameter server on this machine's host.
TEST_F(Cli, ValidateRunsAPlanThroughTheStoreInFunctions) {
  std::string calibration = kCalibration;
  const std::string files =
      "\"files\": {\"p2p_alpha_s\": 5e-5, \"p2p_beta_s_per_byte\": 2e-10, "
      "\"allreduce_alpha_s\": 4e-4, \"allreduce_beta_s_per_byte\": 1e-9, \"allreduce_ranks\": 2}, ";
  calibration.replace(calibration.find("\"threads\""), 0, files);
  write("c.json", calibration);
  for (const char* algo : {"storage_allreduce", "parameter_server"}) {
    SCOPED_TRACE(algo);
    const Outcome r = run(std::string("validate --model mlp --strategy dp=2 --set dp_algo=") + algo +
                          " --function-memory 885 --calibration " + path("c.json") + " --runs 3 --warmup 1");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("iteration time: predicted"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("allreduce "), std::string::npos) << r.out;
  }
  // Without the cache measured, the platform has none: one line.
  expect_one_line_error(run("validate --model mlp --strategy dp=2 --set dp_algo=cache_allreduce "
                            "--function-memory 885 --calibration " +
                            path("c.json")),
                        "and the platform has no cache VM");
  std::string with_cache = kCalibration;
  with_cache.replace(with_cache.find("\"threads\""), 0,
                     files +
                         "\"cache\": {\"p2p_alpha_s\": 2e-5, \"p2p_beta_s_per_byte\": 1e-10, "
                         "\"allreduce_alpha_s\": 2e-4, \"allreduce_beta_s_per_byte\": 5e-10, "
                         "\"allreduce_ranks\": 2}, ");
  write("cache.json", with_cache);
  const Outcome r =
      run("validate --model mlp --strategy dp=2 --set dp_algo=cache_scatter_reduce "
          "--function-memory 885 --calibration " +
          path("cache.json") + " --runs 3 --warmup 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time: predicted"), std::string::npos) << r.out;
  // This machine's pool offers 128 to 1,769 MB (one vCPU at most: a worker runs one thread), and
  // a function's quota needs its worker pinned.
  expect_one_line_error(
      run("validate --model mlp --strategy dp=2 --function-memory 1770 --calibration " + path("c.json")),
      "--function-memory: 1770 MB is not offered");
  expect_one_line_error(
      run("validate --model mlp --strategy dp=2 --function-memory 885 --no-pin --calibration " +
          path("c.json")),
      "--function-memory: conflicts with --no-pin");
}

// A validation and a real run in the results store (docs/results.md): the validation's row holds
// the prediction, the measured median and the error it printed; the run's row its accuracy per
// epoch, written after each epoch.
TEST_F(Cli, ValidateAndRunKeepTheirRowsInTheStore) {
  write("c.json", kCalibration);
  Outcome r = run("validate --model mlp --strategy dp=2 --calibration " + path("c.json") +
                  " --runs 2 --warmup 1 --no-pin --perfetto '' --svg '' --db " + path("v.db") + " --csv " +
                  path("v.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  // The printed table as CSV too: the iteration first, then a row per task kind.
  const std::string csv = slurp(path("v.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "row,tasks,predicted_s,measured_s,error_pct,median_abs_error_pct,p90_abs_error_pct");
  EXPECT_NE(csv.find("\niteration,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nlinear_fwd,"), std::string::npos) << csv;
  Outcome q = run("query --db " + path("v.db") + " --json");
  ASSERT_EQ(q.rc, 0) << q.err;
  nlohmann::json rows = nlohmann::json::parse(q.out)["rows"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["fidelity"], "validate");
  EXPECT_EQ(rows[0]["command"], "validate");
  const double predicted = rows[0]["iteration_time_s"], measured = rows[0]["measured_iteration_time_s"];
  EXPECT_NEAR(rows[0]["error_pct"].get<double>(), 100 * (predicted - measured) / measured, 1e-9);
  char line[64];
  std::snprintf(line, sizeof line, "error %+.1f %%", rows[0]["error_pct"].get<double>());
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  r = run("run --model mlp --strategy dp=2 --epochs 2 --no-pin --db " + path("r.db"));
  ASSERT_EQ(r.rc, 0) << r.err;
  rows = nlohmann::json::parse(run("query --db " + path("r.db") + " --json").out)["rows"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["fidelity"], "real");
  const nlohmann::json curve = nlohmann::json::parse(rows[0]["accuracy"].get<std::string>());
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_EQ(curve[1]["epoch"], 2);
  EXPECT_GT(curve[1]["test_accuracy"].get<double>(), 0.5);
  EXPECT_GT(rows[0]["samples_per_s"].get<double>(), 0);
}

TEST_F(Cli, ValidateComparesTheSameTasksAndWritesBothTracesAndThePlot) {
  write("c.json", kCalibration);
  Outcome r = run("validate --model mlp --strategy dp=2 --calibration " + path("c.json") +
                  " --runs 3 --warmup 1 --json " + path("v.json") + " --perfetto " + path("v.perfetto.json") +
                  " --svg " + path("v.svg") + " --no-pin");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time: predicted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compute tasks: median |error|"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worst tasks:"), std::string::npos) << r.out;
  // Peak memory per worker, predicted by the replay and measured from the Workspace's arrays:
  // the MLP's fp32 weights, gradients and Adam moments (235,146 x 16 B) and a microbatch's
  // activations, within 5 % of each other.
  const auto memory = r.out.find("peak memory per worker: w0 predicted ");
  ASSERT_NE(memory, std::string::npos) << r.out;
  const std::string line = r.out.substr(memory, r.out.find('\n', memory) - memory);
  const auto open = line.find("MiB ("), close = line.find(" %)");
  ASSERT_NE(open, std::string::npos) << line;
  EXPECT_LT(std::abs(std::stod(line.substr(open + 5, close - open - 5))), 5.0) << line;
  const std::string v = slurp(path("v.json"));
  for (const char* key :
       {"\"iteration_predicted_s\"", "\"iteration_measured_s\"", "\"compute_median_abs_error\"",
        "\"linear_fwd\"", "\"allreduce\"", "\"peak_memory\"", "\"measured_bytes\""})
    EXPECT_NE(v.find(key), std::string::npos) << key;
  // Both groups of the Perfetto file hold the same task ids: pids 1.. predicted, 10001.. measured.
  std::set<std::string> predicted, measured;
  std::istringstream lines(slurp(path("v.perfetto.json")));
  for (std::string line; std::getline(lines, line);) {
    const auto name = line.find("\"name\":\"it0/");
    if (name == std::string::npos) continue;
    const std::string id = line.substr(name + 8, line.find('"', name + 8) - name - 8);
    (line.find("\"pid\":1000") != std::string::npos ? measured : predicted).insert(id);
  }
  EXPECT_GT(predicted.size(), 30u);
  EXPECT_EQ(predicted, measured);
  EXPECT_NE(slurp(path("v.svg")).find("<circle"), std::string::npos);
}

TEST_F(Cli, ValidateBadInputIsOneLine) {
  expect_one_line_error(run("validate --model mlp --strategy dp=1"), "give --calibration FILE");
  write("old.json", R"({"schema_version": 1})");
  expect_one_line_error(run("validate --model mlp --calibration " + path("old.json")),
                        "/schema_version: unsupported version 1 (expected 2)");
  write("c.json", R"({"schema_version": 2})");
  expect_one_line_error(run("validate --model mlp --calibration " + path("c.json")),
                        "/host: no measured host");
  expect_one_line_error(run("calibrate -o " + path("x.json") + " --transport smoke-signals"),
                        "--transport: unknown", path("x.json"));
}

// The solvers lowered to Plans plan and simulate on every shipped platform.
TEST_F(Cli, SolversPlanAndSimulateOnEveryShippedPlatform) {
  const std::vector<std::pair<std::string, std::string>> solvers = {
      {"ampnet", "mlp"},     {"local", "mlp"}, {"dladmm", "mlp"},    {"pdadmm", "mlp"},
      {"pdadmm-g-q", "mlp"}, {"gist", "gcn"},  {"block-admm", "mlp"}};
  for (const auto& [solver, model] : solvers) {
    const Outcome p =
        run("plan --model " + model + " --workers 2 --solver " + solver + " -o " + path("p.json"));
    ASSERT_EQ(p.rc, 0) << solver << ": " << p.err;
    for (const auto& entry : fs::directory_iterator(kPlatforms)) {
      if (entry.path().extension() != ".xml") continue;
      const Outcome s = run("simulate --plan " + path("p.json") + " --platform " + entry.path().string());
      EXPECT_EQ(s.rc, 0) << solver << " on " << entry.path() << ": " << s.err;
      EXPECT_NE(s.out.find("iteration time"), std::string::npos) << s.out;
      if (solver == "ampnet" || solver == "local" || solver == "block-admm") {
        EXPECT_NE(s.out.find("per solver iteration (16 instances per Plan iteration)"), std::string::npos)
            << s.out;
      }
      if (solver == "gist") {
        EXPECT_NE(s.out.find("epoch time"), std::string::npos) << s.out;
      }
    }
  }
}

// GIST (docs/solvers.md): a round of m sub-GCNs, timed per round and per epoch (one full-graph
// step), from a Plan file or straight from the flags; the backprop baseline on one worker.
TEST_F(Cli, GistPlansAndSimulatesARoundAndAnEpoch) {
  const Outcome p = run("plan --model gcn --solver gist --workers 2 -o " + path("gist.json"));
  ASSERT_EQ(p.rc, 0) << p.err;
  EXPECT_NE(p.out.find("457 tasks, 2 workers"), std::string::npos) << p.out;
  const std::regex epoch(
      R"(epoch time +[0-9.]+ (s|ms|µs) \(an iteration is one gist round of 10 full-graph steps)");
  const std::regex round(R"(iteration time +[0-9.]+ (s|ms|µs) )");
  const Outcome from_file =
      run("simulate --plan " + path("gist.json") + " --platform " + kPlatforms + "a100-node-8.xml");
  ASSERT_EQ(from_file.rc, 0) << from_file.err;
  EXPECT_TRUE(std::regex_search(from_file.out, round)) << from_file.out;
  EXPECT_TRUE(std::regex_search(from_file.out, epoch)) << from_file.out;
  const Outcome s =
      run("simulate --model gcn --solver gist --workers 4 --platform " + kPlatforms + "a100-node-8.xml");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("4 workers"), std::string::npos) << s.out;
  EXPECT_TRUE(std::regex_search(s.out, epoch)) << s.out;
  const Outcome baseline = run("simulate --model gcn --platform " + kPlatforms + "a100-node-8.xml");
  ASSERT_EQ(baseline.rc, 0) << baseline.err;
  EXPECT_TRUE(std::regex_search(baseline.out, round)) << baseline.out;
  EXPECT_EQ(baseline.out.find("epoch time"), std::string::npos) << baseline.out;
}

// A graph of 10^9 nodes and 10^10 edges (the issue's size): its layout comes from a 2^17-node
// sample (graph_layout.hpp), the Plan holds per-part aggregates, and a GIST epoch (zeta = 1) of
// 2 sub-GCNs, each split in 32 parts over a100-cluster-64, simulates within a minute on one core.
TEST_F(Cli, BillionNodeGistEpochSimulatesWithinAMinute) {
  const auto start = std::chrono::steady_clock::now();
  const Outcome s =
      run("simulate --model gcn --set nodes=1000000000 --set edges=10000000000 --set "
          "sizes=100,256,256,47 --solver gist --workers 64 --set m=2 --set parts=32 --set zeta=1 "
          "--platform " +
          kPlatforms + "a100-cluster-64.xml");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_LT(seconds, 60) << s.out;
  EXPECT_NE(s.out.find("graph               1e+09 nodes, 1e+10 edges in 32 parts (streaming), halo "),
            std::string::npos)
      << s.out;
  EXPECT_TRUE(
      std::regex_search(s.out, std::regex(R"(epoch time +[0-9.]+ s \(an iteration is one gist round of 1 )")))
      << s.out;
  EXPECT_NE(s.out.find("does NOT fit"), std::string::npos) << s.out;  // the halo rows alone: 183 GB a part
}

// Backprop over dp=8 splits a GCN's graph in 8 parts: an epoch is one step, the report says the
// layout; the real trainer refuses a split Plan in one line.
TEST_F(Cli, PartitionedGcnSimulatesAndRunsForReal) {
  const Outcome s = run("simulate --model gcn --set nodes=100000 --strategy dp=8 --platform " + kPlatforms +
                        "a100-node-8.xml");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("strategy dp=8,nodes=100000,edges=1000000,partitioner=streaming"), std::string::npos)
      << s.out;
  EXPECT_NE(s.out.find("(an iteration is one full-graph step over every part)"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("in 8 parts (streaming)"), std::string::npos) << s.out;
  // For real: the power-law graph the Plan was laid out on, its 2 parts on 2 worker threads, the
  // same losses as the whole graph on one worker (the parts' gradients are summed).
  const std::string graph =
      "run --model gcn --set nodes=3000 --set edges=30000 --set sizes=32,48,48,8 --epochs 3 --no-pin";
  const Outcome r = run(graph + " --strategy dp=2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("power-law graph of 3000 nodes and 30000 edges"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 parts by streaming"), std::string::npos) << r.out;
  const Outcome whole = run(graph);
  ASSERT_EQ(whole.rc, 0) << whole.err;
  auto losses = [](const std::string& out) {
    std::string found;
    for (std::size_t at = out.find("train loss "); at != std::string::npos;
         at = out.find("train loss ", at + 1))
      found += out.substr(at, 17) + ";";
    return found;
  };
  const std::string split_losses = losses(r.out);
  EXPECT_EQ(split_losses, losses(whole.out)) << r.out << whole.out;
  EXPECT_EQ(std::count(split_losses.begin(), split_losses.end(), ';'), 3);
  EXPECT_NE(whole.out.find("bytes sent between workers: 0 B"), std::string::npos) << whole.out;
  EXPECT_EQ(r.out.find("bytes sent between workers: 0 B"), std::string::npos) << r.out;
  expect_one_line_error(run(graph + " --strategy dp=2 --set sample_nodes=1000"),
                        "it was laid out on a sample; lower it with --set sample_nodes=3000");
  expect_one_line_error(run("plan --model gcn --solver gist --set parts=2 --workers 3 -o " + path("p.json")),
                        "--set parts=2: 1 sub-GCNs of 2 graph parts each need 2 workers, not 3",
                        path("p.json"));
}

TEST_F(Cli, SampledGcnSimulatesItsEpochAndTheRealTrainerSaysFullGraphOnly) {
  const std::string graph =
      " --model gcn --set nodes=100000 --set edges=2500000 --set sizes=64,32,32,8 "
      "--set fanout=25,10 --strategy dp=2 --global-batch 1000";
  const Outcome s = run("simulate" + graph + " --platform " + kPlatforms + "a100-node-8.xml");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("strategy dp=2,fanout=25,10,batch=1000,nodes=100000"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("(100 minibatch steps, fan-out 25,10, each node a target once)"), std::string::npos)
      << s.out;
  expect_one_line_error(run("run" + graph + " --epochs 1"),
                        "the real trainer runs full-graph GCN Plans only (simulate it)");
}

TEST_F(Cli, GistBadInputIsOneLine) {
  expect_one_line_error(run("plan --model mlp --solver gist -o " + path("p.json")),
                        "--solver gist: model mlp is not a GCN", path("p.json"));
  expect_one_line_error(run("plan --model gcn --solver gist --set m=300 -o " + path("p.json")),
                        "--set m: 300 sub-GCNs but the narrowest hidden layer of model gcn has 256 units",
                        path("p.json"));
  expect_one_line_error(run("plan --model gcn --solver gist --set zeta=0 -o " + path("p.json")),
                        "--set zeta: must be >= 1, got 0", path("p.json"));
  expect_one_line_error(run("plan --model gcn --solver gist --set m=2 --workers 4 -o " + path("p.json")),
                        "--set m: 2 sub-GCNs but 4 workers", path("p.json"));
  expect_one_line_error(run("plan --model gcn --set nodes=0 -o " + path("p.json")),
                        "--set nodes=0: '0' is not a positive integer", path("p.json"));
}

TEST_F(Cli, RunWithASolverLogsAccuracyAgainstEpochAndSeconds) {
  const Outcome r = run("run --model mlp --solver local --workers 2 --epochs 1 --no-pin --log " +
                        path("log.csv") + " --trace " + path("m.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string log = slurp(path("log.csv"));
  EXPECT_EQ(
      log.rfind("epoch,train_seconds,wall_seconds,samples,train_loss,test_accuracy,samples_per_second\n1,",
                0),
      0u)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2);
  const std::string trace = slurp(path("m.json"));
  for (const char* id : {"it0/dp0/pp0/tp0/mb3/fwd/aux0/fc", "it0/dp0/pp1/tp0/mb3/recv/fwd/fc2",
                         "it0/dp0/pp1/tp0/mb15/opt/fc3"})
    EXPECT_NE(trace.find(id), std::string::npos) << id;
}

// Stochastic Block-ADMM on two workers (two blocks, two ADMM steps per minibatch) trains the MLP
// past 75 % in two epochs, and the run's last line says so.
// compare-solvers --scaling: every row at every worker count, predicted; speedup over backprop on
// one worker (1.00x for backprop's own 1-worker row), CSV rows per (row, workers), pdADMM n/a on a
// CNN, and the speedup plot.
TEST_F(Cli, CompareSolversScalingPredictsEveryRowAtEveryWorkerCount) {
  const Outcome r =
      run("compare-solvers --model resnet20 --platform " + kPlatforms +
          "a100-cluster-64.xml --scaling 1,2,4 --svg " + path("s.svg") + " --csv " + path("s.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("backprop dp                 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.00x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("block-admm batch            4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("serial-parallel             4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pdadmm                      2 n/a (--solver: the ADMM solvers train MLPs"),
            std::string::npos)
      << r.out;
  const std::string csv = slurp(path("s.csv"));
  EXPECT_EQ(
      csv.rfind("row,workers,predicted_epoch_s,speedup,bytes_per_iteration,peak_memory_bytes,not_available\n",
                0),
      0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 3 * 7);  // seven rows at three counts
  // Data parallelism scales: its 4-worker speedup lies between 3 and 4.
  const std::size_t at = csv.find("backprop dp,4,");
  ASSERT_NE(at, std::string::npos) << csv;
  const std::string line = csv.substr(at, csv.find('\n', at) - at);
  const double speedup = std::stod(line.substr(line.find(',', line.find(',', line.find(',') + 1) + 1) + 1));
  EXPECT_GT(speedup, 3.0) << line;
  EXPECT_LE(speedup, 4.0) << line;
  EXPECT_NE(slurp(path("s.svg")).find("<svg"), std::string::npos);
  expect_one_line_error(run("compare-solvers --model resnet20 --platform " + kPlatforms +
                            "a100-cluster-64.xml --scaling 1,2 --epochs 3 --csv " + path("x.csv")),
                        "--scaling: a predicted study; it trains nothing here (leave --epochs out)",
                        path("x.csv"));
}

// A full-graph solver holds the whole graph on every worker: a graph larger than all of a
// platform's device memory is refused in one line (784 features x 4 B x 1e9 nodes + 2.1e10 entries x
// 8 B = 3.30 TB > 8 x 80 GB); on a platform that holds it in total, the report says a worker cannot.
TEST_F(Cli, FullGraphLargerThanThePlatformIsRefused) {
  expect_one_line_error(
      run("simulate --model gcn --set nodes=1000000000 --set avg_degree=20 --platform " + kPlatforms +
          "a100-node-8.xml --report " + path("r.json")),
      "a100-node-8.xml: a graph of 1e+09 nodes and 2.1e+10 neighbour entries needs 3.00 TiB on "
      "every worker to train full-graph (--solver backprop), more than the 596.05 GiB of device "
      "memory all 8 worker slots hold together",
      path("r.json"));
  const Outcome ok = run("simulate --model gcn --set nodes=1000000000 --set avg_degree=20 --platform " +
                         kPlatforms + "a100-cluster-64.xml");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("does NOT fit"), std::string::npos) << ok.out;
}

TEST_F(Cli, RunTrainsBlockAdmmPastSeventyFivePercent) {
  const Outcome r = run("run --model mlp --solver block-admm --workers 2 --epochs 2 --no-pin");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  ASSERT_EQ(last.rfind("test accuracy ", 0), 0u) << r.out;
  const double accuracy = std::stod(last.substr(14));
  EXPECT_GE(accuracy, 75.0) << r.out;
  EXPECT_LE(accuracy, 100.0);
  EXPECT_NE(r.out.find("blocks=2,inner_steps=2"), std::string::npos) << r.out;
}

TEST_F(Cli, BlockAdmmBatchSettingNeedsARowPerTrainingSample) {
  expect_one_line_error(run("run --model mlp --solver block-admm --workers 2 --epochs 1 --set setting=batch "
                            "--set train_samples=1000 --log " +
                            path("log.csv")),
                        "--set train_samples=1000: block-admm keeps one row per training sample in its "
                        "stores, and the training set has 60000",
                        path("log.csv"));
}

// A bare --solver serial-parallel runs on its defaults (penalty, a correction every 4th minibatch,
// no downsampling): one epoch trains the MLP past 75 % on the serial corrections alone.
TEST_F(Cli, RunTrainsTheSerialParallelHybridOnItsDefaults) {
  const Outcome r = run("run --model mlp --solver serial-parallel --workers 2 --epochs 1 --no-pin");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  ASSERT_EQ(last.rfind("test accuracy ", 0), 0u) << r.out;
  EXPECT_GE(std::stod(last.substr(14)), 75.0) << r.out;
  EXPECT_NE(r.out.find("method=penalty,correction_period=4,downsample=1"), std::string::npos) << r.out;
}

// --set warmup_epochs=1: epoch 1 is the serial Plan's (correction_period 1, the same accuracy
// to the printed digit), epoch 2 the hybrid's continuing from it; the bytes are the two Plans'
// epochs added. A Plan file cannot carry the serial Plan beside it: one line.
TEST_F(Cli, SerialParallelWarmUpEpochIsTheSerialPlansThenTheHybridContinues) {
  const std::string common = "run --model mlp --solver serial-parallel --workers 2 --no-pin ";
  const Outcome serial = run(common + "--epochs 1 --set correction_period=1");
  const Outcome hybrid = run(common + "--epochs 1");
  const Outcome both = run(common + "--epochs 2 --set warmup_epochs=1");
  for (const Outcome* r : {&serial, &hybrid, &both}) ASSERT_EQ(r->rc, 0) << r->err;
  const auto accuracy = [](const std::string& out, int epoch) {
    const std::size_t at = out.find("epoch " + std::to_string(epoch) + "/");
    const std::size_t acc = out.find("test accuracy ", at);
    return at == std::string::npos ? std::string() : out.substr(acc, out.find(" %", acc) - acc);
  };
  EXPECT_EQ(accuracy(both.out, 1), accuracy(serial.out, 1)) << both.out << serial.out;
  EXPECT_NE(accuracy(both.out, 1), "") << both.out;
  EXPECT_NE(both.out.find("wall so far), serial warm-up\n"), std::string::npos) << both.out;
  const std::size_t second = both.out.find("epoch 2/2");
  ASSERT_NE(second, std::string::npos) << both.out;
  EXPECT_EQ(both.out.find("serial warm-up", second), std::string::npos) << both.out;
  const auto bytes = [](const std::string& out) {
    const std::size_t at = out.find("bytes sent between workers: ");
    return at == std::string::npos ? 0.0 : std::stod(out.substr(at + 28));
  };
  EXPECT_GT(bytes(serial.out), 0);
  EXPECT_NEAR(bytes(both.out), bytes(serial.out) + bytes(hybrid.out), 1e-3 * bytes(both.out)) << both.out;
  // The hybrid's epoch starts from the warm-up's weights, not afresh.
  EXPECT_GT(std::stod(accuracy(both.out, 2).substr(14)), std::stod(accuracy(hybrid.out, 1).substr(14)))
      << both.out << hybrid.out;
  // At its default the key stays out of the spec (the content hashes of earlier hybrid runs hold).
  const Outcome quiet = run("spec --model mlp --solver serial-parallel --workers 2");
  const Outcome warm = run("spec --model mlp --solver serial-parallel --workers 2 --set warmup_epochs=1");
  EXPECT_EQ(quiet.out.find("warmup_epochs"), std::string::npos) << quiet.out;
  EXPECT_NE(warm.out.find("\"warmup_epochs\": 1"), std::string::npos) << warm.out;
  ASSERT_EQ(run("plan --model mlp --solver serial-parallel --workers 2 --set warmup_epochs=1 -o " +
                path("warm.json"))
                .rc,
            0);
  expect_one_line_error(run("run --plan " + path("warm.json") + " --epochs 2 --log " + path("w.csv")),
                        "warm.json: warmup_epochs 1 needs the serial Plan beside this one", path("w.csv"));
  expect_one_line_error(
      run("run --model mlp --solver backprop --epochs 1 --set warmup_epochs=1 --log " + path("b.csv")),
      "--set warmup_epochs", path("b.csv"));
}

TEST_F(Cli, SerialParallelBadInputIsOneLine) {
  expect_one_line_error(run("run --model mlp --solver serial-parallel --workers 2 --epochs 1 --set "
                            "correction_period=0 --log " +
                            path("log.csv")),
                        "--set correction_period: must be >= 1, got 0", path("log.csv"));
  expect_one_line_error(run("simulate --model lenet5 --solver serial-parallel --workers 2 --platform " +
                            kPlatforms + "a100-node-8.xml --set downsample=3 --report " + path("r.json")),
                        "--set downsample=3: block 0 of model lenet5 ends in layer", path("r.json"));
}

// ADMM Plans run for real: pdADMM on 2 workers, full batch of 500 samples, 2 sweeps as 2 epochs;
// the log has a row per epoch and the p, q, u messages are counted (one boundary of 32 units:
// 3 x 32 x 500 float32 values per sweep).
TEST_F(Cli, RunTrainsAnAdmmPlanAndCountsItsMessages) {
  const Outcome r =
      run("run --model mlp --set sizes=784,32,10 --solver pdadmm --workers 2 --global-batch 500 "
          "--epochs 2 --no-pin --log " +
          path("admm.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("epoch 2: train loss"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s per sweep"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bytes sent between workers: 3.84e+05 B"), std::string::npos) << r.out;
  const std::string log = slurp(path("admm.csv"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 3) << log;
}

// GCN Plans run for real on the kNN graph of 1,000 Fashion-MNIST images: a GIST round on 2
// workers (its line has the loss, the accuracy and the seconds per round; the measured trace has
// the Plan's ids) and backprop's full-graph step on one.
TEST_F(Cli, RunTrainsGistAndBackpropGcnPlansOnTheKnnGraph) {
  const Outcome r =
      run("run --model gcn --set nodes=1000 --solver gist --workers 2 --epochs 1 --no-pin --log " +
          path("gist.csv") + " --trace " + path("gist_trace.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::regex round(R"(round 1: train loss [0-9.]+, test accuracy [0-9.]+ %, [0-9.]+ s per round)");
  EXPECT_TRUE(std::regex_search(r.out, round)) << r.out;
  EXPECT_NE(r.out.find("the Plan's avg_degree sizes the simulation only"), std::string::npos) << r.out;
  const std::string log = slurp(path("gist.csv"));
  EXPECT_EQ(
      log.rfind("epoch,train_seconds,wall_seconds,samples,train_loss,test_accuracy,samples_per_second\n1,",
                0),
      0u)
      << log;
  const std::string trace = slurp(path("gist_trace.json"));
  for (const char* id : {"it0/site1/extract", "it0/site1/step9/fwd/gc1/agg", "it0/average"})
    EXPECT_NE(trace.find(id), std::string::npos) << id;
  const Outcome b = run("run --model gcn --set nodes=1000 --solver backprop --epochs 1 --no-pin");
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_TRUE(std::regex_search(b.out, round)) << b.out;
}

TEST_F(Cli, ValidateSpeedupRunsTheOneWorkerBaselineAlongside) {
  ASSERT_EQ(run("calibrate -o " + path("calib.json")).rc, 0);
  const Outcome r =
      run("validate --speedup --model mlp --set sizes=784,32,32,10 --solver pdadmm --workers 2 "
          "--global-batch 500 --runs 3 --warmup 1 --no-pin --perfetto '' --svg '' --calibration " +
          path("calib.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time: predicted"), std::string::npos) << r.out;
  const auto at = r.out.find("speedup over 1 worker (same flags, runs alternated): measured ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x (", at), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted ", at), std::string::npos) << r.out;
  expect_one_line_error(
      run("validate --speedup --plan " + path("none.json") + " --calibration " + path("calib.json")),
      "--plan");
}

TEST_F(Cli, CompareSolversPredictsEveryRowAndSaysWhyARowIsMissing) {
  const Outcome r =
      run("compare-solvers --model mlp --workers 2 --epochs 0 --platform " + kPlatforms + "a100-node-8.xml");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* row :
       {"backprop dp=2 ", "backprop pp=2 1f1b ", "backprop dp=2 recompute=full ", "backprop dp=2 zero=1 ",
        "backprop dp=2 zero=2 ", "backprop dp=2 zero=3 ", "ampnet ", "local "}) {
    const auto at = r.out.find(std::string("\n") + row);
    ASSERT_NE(at, std::string::npos) << row << "\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(" ms"), std::string::npos) << line;  // the predicted epoch, with its unit
    EXPECT_NE(line.find("B "), std::string::npos) << line;   // bytes per iteration
  }
  // This platform gives no host link: the offload row says so instead of failing the command.
  EXPECT_NE(
      r.out.find("backprop dp=2 zero=1 offload=1     n/a (plan: task 'it0/dp0/pp0/tp0/opt/d2h': host node-0 "
                 "has no pcie_bw"),
      std::string::npos)
      << r.out;
}

// The table as CSV and JSON, in base units: the int8 row's bytes per iteration are the two
// ranks' ring messages of the MLP's 235,146 one-byte codes and a 4-byte scale each: 2 x 1/2 x
// (235,146 + 2 x 4) = 470,308 B against fp32's 1,881,168 B. A missing platform is one error.
TEST_F(Cli, CompareSolversWritesItsTableAsCsvAndJson) {
  const Outcome r = run("compare-solvers --model mlp --workers 2 --epochs 0 --platform " + kPlatforms +
                        "a100-node-8.xml --csv " + path("c.csv") + " --json " + path("c.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string csv = slurp(path("c.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "row,predicted_epoch_s,measured_epoch_s,test_accuracy,time_to_target_s,bytes_per_iteration,"
            "measured_bytes_per_iteration,peak_memory_bytes,not_available,not_measured");
  EXPECT_NE(csv.find("\nbackprop dp=2 compression=int8,"), std::string::npos) << csv;
  const nlohmann::json doc = nlohmann::json::parse(slurp(path("c.json")));
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : doc["rows"]) rows[row["row"].get<std::string>()] = row;
  EXPECT_EQ(rows.at("backprop dp=2")["bytes_per_iteration"], 1881168.0);
  EXPECT_EQ(rows.at("backprop dp=2 compression=int8")["bytes_per_iteration"], 470308.0);
  EXPECT_TRUE(rows.at("backprop dp=2 compression=topk")["measured_epoch_s"].is_null());  // --epochs 0
  expect_one_line_error(run("compare-solvers --epochs 0 --platform nosuch.xml --csv " + path("d.csv")),
                        "nosuch.xml: cannot open file", path("d.csv"));
}

TEST_F(Cli, SolverBadInputIsOneLine) {
  expect_one_line_error(run("plan --model mlp --solver pdadmm --set rho=-1 -o " + path("p.json")),
                        "--set rho: must be > 0, got -1", path("p.json"));
  expect_one_line_error(run("plan --model mlp --solver local --set chunks=5 -o " + path("p.json")),
                        "--set chunks: 5 chunks but model mlp has only 3 layer groups", path("p.json"));
  expect_one_line_error(run("plan --model mlp --solver adam -o " + path("p.json")),
                        "--solver: unknown solver 'adam'", path("p.json"));
}

}  // namespace
