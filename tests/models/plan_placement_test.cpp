// Placement policies over training Plans (models/schedule/plan_placement.hpp): workers move as a
// whole, onto distinct slots; a policy never keeps a placement its estimate says is slower than
// the strategy's; and on hosts that differ in speed the list schedulers find the fast ones.
#include "strata/models/schedule/plan_placement.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "lowering_test_support.hpp"
#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace {

using namespace lowering_test;  // NOLINT(google-build-using-namespace)

constexpr SchedulePolicy kPolicies[] = {SchedulePolicy::heft,   SchedulePolicy::cpop, SchedulePolicy::peft,
                                        SchedulePolicy::minmin, SchedulePolicy::cp,   SchedulePolicy::rr};

HostSpec cpu_host(const std::string& name, double flops, int slots = 1) {
  HostSpec h;
  h.name = name;
  h.slots = slots;
  h.flops_fp32 = h.flops_bf16 = h.flops_fp16 = h.flops_fp64 = flops;
  h.mem_bw = 1e15;  // compute-bound: the speed decides
  return h;
}

// Hosts node-0, node-1, ... of the given speeds, every route 1 µs and 10 GB/s, slots of one host
// 0.5 µs and 50 GB/s apart.
SlotPlatform star(const std::vector<double>& flops, int slots = 1) {
  SlotPlatform p;
  p.path = "star.xml";
  for (std::size_t h = 0; h < flops.size(); ++h)
    p.hosts.push_back(cpu_host(cat("node-", h), flops[h], slots));
  p.latency.assign(flops.size(), std::vector<double>(flops.size(), 1e-6));
  p.bandwidth.assign(flops.size(), std::vector<double>(flops.size(), 10e9));
  p.local_latency = 0.5e-6;
  p.local_bandwidth = 50e9;
  return p;
}

void expect_distinct_slots(const PlanPlacement& placed, const SlotPlatform& platform) {
  std::set<std::size_t> seen(placed.slot_of_worker.begin(), placed.slot_of_worker.end());
  EXPECT_EQ(seen.size(), placed.slot_of_worker.size()) << to_string(placed.policy);
  EXPECT_LT(*seen.rbegin(), static_cast<std::size_t>(platform.total_slots()));
}

TEST(PlanPlacement, ListSchedulersPutDataParallelWorkersOnTheFastHosts) {
  const Plan plan = lower(linear_model(4), config_of(4, 1, 1));
  const CostModel cost;
  const SlotPlatform mixed = star({1e9, 2e9, 1e9, 2e9, 1e9, 2e9, 1e9, 2e9});
  const SlotPlatform fast = star({2e9, 2e9, 2e9, 2e9});
  const double all_fast = place_plan(plan, fast, cost, SchedulePolicy::strategy).estimate_s;
  const PlanPlacement natural = place_plan(plan, mixed, cost, SchedulePolicy::strategy);
  EXPECT_GT(natural.estimate_s, all_fast * 1.2);  // two of its four workers are on slow hosts
  for (SchedulePolicy policy : kPolicies) {
    const PlanPlacement placed = place_plan(plan, mixed, cost, policy);
    expect_distinct_slots(placed, mixed);
    EXPECT_LE(placed.estimate_s, natural.estimate_s) << to_string(policy);
    EXPECT_DOUBLE_EQ(placed.strategy_estimate_s, natural.estimate_s);
    if (policy == SchedulePolicy::rr) {  // round-robin takes slots 0..3: the strategy's, kept
      EXPECT_TRUE(placed.kept_strategy);
      continue;
    }
    EXPECT_FALSE(placed.kept_strategy) << to_string(policy);
    // The four fast hosts, with the same links: what the strategy gets on an all-fast star.
    for (const std::string& host : placed.hosts_by_worker)
      EXPECT_EQ((host.back() - '0') % 2, 1) << to_string(policy) << " chose " << host;
    EXPECT_DOUBLE_EQ(placed.estimate_s, all_fast) << to_string(policy);
    EXPECT_GT(placed.speedup, 1);
    EXPECT_GE(placed.schedule_length_ratio, 1);
  }
}

TEST(PlanPlacement, OnAlikeHostsTheStrategysPlacementIsKept) {
  const Plan plan = lower(linear_model(4), config_of(2, 1, 2, 4));
  const SlotPlatform platform = star({1e12, 1e12, 1e12, 1e12});
  const CostModel cost;
  for (SchedulePolicy policy : kPolicies) {
    const PlanPlacement placed = place_plan(plan, platform, cost, policy);
    expect_distinct_slots(placed, platform);
    EXPECT_LE(placed.estimate_s, placed.strategy_estimate_s);
    if (placed.kept_strategy) {
      EXPECT_EQ(placed.hosts_by_worker, (std::vector<std::string>{"node-0", "node-1", "node-2", "node-3"}));
      EXPECT_DOUBLE_EQ(placed.estimate_s, placed.strategy_estimate_s);
      EXPECT_GE(placed.policy_estimate_s, placed.strategy_estimate_s);
    }
  }
}

TEST(PlanPlacement, WorkersOfAPipelineShareHostsOfSeveralSlots) {
  const Plan plan = lower(tiny_gpt(4), config_of(1, 2, 2, 4));
  const SlotPlatform platform = star({1e12, 1e12, 2e12}, 2);
  const CostModel cost;
  for (SchedulePolicy policy : kPolicies) {
    const PlanPlacement placed = place_plan(plan, platform, cost, policy);
    expect_distinct_slots(placed, platform);
    std::map<std::string, int> per_host;
    for (const std::string& h : placed.hosts_by_worker) ++per_host[h];
    for (const auto& [host, n] : per_host) EXPECT_LE(n, 2) << host;
    EXPECT_LE(placed.estimate_s, placed.strategy_estimate_s) << to_string(policy);
  }
}

TEST(PlanPlacement, TooFewSlotsIsOneLine) {
  const Plan plan = lower(linear_model(2), config_of(4, 1, 1));
  EXPECT_EQ(input_error([&] {
              place_plan(plan, star({1e12, 1e12}), CostModel(), SchedulePolicy::heft);
            }),
            "star.xml: 4 workers need 4 worker slots, the platform has 2");
}

// A generic DAG left unplaced but for its entry and exit: a (1 s) on worker 0, then b, c and d
// (2 s each, unplaced), then e (1 s) on worker 0, on four alike slots. Every policy puts the
// three middle tasks side by side, one on worker 0's slot and two on new workers: 1 + 2 + 1 = 4 s.
TEST(PlanPlacement, UnplacedTasksGoToTheSlotsThePolicyChoosesAndNewWorkersThere) {
  Plan plan(1);
  plan.allow_unplaced(true);
  auto fixed = [&](const std::string& id, WorkerId worker, double seconds) {
    Task t;
    t.id = id;
    t.kind = TaskKind::fixed;
    t.worker = worker;
    t.attrs["duration_s"] = seconds;
    return plan.add_task(t);
  };
  const TaskIndex a = fixed("it0/a", 0, 1);
  std::vector<TaskIndex> middle;
  for (const char* id : {"it0/b", "it0/c", "it0/d"}) {
    middle.push_back(fixed(id, -1, 2));
    plan.add_data_dep(a, middle.back());
  }
  const TaskIndex e = fixed("it0/e", 0, 1);
  for (TaskIndex m : middle) plan.add_data_dep(m, e);
  plan.validate();
  ASSERT_TRUE(plan.has_unplaced());
  const SlotPlatform four = star({1e9, 1e9, 1e9, 1e9});
  for (SchedulePolicy policy : {SchedulePolicy::heft, SchedulePolicy::cpop, SchedulePolicy::peft,
                                SchedulePolicy::minmin, SchedulePolicy::cp}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    const PlanPlacement placed = place_plan(plan, four, CostModel(), policy);
    EXPECT_NEAR(placed.estimate_s, 4.0, 1e-3);
    EXPECT_EQ(placed.num_workers, 3);
    ASSERT_EQ(placed.task_workers.size(), 3u);
    std::set<WorkerId> workers;
    for (const auto& [task, worker] : placed.task_workers) workers.insert(worker);
    EXPECT_EQ(workers, (std::set<WorkerId>{0, 1, 2}));
    expect_distinct_slots(placed, four);
  }
  try {
    place_plan(plan, four, CostModel(), SchedulePolicy::strategy);
    FAIL() << "no error";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("leaves tasks unplaced"), std::string::npos) << err.what();
  }
  plan.allow_unplaced(false);
  try {
    plan.validate();
    FAIL() << "no error";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("task is unplaced: give --schedule-policy"), std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace strata
