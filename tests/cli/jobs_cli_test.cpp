// strata jobs from the command line: a job trace on a shipped platform's GPUs under each policy,
// its table and summary, and one-line errors for bad traces (docs/search.md).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_process.hpp"

namespace {

using strata_test::Outcome;

const std::string kValidation = std::string(STRATA_SOURCE_DIR) + "/validation/";

class JobsCli : public strata_test::CliProcess {
 protected:
  JobsCli() : CliProcess("strata-jobs-", true) {}
  void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
};

// The stream of models/job_schedule_test.cpp on one GPU: FIFO's average JCT is 32/3 s, Tiresias's
// (one threshold at 5 GPU-s) 25/3 s with A preempted once.
TEST_F(JobsCli, SchedulesATraceAndSummarisesIt) {
  write("t.csv", "# three jobs\nid,arrival_s,gpus,service_s\nA,0,1,10\nB,1,1,2\nC,2,1,1\n");
  const Outcome fifo = run("jobs --trace t.csv --platform platforms/a100-node-8.xml --gpus 1 --csv f.csv");
  ASSERT_EQ(fifo.rc, 0) << fifo.err;
  EXPECT_NE(fifo.out.find("jobs fifo: 3 jobs (strata trace) on 1 GPUs of a100-node-8.xml"), std::string::npos)
      << fifo.out;
  EXPECT_NE(fifo.out.find("average JCT 10.67 s, p99 JCT 11.0 s, makespan 13.0 s"), std::string::npos)
      << fifo.out;
  std::ifstream csv(path("f.csv"));
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "job,arrival_s,gpus,service_s,start_s,finish_s,jct_s,queueing_s,preemptions,restarts");
  const Outcome las = run("jobs --trace t.csv --policy las --las-thresholds 5 --gpus 1");
  ASSERT_EQ(las.rc, 0) << las.err;
  EXPECT_NE(las.out.find("average JCT 8.33 s"), std::string::npos) << las.out;
  EXPECT_NE(las.out.find("A                         0.0     1         10.0          0.0         13.0         "
                         "13.0           1"),
            std::string::npos)
      << las.out;
}

// Jobs given as Experiments: GPUs dp·tp·pp, service time iterations × the replayed iteration.
TEST_F(JobsCli, JobsGivenAsExperimentsAreTimedByTheirReplay) {
  write(
      "m.csv",
      "id,arrival_s,model,dp,tp,pp,global_batch,iterations\n"
      "big,0,gpt2-small,8,1,1,64,1000\nsmall,10,gpt2-small,2,1,1,16,1000\nhalf,20,gpt2-small,2,1,1,16,500\n");
  const Outcome r = run("jobs --trace m.csv --platform platforms/a100-node-8.xml --policy sjf --json j.json");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::ifstream in(path("j.json"));
  const nlohmann::json j = nlohmann::json::parse(in)["jobs"];
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["gpus"], 8);
  EXPECT_EQ(j[1]["gpus"], 2);
  // The same Experiment for half the iterations: half the service time (one replay for both).
  EXPECT_NEAR(j[2]["service_s"].get<double>(), j[1]["service_s"].get<double>() / 2, 1e-9);
  write("bad.csv", "id,arrival_s,model,dp,tp,pp,global_batch,iterations\nx,0,gpt2-small,16,1,1,64,10\n");
  expect_one_line_error(run("jobs --trace bad.csv --platform platforms/a100-node-8.xml"), "bad.csv:2: ");
}

TEST_F(JobsCli, BadTracesAreOneLine) {
  write("h.csv", "job,arrival,gpus\n");
  expect_one_line_error(run("jobs --trace h.csv"),
                        "h.csv:1: expected the header id,arrival_s,gpus,service_s");
  write("n.csv", "id,arrival_s,gpus,service_s\nA,zero,1,10\n");
  expect_one_line_error(run("jobs --trace n.csv"), "n.csv:2: arrival_s: not a number 'zero'");
  write("g.csv", "id,arrival_s,gpus,service_s\nA,0,1.5,10\n");
  expect_one_line_error(run("jobs --trace g.csv"), "g.csv:2: gpus: not a whole number >= 1");
  write("w.csv", "id,arrival_s,gpus,service_s\nA,0,100,10\n");
  expect_one_line_error(run("jobs --trace w.csv"), "job 'A': needs 100 GPUs, the cluster has 64");
  write("far.csv", "id,arrival_s,gpus,service_s\nA,1e17,1,10\n");
  expect_one_line_error(run("jobs --trace far.csv"), "far.csv:2: arrival_s 1e+17 outside [0, 1e+12] s");
  write("long.csv", "id,arrival_s,gpus,service_s\nA,0,1,1e308\n");
  expect_one_line_error(run("jobs --trace long.csv"),
                        "long.csv:2: service_s 1e+308 outside [1e-06, 1e+12] s");
  write("e.csv", "id,arrival_s,gpus,service_s\n");
  expect_one_line_error(run("jobs --trace e.csv"), "e.csv: no job");
  expect_one_line_error(run("jobs --trace none.csv"), "none.csv");
  write("t.csv", "id,arrival_s,gpus,service_s\nA,0,1,10\n");
  expect_one_line_error(run("jobs --trace t.csv --gpus 100"),
                        "--gpus: 100, the platform has 64 worker slots");
  expect_one_line_error(run("jobs --trace t.csv --policy las --las-thresholds 10,5"),
                        "LAS thresholds must rise");
}

// Pollux's workload-6 under its Tiresias (16 GPU-hour queue limit, backfill, most-free placement,
// 60 s rounds, 30 s restarts on 16 nodes of 4 GPUs): the average JCT Pollux's simulator reports,
// 3,469.69 s (its README; models/job_rounds_test.cpp checks all eight workloads).
TEST_F(JobsCli, TiresiasOnPolluxWorkloadSixGivesPolluxsAverageJct) {
  const Outcome r =
      run("jobs --trace " + kValidation +
          "pollux/workloads/workload-6.csv --policy las --las-thresholds 57600 --backfill --json j.json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(
                "jobs las: 160 jobs (Pollux trace) on 16 nodes of 4 GPUs (Pollux's testbed), rounds of 60 s, "
                "restarts of 30 s, most-free placement, backfill"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("average JCT 3469.69 s"), std::string::npos) << r.out;
  std::ifstream in(path("j.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["jobs"].size(), 160u);
  EXPECT_NEAR(j["average_jct_s"].get<double>(), 3469.69375, 0.347);
  expect_one_line_error(
      run("jobs --trace " + kValidation + "pollux/workloads/workload-6.csv --platform a100-node-8.xml"),
      "--platform: a Pollux workload runs on the testbed its traces were measured on");
}

// The Philly and Helios samples (their schemas' published examples): Philly's job holds 8 GPUs for
// its two attempts, 74 s + 193,182 s; Helios's three jobs arrive 0, 26 and 27 s apart.
TEST_F(JobsCli, PhillyAndHeliosLogsAreImported) {
  const Outcome philly =
      run("jobs --trace " + kValidation + "philly/cluster_job_log-sample.json --json p.json");
  ASSERT_EQ(philly.rc, 0) << philly.err;
  std::ifstream pin(path("p.json"));
  const nlohmann::json p = nlohmann::json::parse(pin)["jobs"];
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["gpus"], 8);
  EXPECT_DOUBLE_EQ(p[0]["service_s"].get<double>(), 193256);
  const Outcome helios =
      run("jobs --trace " + kValidation +
          "helios/cluster_log-sample.csv --interval 60 --restart 0 --placement pack --json h.json");
  ASSERT_EQ(helios.rc, 0) << helios.err;
  EXPECT_NE(helios.out.find("3 jobs (Helios trace) on 8 nodes of 8 GPUs, rounds of 60 s"), std::string::npos)
      << helios.out;
  std::ifstream hin(path("h.json"));
  const nlohmann::json h = nlohmann::json::parse(hin)["jobs"];
  ASSERT_EQ(h.size(), 3u);
  EXPECT_DOUBLE_EQ(h[1]["arrival_s"].get<double>(), 26);
  EXPECT_DOUBLE_EQ(h[1]["start_s"].get<double>(), 60);    // the first round after its arrival
  EXPECT_DOUBLE_EQ(h[1]["finish_s"].get<double>(), 309);  // 249 s later
  write("cpu.csv",
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
        "1,u,vc,0,8,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0\n"
        "2,u,vc,2,8,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0\n");
  const Outcome cpu = run("jobs --trace cpu.csv");
  ASSERT_EQ(cpu.rc, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("cpu.csv: 1 jobs left out (no GPU or no complete run time)"), std::string::npos)
      << cpu.out;
  write("bad.csv",
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
        "1,u,vc,1,8,1,COMPLETED,2020-06-09,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0\n");
  expect_one_line_error(run("jobs --trace bad.csv"),
                        "bad.csv:2: submit_time: expected \"YYYY-MM-DD HH:MM:SS\", got '2020-06-09'");
  write("nogpu.csv", "job_id,user,submit_time,duration\n");
  expect_one_line_error(run("jobs --trace nogpu.csv"),
                        "nogpu.csv:1: no column gpu_num (Helios's cluster_log)");
  write("bad-philly.json", "[{\"jobid\": \"a\", \"submitted_time\": \"yesterday\", \"attempts\": []}]");
  expect_one_line_error(run("jobs --trace bad-philly.json"),
                        "bad-philly.json: job 'a': submitted_time: expected \"YYYY-MM-DD HH:MM:SS\"");
  write("q.json", "[{\"jobid\": \"a\"");
  expect_one_line_error(run("jobs --trace q.json"), "q.json: not JSON");
}

// Jobs given as Experiments in rounds: a job's speed is its Plan replayed on the nodes it got. A
// tensor-parallel job (tp = 4) spread one GPU per node runs its allreduces between nodes and takes
// longer than packed on one node, whose time is its service time.
TEST_F(JobsCli, AnExperimentJobRunsAsFastAsItsPlacementReplays) {
  write("tp.csv", "id,arrival_s,model,dp,tp,pp,global_batch,iterations\ntp,0,gpt2-small,1,4,1,16,1000\n");
  const auto finish = [&](const std::string& placement) {
    const Outcome r =
        run("jobs --trace tp.csv --platform a100-cluster-64.xml --interval 10 --restart 0 --placement " +
            placement + " --json " + placement + ".json");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find(" placement replays"), std::string::npos) << r.out;
    std::ifstream in(path(placement + ".json"));
    const nlohmann::json j = nlohmann::json::parse(in)["jobs"][0];
    return std::make_pair(j["finish_s"].get<double>(), j["service_s"].get<double>());
  };
  const auto [packed, service] = finish("pack");
  const auto [spread, same] = finish("spread");
  EXPECT_DOUBLE_EQ(packed, service);
  EXPECT_DOUBLE_EQ(same, service);
  EXPECT_GT(spread, 1.01 * packed);
}

}  // namespace
