// Cluster job scheduling (models/search/job_schedule.hpp) on streams small enough to schedule by
// hand: each policy's completion times, preemptions and the stream's figures.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../input_error.hpp"
#include "strata/models/search/job_rounds.hpp"
#include "strata/models/search/job_schedule.hpp"
#include "strata/models/search/job_traces.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

// One GPU; A arrives at 0 needing 10 s, B at 1 needing 2 s, C at 2 needing 1 s.
const std::vector<ClusterJob> kThree = {{"A", 0, 1, 10}, {"B", 1, 1, 2}, {"C", 2, 1, 1}};

JobScheduleResult on_one_gpu(JobPolicy policy) {
  JobSettings s;
  s.policy = policy;
  s.cluster_gpus = 1;
  s.las_thresholds_gpu_s = {5};
  return schedule_jobs(kThree, s);
}

// FIFO: A 0-10, B 10-12, C 12-13.
TEST(JobSchedule, FifoRunsInArrivalOrder) {
  const JobScheduleResult r = on_one_gpu(JobPolicy::fifo);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 10);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 12);
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 13);
  EXPECT_NEAR(r.average_jct_s, 32.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(r.p99_jct_s, 11);
  EXPECT_DOUBLE_EQ(r.makespan_s, 13);
  EXPECT_NEAR(r.average_queueing_s, 19.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(r.gpu_utilisation, 1);
}

// SJF keeps A running; at 10, C (1 s) before B (2 s): C 10-11, B 11-13.
TEST(JobSchedule, SjfTakesTheShortestWaitingJobWithoutPreempting) {
  const JobScheduleResult r = on_one_gpu(JobPolicy::sjf);
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 10);
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 11);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 13);
  EXPECT_NEAR(r.average_jct_s, 31.0 / 3, 1e-12);
  EXPECT_EQ(r.jobs[0].preemptions, 0);
}

// Tiresias with one threshold at 5 GPU-s: A runs in queue 0 until 5, then B (queue 0) 5-7, C 7-8,
// and A again 8-13.
TEST(JobSchedule, LasDemotesAJobPastItsThresholdAndPreemptsIt) {
  const JobScheduleResult r = on_one_gpu(JobPolicy::las);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 5);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 7);
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 8);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 13);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_NEAR(r.average_jct_s, 25.0 / 3, 1e-12);
}

// Themis: at 1, A and B are equally unfair (rho 0.5 each): A, the earlier, goes on. At 2, with
// three jobs, rho is 1/3 for A and C and 1/2 for B: B runs 2-4; at 4, C (rho 1.5) before A
// (0.6): C 4-5, then A 5-13.
TEST(JobSchedule, ThemisRunsTheMostUnfairlyTreatedJobFirst) {
  const JobScheduleResult r = on_one_gpu(JobPolicy::themis);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 2);
  EXPECT_DOUBLE_EQ(r.jobs[1].finish_s, 4);
  EXPECT_DOUBLE_EQ(r.jobs[2].finish_s, 5);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 13);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_NEAR(r.average_jct_s, 19.0 / 3, 1e-12);
}

// Gangs on 4 GPUs: J1 (4 GPUs, 10 s) and J2 (2, 5 s) at 0, J3 (2, 5 s) at 1. FIFO runs J1 first
// and the others after it (10-15); SJF runs J2, and J3 beside it at 1, while J1 waits for all 4
// GPUs until 6.
TEST(JobSchedule, GangsWaitForAllTheirGpus) {
  const std::vector<ClusterJob> jobs = {{"J1", 0, 4, 10}, {"J2", 0, 2, 5}, {"J3", 1, 2, 5}};
  JobSettings s;
  s.cluster_gpus = 4;
  const JobScheduleResult fifo = schedule_jobs(jobs, s);
  EXPECT_DOUBLE_EQ(fifo.jobs[1].start_s, 10);
  EXPECT_DOUBLE_EQ(fifo.jobs[2].finish_s, 15);
  EXPECT_DOUBLE_EQ(fifo.average_jct_s, 13);
  EXPECT_DOUBLE_EQ(fifo.gpu_utilisation, 1);
  s.policy = JobPolicy::sjf;
  const JobScheduleResult sjf = schedule_jobs(jobs, s);
  EXPECT_DOUBLE_EQ(sjf.jobs[2].start_s, 1);
  EXPECT_DOUBLE_EQ(sjf.jobs[0].start_s, 6);
  EXPECT_DOUBLE_EQ(sjf.jobs[0].finish_s, 16);
  EXPECT_NEAR(sjf.average_jct_s, 26.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(sjf.gpu_utilisation, 60.0 / 64);
}

TEST(JobSchedule, BadJobsAndSettingsAreRefused) {
  JobSettings s;
  s.cluster_gpus = 4;
  EXPECT_THROW(schedule_jobs({{"x", -1, 1, 1}}, s), InputError);
  EXPECT_THROW(schedule_jobs({{"x", 0, 8, 1}}, s), InputError);
  EXPECT_THROW(schedule_jobs({{"x", 0, 1, 0}}, s), InputError);
  s.las_thresholds_gpu_s = {10, 5};
  EXPECT_THROW(schedule_jobs({{"x", 0, 1, 1}}, s), InputError);
  EXPECT_TRUE(schedule_jobs({}, JobSettings{}).jobs.empty());
  EXPECT_EQ(parse_job_policy("themis"), JobPolicy::themis);
  EXPECT_FALSE(parse_job_policy("drf"));
}

// Times outside the ranges that keep the arithmetic exact enough to end are refused, naming the
// job, the value and the range with its upper bound: an arrival at 1e17 s (where a second no
// longer moves the clock) used to hang every policy, a service of 1e308 s printed an average JCT
// of inf.
TEST(JobSchedule, TimesOutsideTheirRangesAreRefusedNamingValueAndRange) {
  using strata::test::error_of;
  JobSettings s;
  s.cluster_gpus = 4;
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", 1e17, 1, 1}}, s);
            }),
            "jobs: job 'x': arrival_s 1e+17 outside [0, 1e+12] s");
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", -1, 1, 1}}, s);
            }),
            "jobs: job 'x': arrival_s -1 outside [0, 1e+12] s");
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", 0, 1, 1e308}}, s);
            }),
            "jobs: job 'x': service_s 1e+308 outside [1e-06, 1e+12] s");
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", 0, 1, 1e-9}}, s);
            }),
            "jobs: job 'x': service_s 1e-09 outside [1e-06, 1e+12] s");
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", NAN, 1, 1}}, s);
            }),
            "jobs: job 'x': arrival_s nan outside [0, 1e+12] s");
  EXPECT_EQ(error_of([&] { schedule_jobs({{"x", 1e12, 1, 1e12}}, s); }), "");  // both bounds are in range
  JobSettings lease = s;
  lease.lease_s = 1e-9;
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", 0, 1, 1}}, lease);
            }),
            "jobs: lease_s 1e-09 outside [0.001, 1e+12] s");
  lease.lease_s = INFINITY;
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", 0, 1, 1}}, lease);
            }),
            "jobs: lease_s inf outside [0.001, 1e+12] s");
  JobSettings las = s;
  las.las_thresholds_gpu_s = {1, 1e25};
  EXPECT_EQ(error_of([&] {
              schedule_jobs({{"x", 0, 1, 1}}, las);
            }),
            "jobs: LAS threshold 1e+25 outside [0, 1e+20] GPU-s");
  las.las_thresholds_gpu_s.assign(kMaxLasThresholds + 1, 1);
  EXPECT_EQ(error_of([&] { schedule_jobs({{"x", 0, 1, 1}}, las); }), "jobs: 17 LAS thresholds, at most 16");
}

// Themis: a lease of 1e-3 s against a service of 1e12 s would be 1e15 lease ends; streams whose
// service over the lease could exceed kMaxLeaseEnds are refused, saying which lease would do.
TEST(JobSchedule, ThemisRefusesMoreLeaseEndsThanItsBound) {
  JobSettings s;
  s.policy = JobPolicy::themis;
  s.cluster_gpus = 1;
  s.lease_s = 1e-3;
  EXPECT_EQ(strata::test::error_of([&] {
              schedule_jobs({{"x", 0, 1, 1e12}}, s);
            }),
            "jobs: a lease of 0.001 s could end 1e+15 times over the stream's 1e+12 s of service, more than "
            "1e+09 (a lease of 1e+03 s or more)");
  s.lease_s = 1e3;
  EXPECT_DOUBLE_EQ(schedule_jobs({{"x", 0, 1, 1e6}}, s).jobs[0].finish_s, 1e6);
}

// Arrivals far apart under a short lease: the lease clock catches up across an idle gap of 1e12 s
// in O(binades), to the same lease end as adding the lease once per lease.
TEST(JobSchedule, ThemisLeaseEndsCrossALongIdleGapAtOnce) {
  JobSettings s;
  s.policy = JobPolicy::themis;
  s.cluster_gpus = 1;
  s.lease_s = 1e-3;
  const JobScheduleResult r = schedule_jobs({{"a", 0, 1, 0.5}, {"b", 1e12, 1, 0.5}}, s);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 1e12);
  EXPECT_NEAR(r.jobs[1].finish_s, 1e12 + 0.5, 1e-3);
}

// A single job on 12 GPUs from 7 s under a threshold of 32 GPU-s: 32 / 12 s later its attained
// service rounds to just short of 32, and the step to the threshold is less than the clock can add
// to 9.67 s. strata used to wait for that step forever; what is due now happens now.
TEST(JobSchedule, LasCrossingThatRoundsShortOfItsThresholdStillEnds) {
  JobSettings s;
  s.policy = JobPolicy::las;
  s.cluster_gpus = 12;
  s.las_thresholds_gpu_s = {32};
  const JobScheduleResult r = schedule_jobs({{"A", 7, 12, 20}}, s);
  EXPECT_DOUBLE_EQ(r.jobs[0].finish_s, 27);
  EXPECT_EQ(r.jobs[0].preemptions, 0);
}

// strata's job trace names the file and line of a time out of range.
TEST(JobSchedule, TheTraceReaderRefusesTimesOutOfRangeNamingFileAndLine) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("strata-job-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.csv").string();
  const auto message = [&](const std::string& rows) {
    std::ofstream(path) << "# a comment\nid,arrival_s,gpus,service_s\n" << rows;
    return strata::test::error_of([&] { read_strata_job_trace(path); });
  };
  EXPECT_EQ(message("A,1e17,1,10\n"), path + ":3: arrival_s 1e+17 outside [0, 1e+12] s");
  EXPECT_EQ(message("A,0,1,10\nB,0,1,1e308\n"), path + ":4: service_s 1e+308 outside [1e-06, 1e+12] s");
  EXPECT_EQ(message("A,0,1,inf\n"), path + ":3: service_s: not a number 'inf'");
  EXPECT_EQ(message("A,0,1,10\n"), "");
  const StrataJobTrace trace = read_strata_job_trace(path);
  ASSERT_EQ(trace.jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(trace.jobs[0].service_s, 10);
  std::filesystem::remove_all(dir);
}

// The rounds engine checks its interval and restart, and gives up after max_rounds rounds (1e8
// by default: 1e6 s of service in rounds of 1e-3 s would be 1e9).
TEST(JobSchedule, RoundsRefuseIntervalsOutOfRangeAndEndAfterTheirBound) {
  using strata::test::error_of;
  RoundSettings s;
  s.nodes = 1;
  s.gpus_per_node = 1;
  s.interval_s = 1e-4;
  EXPECT_EQ(error_of([&] {
              schedule_job_rounds({{"x", 0, 1, 1}}, s);
            }),
            "jobs: interval_s 1e-04 outside [0.001, 1e+12] s");
  s.interval_s = 60;
  s.restart_s = 1e13;
  EXPECT_EQ(error_of([&] {
              schedule_job_rounds({{"x", 0, 1, 1}}, s);
            }),
            "jobs: restart_s 1e+13 outside [0, 1e+12] s");
  s.restart_s = 0;
  s.interval_s = 1e-3;
  s.max_rounds = 1e4;
  EXPECT_EQ(error_of([&] {
              schedule_job_rounds({{"x", 0, 1, 1e6}}, s);
            }),
            "jobs: not every job finished within 10000 rounds of 0.001 s; give a longer interval");
  EXPECT_EQ(schedule_job_rounds({{"x", 0, 1, 9}}, s).rounds, 9000);
}

// Two GPUs: X (1 GPU, 10 s) at 0, Y (2 GPUs, 5 s) at 1, Z (1 GPU, 3 s) at 2. FIFO waits for Y:
// Y 10-15, Z 15-18; with backfill Z takes the idle GPU at 2 and ends at 5, Y still 10-15.
TEST(JobSchedule, BackfillStartsAJobBehindOneThatDoesNotFit) {
  const std::vector<ClusterJob> jobs = {{"X", 0, 1, 10}, {"Y", 1, 2, 5}, {"Z", 2, 1, 3}};
  JobSettings s;
  s.cluster_gpus = 2;
  const JobScheduleResult blocked = schedule_jobs(jobs, s);
  EXPECT_DOUBLE_EQ(blocked.jobs[1].finish_s, 15);
  EXPECT_DOUBLE_EQ(blocked.jobs[2].finish_s, 18);
  s.backfill = true;
  const JobScheduleResult filled = schedule_jobs(jobs, s);
  EXPECT_DOUBLE_EQ(filled.jobs[2].start_s, 2);
  EXPECT_DOUBLE_EQ(filled.jobs[2].finish_s, 5);
  EXPECT_DOUBLE_EQ(filled.jobs[1].finish_s, 15);
}

}  // namespace
}  // namespace strata
