// Inputs the fuzz harnesses found (tests/fuzz, docs/fuzzing.md), each now refused with one line
// that names its file. Each test keeps the finding's input, cut to what triggers it.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "../input_error.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/plan_json.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata {
namespace {

using test::error_of;

// experiment harness, crash-e139c716: a number beyond double's range escaped the JSON readers as
// nlohmann's out_of_range.406 ("internal error" in the CLI), with no file named.
TEST(FuzzFindings, NumberBeyondDoubleIsAParseErrorNamingTheFile) {
  EXPECT_EQ(error_of([] { parse_json_text(R"({"strategy": {"dp": 101e999}})", "s.json"); }),
            "s.json:1:27: parse error: number overflow parsing '101e999'");
  EXPECT_EQ(error_of([] {
              plan_from_json(parse_json_text(R"({"schema_version":2,"tasks":[{"flops":1e999}]})", "p.json"),
                             "p.json");
            }),
            "p.json:1:43: parse error: number overflow parsing '1e999'");
  EXPECT_EQ(error_of([] {
              trace_from_json(parse_json_text(R"({"records":[{"end":-1e400}]})", "t.json"), "t.json");
            }),
            "t.json:1:25: parse error: number overflow parsing '-1e400'");
}

// What the calibration harness found (crash-b0a568c1) holds for every reader that names a JSON
// pointer: a key's control characters are escaped in it, so the message stays one line.
TEST(FuzzFindings, PointerToAKeyWithControlCharactersIsOneLine) {
  EXPECT_EQ(json_pointer_token("a\nb\x01/~"), R"(a\nb\x01~1~0)");
  const std::string error = error_of([] {
    plan_from_json(parse_json_text("{\"schema_version\":2,\"format\":\"strata-plan\",\"x\\ny\":1}", "p.json"),
                   "p.json");
  });
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_EQ(error.rfind("p.json: ", 0), 0u) << error;
}

// plan harness, crash-060567fe: a key twice in one object ("tasks" twice, "kind" twice in a task).
// The streamed reader (read_plan) refused the second "tasks" and the whole-document reader kept
// the last silently: the two disagreed. Both refuse it now, in one line.
TEST(FuzzFindings, KeyTwiceInOneObjectIsRefused) {
  EXPECT_EQ(error_of([] { parse_json_text(R"({"schema_version":2,"tasks":[],"tasks":[]})", "p.json"); }),
            "p.json: /tasks: duplicate key 'tasks' in one object");
  EXPECT_EQ(error_of([] { parse_json_text(R"({"tasks":[{"kind":"send","kind":"recv"}]})", "p.json"); }),
            "p.json: duplicate key 'kind' in one object");
}

}  // namespace
}  // namespace strata
