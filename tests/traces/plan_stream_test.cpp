// The streaming Plan reader and writer: stored Plans (written by strata before the reader
// streamed) read and write back byte for byte; inputs are bounded; out of memory is one line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../input_error.hpp"
#include "../temp_dir.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/json_stream.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata {
namespace {

namespace fs = std::filesystem;

class PlanStreamTest : public strata_test::TempDirTest {
 protected:
  PlanStreamTest() : TempDirTest("strata_plan_stream_") {}
};

using strata_test::slurp;
using strata_test::spit;

// The message of the InputError that `read` throws ("" if none).
template <class F>
std::string error_of(F read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string kData = std::string(STRATA_SOURCE_DIR) + "/tests/traces/data";

// Plans of four solvers written by `strata plan` before the writer streamed (tests/traces/data/plans).
TEST_F(PlanStreamTest, StoredPlansReadAsTheirDocumentsAndWriteBackByteForByte) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kData + "/plans")) {
    const std::string file = entry.path().string();
    SCOPED_TRACE(file);
    const Plan streamed = read_plan(file);
    EXPECT_EQ(plan_to_json(streamed), plan_to_json(plan_from_json(read_json_file(file), file)));
    write_plan(streamed, path("back.json"));
    EXPECT_EQ(slurp(path("back.json")), slurp(file));
    ++files;
  }
  EXPECT_EQ(files, 4);
}

TEST_F(PlanStreamTest, VersionOnePlanReadsAsItsDocument) {
  const std::string file = kData + "/plan_v1_ampnet.json";
  EXPECT_EQ(plan_to_json(read_plan(file)), plan_to_json(plan_from_json(read_json_file(file), file)));
}

TEST_F(PlanStreamTest, ElementsOfStreamedArraysArriveInOrderAndStandAsEmptyArrays) {
  spit(path("d.json"), R"({"a":1,"tasks":[{"x":1},2,[3]],"b":{"tasks":[4]}})");
  std::vector<std::string> seen;
  const nlohmann::json rest =
      stream_json_file(path("d.json"), {"tasks"},
                       [&](std::string_view array, std::size_t index, const nlohmann::json& element,
                           const nlohmann::json& root) {
                         seen.push_back(std::string(array) + std::to_string(index) + "=" + element.dump());
                         EXPECT_EQ(root["a"], 1);
                       });
  EXPECT_EQ(seen, (std::vector<std::string>{"tasks0={\"x\":1}", "tasks1=2", "tasks2=[3]"}));
  EXPECT_EQ(rest, nlohmann::json::parse(R"({"a":1,"tasks":[],"b":{"tasks":[4]}})"));
}

TEST_F(PlanStreamTest, DevZeroIsRefusedInOneLine) {
  const std::string what = error_of([] { read_plan("/dev/zero"); });
  EXPECT_EQ(what.rfind("/dev/zero:1:1: parse error: ", 0), 0u) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos);
}

// A pipe has no size: what is read from it stops at the cap (4 GiB for the CLI; 1 MiB here).
TEST_F(PlanStreamTest, PipeBeyondTheCapIsRefused) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([fd = fds[1]] {
    // Once the reader stops, write() fails with EPIPE instead of the process dying of SIGPIPE.
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    const std::string spaces(1 << 16, ' ');
    for (int i = 0; i < 40; ++i)
      if (::write(fd, spaces.data(), spaces.size()) < 0) break;  // the reader has gone
    ::close(fd);
  });
  const std::string source = "/proc/self/fd/" + std::to_string(fds[0]);
  const std::string what = error_of([&] { stream_json_file(source, {}, {}, std::uint64_t{1} << 20); });
  ::close(fds[0]);
  writer.join();
  EXPECT_EQ(what,
            source + ": more than 1 MiB from an input that is not a regular file (pipe or device); refused");
}

TEST_F(PlanStreamTest, NumberOutOfRangeNamesLineAndColumn) {
  spit(path("p.json"), "{\"schema_version\":2,\n\"num_workers\":1e999}");
  EXPECT_EQ(error_of([&] { read_plan(path("p.json")); }),
            path("p.json") + ":2:19: parse error: number overflow parsing '1e999'");
}

TEST_F(PlanStreamTest, ArrayAtTheTopIsRefusedBeforeItIsRead) {
  spit(path("p.json"), "[1,2,3]");
  EXPECT_EQ(error_of([&] { read_plan(path("p.json")); }),
            path("p.json") + ": expected an object, got an array");
}

TEST_F(PlanStreamTest, TasksBeforeBuffersAndRepeatedTasksAreNamed) {
  const std::string header = R"({"schema_version":2,"format":"strata-plan","num_workers":1,)";
  spit(path("p.json"), header +
                           R"("tasks":[{"id":"a","kind":"fixed","worker":0,"flops":0,"reads":["b0"]}],)" +
                           R"("buffers":[{"id":"b0","worker":0,"bytes":4}]})");
  EXPECT_EQ(error_of([&] { read_plan(path("p.json")); }),
            path("p.json") +
                ": /tasks/0/reads/0: unknown buffer 'b0' (the \"buffers\" list must come before \"tasks\")");
  spit(path("p.json"), header + R"("tasks":[],"tasks":[]})");
  EXPECT_EQ(error_of([&] { read_plan(path("p.json")); }), path("p.json") + ": /tasks: duplicate field");
}

// A Plan file of `tasks` independent tasks.
void write_chain_plan(const std::string& file, int tasks) {
  Plan plan(1);
  for (int i = 0; i < tasks; ++i) {
    Task t;
    t.id = "it0/mb" + std::to_string(i) + "/fwd/l0/a_task_id_of_realistic_length";
    t.kind = TaskKind::fixed;
    t.worker = 0;
    t.attrs = {{"duration_s", 1e-3}, {"shape", std::vector<std::int64_t>{64, 128, 256}}};
    plan.add_task(std::move(t));
  }
  write_plan(plan, file);
}

// Reads `file` in a child whose address space may grow `headroom` bytes beyond what it maps now;
// the child exits 0 if it got the one-line out-of-memory error, 1 on another error, 2 if it read
// the Plan. A std::bad_alloc through a noexcept destructor would abort it instead.
int read_under_limit(const std::string& file, rlim_t headroom, std::string& message) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    ::malloc_trim(0);  // what the parent freed (writing the file) would otherwise count as room
    std::ifstream statm("/proc/self/statm");
    rlim_t pages = 0;
    statm >> pages;
    const rlim_t limit = pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + headroom;
    const rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    int code = 2;
    std::string what;
    try {
      read_plan(file);
    } catch (const InputError& e) {
      what = e.what();
      code = what.find(": out of memory reading the Plan after ") != std::string::npos ? 0 : 1;
    }
    if (::write(fds[1], what.data(), what.size()) < 0) code = 3;
    ::_exit(code);
  }
  ::close(fds[1]);
  char buffer[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) message.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(PlanStreamTest, OutOfMemoryIsOneLineWithTheTasksRead) {
  if (STRATA_TEST_UNDER_ASAN) GTEST_SKIP() << "an address-space limit starves AddressSanitizer's allocator";
  write_chain_plan(path("big.json"), 100000);
  std::string message;
  EXPECT_EQ(read_under_limit(path("big.json"), rlim_t{8} << 20, message), 0) << message;
  EXPECT_EQ(message.rfind(path("big.json") + ": out of memory reading the Plan after ", 0), 0u) << message;
  EXPECT_NE(message.find(" tasks ("), std::string::npos) << message;
  EXPECT_NE(message.find(" GB of address space in use)"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace strata
