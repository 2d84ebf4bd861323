// Cluster job scheduling (models/search/job_schedule.hpp) against a straightforward reference
// (job_schedule_reference.hpp): the engine keeps the jobs present in ordered structures (an event
// costs O(log n) per job it looks at), the reference sorts every job present at every event, as
// strata did before.
// Both must agree to the bit, on every policy with and without backfill, over seeded random
// streams that mix ties (equal arrivals, equal jobs), whole and fractional times, gangs wider
// than half the cluster and several LAS queues.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "job_schedule_reference.hpp"
#include "strata/models/search/job_schedule.hpp"

namespace strata {
namespace {

using test::reference_schedule;

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// A random stream of up to 40 jobs on 1 to 16 GPUs: whole or fractional times, bursts of equal
// arrivals and runs of equal jobs (the ties the orders break by arrival, then position).
std::vector<ClusterJob> random_stream(std::mt19937_64& rng, int capacity) {
  std::uniform_int_distribution<int> count(1, 40), coin(0, 3);
  std::uniform_real_distribution<double> unit(0, 1);
  const bool whole = coin(rng) < 2;
  const auto time = [&](double scale) {
    const double t = scale * unit(rng);
    return whole ? std::floor(t) + 1 : t + 1e-3;
  };
  std::vector<ClusterJob> jobs;
  double t = 0;
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    if (coin(rng) != 0) t += whole ? std::floor(8 * unit(rng)) : 8 * unit(rng);
    ClusterJob j{"j" + std::to_string(i), t, 1, time(30)};
    const int width = coin(rng);
    j.gpus = width == 0 ? capacity : 1 << std::uniform_int_distribution<int>(0, 4)(rng);
    j.gpus = std::min(j.gpus, capacity);
    if (coin(rng) == 0) j.gpus = std::uniform_int_distribution<int>(1, capacity)(rng);
    if (!jobs.empty() && coin(rng) == 0) {  // the same job again, at the same time
      j.arrival_s = jobs.back().arrival_s;
      j.gpus = jobs.back().gpus;
      j.service_s = jobs.back().service_s;
    }
    jobs.push_back(j);
  }
  return jobs;
}

JobSettings random_settings(std::mt19937_64& rng, int capacity) {
  std::uniform_real_distribution<double> unit(0, 1);
  JobSettings s;
  s.cluster_gpus = capacity;
  s.las_thresholds_gpu_s.clear();
  const int queues = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int q = 0; q < queues; ++q) s.las_thresholds_gpu_s.push_back(std::floor(60 * unit(rng)) + 0.5 * q);
  std::sort(s.las_thresholds_gpu_s.begin(), s.las_thresholds_gpu_s.end());
  s.lease_s = unit(rng) < 0.5 ? std::floor(10 * unit(rng)) + 1 : 0.1 + 10 * unit(rng);
  return s;
}

TEST(JobScheduleReference, EveryPolicyMatchesTheReferenceToTheBitOnRandomStreams) {
  std::mt19937_64 rng(2027);
  int compared = 0, stalls = 0;
  for (int stream = 0; stream < 400; ++stream) {
    constexpr int kCapacities[] = {1, 2, 3, 4, 6, 8, 12, 16};
    const int capacity = kCapacities[std::uniform_int_distribution<int>(0, 7)(rng)];
    const std::vector<ClusterJob> jobs = random_stream(rng, capacity);
    JobSettings settings = random_settings(rng, capacity);
    for (JobPolicy policy : {JobPolicy::fifo, JobPolicy::sjf, JobPolicy::las, JobPolicy::themis}) {
      for (bool backfill : {false, true}) {
        settings.policy = policy;
        settings.backfill = backfill;
        const std::vector<JobRecord> want = reference_schedule(jobs, settings, &stalls);
        const JobScheduleResult got = schedule_jobs(jobs, settings);
        ++compared;
        const std::string what = "stream " + std::to_string(stream) + ", " + std::string(to_string(policy)) +
                                 (backfill ? " with backfill" : "");
        ASSERT_EQ(got.jobs.size(), want.size()) << what;
        for (std::size_t i = 0; i < want.size(); ++i) {
          const JobRecord &g = got.jobs[i], &w = want[i];
          ASSERT_TRUE(same_bits(g.start_s, w.start_s))
              << what << ", job " << i << ": " << g.start_s << " vs " << w.start_s;
          ASSERT_TRUE(same_bits(g.finish_s, w.finish_s))
              << what << ", job " << i << ": " << g.finish_s << " vs " << w.finish_s;
          ASSERT_EQ(g.preemptions, w.preemptions) << what << ", job " << i;
        }
      }
    }
  }
  EXPECT_EQ(compared, 400 * 8);
  EXPECT_GT(stalls, 100);  // las: crossings that round short of their threshold, common with whole times
}

// Themis's lease clock across idle gaps: the engine jumps a run of lease ends at once, the
// reference adds the lease once per lease; the lease ends, and so the jobs after the gap, agree.
TEST(JobScheduleReference, ThemisLeaseClockAgreesAcrossIdleGaps) {
  int stalls = 0;
  for (double lease : {1e-3, 1.0 / 3, 0.7, 7.25}) {
    for (double gap : {5.0, 123.456, 1e4, 3.3e5}) {
      if (gap / lease > 2e7) continue;  // the reference would take too long
      const std::vector<ClusterJob> jobs = {{"a", 0.25, 1, 0.1 + lease}, {"b", gap, 1, 3 * lease + 0.01}};
      JobSettings s;
      s.policy = JobPolicy::themis;
      s.cluster_gpus = 1;
      s.lease_s = lease;
      const std::vector<JobRecord> want = reference_schedule(jobs, s, &stalls);
      const JobScheduleResult got = schedule_jobs(jobs, s);
      for (std::size_t i = 0; i < jobs.size(); ++i)
        EXPECT_TRUE(same_bits(got.jobs[i].finish_s, want[i].finish_s))
            << "lease " << lease << ", gap " << gap << ", job " << i << ": " << got.jobs[i].finish_s << " vs "
            << want[i].finish_s;
    }
  }
}

}  // namespace
}  // namespace strata
