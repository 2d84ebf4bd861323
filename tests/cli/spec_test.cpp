// Experiments as files: `strata spec`, `--spec` on every command, the spec and its hash in every
// output, and the shipped examples (issue 13's "Done when").
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "cli_process.hpp"
#include "strata/models/experiment.hpp"

namespace {

namespace fs = std::filesystem;

using strata_test::Outcome;

class Spec : public strata_test::CliProcess {
 protected:
  Spec() : CliProcess("strata-spec-", true) {}
};

const std::string kSource = STRATA_SOURCE_DIR;
const std::string kPlatform = kSource + "/platforms/a100-cluster-64.xml";

// Issue 13, "Done when": the same report from the spec and from the flags; the report holds the
// spec and its hash; the spec extracted from the report gives the same report again.
TEST_F(Spec, ReportsFromTheSpecAndFromTheFlagsAreEqualAndReproduceThemselves) {
  const std::string flags = "--model gpt3-13b --strategy dp=8,tp=2,pp=4 --schedule 1f1b";
  Outcome s = run("spec " + flags + " -o s.json");
  ASSERT_EQ(s.rc, 0) << s.err;
  Outcome r1 = run("simulate --platform " + kPlatform + " --spec s.json --report r1.json");
  ASSERT_EQ(r1.rc, 0) << r1.err;
  EXPECT_EQ(r1.err, "");  // nothing overridden
  Outcome r2 = run("simulate --platform " + kPlatform + " " + flags + " --report r2.json");
  ASSERT_EQ(r2.rc, 0) << r2.err;
  const std::string report = slurp(path("r1.json"));
  EXPECT_EQ(report, slurp(path("r2.json")));
  const nlohmann::json j = nlohmann::json::parse(report);
  const strata::Experiment e = strata::read_experiment(path("s.json"));
  EXPECT_EQ(j.at("experiment_hash"), strata::experiment_hash(e));
  EXPECT_EQ(j.at("experiment"), strata::canonical_json(e));
  EXPECT_TRUE(j.contains("strata_version"));
  EXPECT_GT(j.at("iteration_time_s").get<double>(), 0);
  ASSERT_EQ(run("spec --from r1.json -o s2.json").rc, 0);
  EXPECT_EQ(slurp(path("s2.json")), slurp(path("s.json")));
  ASSERT_EQ(run("simulate --platform " + kPlatform + " --spec s2.json --report r3.json").rc, 0);
  EXPECT_EQ(slurp(path("r3.json")), report);
}

TEST_F(Spec, FlagsOverrideTheSpecAndSaySo) {
  ASSERT_EQ(run("spec --model gpt2-small --set layers=4 --strategy dp=2,pp=2 --microbatches 4 -o s.json").rc,
            0);
  Outcome p = run("spec --spec s.json --microbatches 8 --set layers=2");
  ASSERT_EQ(p.rc, 0) << p.err;
  EXPECT_NE(p.err.find("spec s.json: --microbatches overrides microbatches (4 -> 8)"), std::string::npos)
      << p.err;
  EXPECT_NE(p.err.find("spec s.json: --set layers overrides layers (4 -> 2)"), std::string::npos) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(j.at("microbatches"), 8);
  EXPECT_EQ(j.at("model").at("layers"), 2);
  EXPECT_EQ(j.at("strategy").at("pp"), 2);
}

TEST_F(Spec, TracesAndPerfettoFilesRecordTheSpec) {
  Outcome r = run("simulate --platform " + kSource +
                  "/platforms/a100-node-8.xml --model mlp --strategy dp=2 --trace t.json --perfetto f.json");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(run("spec --model mlp --strategy dp=2 -o s.json").rc, 0);
  for (const char* file : {"t.json", "f.json"}) {
    ASSERT_EQ(run(std::string("spec --from ") + file + " -o from.json").rc, 0) << file;
    EXPECT_EQ(slurp(path("from.json")), slurp(path("s.json"))) << file;
  }
}

// explore's best-configuration files record the spec of that configuration: simulating it again
// from the spec gives the iteration time explore printed for it.
TEST_F(Spec, ExploresBestFilesRecordTheBestConfigurationsSpec) {
  const std::string platform = kSource + "/platforms/a100-node-8.xml";
  const Outcome r = run("explore --model gpt2-small --set layers=2 --platform " + platform +
                        " --top 2 --trace t.json --perfetto f.json --svg s.svg");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::smatch best;
  ASSERT_TRUE(std::regex_search(
      r.out, best,
      std::regex(
          R"(\n +1 +\d+ +\d+ +\d+ +(?:yes|no) +\S+ +\d+ +\d+ +\S+ +\d +\d +\d +\d+ +[0-9.]+ +([0-9.]+) )")))
      << r.out;
  ASSERT_EQ(run("spec --from t.json -o b.json").rc, 0);
  for (const char* file : {"f.json", "s.svg"}) {
    const Outcome from = run(std::string("spec --from ") + file);
    ASSERT_EQ(from.rc, 0) << file << ": " << from.err;
    EXPECT_EQ(from.out, slurp(path("b.json"))) << file;
  }
  const strata::Experiment e = strata::read_experiment(path("b.json"));
  EXPECT_EQ(e.model, "gpt2-small");
  EXPECT_EQ(e.params.layers, 2);
  EXPECT_EQ(nlohmann::json::parse(slurp(path("t.json"))).at("experiment_hash"), strata::experiment_hash(e));
  ASSERT_EQ(run("simulate --spec b.json --platform " + platform + " --report r.json").rc, 0);
  char simulated[32];
  std::snprintf(simulated, sizeof simulated, "%.4f",
                nlohmann::json::parse(slurp(path("r.json"))).at("iteration_time_s").get<double>());
  EXPECT_EQ(simulated, best[1].str());
}

TEST_F(Spec, HelpListsEveryKeyOfTheTable) {
  const Outcome r = run("spec --help");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const strata::SetKey& key : strata::set_keys()) {
    EXPECT_NE(r.out.find("  " + key.name + " "), std::string::npos) << key.name;
    EXPECT_NE(r.out.find(strata::key_scope(key)), std::string::npos) << key.name;
  }
}

TEST_F(Spec, BadSpecsAndUnknownKeysAreOneLine) {
  std::ofstream(path("bad.json"))
      << R"({"schema_version": 1, "model": {"name": "mlp"}, "strategy": {"dp": "2"}})";
  Outcome r = run("simulate --platform " + kPlatform + " --spec bad.json --report r.json");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "strata: error: bad.json: /strategy/dp: expected an integer\n");
  EXPECT_FALSE(fs::exists(path("r.json")));
  r = run("plan --model mlp --set foo=1 -o p.json");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(
      r.err,
      "strata: error: --set foo: unknown key for model 'mlp' with solver 'backprop' (known: beta1, beta2, "
      "bucket_mb, compression, ddp, dp_algo, eps, flash_attention, framework, interleave, lr, momentum, "
      "offload, p2p, p2p_scatter_gather, powersgd_rank, recompute, recompute_blocks, recompute_method, "
      "replicas, sequence_parallel, sizes, stage_blocks, stage_tp, topk_ratio, tp_algo, tp_comm, zero)\n");
  r = run("spec --from " + path("nothing.json"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// --set lr is a key of the table, so every command takes it.
TEST_F(Spec, RunAndValidateAcceptTheLearningRate) {
  const Outcome r =
      run("run --model mlp --epochs 1 --no-pin --set lr=0.01 --optimizer sgd --trace m.json --log l.csv");
  ASSERT_EQ(r.rc, 0) << r.err;
  // The log's sidecar records the same spec as the trace.
  ASSERT_EQ(run("spec --from l.csv -o from-log.json").rc, 0);
  // The measured trace records the run's spec, learning rate and batch (64 per rank) included.
  ASSERT_EQ(run("spec --from m.json -o from-trace.json").rc, 0);
  const strata::Experiment measured = strata::read_experiment(path("from-trace.json"));
  EXPECT_DOUBLE_EQ(*measured.learning_rate, 0.01);
  EXPECT_EQ(measured.optimizer, strata::Optimizer::sgd);
  EXPECT_EQ(measured.global_batch, 64);
  EXPECT_EQ(slurp(path("from-log.json")), slurp(path("from-trace.json")));
  std::ofstream(path("c.json")) << R"({"schema_version": 2, "format": "strata-calibration",
    "flops_efficiency": {"linear_fwd/fp32": 0.5},
    "transports": {"threads": {"p2p_alpha_s": 2e-5, "p2p_beta_s_per_byte": 1e-10, "allreduce_alpha_s": 1e-5,
                               "allreduce_beta_s_per_byte": 2e-10, "allreduce_ranks": 2}},
    "host": {"name": "box", "cores": 2, "flops_fp32": 8e10, "flops_fp64": 4e10, "mem_bw": 2e10}})";
  const Outcome v =
      run("validate --model mlp --set lr=0.01 --calibration c.json --runs 1 --warmup 0 --no-pin "
          "--perfetto '' --svg '' --json v.json");
  ASSERT_EQ(v.rc, 0) << v.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("v.json")));
  EXPECT_DOUBLE_EQ(j.at("experiment").at("optimizer").at("lr").get<double>(), 0.01);
  ASSERT_EQ(run("spec --from v.json -o s.json").rc, 0);
}

TEST_F(Spec, CompareSolversTakesTheModelOfASpec) {
  ASSERT_EQ(run("spec --model mlp --set sizes=784,64,32,10 -o s.json").rc, 0);
  const Outcome r = run("compare-solvers --spec s.json --workers 2 --epochs 0 --platform " + kSource +
                        "/platforms/a100-node-8.xml");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* row : {"backprop dp=2 ", "backprop pp=2 1f1b ", "ampnet ", "local ", "pdadmm "})
    EXPECT_NE(r.out.find(std::string("\n") + row), std::string::npos) << row << "\n" << r.out;
}

// The shipped examples load and run (examples/README.md has the command of each).
TEST_F(Spec, ShippedExamplesLoadAndRun) {
  const std::string ex = kSource + "/examples/";
  Outcome r =
      run("explore --spec " + ex + "quickstart-explore.json --top 1 --trace '' --perfetto '' --svg ''");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("best: dp="), std::string::npos) << r.out;
  r = run("simulate --spec " + ex + "anchor.json --platform " + kSource +
          "/platforms/anchor-1024.xml --collectives aggregated");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time"), std::string::npos) << r.out;
  r = run("run --spec " + ex + "pdadmm-run.json --epochs 1 --no-pin");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("epoch 1: train loss"), std::string::npos) << r.out;
  r = run("run --spec " + ex + "gist-run.json --epochs 1 --no-pin");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("round 1: train loss"), std::string::npos) << r.out;
  r = run("search --spec " + ex + "search-family.json --no-db");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("search asha: 200 trials of mlp"), std::string::npos) << r.out;
  r = run("search --spec " + ex + "search-curves.json --no-db");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("search asha: 20 trials of mlp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best: trial 11, accuracy 88.65 %"), std::string::npos) << r.out;
}

}  // namespace
