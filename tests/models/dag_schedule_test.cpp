// The list schedulers (dag_schedule.hpp) on Topcuoglu, Hariri and Wu's example (TPDS 2002,
// figure 2: 10 tasks on 3 processors, an edge's weight its communication time between two
// processors): HEFT's schedule of figure 3(a), makespan 80, and CPOP's makespan 86 with the
// critical path n1-n2-n9-n10 on P2. Then invariants of every policy on that graph, and the one
// line each bad problem gets.
#include "strata/models/schedule/dag_schedule.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

DagProblem topcuoglu() {
  const double w[10][3] = {{14, 16, 9}, {13, 19, 18}, {11, 13, 19}, {13, 8, 17},  {12, 13, 10},
                           {13, 16, 9}, {7, 15, 11},  {5, 11, 14},  {18, 12, 20}, {21, 7, 16}};
  std::vector<DagTask> tasks;
  for (int i = 0; i < 10; ++i) tasks.push_back({"n" + std::to_string(i + 1), {w[i][0], w[i][1], w[i][2]}});
  // (from, to, cost), tasks numbered from 1 as in the figure.
  const int e[15][3] = {{1, 2, 18}, {1, 3, 12}, {1, 4, 9},   {1, 5, 11},  {1, 6, 14},
                        {2, 8, 19}, {2, 9, 16}, {3, 7, 23},  {4, 8, 27},  {4, 9, 23},
                        {5, 9, 13}, {6, 8, 15}, {7, 10, 17}, {8, 10, 11}, {9, 10, 13}};
  std::vector<DagEdge> edges;
  for (const auto& x : e)
    edges.push_back({static_cast<std::size_t>(x[0] - 1), static_cast<std::size_t>(x[1] - 1), double(x[2])});
  return unit_link_problem(std::move(tasks), std::move(edges), 3);
}

TEST(DagSchedule, HeftReproducesTopcuogluFigureThreeA) {
  const DagProblem p = topcuoglu();
  check_dag(p, "topcuoglu");
  const DagSchedule s = schedule_dag(p, SchedulePolicy::heft);
  EXPECT_DOUBLE_EQ(s.makespan, 80);
  // (processor from 0 = P1, start, finish) per task n1..n10, as in the paper's figure 3(a).
  const double expected[10][3] = {{2, 0, 9},   {0, 27, 40}, {2, 9, 28},  {1, 18, 26}, {2, 28, 38},
                                  {1, 26, 42}, {2, 38, 49}, {0, 57, 62}, {1, 56, 68}, {1, 73, 80}};
  for (std::size_t i = 0; i < 10; ++i) {
    SCOPED_TRACE("n" + std::to_string(i + 1));
    EXPECT_EQ(s.slots[i].processor, static_cast<std::size_t>(expected[i][0]));
    EXPECT_DOUBLE_EQ(s.slots[i].start, expected[i][1]);
    EXPECT_DOUBLE_EQ(s.slots[i].finish, expected[i][2]);
  }
  // Upward ranks 108, 77, 80, 80, 69, 63.3, 42.7, 35.7, 44.3, 14.7: n1, n3, n4, n2, n5, n6, n9,
  // n7, n8, n10 (n3 before n4 at equal rank: the lower index).
  EXPECT_EQ(s.order, (std::vector<std::size_t>{0, 2, 3, 1, 4, 5, 8, 6, 7, 9}));
}

TEST(DagSchedule, CpopPutsTheCriticalPathOnOneProcessorAndEndsAt86) {
  const DagSchedule s = schedule_dag(topcuoglu(), SchedulePolicy::cpop);
  EXPECT_DOUBLE_EQ(s.makespan, 86);
  // |CP| = 54 + the path's communication: n1, n2, n9, n10 all on P2, which runs them in
  // 16 + 19 + 12 + 7 = 54 against 66 on P1 and 63 on P3.
  for (std::size_t i : {0u, 1u, 8u, 9u}) EXPECT_EQ(s.slots[i].processor, 1u) << "n" << i + 1;
}

TEST(DagSchedule, EveryPolicyRespectsDependenciesAndNeverOverlapsAProcessor) {
  const DagProblem p = topcuoglu();
  for (SchedulePolicy policy : {SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::peft,
                                SchedulePolicy::minmin, SchedulePolicy::cp, SchedulePolicy::rr}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    const DagSchedule s = schedule_dag(p, policy);
    ASSERT_EQ(s.slots.size(), 10u);
    ASSERT_EQ(s.order.size(), 10u);
    for (const DagEdge& e : p.edges) {
      const TaskSlot &a = s.slots[e.from], &b = s.slots[e.to];
      EXPECT_GE(b.start + 1e-9, a.finish + (a.processor == b.processor ? 0 : e.data));
    }
    for (std::size_t i = 0; i < 10; ++i) {
      EXPECT_DOUBLE_EQ(s.slots[i].finish - s.slots[i].start, p.tasks[i].cost[s.slots[i].processor]);
      for (std::size_t j = i + 1; j < 10; ++j) {
        if (s.slots[i].processor != s.slots[j].processor) continue;
        EXPECT_TRUE(s.slots[i].finish <= s.slots[j].start || s.slots[j].finish <= s.slots[i].start);
      }
    }
    // The critical path by minimum costs is n1-n2-n9-n10... at 9 + 13 + 12 + 7 = 41 s or a longer
    // one: the ratio is at least 1 and the speedup over the best serial processor (P1 127 s,
    // P2 134 s, P3 143 s) at most 3.
    EXPECT_GE(schedule_length_ratio(p, s), 1.0);
    EXPECT_LE(speedup_over_serial(p, s), 3.0);
    EXPECT_DOUBLE_EQ(speedup_over_serial(p, s), 127.0 / s.makespan);
    std::printf("%s: makespan %g s, schedule length ratio %.3f, speedup %.3f\n",
                std::string(to_string(policy)).c_str(), s.makespan, schedule_length_ratio(p, s),
                speedup_over_serial(p, s));
  }
  // The baseline is no better than HEFT here; PEFT, the paper's successor, is as good or better.
  EXPECT_GE(schedule_dag(p, SchedulePolicy::rr).makespan, 80);
  EXPECT_LE(schedule_dag(p, SchedulePolicy::peft).makespan, 86);
}

TEST(DagSchedule, WorkAndSpeedsScheduleAsTheirExplicitCosts) {
  // Related machines: the same graph given as work over speeds and as the costs that makes.
  DagProblem work = topcuoglu();
  work.speed = {1e9, 2e9, 4e9};
  DagProblem costs = work;
  for (std::size_t i = 0; i < work.tasks.size(); ++i) {
    work.tasks[i].work = 1e9 * (1 + static_cast<double>(i % 4));
    work.tasks[i].cost.clear();
    for (std::size_t q = 0; q < 3; ++q) costs.tasks[i].cost[q] = work.tasks[i].work / work.speed[q];
  }
  check_dag(work, "work");
  for (SchedulePolicy policy : {SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::peft,
                                SchedulePolicy::minmin, SchedulePolicy::cp, SchedulePolicy::rr}) {
    const DagSchedule a = schedule_dag(work, policy), b = schedule_dag(costs, policy);
    EXPECT_EQ(a.order, b.order) << to_string(policy);
    EXPECT_DOUBLE_EQ(a.makespan, b.makespan) << to_string(policy);
  }
}

TEST(DagSchedule, PoliciesAreNamedAsTheFlagSpellsThem) {
  for (const char* name : {"strategy", "heft", "cpop", "peft", "minmin", "cp", "rr"}) {
    const auto policy = parse_schedule_policy(name);
    ASSERT_TRUE(policy.has_value()) << name;
    EXPECT_EQ(to_string(*policy), name);
  }
  EXPECT_FALSE(parse_schedule_policy("fifo").has_value());
}

std::string refusal(const DagProblem& p) {
  try {
    check_dag(p, "dag.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DagSchedule, BadProblemsAreRefusedInOneLine) {
  DagProblem cycle = topcuoglu();
  cycle.edges.push_back({9, 0, 1});  // n10 -> n1
  EXPECT_NE(refusal(cycle).find("is on a dependency cycle"), std::string::npos) << refusal(cycle);
  DagProblem nowhere = topcuoglu();
  nowhere.tasks[4].cost.assign(3, std::numeric_limits<double>::infinity());
  EXPECT_NE(refusal(nowhere).find("task 'n5' can run on no processor"), std::string::npos);
  DagProblem negative = topcuoglu();
  negative.tasks[0].cost[1] = -1;
  EXPECT_NE(refusal(negative).find("/tasks/0/cost"), std::string::npos);
  DagProblem nan = topcuoglu();
  nan.edges[3].data = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(refusal(nan).find("/edges/3"), std::string::npos);
  DagProblem dangling = topcuoglu();
  dangling.edges.push_back({3, 42, 1});
  EXPECT_NE(refusal(dangling).find("does not exist"), std::string::npos);
  DagProblem links = topcuoglu();
  links.bandwidth[0][1] = 0;
  EXPECT_NE(refusal(links).find("bandwidth"), std::string::npos);
  DagProblem speeds = topcuoglu();
  speeds.tasks[2].cost.clear();  // given as work, with no speeds
  EXPECT_NE(refusal(speeds).find("there are 0 speeds for 3 processors"), std::string::npos)
      << refusal(speeds);
  speeds.speed = {1e9, 0, 1e9};
  EXPECT_NE(refusal(speeds).find("/speed/1"), std::string::npos) << refusal(speeds);
  for (const DagProblem* p : {&cycle, &nowhere, &negative, &nan, &dangling, &links, &speeds})
    EXPECT_EQ(refusal(*p).find('\n'), std::string::npos);
}

// Groups bind tasks to one processor each, chosen when the group's first task is placed, and a
// processor holds one group: Topcuoglu's graph with n1..n5 in group 0 and n6..n10 in group 1
// runs on exactly two processors, each group on its own, under every policy.
TEST(DagSchedule, GroupsKeepTheirTasksOnOneProcessorOfTheirOwn) {
  DagProblem p = topcuoglu();
  p.group = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  check_dag(p, "topcuoglu");
  for (SchedulePolicy policy : {SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::peft,
                                SchedulePolicy::minmin, SchedulePolicy::cp, SchedulePolicy::rr}) {
    const DagSchedule s = schedule_dag(p, policy);
    for (std::size_t t = 1; t < 5; ++t)
      EXPECT_EQ(s.slots[t].processor, s.slots[0].processor) << to_string(policy);
    for (std::size_t t = 6; t < 10; ++t)
      EXPECT_EQ(s.slots[t].processor, s.slots[5].processor) << to_string(policy);
    EXPECT_NE(s.slots[0].processor, s.slots[5].processor) << to_string(policy);
  }
  // Processor classes: the same costs given per class of alike processors schedule alike.
  DagProblem classes = topcuoglu();
  classes.processors = 4;
  classes.processor_class = {0, 1, 2, 2};  // a fourth processor like the third
  classes.latency.assign(4, std::vector<double>(4, 0));
  classes.bandwidth.assign(4, std::vector<double>(4, 1));
  check_dag(classes, "classes");
  DagProblem explicit_costs = classes;
  explicit_costs.processor_class.clear();
  for (DagTask& t : explicit_costs.tasks) t.cost.push_back(t.cost[2]);
  for (SchedulePolicy policy : {SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::minmin}) {
    const DagSchedule a = schedule_dag(classes, policy), b = schedule_dag(explicit_costs, policy);
    EXPECT_EQ(a.order, b.order) << to_string(policy);
    EXPECT_DOUBLE_EQ(a.makespan, b.makespan) << to_string(policy);
  }
  DagProblem crowded = topcuoglu();
  crowded.group = {0, 1, 2, 3, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(refusal(crowded), "dag.json: /group: 4 groups need a processor each, there are 3");
}

}  // namespace
}  // namespace strata
