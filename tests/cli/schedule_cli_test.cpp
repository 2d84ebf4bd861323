// --schedule-policy on plan, simulate, run and validate, and `strata schedule`: a policy's
// placement is written into the Plan and followed by the replay; on hosts twice as fast as
// others it beats the strategy's placement; a workflow's table has SimGrid's online Min-Min.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli_process.hpp"

namespace {

using strata_test::Outcome;

class ScheduleCli : public strata_test::CliProcess {
 protected:
  ScheduleCli() : CliProcess("strata-schedule-", false) {}

  nlohmann::json json_of(const std::string& name) const { return nlohmann::json::parse(slurp(path(name))); }
};

const std::string kPlatforms = std::string(STRATA_SOURCE_DIR) + "/platforms/";
const std::string kSimGrid = std::string(STRATA_SOURCE_DIR) + "/tests/data/simgrid/";

// test-hetero-8: node-0, 2, 4, 6 half as fast as node-1, 3, 5, 7. The strategy puts dp=4 on
// node-0..3, two slow workers; HEFT takes the four fast hosts. The links are alike, so the data-
// parallel allreduce costs the same and the gain is the slow workers' compute: the replay's
// iteration time falls to the policy's estimate, which is the strategy's on fast hosts alone.
TEST_F(ScheduleCli, HeftPlacesWorkersOnTheFastHostsAndTheReplayFollows) {
  const std::string model = " --model gpt2-small --strategy dp=4 --global-batch 8 ";
  Outcome r = run("simulate --platform " + kPlatforms + "test-hetero-8.xml" + model + "--report " +
                  path("strategy.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run("simulate --platform " + kPlatforms + "test-hetero-8.xml" + model +
          "--schedule-policy heft --report " + path("heft.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("placement           heft"), std::string::npos) << r.out;
  const nlohmann::json strategy = json_of("strategy.json"), heft = json_of("heft.json");
  for (const nlohmann::json& w : heft["per_worker"]) {
    const std::string host = w["host"];
    EXPECT_EQ((host.back() - '0') % 2, 1) << host;
  }
  const double t_strategy = strategy["iteration_time_s"], t_heft = heft["iteration_time_s"];
  EXPECT_LT(t_heft, 0.75 * t_strategy);  // compute-bound: close to half, the allreduce aside
  EXPECT_NEAR(heft["placement"]["estimate_s"].get<double>(), t_heft, 0.01 * t_heft);
  EXPECT_NEAR(heft["placement"]["strategy_estimate_s"].get<double>(), t_strategy, 0.01 * t_strategy);
  EXPECT_FALSE(heft["placement"]["kept_strategy"].get<bool>());
  // Written into the Plan, the placement is followed by a replay of the file.
  r = run("plan" + model + "--schedule-policy heft --platform " + kPlatforms + "test-hetero-8.xml -o " +
          path("plan.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json plan = json_of("plan.json");
  EXPECT_EQ(plan["placement"]["policy"], "heft");
  EXPECT_EQ(plan["placement"]["workers"], nlohmann::json({"node-1", "node-3", "node-5", "node-7"}));
  r = run("simulate --plan " + path("plan.json") + " --platform " + kPlatforms +
          "test-hetero-8.xml --report " + path("again.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_DOUBLE_EQ(json_of("again.json")["iteration_time_s"].get<double>(), t_heft);
}

TEST_F(ScheduleCli, PolicyAndPlacementTogetherAreRefused) {
  write("hosts.txt", "node-1\nnode-3\n");
  expect_one_line_error(
      run("simulate --platform " + kPlatforms +
          "test-hetero-8.xml --model mlp --strategy dp=2 --schedule-policy heft --placement " +
          path("hosts.txt") + " --report " + path("r.json")),
      "--schedule-policy: heft conflicts with --placement", path("r.json"));
  expect_one_line_error(run("plan --model mlp --strategy dp=2 --schedule-policy cpop -o " + path("p.json")),
                        "--schedule-policy: cpop needs --platform FILE", path("p.json"));
  expect_one_line_error(
      run("simulate --platform " + kPlatforms +
          "test-hetero-8.xml --model mlp --strategy dp=2 --schedule-policy fastest --report " +
          path("r.json")),
      "--schedule-policy", path("r.json"));
  write("cycle.xml",
        "<?xml version=\"1.0\"?>\n<adag name=\"c\" jobCount=\"2\">\n"
        "<job id=\"a\" name=\"x\" runtime=\"1\"/>\n<job id=\"b\" name=\"y\" runtime=\"1\"/>\n"
        "<child ref=\"a\"><parent ref=\"b\"/></child>\n<child ref=\"b\"><parent "
        "ref=\"a\"/></child>\n</adag>\n");
  expect_one_line_error(run("schedule --workflow " + path("cycle.xml") + " --platform " + kSimGrid +
                            "simulacrum_7_hosts.xml --csv " + path("t.csv")),
                        "dependency cycle", path("t.csv"));
}

TEST_F(ScheduleCli, PartitionBalancedRecordsTheCutAndRefusesWhatItCannotDo) {
  Outcome r =
      run("plan --model gpt2-small --strategy pp=6 --microbatches 12 --partition balanced --platform " +
          kPlatforms + "test-hetero-8.xml -o " + path("plan.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("partition balanced: blocks per stage 1,3,2,3,2,1"), std::string::npos) << r.err;
  expect_one_line_error(
      run("plan --model gpt2-small --strategy pp=6 --partition balanced -o " + path("p.json")),
      "--partition: balanced needs --platform FILE", path("p.json"));
  expect_one_line_error(run("simulate --model gpt2-small --strategy pp=6 --partition balanced --set "
                            "stage_blocks=2,2,2,2,2,2 --platform " +
                            kPlatforms + "test-hetero-8.xml --report " + path("r.json")),
                        "--partition: balanced conflicts with --set stage_blocks", path("r.json"));
  expect_one_line_error(
      run("simulate --model gpt2-small --strategy pp=6 --set stage_blocks=2,2,2,2,2,3 --platform " +
          kPlatforms + "test-hetero-8.xml --report " + path("r.json")),
      "--set stage_blocks: the stages hold 13 blocks, gpt2-small has 12", path("r.json"));
  // With tp > 1 on alike GPUs the degrees are chosen with the cut, recorded as stage_tp: gpt2-small's
  // 1.5 MB TP all-reduces run at about a tenth of NVLink (the A100 NVSwitch bus-bandwidth curve), so
  // only the head's stage, whose logits GEMM dominates, gains from more ranks.
  r = run(
      "simulate --model gpt2-small --strategy tp=2,pp=12 --microbatches 24 --partition balanced --platform " +
      kPlatforms + "a100-cluster-64.xml --report " + path("joint.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("tensor-parallel degrees 1,1,1,1,1,1,1,1,1,1,1,6 (tp=2 each before)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("strategy dp=1,tp=1+1+1+1+1+1+1+1+1+1+1+6,pp=12"), std::string::npos) << r.out;
  expect_one_line_error(run("simulate --model gpt2-small --strategy pp=2 --partition balanced --set "
                            "stage_tp=2,1 --platform " +
                            kPlatforms + "a100-node-8.xml --report " + path("r.json")),
                        "--partition: balanced conflicts with --set stage_tp", path("r.json"));
  expect_one_line_error(
      run("simulate --model gpt2-small --strategy tp=2,pp=2 --set stage_tp=2,1 --platform " + kPlatforms +
          "a100-node-8.xml --report " + path("r.json")),
      "--set stage_tp: conflicts with tp=2 in --strategy", path("r.json"));
  // A cap no cut meets: the stage and the bytes missing.
  write("tiny.xml", slurp(kPlatforms + "test-hetero-8.xml")
                        .replace(slurp(kPlatforms + "test-hetero-8.xml").find("\"80e9\""), 6, "\"1e8\" "));
  expect_one_line_error(run("simulate --model gpt2-small --strategy pp=6 --partition balanced --platform " +
                            path("tiny.xml") + " --report " + path("r.json")),
                        "needs", path("r.json"));
}

// The cut prices its layers with the command's --calibration: bf16 attention at a thousandth of the
// peak makes every stage slower, and the slowest stage says so.
TEST_F(ScheduleCli, PartitionBalancedPricesWithTheCalibration) {
  auto slowest = [](const std::string& err) {
    const auto at = err.find("slowest stage ");
    return at == std::string::npos ? std::string() : err.substr(at, err.find(' ', at + 14) - at);
  };
  const std::string args =
      "simulate --model gpt2-small --strategy pp=6 --microbatches 12 --partition balanced "
      "--platform " +
      kPlatforms + "test-hetero-8.xml";
  const Outcome plain = run(args);
  ASSERT_EQ(plain.rc, 0) << plain.err;
  write("c.json", R"({"schema_version": 2, "format": "strata-calibration",
    "flops_efficiency": {"attention_fwd/bf16": 0.001, "attention_bwd/bf16": 0.001}})");
  const Outcome calibrated = run(args + " --calibration " + path("c.json"));
  ASSERT_EQ(calibrated.rc, 0) << calibrated.err;
  ASSERT_FALSE(slowest(plain.err).empty()) << plain.err;
  ASSERT_FALSE(slowest(calibrated.err).empty()) << calibrated.err;
  EXPECT_NE(slowest(plain.err), slowest(calibrated.err)) << plain.err << calibrated.err;
}

// A Plan file may leave compute tasks unplaced (no "worker"): simulate places them with the
// policy and replays the result; without a policy it says how to place them.
TEST_F(ScheduleCli, SimulatePlacesAPlansUnplacedTasks) {
  std::string tasks;
  auto task = [&](const std::string& id, const std::string& worker, double seconds, const std::string& deps) {
    tasks += std::string(tasks.empty() ? "" : ",\n") + R"({"id": ")" + id + R"(", "kind": "fixed", )" +
             worker + R"("flops": 0, "bytes_read": 0, "bytes_written": 0, "attrs": {"duration_s": )" +
             std::to_string(seconds) + R"(}, "data_deps": [)" + deps + "]}";
  };
  task("it0/a", R"("worker": 0, )", 1, "");
  for (const char* id : {"it0/b", "it0/c", "it0/d"}) task(id, "", 2, R"("it0/a")");
  task("it0/e", R"("worker": 0, )", 1, R"("it0/b", "it0/c", "it0/d")");
  write("u.json",
        R"({"schema_version": 2, "format": "strata-plan", "num_workers": 1, "tasks": [)" + tasks + "]}");
  const std::string platform = kPlatforms + "test-flat-4.xml";
  const Outcome r = run("simulate --plan " + path("u.json") + " --platform " + platform +
                        " --schedule-policy heft --report " + path("r.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(slurp(path("r.json")));
  EXPECT_NEAR(report["iteration_time_s"].get<double>(), 4.0, 1e-6);  // a, then b, c, d side by side, then e
  EXPECT_EQ(report["workers"], 3);
  expect_one_line_error(
      run("simulate --plan " + path("u.json") + " --platform " + platform + " --report " + path("r2.json")),
      "the Plan leaves tasks unplaced: give heft", path("r2.json"));
}

// run and validate take the same unplaced Plans: the MLP's Plan with three 1 ms side tasks after
// its loss, left unplaced. validate places them with HEFT on cpu-cluster-4 (each on a worker of
// its own: they run side by side), runs the placed Plan on this machine and predicts it; the
// side tasks busy-wait 1 ms each, as predicted. Without a policy, run says how to place them.
TEST_F(ScheduleCli, RunAndValidatePlaceAPlansUnplacedTasks) {
  ASSERT_EQ(run("plan --model mlp --strategy dp=1 --global-batch 64 -o " + path("p.json")).rc, 0);
  nlohmann::json plan = json_of("p.json");
  std::string loss;
  for (const nlohmann::json& t : plan["tasks"])
    if (t["kind"] == "loss_fwd") loss = t["id"];
  for (int i = 0; i < 3; ++i)
    plan["tasks"].push_back({{"id", "it0/side" + std::to_string(i)},
                             {"kind", "fixed"},
                             {"flops", 0},
                             {"bytes_read", 0},
                             {"bytes_written", 0},
                             {"attrs", {{"duration_s", 0.001}}},
                             {"data_deps", {loss}}});
  write("u.json", plan.dump());
  const Outcome v = run("validate --plan " + path("u.json") + " --schedule-policy heft --platform " +
                        kPlatforms + "cpu-cluster-4.xml --perfetto '' --svg '' --json " + path("v.json"));
  ASSERT_EQ(v.rc, 0) << v.err;
  EXPECT_TRUE(std::regex_search(v.out, std::regex("fixed +3 +3.000 ms +3\\.[0-9]+ ms"))) << v.out;
  expect_one_line_error(run("run --plan " + path("u.json") + " --epochs 1"),
                        "--schedule-policy: the Plan leaves tasks unplaced", path("none.json"));
}

TEST_F(ScheduleCli, WorkflowTableHasEveryPolicyAndSimGridsOnlineMinMin) {
  Outcome r =
      run("schedule --workflow " + kSimGrid + "Montage_25.xml --platform " + kSimGrid +
          "simulacrum_7_hosts.xml --simgrid-factors --json " + path("t.json") + " --csv " + path("t.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json t = json_of("t.json");
  ASSERT_EQ(t["rows"].size(), 7u);  // heft, cpop, peft, minmin, cp, rr, minmin-online
  const nlohmann::json& online = t["rows"][6];
  EXPECT_EQ(online["policy"], "minmin-online");
  EXPECT_NEAR(online["simulated_s"].get<double>(), 98.135796, 98.135796 * 1e-3);
  for (const nlohmann::json& row : t["rows"]) {
    EXPECT_GE(row["simulated_s"].get<double>(), row["estimate_s"].get<double>() * (1 - 1e-6)) << row;
    EXPECT_GE(row["schedule_length_ratio"].get<double>(), 1) << row;
  }
  EXPECT_NE(r.out.find("minmin-online"), std::string::npos);
  EXPECT_EQ(slurp(path("t.csv")).substr(0, 19), "policy,simulated_s,");
}

// strata partition on Piper's input format (tests/data/piper/four_nodes.json; the hand-derived
// answer is in tests/models/piper_input_test.cpp).
TEST_F(ScheduleCli, PartitionCutsAPiperGraphWithADegreePerStage) {
  const std::string file = std::string(STRATA_SOURCE_DIR) + "/tests/data/piper/four_nodes.json";
  Outcome r = run("partition --piper " + file + " --stages 2 --json " + path("p.json"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("slowest stage 2.800 s per sample (every stage at one degree: t=1 3.000 s)"),
            std::string::npos)
      << r.out;
  const nlohmann::json doc = json_of("p.json");
  EXPECT_EQ(doc["format"], "strata-partition");
  EXPECT_EQ(doc["stages"][1]["degree"], 2);
  EXPECT_EQ(doc["stages"][1]["first_node"], 1);
  expect_one_line_error(run("partition --piper " + file + " --stages 5 --csv " + path("t.csv")),
                        "4 nodes cannot make 5 stages", path("t.csv"));
  expect_one_line_error(run("partition --piper " + file + " --stages 2 --devices 1 --csv " + path("t.csv")),
                        "2 stages need at least 2 devices, there are 1", path("t.csv"));
}

}  // namespace
