// Inputs the fuzz harnesses found (tests/fuzz, docs/fuzzing.md), each now refused with one line
// that names its file or flag. Each test keeps the finding's input, cut to what triggers it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "../input_error.hpp"
#include "strata/models/cost/cost_model.hpp"
#include "strata/models/experiment.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
namespace {

using test::error_of;

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / name).string();
  std::ofstream(path) << text;
  return path;
}

// experiment harness, crash-e139c716: out_of_range.406 escaped the spec reader.
TEST(FuzzFindings, SpecNumberBeyondDoubleIsAParseErrorNamingTheFile) {
  EXPECT_EQ(error_of([] {
              experiment_from_json(parse_json_text(R"({"strategy": {"dp": 101e999}})", "s.json"), "s.json");
            }),
            "s.json:1:27: parse error: number overflow parsing '101e999'");
}

// The calibration reader parses on its own: the same number escaped it too.
TEST(FuzzFindings, CalibrationNumberBeyondDoubleIsInvalidJsonNamingTheFile) {
  const std::string path =
      write_file("fuzz-overflow.json", R"({"schema_version": 2, "default_mem_efficiency": 1e999})");
  EXPECT_EQ(error_of([&] { load_calibration(path); }),
            path + ": invalid JSON: number overflow parsing '1e999'");
}

// calibration harness, crash-b0a568c1 (an unknown key with newlines in it): the JSON pointer
// naming the key carried them raw, so the message spread over several lines.
TEST(FuzzFindings, UnknownCalibrationKeyWithNewlinesIsNamedInOneLine) {
  const std::string path = write_file(
      "fuzz-key.json", "{\"schema_version\": 2, \"formav--[\\n---v-ency\": {\"linear_fwd/bf15\": 10.72}}");
  EXPECT_EQ(error_of([&] { load_calibration(path); }), path + R"(: /formav--[\n---v-ency: unknown key)");
}

// calibration harness, crash-3ad19b87: a table key whose dtype part held a newline
// ("conv_fwd/fp-$\n---inear_fwd") was quoted raw in "unknown dtype". Experiment harness,
// crash-abe359f1: the same for an unknown model name. Both are escaped now.
TEST(FuzzFindings, UnknownNamesWithNewlinesAreQuotedInOneLine) {
  const std::string path = write_file(
      "fuzz-dtype.json", "{\"schema_version\": 2, \"flops_efficiency\": {\"conv_fwd/fp-$\\n---x\": 0.5}}");
  EXPECT_EQ(error_of([&] { load_calibration(path); }),
            path + R"(: /flops_efficiency/conv_fwd~1fp-$\n---x: unknown dtype 'fp-$\n---x')");
  const std::string spec = error_of([] {
    experiment_from_json(
        parse_json_text("{\"schema_version\": 1, \"model\": {\"name\": \"ml\\np\"}}", "s.json"), "s.json");
  });
  EXPECT_EQ(spec.find('\n'), std::string::npos) << spec;
  EXPECT_NE(spec.find(R"(unknown value 'ml\np')"), std::string::npos) << spec;
}

// set harness, crash-3df95193 (model mlp, "bucktree\nlr=0.01"): a control character in the
// argument was copied raw into the message, which then spread over several lines. --strategy
// copied its argument the same way.
TEST(FuzzFindings, ControlCharactersInFlagsAreRefusedInOneLine) {
  StrategyConfig config;
  EXPECT_EQ(error_of([&] { parse_strategy("dp=a\nb", config); }),
            R"(--strategy 'dp=a\nb': control character in the argument)");
  Experiment e;
  e.model = "mlp";
  EXPECT_EQ(error_of([&] { apply_set(e, "bucktree\nlr=0.01"); }),
            R"(--set 'bucktree\nlr=0.01': control character in the argument)");
  EXPECT_EQ(error_of([&] { apply_set(e, "dp_algo=ring\r"); }),
            R"(--set 'dp_algo=ring\x0d': control character in the argument)");
}

// What the strategy harness checks: dimensions each within an int whose product overflowed
// StrategyConfig::workers() (undefined behaviour) were accepted.
TEST(FuzzFindings, StrategyWithMoreWorkersThanAnIntIsRefused) {
  StrategyConfig config;
  EXPECT_EQ(error_of([&] { parse_strategy("dp=65536,tp=65536", config); }),
            "--strategy 'dp=65536,tp=65536': 4294967296 workers, more than strata numbers (2147483647)");
  parse_strategy("dp=65536,tp=32767", config);
  EXPECT_EQ(config.workers(), 65536 * 32767);
}

}  // namespace
}  // namespace strata
