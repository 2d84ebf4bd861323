// Cluster job scheduling in rounds with placement (models/search/job_rounds.hpp): streams small
// enough to schedule by hand, and Tiresias on Pollux's published workloads against the average
// job completion times Pollux's own simulator reports for them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "strata/models/search/job_rounds.hpp"
#include "strata/models/search/job_traces.hpp"
#include "strata/models/search/trace_application.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

const std::string kPollux = std::string(STRATA_SOURCE_DIR) + "/validation/pollux";

RoundSettings pollux_tiresias() {
  RoundSettings s;  // Pollux's simulator: 16 nodes of 4 GPUs, 60 s rounds, 30 s restarts
  s.policy = JobPolicy::las;
  s.placement = JobPlacement::most_free;
  s.las_thresholds_gpu_s = {16 * 3600};
  s.backfill = true;
  return s;
}

// Average JCTs (s) of "Tiresias+TunedJobs" per workload, from Pollux's simulator
// (simulator/results-jobload/tiresias-1.0/summary.json, osdi21-artifact; workload-6's figure is
// also the one its README gives).
TEST(JobRounds, TiresiasOnPolluxWorkloadsLandsWithinTenPercentOfPolluxsSimulator) {
  const auto apps = read_trace_applications(kPollux + "/applications.json");
  const std::vector<std::pair<int, double>> published = {{1, 2473.65},   {2, 5144.9625}, {3, 3876.25625},
                                                         {4, 3280.2625}, {5, 3501.0125}, {6, 3469.69375},
                                                         {7, 5479.9125}, {8, 5079.70625}};
  for (const auto& [k, jct] : published) {
    const auto jobs =
        read_pollux_workload(kPollux + "/workloads/workload-" + std::to_string(k) + ".csv", apps);
    const RoundScheduleResult r = schedule_job_rounds(jobs, pollux_tiresias());
    std::printf("workload-%d: %zu jobs, average JCT %.2f s, Pollux's simulator %.2f s (%+.1f %%)\n", k,
                jobs.size(), r.average_jct_s, jct, 100 * (r.average_jct_s / jct - 1));
    EXPECT_NEAR(r.average_jct_s, jct, 0.10 * jct) << "workload-" << k;  // the bound
    EXPECT_NEAR(r.average_jct_s, jct, 0.01 * jct) << "workload-" << k;  // what strata reaches
  }
}

// 1 node of 2 GPUs, rounds of 10 s. A (2 GPUs, 25 s) at 0; B (1 GPU, 10 s) and C (1 GPU, 5 s) at 5.
const std::vector<RoundJob> kThree = {{"A", 0, 2, 25}, {"B", 5, 1, 10}, {"C", 5, 1, 5}};

RoundSettings one_node(JobPolicy policy, double restart_s) {
  RoundSettings s;
  s.policy = policy;
  s.nodes = 1;
  s.gpus_per_node = 2;
  s.interval_s = 10;
  s.restart_s = restart_s;
  s.las_thresholds_gpu_s = {20};
  return s;
}

// FIFO keeps A until it ends at 25; B and C start at the round after, 30: B ends 40, C 35.
TEST(JobRounds, FifoKeepsARunningJobAndStartsOthersAtTheNextRound) {
  const RoundScheduleResult r = schedule_job_rounds(kThree, one_node(JobPolicy::fifo, 0));
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 25);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 30);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 40);
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 35);
  EXPECT_DOUBLE_EQ(r.average_jct_s, 30);
  EXPECT_DOUBLE_EQ(r.makespan_s, 40);
}

// LAS with a 20 GPU-s queue limit: at 10, A (20 GPU-s) drops to queue 1 and B, C take the node:
// C ends 15, B 20; A resumes at 20 and ends 35 (one preemption, one restart).
TEST(JobRounds, LasDemotesAndPreemptsAtRoundBoundaries) {
  const RoundScheduleResult r = schedule_job_rounds(kThree, one_node(JobPolicy::las, 0));
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 15);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 20);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 35);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].restarts, 1);
  EXPECT_DOUBLE_EQ(r.average_jct_s, 20);
}

// The same with restarts of 2 s: A has done 8 s by 10; C ends 17, B (8 s by 20) keeps its GPU in
// queue 0 ahead of A, whose 2 GPUs do not fit beside it until 30: B ends 22, A runs 8 s by 40
// and its last 9 s end at 49.
TEST(JobRounds, ARestartCostsItsSecondsAtEveryStart) {
  const RoundScheduleResult r = schedule_job_rounds(kThree, one_node(JobPolicy::las, 2));
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 17);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 22);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 49);
  EXPECT_DOUBLE_EQ(r.average_jct_s, 26);
}

// 2 nodes of 4 GPUs: P1 (2 GPUs) on node 0; P2 (2 GPUs) where the policy says; P3 (4 GPUs) on
// what is left: split 2 + 2 after most-free put P2 on node 1, whole after pack put it beside P1.
TEST(JobRounds, PlacementPoliciesPutGpusOnNodesAsDocumented) {
  const std::vector<RoundJob> jobs = {{"P1", 0, 2, 100}, {"P2", 0, 2, 100}, {"P3", 0, 4, 100}};
  const auto placed = [&](JobPlacement p) {
    RoundSettings s;
    s.policy = JobPolicy::fifo;
    s.placement = p;
    s.nodes = 2;
    s.gpus_per_node = 4;
    return schedule_job_rounds(jobs, s);
  };
  EXPECT_EQ(placed(JobPlacement::most_free).jobs[2].placement, (std::vector<int>{2, 2}));
  EXPECT_EQ(placed(JobPlacement::pack).jobs[2].placement, (std::vector<int>{4}));
  const RoundScheduleResult spread = placed(JobPlacement::spread);
  EXPECT_EQ(spread.jobs[0].placement, (std::vector<int>{1, 1}));
  EXPECT_EQ(spread.jobs[2].placement, (std::vector<int>{2, 2}));
}

// A measured application written by hand: 2 epochs of 10 progress each; 0.5 s a step of 8 on one
// GPU, 0.6 s on two of one node.
struct TinyApp {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "strata-tiny-app";
  TinyApp(double grad_var) {
    std::filesystem::create_directories(dir / "tiny");
    std::ofstream(dir / "tiny/placements.csv") << "placement,local_bsz,step_time,sync_time\n"
                                                  "1,4,0.3,0\n1,8,0.5,0\n2,4,0.4,0\n2,8,0.6,0\n";
    std::ofstream(dir / "tiny/scalability.csv") << "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
                                                   "2,2,8,0.7,0.1\n";
    for (int batch : {8, 16})
      std::ofstream(dir / ("tiny/validation-" + std::to_string(batch) + ".csv"))
          << "progress,iteration,metric,grad_sqr,grad_var\n10,1,0,1," << grad_var << "\n20,2,0,1," << grad_var
          << "\n";
  }
  ~TinyApp() { std::filesystem::remove_all(dir); }
  TraceApplication read() const { return read_trace_application((dir / "tiny").string(), "tiny", {}); }
};

// No gradient noise: gain 1, 2 progress/s on one GPU at batch 8: 20 progress in 10 s. With
// var = sqr, batch 16 on 2 GPUs of one node is 2 / (1/2 + 1) = 4/3 of progress a step of 0.6 s:
// 20 progress in 9 s. Two GPUs on two nodes: the scalability trace's 0.7 s step, 10.5 s.
TEST(JobRounds, AMeasuredJobAdvancesByGoodputAsHandDerived) {
  const TinyApp quiet(0);
  const TraceApplication a = quiet.read();
  EXPECT_EQ(a.init_batch, 8);
  EXPECT_EQ(a.max_epochs, 2);
  EXPECT_DOUBLE_EQ(service_alone_s(a, 1, 8, 4), 10);
  const TinyApp noisy(1);
  const TraceApplication b = noisy.read();
  EXPECT_NEAR(service_alone_s(b, 2, 16, 4), 9, 1e-12);
  EXPECT_NEAR(service_alone_s(b, 2, 16, 1), 10.5, 1e-12);
  EXPECT_DOUBLE_EQ(b.step_time({1, 1}, 8).first, 0.7);
  EXPECT_DOUBLE_EQ(b.step_time({2}, 6).first, 0.5);  // halfway between local batches 4 and 8
}

TEST(JobRounds, BadTracesAndJobsAreOneLineNamingTheirPlace) {
  const auto apps = read_trace_applications(kPollux + "/applications.json");
  const auto dir = std::filesystem::temp_directory_path() / "strata-bad-workload";
  std::filesystem::create_directories(dir);
  const auto message = [&](const std::string& text) {
    std::ofstream((dir / "w.csv").string()) << text;
    try {
      read_pollux_workload((dir / "w.csv").string(), apps);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string header = "name,time,application,num_replicas,batch_size\n";
  EXPECT_NE(message(header + "j,1,gpt5,1,8\n").find("w.csv:2: application: no measured application 'gpt5'"),
            std::string::npos);
  EXPECT_NE(message(header + "j,-1,ncf,1,32768\n").find("w.csv:2: time: not a number >= 0 '-1'"),
            std::string::npos);
  EXPECT_NE(message(header + "j,1,ncf,0.5,32768\n").find("w.csv:2: num_replicas: not a whole number >= 1"),
            std::string::npos);
  EXPECT_NE(message("id,arrival_s,gpus,service_s\n").find("w.csv:1: expected the header"), std::string::npos);
  const auto jobs = read_pollux_workload(kPollux + "/workloads/workload-6.csv", apps);
  std::vector<RoundJob> one = {jobs[0]};
  one[0].batch = 1 << 20;
  EXPECT_THROW(
      {
        try {
          schedule_job_rounds(one, pollux_tiresias());
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("is outside cifar10's measured batches 128-4096"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      InputError);
  one[0].gpus = 65;
  EXPECT_THROW(schedule_job_rounds(one, pollux_tiresias()), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata
