// A published workflow scheduled on a published platform: SimGrid's Montage_25 DAX on its
// simulacrum_7_hosts platform (tests/data/simgrid, LGPL-2.1, NOTICE.md there), read as SimGrid's
// dag-scheduling example reads them (platform_routes, workflow_problem).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "strata/models/schedule/workflow_problem.hpp"
#include "strata/sim/platform.hpp"
#include "strata/sim/workflow_run.hpp"
#include "strata/traces/workflow.hpp"

namespace strata {
namespace {

const std::string kData = std::string(STRATA_SOURCE_DIR) + "/tests/data/simgrid/";

TEST(WorkflowSchedule, RoutesOfSimulacrumSevenHosts) {
  const PlatformRoutes r = platform_routes(kData + "simulacrum_7_hosts.xml");
  ASSERT_EQ(r.hosts.size(), 7u);
  EXPECT_EQ(r.hosts.front(), "Host 26");
  EXPECT_EQ(r.hosts.back(), "Host 32");
  EXPECT_DOUBLE_EQ(r.speed[1], 3.867398877553016e9);  // Host 27: 3.867398877553016Gf
  for (std::size_t a = 0; a < 7; ++a)
    for (std::size_t b = 0; b < 7; ++b) {
      if (a == b) continue;
      EXPECT_DOUBLE_EQ(r.bandwidth[a][b], 125e6);                // every link: 125MBps
      const double hops = std::round(r.latency[a][b] / 100e-6);  // links of 100us each
      EXPECT_GE(hops, 1);
      EXPECT_NEAR(r.latency[a][b], hops * 100e-6, 1e-12);
    }
}

TEST(WorkflowSchedule, StaticMinMinStartsAsSimGridsExampleDecides) {
  const Workflow w = read_workflow(kData + "Montage_25.xml");
  const WorkflowProblem wp = workflow_problem(w, platform_routes(kData + "simulacrum_7_hosts.xml"));
  check_dag(wp.problem, "Montage_25.xml");
  ASSERT_EQ(wp.problem.tasks.size(), 27u);  // 25 jobs, root and end
  // region.hdr (304 B) is written by no job: root sends it to each of its 15 readers (5 mProjectPP,
  // 9 mDiffFit, mAdd).
  std::size_t from_root = 0;
  for (const DagEdge& e : wp.problem.edges)
    if (e.from == wp.root && !e.control && e.data == 304) ++from_root;
  EXPECT_EQ(from_root, 15u);
  const DagSchedule s = schedule_dag(wp.problem, SchedulePolicy::minmin);
  // Root first, on the first host (every host finishes it at 0). Then, as the example's
  // expected output (s4u-dag-scheduling.tesh) says: ID00002 on Host 27, ID00000 on Host 26,
  // ID00003 on Host 30. The example then picks ID00004, since it decides again only when tasks
  // complete; a static Min-Min already sees ID00010 (whose one parent is placed) as ready.
  ASSERT_GE(s.order.size(), 5u);
  EXPECT_EQ(s.order[0], wp.root);
  EXPECT_EQ(s.slots[wp.root].processor, 0u);
  EXPECT_EQ(s.order[1], 2u);
  EXPECT_EQ(s.slots[2].processor, 1u);  // Host 27
  EXPECT_EQ(s.order[2], 0u);
  EXPECT_EQ(s.slots[0].processor, 0u);  // Host 26
  EXPECT_EQ(s.order[3], 3u);
  EXPECT_EQ(s.slots[3].processor, 4u);  // Host 30
  EXPECT_EQ(s.order[4], 10u);           // ID00010, where the example has ID00004
  std::printf(
      "static Min-Min on Montage_25: estimated makespan %.6f s (SimGrid's online example: 98.135796 s)\n",
      s.makespan);
}

// SimGrid's own example, decided online while SimGrid runs the DAG with its default network
// factors: every placement of its expected output (s4u-dag-scheduling.tesh), in its order, and
// its simulated end, 98.135796 s.
TEST(WorkflowSchedule, OnlineMinMinEndsWhereSimGridsExampleEnds) {
  const Workflow w = read_workflow(kData + "Montage_25.xml");
  const WorkflowProblem wp = workflow_problem(w, platform_routes(kData + "simulacrum_7_hosts.xml"));
  NetworkOptions network;
  network.simgrid_factors = true;
  const WorkflowRun run = run_workflow_online_minmin(wp, kData + "simulacrum_7_hosts.xml", network);
  const char* expected[][2] = {{"ID00002@mProjectPP", "Host 27"},  {"ID00000@mProjectPP", "Host 26"},
                               {"ID00003@mProjectPP", "Host 30"},  {"ID00004@mProjectPP", "Host 27"},
                               {"ID00001@mProjectPP", "Host 32"},  {"ID00010@mDiffFit", "Host 26"},
                               {"ID00008@mDiffFit", "Host 27"},    {"ID00013@mDiffFit", "Host 26"},
                               {"ID00009@mDiffFit", "Host 30"},    {"ID00011@mDiffFit", "Host 27"},
                               {"ID00005@mDiffFit", "Host 26"},    {"ID00006@mDiffFit", "Host 32"},
                               {"ID00012@mDiffFit", "Host 31"},    {"ID00007@mDiffFit", "Host 28"},
                               {"ID00014@mConcatFit", "Host 27"},  {"ID00015@mBgModel", "Host 27"},
                               {"ID00016@mBackground", "Host 27"}, {"ID00017@mBackground", "Host 26"},
                               {"ID00020@mBackground", "Host 30"}, {"ID00018@mBackground", "Host 27"},
                               {"ID00019@mBackground", "Host 32"}, {"ID00021@mImgTbl", "Host 27"},
                               {"ID00022@mAdd", "Host 27"},        {"ID00023@mShrink", "Host 27"},
                               {"ID00024@mJPEG", "Host 27"},       {"end", "Host 27"}};
  ASSERT_EQ(run.steps.size(), 27u);  // root, then the 26 of the expected output
  EXPECT_EQ(run.steps[0].task, "root");
  for (std::size_t k = 0; k < 26; ++k) {
    EXPECT_EQ(run.steps[k + 1].task, expected[k][0]) << "decision " << k + 1;
    EXPECT_EQ(run.steps[k + 1].host, expected[k][1]) << "decision " << k + 1;
  }
  EXPECT_NEAR(run.steps[6].decided_s, 14.582104, 1e-6);  // ID00010's decision
  EXPECT_NEAR(run.makespan_s, 98.135796, 1e-6);
  std::printf("online Min-Min on Montage_25: simulated makespan %.6f s (SimGrid's example: 98.135796 s)\n",
              run.makespan_s);
}

// A static schedule run as SimGrid runs it: every task on its host, each host's tasks in the
// schedule's order. With strata's ideal network factors the links give the estimate's latency +
// bytes / bandwidth, so the simulated makespan may exceed the estimate only where transfers
// share a link, and never falls short of the critical path.
TEST(WorkflowSchedule, StaticSchedulesRunOnSimGrid) {
  const Workflow w = read_workflow(kData + "Montage_25.xml");
  const WorkflowProblem wp = workflow_problem(w, platform_routes(kData + "simulacrum_7_hosts.xml"));
  for (SchedulePolicy policy : {SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::peft,
                                SchedulePolicy::minmin, SchedulePolicy::cp, SchedulePolicy::rr}) {
    const DagSchedule s = schedule_dag(wp.problem, policy);
    const WorkflowRun run = run_workflow_schedule(wp, s, kData + "simulacrum_7_hosts.xml", NetworkOptions{});
    ASSERT_EQ(run.steps.size(), wp.problem.tasks.size());
    const double path =
        schedule_length_ratio(wp.problem, s) > 0 ? s.makespan / schedule_length_ratio(wp.problem, s) : 0;
    EXPECT_GE(run.makespan_s, path * (1 - 1e-9)) << to_string(policy);
    EXPECT_GE(run.makespan_s, s.makespan * (1 - 1e-6)) << to_string(policy);
    EXPECT_LE(run.makespan_s, s.makespan * 1.05) << to_string(policy);
    for (const WorkflowStep& step : run.steps) EXPECT_LE(step.finish_s, run.makespan_s);
    std::printf("%-6s on Montage_25: estimate %.6f s, simulated %.6f s\n",
                std::string(to_string(policy)).c_str(), s.makespan, run.makespan_s);
  }
}

}  // namespace
}  // namespace strata
