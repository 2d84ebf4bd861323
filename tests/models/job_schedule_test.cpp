// Cluster job scheduling (models/search/job_schedule.hpp) on streams small enough to schedule by
// hand: each policy's completion times, preemptions and the stream's figures.
#include <gtest/gtest.h>

#include <vector>

#include "strata/models/search/job_schedule.hpp"
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
