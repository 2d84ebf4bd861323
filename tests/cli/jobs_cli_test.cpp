// strata jobs from the command line: a job trace on a shipped platform's GPUs under each policy,
// its table and summary, and one-line errors for bad traces (docs/search.md).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_process.hpp"

namespace {

using strata_test::Outcome;

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
  EXPECT_NE(fifo.out.find("jobs fifo: 3 jobs on 1 GPUs of a100-node-8.xml"), std::string::npos) << fifo.out;
  EXPECT_NE(fifo.out.find("average JCT 10.7 s, p99 JCT 11.0 s, makespan 13.0 s"), std::string::npos)
      << fifo.out;
  std::ifstream csv(path("f.csv"));
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "job,arrival_s,gpus,service_s,start_s,finish_s,jct_s,queueing_s,preemptions");
  const Outcome las = run("jobs --trace t.csv --policy las --las-thresholds 5 --gpus 1");
  ASSERT_EQ(las.rc, 0) << las.err;
  EXPECT_NE(las.out.find("average JCT 8.3 s"), std::string::npos) << las.out;
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
  write("e.csv", "id,arrival_s,gpus,service_s\n");
  expect_one_line_error(run("jobs --trace e.csv"), "e.csv: no job");
  expect_one_line_error(run("jobs --trace none.csv"), "none.csv");
  write("t.csv", "id,arrival_s,gpus,service_s\nA,0,1,10\n");
  expect_one_line_error(run("jobs --trace t.csv --gpus 100"),
                        "--gpus: 100, the platform has 64 worker slots");
  expect_one_line_error(run("jobs --trace t.csv --policy las --las-thresholds 10,5"),
                        "LAS thresholds must rise");
}

}  // namespace
