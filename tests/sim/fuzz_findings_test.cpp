// Platforms the platform fuzz harness found (tests/fuzz, docs/fuzzing.md), each now refused with
// one line that names the file. Each test runs in its own process (one SimGrid engine each).
#include <gtest/gtest.h>

#include <string>

#include "sim_fixtures.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

std::string load_error(const std::string& path) {
  try {
    load_platform_summary(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no InputError";
}

// platform harness, crash-df4e7e62 (a100-cluster-64.xml with a backspace before the idle
// wattage): a malformed host property was reported without the file, its control character raw.
TEST(FuzzFindings, MalformedHostPropertyNamesTheFileInOneLine) {
  const std::string path = test::write_temp(
      "fuzz-wattage.xml",
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n"
      "<cluster id=\"c\" prefix=\"node-\" radical=\"0-1\" suffix=\"\" speed=\"1e12f\" core=\"8\" "
      "bw=\"200GBps\" lat=\"0.7us\">\n"
      "<prop id=\"wattage_per_state\" value=\"\b500:1500:6500\"/>\n"
      "</cluster>\n</platform>\n");
  // The platform validation now refuses the control character itself (XML 1.0 has none).
  EXPECT_EQ(load_error(path), path + ":5: XML: not well-formed (invalid token)");
}

// platform harness, crash-cb922d14 and crash-395e2311 (tests/fuzz/corpus/platform): SimGrid 3.32
// aborted on a FAT_TREE cluster with fewer radicals than leaves ("Insufficient number of radicals
// available") and on an unknown routing model ("Not a valid model!"); the platform validation
// refuses both before SimGrid sees them.
TEST(FuzzFindings, PlatformsThatAbortedSimGridAreOneLineNamingTheFile) {
  for (const char* name : {"crash-cb922d14-fattree-radicals.xml", "crash-395e2311-unknown-routing.xml"}) {
    const std::string path = std::string(STRATA_SOURCE_DIR) + "/tests/fuzz/corpus/platform/" + name;
    const std::string error = load_error(path);
    EXPECT_EQ(error.rfind(path + ":", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace strata
