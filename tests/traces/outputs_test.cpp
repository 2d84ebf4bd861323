// OutputSet: staged outputs are written together or not at all, temporaries never outlive a
// failure or a signal, and write_file_atomically respects what is at a path.
#include "strata/traces/outputs.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "../temporary_names.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace {

namespace fs = std::filesystem;
using strata::InputError;
using strata::OutputSet;

class OutputSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-outputs-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void spit(const std::string& file, const std::string& text) { std::ofstream(file) << text; }
  std::set<std::string> files() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

TEST_F(OutputSetTest, NothingIsFinalBeforeCommit) {
  OutputSet set;
  set.add_output("--a", path("a.json"));
  set.add_output("--b", path("b.json"));
  set.check();
  set.stage(path("a.json"), "A");
  set.stage(path("b.json"), "B");
  EXPECT_FALSE(fs::exists(path("a.json")));
  set.commit();
  EXPECT_EQ(slurp(path("a.json")), "A");
  EXPECT_EQ(slurp(path("b.json")), "B");
  EXPECT_EQ(files(), (std::set<std::string>{"a.json", "b.json"}));
}

TEST_F(OutputSetTest, AnUncommittedSetLeavesNothing) {
  {
    OutputSet set;
    set.add_output("--a", path("a.json"));
    set.check();
    set.stage(path("a.json"), "A");
  }
  EXPECT_TRUE(files().empty());
}

TEST_F(OutputSetTest, AFailedRenameMidwayPutsBackWhatWasWritten) {
  spit(path("a.json"), "old a");
  OutputSet set;
  set.add_output("--a", path("a.json"));
  set.add_output("--b", path("b.json"));
  set.add_output("--c", path("c.json"));
  set.check();
  set.stage(path("a.json"), "new a");
  set.stage(path("b.json"), "new b");
  set.stage(path("c.json"), "new c");
  // c.json becomes a non-empty folder after staging: its rename fails.
  fs::create_directories(path("c.json/inside"));
  try {
    set.commit();
    FAIL() << "commit succeeded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--c"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("put back"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(path("a.json")), "old a");
  EXPECT_FALSE(fs::exists(path("b.json")));
  EXPECT_EQ(files(), (std::set<std::string>{"a.json", "c.json"}));
}

TEST_F(OutputSetTest, SigtermRemovesTheTemporaries) {
  const pid_t child = ::fork();
  if (child == 0) {
    OutputSet set;
    set.add_output("--a", path("a.json"));
    set.check();
    set.stage(path("a.json"), "A");
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(files().empty());
}

using strata_test::temporary_of;
using strata_test::this_host;
using strata_test::this_pid_namespace;

TEST_F(OutputSetTest, StaleTemporariesOnlyOfDeadProcessesOfThisHostAndContainer) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const std::string dead = std::to_string(child);
  spit(path(temporary_of(child)), "stale");
  const std::set<std::string> kept = {
      temporary_of(::getppid()),              // a live process's
      temporary_of(child, "another_host"),    // another machine's, sharing the folder
      temporary_of(child, this_host(), "1"),  // another container's
      "notes.tmp." + dead,                    // a user's file
      "x.json.tmp." + dead,                   // no name strata writes
      ".strata-" + dead + "-" + this_pid_namespace() + "-0123-" + this_host() + ".tmp",  // not quite
  };
  for (const std::string& name : kept) spit(path(name), "keep");
  // A link of a stale temporary's shape: only regular files are removed.
  const std::string link =
      ".strata-" + dead + "-" + this_pid_namespace() + "-fedcba9876543210-" + this_host() + ".tmp";
  fs::create_symlink("elsewhere", path(link));
  EXPECT_EQ(strata::remove_stale_temporaries(dir_.string()), 1);
  std::set<std::string> expected = kept;
  expected.insert(link);
  EXPECT_EQ(files(), expected);
}

TEST_F(OutputSetTest, AWriteLeavesAUsersTmpFilesAlone) {
  spit(path("notes.tmp.31999"), "mine");
  strata::write_file_atomically(path("sp.json"), "{}");
  EXPECT_EQ(files(), (std::set<std::string>{"notes.tmp.31999", "sp.json"}));
}

TEST_F(OutputSetTest, AStagedTemporaryIsHiddenAndNamesItsProcess) {
  OutputSet set;
  set.add_output("--a", path("a.json"));
  set.check();
  set.stage(path("a.json"), "A");
  const std::set<std::string> names = files();
  ASSERT_EQ(names.size(), 1U);
  const std::string name = *names.begin();
  EXPECT_EQ(name.rfind(".strata-" + std::to_string(::getpid()) + "-" + this_pid_namespace() + "-", 0), 0U)
      << name;
  EXPECT_NE(name.find("-" + this_host() + ".tmp"), std::string::npos) << name;
}

TEST_F(OutputSetTest, AnOutputThatIsAFileReadIsRefusedWhenStaged) {
  spit(path("platform.xml"), "<platform/>");
  OutputSet set;
  set.add_output("--csv", path("platform.xml"));
  set.check();  // no flag names platform.xml as an input
  strata::StagingScope scope(set);
  strata::note_input(path("platform.xml"));  // a reader opened it (a search spec named it)
  try {
    strata::write_file_atomically(path("platform.xml"), "a,b\n");
    FAIL() << "staged over an input";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("an output never overwrites an input"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(slurp(path("platform.xml")), "<platform/>");
}

TEST_F(OutputSetTest, WriteFileAtomicallyKeepsALinkAndADevice) {
  spit(path("target"), "old");
  fs::create_symlink(path("target"), path("link"));
  strata::write_file_atomically(path("link"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link")));
  EXPECT_EQ(slurp(path("target")), "new");
  strata::write_file_atomically("/dev/null", "nothing");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_THROW(strata::write_file_atomically("/dev/full", "x"), InputError);
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

TEST_F(OutputSetTest, AStreamingWriterWritesStraightIntoTheTemporary) {
  strata::write_file_with(path("s.txt"), [](std::ostream& out) {
    for (int i = 0; i < 3; ++i) out << i << '\n';
  });
  EXPECT_EQ(slurp(path("s.txt")), "0\n1\n2\n");
  spit(path("kept.txt"), "before");
  EXPECT_THROW(strata::write_file_with(path("kept.txt"),
                                       [](std::ostream& out) {
                                         out << "half";
                                         throw InputError("kept.txt: /x: not finite");
                                       }),
               InputError);
  EXPECT_EQ(slurp(path("kept.txt")), "before");
  EXPECT_EQ(files(), (std::set<std::string>{"s.txt", "kept.txt"}));
}

TEST_F(OutputSetTest, AFifoIsWrittenInPlace) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  const pid_t reader = ::fork();
  if (reader == 0) {
    std::ifstream in(path("fifo"));
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ::_exit(got == "through the pipe" ? 0 : 1);
  }
  strata::write_file_atomically(path("fifo"), "through the pipe");
  int status = 0;
  ASSERT_EQ(::waitpid(reader, &status, 0), reader);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(fs::is_fifo(path("fifo")));
  EXPECT_EQ(files(), (std::set<std::string>{"fifo"}));
}

TEST_F(OutputSetTest, InputsAndOtherOutputsAreNotOverwritten) {
  spit(path("in.json"), "input");
  OutputSet set;
  set.add_input("--plan", path("in.json"));
  set.add_output("--trace", path("in.json"));
  EXPECT_THROW(set.check(), InputError);
  OutputSet twice;
  twice.add_output("--trace", path("t.json"));
  twice.add_output("--perfetto", path(".") + "/t.json");
  EXPECT_THROW(twice.check(), InputError);
  OutputSet devices;
  devices.add_output("--trace", "/dev/null");
  devices.add_output("--perfetto", "/dev/null");
  EXPECT_NO_THROW(devices.check());
  EXPECT_EQ(slurp(path("in.json")), "input");
}

}  // namespace
