// What the tests of the strata command share: a fixture that gives each test a folder of its own
// (removed afterwards) and runs `strata <args>` as a process, keeping its exit status, stdout and
// stderr apart.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace strata_test {

struct Outcome {
  int rc = 0;
  std::string out;
  std::string err;
};

class CliProcess : public ::testing::Test {
 protected:
  // `prefix` names the test's folder under the temporary directory; `in_dir` runs the command
  // there (relative outputs land in it) rather than in the test's own working directory.
  CliProcess(std::string prefix, bool in_dir) : prefix_(std::move(prefix)), in_dir_(in_dir) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // One line on stderr naming `expected`, exit 1, and (given `output`) no file there and no
  // temporary left in the test's folder.
  void expect_one_line_error(const Outcome& r, const std::string& expected,
                             const std::string& output = "") const {
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << "stderr: " << r.err;
    if (output.empty()) return;
    EXPECT_FALSE(std::filesystem::exists(output)) << output << " was written";
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path() << " left behind";
  }

  Outcome run(const std::string& args) const {
    const std::string err_file = path("stderr.txt");
    const std::string cmd = (in_dir_ ? "cd " + dir_.string() + " && " : std::string()) + STRATA_BINARY + " " +
                            args + " 2>" + err_file;
    Outcome r;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (pipe == nullptr) return {127, "", "popen failed: " + cmd};
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) r.out += buf.data();
    const int status = ::pclose(pipe);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    r.err = slurp(err_file);
    return r;
  }

  static std::string slurp(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  void write(const std::string& name, const std::string& content) const {
    std::ofstream(path(name)) << content;
  }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
  bool in_dir_;
};

}  // namespace strata_test
