// strata search from the command line (docs/search.md): a search file played out on a shipped
// platform, its table, its rows in the results store, and one-line errors for bad search files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_process.hpp"

namespace {

using strata_test::Outcome;

class SearchCli : public strata_test::CliProcess {
 protected:
  SearchCli() : CliProcess("strata-search-", true) {}
  void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
};

const std::string kSearch = R"({"format": "strata-experiment", "schema_version": 1, "model": {"name": "mlp"},
  "global_batch": 64,
  "search": {"platform": "platforms/a100-node-8.xml", "cluster_gpus": 4, "policy": "asha", "max_epochs": 9,
    "eta": 3, "trials": 20, "target_accuracy": 0.88,
    "space": {"lr": {"log_uniform": [1e-4, 1e-1]}, "sizes": {"choice": ["784,32,10", "784,256,10"]}}}})";

TEST_F(SearchCli, PlaysTheSearchOutAndKeepsEveryTrialInTheStore) {
  write("s.json", kSearch);
  const Outcome r = run("search --spec s.json --csv t.csv");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(
      r.out.find("search asha: 20 trials of mlp on a100-node-8.xml (4 GPUs), 9 epochs at most; 2 replays"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("time to 88.00 % accuracy: "), std::string::npos);
  // Two layer widths: two distinct epoch times, each replayed once.
  std::ifstream csv(path("t.csv"));
  std::string line;
  int rows = -1;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 20);
  const nlohmann::json stored =
      nlohmann::json::parse(run("query --json --where \"fidelity = 'search'\"").out)["rows"];
  ASSERT_EQ(stored.size(), 20u);
  for (const auto& row : stored) {
    const nlohmann::json curve = nlohmann::json::parse(row["accuracy"].get<std::string>());
    EXPECT_TRUE(curve.size() == 1 || curve.size() == 3 || curve.size() == 9) << row["strategy"];
  }
  // The same file gives the same table.
  const Outcome again = run("search --spec s.json --no-db");
  EXPECT_EQ(again.out, r.out);
}

// Real trials: two MLP configurations trained for 2 epochs on Fashion-MNIST; their curves go to
// the store under the run's key (fidelity real) and a second search takes them from there
// instead of training again; strata-sim, which cannot train, refuses in one line.
TEST_F(SearchCli, RealTrialsTrainOnceAndComeBackFromTheStore) {
  write("real.json", R"({"format": "strata-experiment", "schema_version": 1, "model": {"name": "mlp"},
    "global_batch": 64,
    "search": {"platform": "platforms/a100-node-8.xml", "cluster_gpus": 1, "policy": "grid", "max_epochs": 2,
      "target_accuracy": 0.8, "accuracy": {"source": "real"},
      "space": {"lr": {"choice": [0.001, 0.003]}, "sizes": {"choice": ["784,32,10"]}}}})");
  const Outcome first = run("search --spec real.json --db s.db");
  ASSERT_EQ(first.rc, 0) << first.err;
  const nlohmann::json real =
      nlohmann::json::parse(run("query --json --db s.db --where \"fidelity = 'real'\"").out)["rows"];
  ASSERT_EQ(real.size(), 2u);
  for (const auto& row : real) {
    EXPECT_EQ(row["command"], "search");
    const nlohmann::json curve = nlohmann::json::parse(row["accuracy"].get<std::string>());
    ASSERT_EQ(curve.size(), 2u);
    EXPECT_GT(curve[1]["test_accuracy"].get<double>(), 0.75);  // the MLP after 2 epochs
  }
  const Outcome again = run("search --spec real.json --db s.db");
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
  EXPECT_EQ(nlohmann::json::parse(run("query --json --db s.db --where \"fidelity = 'real'\"").out)["rows"],
            real);
  const std::string sim = std::string(STRATA_SIM_BINARY) + " search --spec real.json --no-db";
  const std::string cmd = "cd " + path(".") + " && " + sim + " > /dev/null 2> sim.err";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  std::ifstream err(path("sim.err"));
  std::stringstream text;
  text << err.rdbuf();
  EXPECT_NE(
      text.str().find("/search/accuracy/source: real trials train for real; run strata, not strata-sim"),
      std::string::npos)
      << text.str();
}

TEST_F(SearchCli, BadSearchFilesAreOneLine) {
  const auto bad = [&](const std::string& from, const std::string& to, const std::string& expected) {
    std::string text = kSearch;
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    write("bad.json", text);
    expect_one_line_error(run("search --spec bad.json --no-db"), expected);
  };
  bad("\"policy\": \"asha\"", "\"policy\": \"bandit\"", "bad.json: /search/policy: unknown policy 'bandit'");
  bad("\"policy\": \"asha\"", "\"policy\": \"pbt\", \"pbt\": {\"quantile\": 0.9}",
      "bad.json: /search/pbt/quantile: a quantile in (0, 0.5]");
  expect_one_line_error(run("search --spec " + std::string(STRATA_SOURCE_DIR) +
                            "/examples/search-curves.json --policy pbt --no-db"),
                        "search-curves.json: /search/accuracy/source: pbt trains perturbed assignments a "
                        "curve file does not hold");
  bad("\"global_batch\": 64,", "", "bad.json: /global_batch: a search needs the global batch");
  bad("\"log_uniform\": [1e-4, 1e-1]", "\"log_uniform\": [0, 1e-1]",
      "/search/space/lr/log_uniform: need lo > 0");
  bad("\"cluster_gpus\": 4", "\"cluster_gpus\": 64", "/search/cluster_gpus: 64 GPUs, the platform has 8");
  bad("\"max_epochs\": 9,", "", "bad.json: /search/max_epochs: missing");
  bad("\"trials\": 20,", "\"trials\": 20, \"budget_gpu_hours\": 1e-9,", "the budget is below one epoch");
  bad("\"eta\": 3,", "\"eta\": 3, \"colour\": 1,", "bad.json: /search/colour: unknown field");
  expect_one_line_error(run("search --spec none.json"), "none.json");
  // PBT perturbs numbers: over a space of choices alone it has nothing to explore.
  std::string choices = kSearch;
  const std::string lr = "\"lr\": {\"log_uniform\": [1e-4, 1e-1]}, ";
  choices.erase(choices.find(lr), lr.size());
  write("choices.json", choices);
  expect_one_line_error(run("search --spec choices.json --policy pbt --no-db"),
                        "choices.json: /search/space");
}

// Trial times from the closed form instead of replays: for these MLPs (data parallelism 1 and 2)
// the closed form gives the replay's epoch times, so the same table; the header says which.
TEST_F(SearchCli, ClosedFormTimingGivesTheReplaysTableForTheseTrials) {
  write("s.json", kSearch);
  const Outcome replay = run("search --spec s.json --no-db --csv r.csv");
  const Outcome closed = run("search --spec s.json --no-db --timing closed-form --csv c.csv");
  ASSERT_EQ(closed.rc, 0) << closed.err;
  EXPECT_NE(closed.out.find("9 epochs at most; 2 closed-form estimates for their epoch times"),
            std::string::npos)
      << closed.out;
  const auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const auto r = lines(replay.out), c = lines(closed.out);
  ASSERT_EQ(r.size(), c.size());
  for (std::size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i], c[i]);
  std::string bad = kSearch;
  bad.replace(bad.find("\"eta\": 3,"), 9, "\"eta\": 3, \"timing\": \"exact\",");
  write("bad.json", bad);
  expect_one_line_error(run("search --spec bad.json --no-db"),
                        "bad.json: /search/timing: unknown timing 'exact' (known: closed-form, replay)");
}

// PBT over the seeded family: members clone and perturb (the progress-equivalent model gives
// their accuracy after a clone); the same file gives the same table.
TEST_F(SearchCli, PbtPlaysOutOverTheFamily) {
  write("s.json", kSearch);
  const Outcome r = run("search --spec s.json --policy pbt --no-db --json p.json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("search pbt: 20 trials of mlp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(
                " clones (a member taking another's checkpoint and a perturbed assignment); accuracies after "
                "a clone: the progress-equivalent model"),
            std::string::npos)
      << r.out;
  std::ifstream in(path("p.json"));
  for (const auto& t : nlohmann::json::parse(in)["trials"]) EXPECT_EQ(t["epochs"], 9) << t;
  EXPECT_EQ(run("search --spec s.json --policy pbt --no-db").out, r.out);
}

// PBT over real training: two members, 2 epochs; at the first epoch the worse takes the better's
// weights and optimizer state and a perturbed learning rate. The better one is never cloned and
// its accuracy is what training its learning rate alone gives (the random policy, train_curve):
// a model carried over through the checkpoint trains as one trained in one go.
TEST_F(SearchCli, PbtOverRealTrainingCarriesTheModelAcrossCheckpoints) {
  write("pbt.json", R"({"format": "strata-experiment", "schema_version": 1,
    "model": {"name": "mlp", "sizes": [784, 32, 10]}, "global_batch": 64,
    "search": {"platform": "platforms/a100-node-8.xml", "cluster_gpus": 2, "policy": "pbt", "max_epochs": 2,
      "trials": 2, "target_accuracy": 0.8, "accuracy": {"source": "real"}, "pbt": {"interval": 1},
      "space": {"lr": {"log_uniform": [1e-4, 1e-2]}}, "seed": 5}})");
  const Outcome pbt = run("search --spec pbt.json --no-db --json p.json");
  ASSERT_EQ(pbt.rc, 0) << pbt.err;
  EXPECT_NE(pbt.out.find("pbt: 1 clones"), std::string::npos) << pbt.out;
  const Outcome random = run("search --spec pbt.json --policy random --no-db --json r.json");
  ASSERT_EQ(random.rc, 0) << random.err;
  std::ifstream pin(path("p.json")), rin(path("r.json"));
  const nlohmann::json p = nlohmann::json::parse(pin)["trials"], q = nlohmann::json::parse(rin)["trials"];
  ASSERT_EQ(p.size(), 2u);
  ASSERT_EQ(q.size(), 2u);
  int kept = 0;
  for (int i = 0; i < 2; ++i)
    if (p[i]["assignment"] == q[i]["assignment"]) {  // the member not cloned
      ++kept;
      EXPECT_DOUBLE_EQ(p[i]["best_accuracy"].get<double>(), q[i]["best_accuracy"].get<double>());
    }
  EXPECT_EQ(kept, 1);
}

}  // namespace
