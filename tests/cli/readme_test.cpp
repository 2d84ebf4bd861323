// The README against the strata command: every subcommand the README names (`strata <cmd>` in
// backquotes, or `cli/strata <cmd>` in a shell example) exists, that is `strata <cmd> --help`
// exits 0 with that subcommand's usage, and every subcommand that `strata --help` lists is named
// in the README. strata-sim, the Quickstart's binary, has the explorer and no command that runs
// Plans for real.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

struct Outcome {
  int rc = 0;
  std::string out;
};

Outcome run(const std::string& args, const std::string& binary = STRATA_BINARY) {
  const std::string cmd = binary + " " + args + " 2>&1";
  Outcome r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {127, "popen failed: " + cmd};
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) r.out += buf.data();
  const int status = ::pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

std::string readme() {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/README.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The subcommands the README names: `strata <cmd>` or cli/strata <cmd>.
std::set<std::string> named_in(const std::string& text) {
  static const std::regex named_pattern("(?:`|cli/)strata ([a-z][a-z-]*)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), named_pattern); it != std::sregex_iterator();
       ++it)
    names.insert((*it)[1].str());
  return names;
}

// The subcommands `strata --help` lists: the first word of each indented line after the line
// "Subcommands:" (CLI11's layout), up to the next line that is not indented.
std::set<std::string> listed_in_help(const std::string& help) {
  std::set<std::string> names;
  std::istringstream lines(help);
  std::string line;
  bool inside = false;
  static const std::regex entry_pattern("^\\s+([a-z][a-z-]*)(\\s.*)?$");
  while (std::getline(lines, line)) {
    if (!inside) {
      inside = line.find("ubcommands:") != std::string::npos || line.find("UBCOMMANDS:") != std::string::npos;
      continue;
    }
    std::smatch m;
    if (line.empty()) continue;
    if (!std::regex_match(line, m, entry_pattern)) break;
    names.insert(m[1].str());
  }
  return names;
}

TEST(Readme, KeepsTheAnchorWorkloadsCommand) {
  const std::string text = readme();
  ASSERT_FALSE(text.empty()) << "README.md not read";
  EXPECT_GE(named_in(text).size(), 5u);
  EXPECT_NE(text.find("build/cli/strata simulate --platform platforms/anchor-1024.xml"), std::string::npos);
}

TEST(Readme, EverySubcommandItNamesAnswersHelp) {
  for (const std::string& cmd : named_in(readme())) {
    const Outcome r = run(cmd + " --help");
    // An unknown subcommand with --help prints the top-level help and exits 0: the usage line
    // must be the subcommand's own.
    const std::regex usage("Usage: \\S*strata " + cmd + "( |\n)");
    EXPECT_EQ(r.rc, 0) << "`strata " << cmd << " --help` exits " << r.rc << ":\n" << r.out;
    EXPECT_TRUE(std::regex_search(r.out, usage))
        << "the README names `strata " << cmd << "`, which is not a subcommand:\n"
        << r.out;
  }
}

TEST(Readme, NamesEverySubcommandTheHelpLists) {
  const Outcome help = run("--help");
  ASSERT_EQ(help.rc, 0) << help.out;
  const auto listed = listed_in_help(help.out);
  ASSERT_GE(listed.size(), 5u) << "no subcommand list found in:\n" << help.out;
  const auto named = named_in(readme());
  for (const std::string& cmd : listed)
    EXPECT_EQ(named.count(cmd), 1u) << "`strata --help` lists " << cmd << ", the README does not name it";
}

TEST(Readme, QuickstartsStrataSimHasTheExplorerAndNoRealRun) {
  const Outcome sim = run("--help", STRATA_SIM_BINARY);
  ASSERT_EQ(sim.rc, 0) << sim.out;
  const auto sim_listed = listed_in_help(sim.out);
  const auto listed = listed_in_help(run("--help").out);
  EXPECT_EQ(sim_listed.count("explore"), 1u) << sim.out;
  EXPECT_EQ(sim_listed.count("simulate"), 1u) << sim.out;
  for (const char* real : {"run", "calibrate", "validate", "compare-solvers"})
    EXPECT_EQ(sim_listed.count(real), 0u) << real << " in strata-sim:\n" << sim.out;
  for (const std::string& cmd : sim_listed) EXPECT_EQ(listed.count(cmd), 1u) << cmd << " is not in strata";
}

}  // namespace
