// The strata command's outputs and flags: what is at an output path is respected (a symlink stays
// a link, a device stays a device), an output never overwrites an input, all outputs of a command
// are checked before any work and written together or not at all, a killed run's temporaries are
// cleaned; numbers in flags follow one strict rule, and every parse error is one line, exit 1.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "../temporary_names.hpp"
#include "cli_process.hpp"

namespace {

namespace fs = std::filesystem;

using strata_test::Outcome;

const std::string kPlatforms = std::string(STRATA_SOURCE_DIR) + "/platforms/";

class Outputs : public strata_test::CliProcess {
 protected:
  Outputs() : CliProcess("strata-outputs-", true) {}

  // One `strata: error:` line on stderr naming every one of `expected`, exit 1.
  static void expect_refused(const Outcome& r, std::initializer_list<std::string> expected) {
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("strata: error: ", 0), 0u) << r.err;
    for (const std::string& e : expected) EXPECT_NE(r.err.find(e), std::string::npos) << e << " in " << r.err;
  }

  // The names in the test's folder, stderr.txt aside.
  std::set<std::string> files() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != "stderr.txt") names.insert(e.path().filename().string());
    return names;
  }

  void make_plan() const { ASSERT_EQ(run("plan --model mlp --strategy dp=2 -o p.json").rc, 0); }
};

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST_F(Outputs, ASymlinkStaysALinkAndItsTargetIsWritten) {
  write("target.json", "old");
  fs::create_symlink("target.json", path("link.json"));
  const Outcome r = run("plan --model mlp -o link.json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(fs::read_symlink(path("link.json")), "target.json");
  EXPECT_EQ(slurp(path("target.json")).rfind("{\"schema_version\"", 0), 0u);
  EXPECT_EQ(files(), (std::set<std::string>{"link.json", "target.json"}));
}

TEST_F(Outputs, ADanglingSymlinksTargetIsCreated) {
  fs::create_directory(path("sub"));
  fs::create_symlink("sub/new.json", path("link.json"));
  ASSERT_EQ(run("plan --model mlp -o link.json").rc, 0);
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_TRUE(fs::is_regular_file(path("sub/new.json")));
}

// Every entry of /dev with its type and, for a link, its target.
std::string dev_listing() {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const fs::file_status st = fs::symlink_status(e.path(), ec);
    out += e.path().string() + " " + std::to_string(static_cast<int>(st.type()));
    if (fs::is_symlink(st)) out += " -> " + fs::read_symlink(e.path(), ec).string();
    out += "\n";
  }
  return out;
}

TEST_F(Outputs, DevNullIsWrittenAndStaysACharacterDevice) {
  const std::string before = dev_listing();
  Outcome r = run("plan --model mlp -o /dev/null");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run("plan --model mlp --strategy dp=2 -o /dev/stdout");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"schema_version\"", 0), 0u) << r.out.substr(0, 200);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_EQ(dev_listing(), before);
  EXPECT_TRUE(files().empty());
}

TEST_F(Outputs, DashWritesTheOutputAloneToStdout) {
  const Outcome r = run("plan --model mlp -o -");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"schema_version\":3,\"format\":\"strata-plan\"", 0), 0u) << r.out.substr(0, 200);
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find("plan: "), std::string::npos);  // the summary line went to stderr
  EXPECT_NE(r.err.find("plan: "), std::string::npos);
  EXPECT_TRUE(files().empty());
}

TEST_F(Outputs, AnOutputEqualToAnInputIsRefusedAndNothingChanges) {
  make_plan();
  const std::string before = slurp(path("p.json"));
  const fs::file_time_type mtime = fs::last_write_time(path("p.json"));
  expect_refused(run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan p.json --trace p.json"),
                 {"--trace p.json", "--plan p.json"});
  fs::create_symlink("p.json", path("alias.json"));
  expect_refused(
      run("simulate --platform " + kPlatforms + "test-flat-4.xml --plan p.json --report alias.json"),
      {"--report alias.json", "--plan p.json"});
  EXPECT_EQ(slurp(path("p.json")), before);
  EXPECT_EQ(fs::last_write_time(path("p.json")), mtime);
  EXPECT_EQ(files(), (std::set<std::string>{"alias.json", "p.json"}));
}

TEST_F(Outputs, TwoOutputsIntoOneFileAreRefused) {
  make_plan();
  expect_refused(run("simulate --platform " + kPlatforms +
                     "test-flat-4.xml --plan p.json --trace t.json --perfetto ./t.json"),
                 {"--perfetto ./t.json", "--trace t.json"});
  EXPECT_EQ(files(), (std::set<std::string>{"p.json"}));
}

TEST_F(Outputs, WhenTheSecondOutputsFolderIsMissingNothingIsWritten) {
  make_plan();
  expect_refused(run("simulate --platform " + kPlatforms +
                     "test-flat-4.xml --plan p.json --trace t.json --perfetto nodir/f.json"),
                 {"--perfetto nodir/f.json", "folder 'nodir' does not exist"});
  EXPECT_EQ(files(), (std::set<std::string>{"p.json"}));
}

TEST_F(Outputs, AFailureDuringTheWorkWritesNoOutput) {
  ASSERT_EQ(run("plan --model mlp --strategy dp=8 -o p8.json").rc, 0);
  // 8 workers on 4 slots fail in the replay, after the outputs were checked.
  const Outcome r = run("simulate --platform " + kPlatforms +
                        "test-flat-4.xml --plan p8.json --trace t.json --report r.json");
  expect_refused(r, {"8 worker slots"});
  EXPECT_EQ(files(), (std::set<std::string>{"p8.json"}));
}

TEST_F(Outputs, ADirectoryIsNoOutput) {
  fs::create_directory(path("out"));
  expect_refused(run("plan --model mlp -o out"), {"--output out", "is a directory"});
}

// Only what strata made and nobody can still be writing: a dead process's temporary of this host
// and pid namespace; not a live one's, another host's or a user's file named like a temporary.
TEST_F(Outputs, AKilledRunsTemporariesAreRemovedByTheNextWrite) {
  const pid_t dead = dead_pid();
  const std::string stale = strata_test::temporary_of(dead);
  const std::string alive = strata_test::temporary_of(::getpid());
  const std::string elsewhere = strata_test::temporary_of(dead, "another_host");
  const std::string users = "notes.tmp." + std::to_string(dead);
  write(stale, "half a plan");
  write(alive, "another run's");
  write(elsewhere, "another host's run");
  write(users, "not a temporary");
  ASSERT_EQ(run("plan --model mlp -o p.json").rc, 0);
  EXPECT_EQ(files(), (std::set<std::string>{"p.json", alive, elsewhere, users}));
}

// explore keeps its rows in the results store strata.db (docs/results.md) and writes nothing
// else unless asked; with --no-db, nothing at all.
TEST_F(Outputs, ExploreWritesNothingButItsStoreUnlessAsked) {
  const std::string sweep = "explore --platform " + kPlatforms +
                            "a100-node-8.xml --model gpt2-small --set layers=2 --workers 8 --top 1";
  Outcome r = run(sweep + " --no-db");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(files().empty());
  r = run(sweep);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(files(), std::set<std::string>{"strata.db"});
  fs::remove(dir_ / "strata.db");
  expect_refused(
      run("explore --platform " + kPlatforms +
          "a100-node-8.xml --model gpt2-small --set layers=2 --top 1 --trace t.json --svg nodir/x.svg"),
      {"--svg nodir/x.svg"});
  EXPECT_TRUE(files().empty());
}

// ---- flags -----------------------------------------------------------------------------------

TEST_F(Outputs, CountsAreWholePositiveNumbers) {
  for (const char* bad : {"-2", "0", "5abc", "0x10", "1e3", " 5", "99999999999999999999"})
    expect_refused(run(std::string("plan --model mlp -o p.json --workers '") + bad + "'"), {"--workers"});
  expect_refused(run("plan --model mlp -o p.json --microbatches 0"), {"--microbatches", "out of range"});
  expect_refused(run("plan --model mlp -o p.json --global-batch -8"), {"--global-batch", "out of range"});
  expect_refused(run("plan --model mlp -o p.json --iterations 2.5"), {"--iterations", "not a whole number"});
  expect_refused(run("plan --model mlp -o p.json --set bucket_mb=5abc"), {"--set bucket_mb", "5abc"});
  EXPECT_TRUE(files().empty());
  // A leading zero is decimal, not octal.
  const Outcome r = run("plan --model mlp -o p.json --workers 010");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("10 workers"), std::string::npos) << r.out;
}

TEST_F(Outputs, RealNumbersAreFiniteAndInRange) {
  for (const char* bad : {"nan", "inf", "1e999", "0.5x", "2"})
    expect_refused(run(std::string("compare-solvers --platform p.xml --target ") + bad), {"--target"});
}

TEST_F(Outputs, APlanFileConflictsWithTheFlagsThatBuildOne) {
  make_plan();
  const std::string simulate = "simulate --platform " + kPlatforms + "test-flat-4.xml --plan p.json ";
  expect_refused(run(simulate + "--workers 2"), {"--plan", "--workers"});
  expect_refused(run(simulate + "--model mlp"), {"--plan", "--model"});
  expect_refused(run(simulate + "--strategy dp=2"), {"--plan", "--strategy"});
  expect_refused(run(simulate + "--set layers=2"), {"--plan", "--set layers"});
  expect_refused(run("run --plan p.json --microbatches 2 --epochs 1"), {"--plan", "--microbatches"});
}

TEST_F(Outputs, ParseErrorsAreOneLineAndExitOne) {
  expect_refused(run("plan --model mlp -o p.json --bogus"), {"--bogus"});
  expect_refused(run("plan --model mlp -o"), {"--output"});
  expect_refused(run("plan --model mlp"), {"--output", "required"});
  expect_refused(run("frobnicate"), {"unknown command 'frobnicate'"});
  expect_refused(run(""), {"subcommand"});
  EXPECT_TRUE(files().empty());
}

TEST_F(Outputs, VersionPrintsTheProjectVersion) {
  const Outcome r = run("--version");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "strata 0.1.0\n");
}

}  // namespace
