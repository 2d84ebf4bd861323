// The results store from the command line: explore writes every configuration's estimate and
// each replay to strata.db (or --db, or nowhere with --no-db), a second run resumes from it with
// the same rows, simulate writes with --db, and strata query lists, filters, ranks, fronts and
// compares them (docs/results.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_process.hpp"

namespace {

namespace fs = std::filesystem;
using strata_test::Outcome;

class Query : public strata_test::CliProcess {
 protected:
  Query() : CliProcess("strata-query-", true) {}
};

const std::string kPlatform = std::string(STRATA_SOURCE_DIR) + "/platforms/a100-node-8.xml";
const std::string kSweep = "explore --platform " + kPlatform + " --model gpt2-small --set layers=2";
const std::string kExplore = kSweep + " --top 3";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string first_column(const std::string& line) { return line.substr(0, line.find_first_of(" ,")); }

TEST_F(Query, ExploreStoresEveryEstimateAndItsReplaysAndAResumedRunKeepsTheRows) {
  const Outcome e = run(kExplore);
  ASSERT_EQ(e.rc, 0) << e.err;
  ASSERT_TRUE(fs::exists(path("strata.db")));
  const std::string first = run("query --csv").out;
  // One analytical row per configuration, and three replays (step or aggregated).
  const std::vector<std::string> rows = lines(first);
  ASSERT_GT(rows.size(), 4u);
  EXPECT_EQ(rows[0].substr(0, 4), "key,");
  std::size_t analytical = 0, replays = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const std::string key = first_column(rows[i]);
    analytical += key.find("/analytical/") != std::string::npos ? 1 : 0;
    replays +=
        key.find("/step/") != std::string::npos || key.find("/aggregated/") != std::string::npos ? 1 : 0;
  }
  const auto configurations = e.out.find(" configurations,");
  ASSERT_NE(configurations, std::string::npos) << e.out;
  const std::size_t count = std::stoul(e.out.substr(e.out.rfind(' ', configurations - 1) + 1));
  EXPECT_EQ(analytical, count);
  EXPECT_EQ(replays, 3u);
  // Again: the replays come from the store, the table and the rows are the same.
  const Outcome again = run(kExplore);
  ASSERT_EQ(again.rc, 0) << again.err;
  const auto table = [](const std::string& out) { return out.substr(out.find('\n')); };  // past the timings
  EXPECT_EQ(table(again.out), table(e.out));
  EXPECT_EQ(run("query --csv").out, first);
  // --no-db writes nothing; --db elsewhere.
  ASSERT_EQ(run(kExplore + " --no-db --db-wait 1").rc, 0);
  ASSERT_EQ(run(kSweep + " --top 0 --db other.db").rc, 0);
  EXPECT_EQ(lines(run("query --db other.db --csv").out).size(), count + 1);
}

// A sweep of 2,688 configurations (gpt3-1.3b on 16 of a100-cluster-64's GPUs, 30 replays: about
// 3.5 s on this machine) killed with SIGKILL at three points drawn from a seeded generator and run
// again each time: the store ends with the rows of a run never stopped, none lost, none twice.
TEST_F(Query, AnExploreKilledAndResumedLeavesTheRowsOfOneNeverStopped) {
  const std::string sweep = "explore --platform " + std::string(STRATA_SOURCE_DIR) +
                            "/platforms/a100-cluster-64.xml --model gpt3-1.3b --workers 16 --top 30";
  const Outcome whole_run = run(sweep + " --db whole.db");
  ASSERT_EQ(whole_run.rc, 0) << whole_run.err;
  ASSERT_NE(whole_run.out.find("2688 configurations"), std::string::npos) << whole_run.out;
  const std::string whole = run("query --db whole.db --csv").out;
  ASSERT_EQ(lines(whole).size(), 1u + 2688u + 30u);
  std::mt19937 draw(18);
  std::uniform_real_distribution<double> at(0.1, 3.3);
  for (int k = 0; k < 3; ++k) {
    const std::string seconds = std::to_string(at(draw));
    const std::string killed = "cd " + path(".") + " && timeout -s KILL " + seconds + " " + STRATA_BINARY +
                               " " + sweep + " --db resumed.db > /dev/null 2>&1";
    ASSERT_NE(std::system(killed.c_str()), -1);
    const Outcome resumed = run(sweep + " --db resumed.db");
    ASSERT_EQ(resumed.rc, 0) << "killed after " << seconds << " s: " << resumed.err;
    EXPECT_EQ(run("query --db resumed.db --csv").out, whole) << "killed after " << seconds << " s";
  }
}

// Successive halving across fidelities (--fidelity step, eta 3): 720 configurations estimated,
// the best 240 replayed with aggregated collectives, the best 80 of those with step ones. It
// picks the configuration that replaying all 720 with step collectives picks, with at most
// ceil(N/3) + ceil(N/9) + ... = 360 simulations (it runs 320, and one more only when a rung's
// choice needs timing at the last fidelity), and the store keeps every rung's rows.
TEST_F(Query, SuccessiveHalvingAcrossFidelitiesPicksTheBestOfReplayingEveryConfiguration) {
  const Outcome halving = run(kSweep + " --fidelity step");
  ASSERT_EQ(halving.rc, 0) << halving.err;
  const Outcome all = run(kSweep + " --top 720 --collectives step --no-db");
  ASSERT_EQ(all.rc, 0) << all.err;
  ASSERT_NE(all.out.find("720 configurations"), std::string::npos) << all.out;
  const auto best = [](const std::string& out) { return out.substr(out.find("\nbest: ")); };
  EXPECT_EQ(best(halving.out), best(all.out));
  const auto line = halving.out.find("fidelities: analytical 720 configurations (Kendall tau to the next ");
  ASSERT_NE(line, std::string::npos) << halving.out;
  EXPECT_NE(halving.out.find("-> aggregated 240 replayed", line), std::string::npos) << halving.out;
  EXPECT_NE(halving.out.find("-> step 80 replayed", line), std::string::npos) << halving.out;
  const auto run_count = halving.out.find(" simulations run", line);
  ASSERT_NE(run_count, std::string::npos);
  const std::size_t simulations = std::stoul(halving.out.substr(halving.out.rfind(' ', run_count - 1) + 1));
  EXPECT_GE(simulations, 320u);
  EXPECT_LE(simulations, 360u);
  const std::vector<std::string> per_fidelity = lines(
      run("query --sql \"select fidelity, count(*) from results group by fidelity order by fidelity\" --csv")
          .out);
  ASSERT_GE(per_fidelity.size(), 4u);
  EXPECT_EQ(per_fidelity[1], "aggregated,240");
  EXPECT_EQ(per_fidelity[2], "analytical,720");
  ASSERT_EQ(per_fidelity[3].substr(0, 5), "step,");
  EXPECT_GE(std::stoi(per_fidelity[3].substr(5)), 80);
  // The closed form alone replays nothing; --top beside --fidelity, and eta below 2, are refused.
  const Outcome closed = run(kSweep + " --fidelity analytical --no-db");
  ASSERT_EQ(closed.rc, 0) << closed.err;
  EXPECT_NE(closed.out.find("fidelities: analytical 720 configurations; 0 simulations run"),
            std::string::npos)
      << closed.out;
  expect_one_line_error(run(kSweep + " --fidelity step --top 3"), "--top: conflicts with --fidelity");
  expect_one_line_error(run(kSweep + " --fidelity step --eta 1"), "--eta");
}

// Two platforms in one sweep, ranked by money: every estimate is priced on its platform (16
// workers fill two DGX hosts: USD 40.96 an hour each on a100-cluster-64, 98.32 on
// h100-cluster-1024, as their files say), the table across platforms is ordered by USD per
// iteration among fitting rows, and the store holds both platforms' rows.
TEST_F(Query, SeveralPlatformsRankedByMoney) {
  const Outcome r =
      run("explore --platform a100-cluster-64.xml --platform h100-cluster-1024.xml --model gpt2-small "
          "--set layers=2 --workers 16 --objective money --top 2 --rows 8");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto at = r.out.find("across platforms, by money (fitting first):\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best across platforms: "), std::string::npos);
  std::vector<std::string> table = lines(r.out.substr(at));
  ASSERT_GE(table.size(), 10u);
  double previous = 0;
  for (std::size_t i = 2; i < 10; ++i) {  // rank platform fits fidelity iteration USD ...
    std::istringstream in(table[i]);
    std::string rank, platform, fits, fidelity;
    double iteration = 0, usd = 0;
    in >> rank >> platform >> fits >> fidelity >> iteration >> usd;
    ASSERT_EQ(fits, "yes") << table[i];
    EXPECT_GE(usd, previous) << table[i];
    previous = usd;
  }
  for (const auto& [platform, price] : {std::pair<std::string, double>{"a100-cluster-64.xml", 40.96},
                                        std::pair<std::string, double>{"h100-cluster-1024.xml", 98.32}}) {
    const std::vector<std::string> row = lines(
        run("query --sql \"select iteration_time_s, cost_usd from results where fidelity = 'analytical' and "
            "platform = '" +
            platform + "' order by key limit 1\" --csv")
            .out);
    ASSERT_EQ(row.size(), 2u);
    const double t = std::stod(row[1].substr(0, row[1].find(','))),
                 usd = std::stod(row[1].substr(row[1].find(',') + 1));
    EXPECT_NEAR(usd, 2 * price * t / 3600, 1e-5 * usd) << platform;  // CSV: 6 significant digits
  }
  expect_one_line_error(
      run("explore --platform a100-node-8.xml --platform a100-cluster-64.xml --model gpt2-small "
          "--set layers=2 --top 0 --csv e.csv"),
      "--platform: several platforms write no best-configuration files or table files");
  expect_one_line_error(run(kSweep + " --objective speed"), "--objective");
}

TEST_F(Query, ListsFiltersRanksFrontsAndCompares) {
  ASSERT_EQ(run(kExplore).rc, 0);
  const Outcome all = run("query");
  ASSERT_EQ(all.rc, 0) << all.err;
  const std::vector<std::string> listed = lines(all.out);
  EXPECT_EQ(listed[0].substr(0, 5), "key  ");
  EXPECT_NE(listed[0].find("iteration_time_s"), std::string::npos);
  EXPECT_EQ(listed[0].find("spec"), std::string::npos);  // one line per row: no spec in the listing
  EXPECT_EQ(listed.size(), lines(run("query --csv").out).size());
  // The fastest fitting replay, by --where, --order-by and --limit.
  const Outcome best =
      run("query --where \"fidelity != 'analytical' and fits\" --order-by iteration_time_s --limit 1 --csv");
  ASSERT_EQ(best.rc, 0) << best.err;
  ASSERT_EQ(lines(best.out).size(), 2u) << best.out;
  const Outcome sql =
      run("query --sql \"select key from results where fidelity != 'analytical' and fits "
          "order by iteration_time_s, key limit 1\" --csv");
  ASSERT_EQ(sql.rc, 0) << sql.err;
  EXPECT_EQ(first_column(lines(sql.out)[1]), first_column(lines(best.out)[1]));
  // JSON: every column of every row.
  const nlohmann::json j = nlohmann::json::parse(run("query --json").out);
  EXPECT_EQ(j["format"], "strata-query");
  EXPECT_EQ(j["rows"].size() + 1, listed.size());
  EXPECT_TRUE(j["rows"][0].contains("spec"));
  // A Pareto front over time and memory: no row of it is beaten in both by another row.
  const nlohmann::json front = nlohmann::json::parse(run("query --pareto time,memory --json").out)["rows"];
  ASSERT_FALSE(front.empty());
  for (const auto& a : j["rows"])
    for (const auto& b : front)
      EXPECT_FALSE(a["iteration_time_s"].get<double>() < b["iteration_time_s"].get<double>() &&
                   a["peak_memory_bytes"].get<double>() < b["peak_memory_bytes"].get<double>())
          << a["key"] << " beats " << b["key"];
  // Two rows field by field: the analytical and the replayed answer of one configuration.
  const std::string replayed = first_column(lines(best.out)[1]);
  std::string analytical = replayed;
  const auto at = analytical.find('/', analytical.find('/') + 1);
  analytical.replace(at + 1, analytical.find('/', at + 1) - at - 1, "analytical");
  const Outcome diff = run("query --diff " + analytical + " " + replayed);
  ASSERT_EQ(diff.rc, 0) << diff.err;
  EXPECT_NE(diff.out.find("fidelity"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("iteration_time_s"), std::string::npos);
}

TEST_F(Query, SimulateWritesOnlyWithDb) {
  const std::string args =
      "simulate --platform " + kPlatform + " --model gpt2-small --set layers=2 --strategy dp=8";
  ASSERT_EQ(run(args).rc, 0);
  EXPECT_FALSE(fs::exists(path("strata.db")));
  ASSERT_EQ(run(args + " --db s.db").rc, 0);
  ASSERT_EQ(run(args + " --db s.db").rc, 0);  // the same key: one row
  const std::vector<std::string> rows = lines(run("query --db s.db --csv").out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[1].find(",simulate,gpt2-small,"), std::string::npos) << rows[1];
}

TEST_F(Query, BadQueriesAndStoresAreOneLine) {
  expect_one_line_error(run("query --db none.db"), "none.db: no such results store");
  ASSERT_EQ(run(kSweep + " --top 0").rc, 0);
  expect_one_line_error(run("query --order-by speed"), "--order-by: unknown column 'speed' (known: key, ");
  expect_one_line_error(run("query --order-by \"mfu sideways\""), "--order-by: expected a column");
  expect_one_line_error(run("query --where \"no_such_column > 1\""),
                        "strata.db: SQL: no such column: no_such_column");
  expect_one_line_error(run("query --sql \"delete from results\""),
                        "strata.db: SQL: a query may only read (SELECT)");
  expect_one_line_error(run("query --pareto time"), "--pareto: two or three of time, money, energy, memory");
  expect_one_line_error(run("query --pareto time,speed"), "--pareto: unknown objective 'speed'");
  expect_one_line_error(run("query --diff a b"), "--diff: 'a' is not a row key");
  expect_one_line_error(run("query --diff a/b/step/0 a/b/step/1"), "strata.db: no row with key a/b/step/0");
  expect_one_line_error(run("query --sql \"select 1\" --where fits"), "--sql: conflicts with --where");
  fs::create_directories(path("folder.db"));
  expect_one_line_error(run(kExplore + " --db folder.db"), "folder.db: not a regular file");
}

}  // namespace
