// strata hybrid on platforms/hybrid-serverless.xml: LambdaML's two verdicts (Jiang et al., SIGMOD
// 2021) come out of the simulated plans, the choice under a deadline or a budget, the files, and
// one line for each bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_process.hpp"

namespace {

using strata_test::Outcome;

class HybridCli : public strata_test::CliProcess {
 protected:
  HybridCli() : CliProcess("strata-hybrid-", false) {}

  nlohmann::json plans(const std::string& args) {
    const Outcome r = run("hybrid " + args + " --json " + path("h.json"));
    EXPECT_EQ(r.rc, 0) << r.err;
    return nlohmann::json::parse(slurp(path("h.json")));
  }
};

struct Best {
  double time = std::numeric_limits<double>::infinity(), cost = std::numeric_limits<double>::infinity();
  double cost_of_fastest = 0;
  std::string fastest;
};
Best best_of(const nlohmann::json& doc, bool functions) {
  Best b;
  for (const nlohmann::json& p : doc["plans"]) {
    if ((p["kind"] != "vm") != functions) continue;
    const double t = p["total_s"], c = p["cost_usd"];
    if (t < b.time) b.time = t, b.cost_of_fastest = c, b.fastest = p["plan"];
    b.cost = std::min(b.cost, c);
  }
  return b;
}

// A small model over storage (LambdaML's logistic regression and MLP): functions finish first,
// at a cost comparable with the VMs' (here below it: a VM bills at least 60 s).
TEST_F(HybridCli, SmallModelFinishesFasterOnFunctionsAtComparableCost) {
  const nlohmann::json doc = plans("--model mlp");
  const Best fn = best_of(doc, true), vm = best_of(doc, false);
  std::printf(
      "mlp: fastest functions %s %.3f s %.6f USD; fastest VMs %s %.3f s %.6f USD (cheapest %.6f USD)\n",
      fn.fastest.c_str(), fn.time, fn.cost_of_fastest, vm.fastest.c_str(), vm.time, vm.cost_of_fastest,
      vm.cost);
  EXPECT_LT(fn.time, vm.time);
  EXPECT_LE(fn.cost_of_fastest, 1.5 * vm.cost);
}

// A ResNet-class model: functions are never markedly cheaper than VMs (and slower here).
TEST_F(HybridCli, ResNetOnFunctionsIsNeverMarkedlyCheaperThanOnVms) {
  const nlohmann::json doc = plans("--model resnet50 --epochs 1 --global-batch 512");
  const Best fn = best_of(doc, true), vm = best_of(doc, false);
  std::printf(
      "resnet50: cheapest functions %.4f USD, fastest %s %.1f s; cheapest VMs %.4f USD, fastest %s %.1f s\n",
      fn.cost, fn.fastest.c_str(), fn.time, vm.cost, vm.fastest.c_str(), vm.time);
  EXPECT_GE(fn.cost, 0.9 * vm.cost);
  // The front: every plan on it is not dominated by any other.
  for (const nlohmann::json& a : doc["plans"]) {
    if (!a["pareto"].get<bool>()) continue;
    for (const nlohmann::json& b : doc["plans"])
      EXPECT_FALSE(b["total_s"].get<double>() < a["total_s"].get<double>() &&
                   b["cost_usd"].get<double>() < a["cost_usd"].get<double>())
          << a["plan"] << " is dominated by " << b["plan"];
  }
}

TEST_F(HybridCli, DeadlineAndBudgetChooseAndTheOutputIsTheSameEachRun) {
  Outcome r =
      run("hybrid --model mlp --deadline 10min --svg " + path("front.svg") + " --csv " + path("h.csv"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("chosen: "), std::string::npos);
  EXPECT_EQ(slurp(path("front.svg")).substr(0, 4), "<svg");
  const std::string first = slurp(path("h.csv"));
  r = run("hybrid --model mlp --deadline 10min --csv " + path("h.csv"));
  EXPECT_EQ(slurp(path("h.csv")), first);  // seeded cold starts: the same plans and figures
  const nlohmann::json doc = plans("--model mlp --budget 20usd");
  ASSERT_TRUE(doc["chosen"].is_string());
}

TEST_F(HybridCli, BadInputIsOneLine) {
  expect_one_line_error(run("hybrid --model mlp --deadline 1s --json " + path("h.json")),
                        "--deadline: no plan ends within 1.000 s: the fastest", path("h.json"));
  expect_one_line_error(run("hybrid --model mlp --budget 0.00001usd --json " + path("h.json")),
                        "--budget: no plan costs at most 1e-05 USD: the cheapest", path("h.json"));
  expect_one_line_error(run("hybrid --model mlp --budget 1usd --deadline 5s --json " + path("h.json")),
                        "--deadline: conflicts with --budget", path("h.json"));
  expect_one_line_error(run("hybrid --model mlp --deadline soon --json " + path("h.json")),
                        "--deadline: 'soon' is not a positive duration", path("h.json"));
  expect_one_line_error(run("hybrid --model mlp --memory 100 --json " + path("h.json")),
                        "--memory: 100 MB is not offered (128 to 10240 MB, whole MB)", path("h.json"));
  expect_one_line_error(run("hybrid --model mlp --platform " + std::string(STRATA_SOURCE_DIR) +
                            "/platforms/test-flat-4.xml --json " + path("h.json")),
                        "no function pool", path("h.json"));
}

// Each function plan (through the store, through the cache, or with a parameter server) names the
// flags that lower its iteration as one Plan, and `simulate` with them gives the hybrid's
// iteration time (the hybrid adds the compute and the exchange simulated apart; the Plan prices a
// merging function's additions by their bytes, the exchange DAG by their flops).
TEST_F(HybridCli, FunctionPlansReplayAsPlansWithTheirFlags) {
  const std::string platform = std::string(STRATA_SOURCE_DIR) + "/platforms/hybrid-serverless.xml";
  const nlohmann::json doc = plans("--model mlp --all --budget 1usd");
  int compared = 0;
  for (const nlohmann::json& p : doc["plans"]) {
    const int n = p["functions"];
    if (p["kind"] == "vm" || (n != 4 && n != 16) || p["memory_mb"] != 3538) continue;
    const std::string flags = p["plan_flags"];
    ASSERT_FALSE(flags.empty()) << p.dump();
    const Outcome r =
        run("simulate --model mlp " + flags + " --platform " + platform + " --report " + path("r.json"));
    ASSERT_EQ(r.rc, 0) << r.err;
    const double replayed = nlohmann::json::parse(slurp(path("r.json")))["iteration_time_s"];
    // The server's sum is priced as the replay prices it; the merges on functions are n·g flop
    // there (the exchange is simulated once for every memory size), within 1 % through the
    // store and 2 % through the cache, whose requests are 300 times shorter.
    const std::string exchange = p["exchange"];
    const double within = exchange == "ps" ? 1e-9 : exchange.starts_with("cache") ? 0.02 : 0.01;
    EXPECT_NEAR(replayed, p["iteration_s"].get<double>(), within * replayed) << p["plan"];
    ++compared;
  }
  EXPECT_EQ(compared, 10);  // 4 and 16 functions: store x 2, cache x 2, server
}

// A Plan whose data-parallel exchange goes through the store, its workers in functions: `plan`
// writes the functions and their memory into the Plan, and `simulate --plan` replays it there.
// Four 1,769 MB functions by allreduce: the merger's PUT, three GETs and the sum's PUT, then the
// others' GET, each 0.15 s plus the gradient at 87.5 MB/s: 6 (0.15 + S / 87.5e6) s exposed, and
// the merger's three additions (3 S each) at its one vCPU's 7.1 GB/s, at no less than half of it.
TEST_F(HybridCli, PlanThroughTheStoreRunsInFunctions) {
  const std::string platform = std::string(STRATA_SOURCE_DIR) + "/platforms/hybrid-serverless.xml";
  const Outcome planned =
      run("plan --model mlp --strategy dp=4 --global-batch 256 --set dp_algo=storage_allreduce "
          "--function-memory 1769 --platform " +
          platform + " -o " + path("p.json"));
  ASSERT_EQ(planned.rc, 0) << planned.err;
  const nlohmann::json plan = nlohmann::json::parse(slurp(path("p.json")));
  EXPECT_EQ(plan["placement"]["policy"], "functions");
  EXPECT_EQ(plan["placement"]["function_memory_mb"], 1769);
  EXPECT_EQ(plan["placement"]["workers"], nlohmann::json({"fn-0", "fn-1", "fn-2", "fn-3"}));
  double bytes = 0;
  for (const nlohmann::json& t : plan["tasks"])
    if (t["kind"] == "allreduce") {
      EXPECT_EQ(t["algo"], "storage_allreduce");
      bytes += t["comm_bytes"].get<double>();
    }
  ASSERT_GT(bytes, 0);
  const Outcome simulated =
      run("simulate --plan " + path("p.json") + " --platform " + platform + " --report " + path("r.json"));
  ASSERT_EQ(simulated.rc, 0) << simulated.err;
  const nlohmann::json report = nlohmann::json::parse(slurp(path("r.json")));
  const double requests = 6 * (0.15 + bytes / 87.5e6), merge = 3 * 3 * bytes / 7.1e9;
  EXPECT_GE(report["exposed_comm_s"].get<double>(), requests + merge * (1 - 1e-9));
  EXPECT_LE(report["exposed_comm_s"].get<double>(), requests + 2 * merge);
  EXPECT_DOUBLE_EQ(report["gpu_memory_bytes"].get<double>(), 1769.0 * 1048576);
  expect_one_line_error(run("simulate --model mlp --strategy dp=2 --function-memory 20000 --platform " +
                            platform + " --report " + path("r2.json")),
                        "--function-memory: 20000 MB is not offered", path("r2.json"));
}

}  // namespace
