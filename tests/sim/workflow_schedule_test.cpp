// A published workflow scheduled on a published platform: SimGrid's Montage_25 DAX on its
// simulacrum_7_hosts platform (tests/data/simgrid, LGPL-2.1, NOTICE.md there), read as SimGrid's
// dag-scheduling example reads them (platform_routes, workflow_problem).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "strata/models/schedule/workflow_problem.hpp"
#include "strata/sim/platform.hpp"
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

}  // namespace
}  // namespace strata
