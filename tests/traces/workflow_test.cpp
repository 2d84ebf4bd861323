// Workflow DAGs read from outside (workflow.hpp): SimGrid's Montage_25 DAX (tests/data/simgrid,
// LGPL-2.1, see its NOTICE.md) with figures counted from the file by hand, WfFormat 1.5 and the
// older single task list, and one line for each bad file.
#include "strata/traces/workflow.hpp"

#include <gtest/gtest.h>

#include <string>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

const std::string kMontage = std::string(STRATA_SOURCE_DIR) + "/tests/data/simgrid/Montage_25.xml";

TEST(Workflow, ReadsSimGridsMontageDax) {
  const Workflow w = read_workflow(kMontage);
  EXPECT_EQ(w.format, "dax");
  EXPECT_EQ(w.name, "test");
  ASSERT_EQ(w.tasks.size(), 25u);
  const WorkflowTask& first = w.tasks[0];
  EXPECT_EQ(first.id, "ID00000");
  EXPECT_EQ(first.name, "mProjectPP");
  EXPECT_DOUBLE_EQ(first.runtime_s, 13.39);
  ASSERT_EQ(first.inputs.size(), 2u);
  ASSERT_EQ(first.outputs.size(), 2u);
  EXPECT_DOUBLE_EQ(first.inputs[1].bytes, 4222080);
  double runtime = 0;
  std::size_t edges = 0;
  for (const WorkflowTask& t : w.tasks) runtime += t.runtime_s, edges += t.parents.size();
  EXPECT_NEAR(runtime, 227.75, 1e-9);         // the 25 runtimes summed
  EXPECT_EQ(edges, 45u);                      // the <parent> elements of the 20 <child> elements
  EXPECT_EQ(w.tasks[14].parents.size(), 9u);  // mConcatFit waits for every mDiffFit
  // ID00005 reads both files ID00000 writes, at the sizes it declares (4,167,312 B each), and
  // mJPEG the one file mShrink writes.
  EXPECT_DOUBLE_EQ(transfer_bytes(w, 0, 5), 2 * 4167312.0);
  EXPECT_DOUBLE_EQ(transfer_bytes(w, 23, 24), 1861129);
  EXPECT_DOUBLE_EQ(transfer_bytes(w, 24, 23), 0);
}

TEST(Workflow, ReadsWfFormatOneFiveAndTheOlderTaskList) {
  const Workflow a = parse_wfformat(R"({"name": "diamond", "schemaVersion": "1.5", "workflow": {
    "specification": {
      "tasks": [{"name": "split", "id": "t0", "parents": [], "children": ["t1", "t2"], "outputFiles": ["a", "b"]},
                {"name": "left", "id": "t1", "parents": ["t0"], "inputFiles": ["a"], "outputFiles": ["c"]},
                {"name": "right", "id": "t2", "parents": ["t0"], "inputFiles": ["b"]},
                {"name": "join", "id": "t3", "parents": ["t1", "t2"], "inputFiles": ["c"]}],
      "files": [{"id": "a", "sizeInBytes": 1000}, {"id": "b", "sizeInBytes": 2000}, {"id": "c", "sizeInBytes": 30}]},
    "execution": {"makespanInSeconds": 9, "tasks": [{"id": "t0", "runtimeInSeconds": 1}, {"id": "t1", "runtimeInSeconds": 2},
                                                   {"id": "t2", "runtimeInSeconds": 3.5}, {"id": "t3", "runtimeInSeconds": 4}]}}})",
                                    "diamond.json");
  ASSERT_EQ(a.tasks.size(), 4u);
  EXPECT_EQ(a.format, "wfformat");
  EXPECT_DOUBLE_EQ(a.tasks[2].runtime_s, 3.5);
  EXPECT_EQ(a.tasks[3].parents, (std::vector<std::size_t>{1, 2}));
  EXPECT_DOUBLE_EQ(transfer_bytes(a, 0, 2), 2000);
  EXPECT_DOUBLE_EQ(transfer_bytes(a, 1, 3), 30);
  EXPECT_DOUBLE_EQ(transfer_bytes(a, 2, 3), 0);
  const Workflow b = parse_wfformat(R"({"name": "old", "schemaVersion": "1.3", "workflow": {"tasks": [
    {"name": "x", "runtimeInSeconds": 5, "parents": [], "files": [{"link": "output", "name": "f", "sizeInBytes": 7}]},
    {"name": "y", "runtime": 6, "parents": ["x"], "files": [{"link": "input", "name": "f", "size": 7}]}]}})",
                                    "old.json");
  ASSERT_EQ(b.tasks.size(), 2u);
  EXPECT_EQ(b.tasks[1].parents, (std::vector<std::size_t>{0}));
  EXPECT_DOUBLE_EQ(transfer_bytes(b, 0, 1), 7);
}

std::string refusal(const std::string& text, bool dax) {
  try {
    if (dax)
      parse_dax(text, "w.xml");
    else
      parse_wfformat(text, "w.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Workflow, BadFilesAreRefusedInOneLine) {
  const std::string job = R"(<job id="A" name="a" runtime="1"/>)";
  struct Case {
    std::string text;
    bool dax;
    std::string expected;
  };
  const Case cases[] = {
      {"<adag>" + job +
           R"(<job id="B" runtime="2"/><child ref="A"><parent ref="B"/></child>)"
           R"(<child ref="B"><parent ref="A"/></child></adag>)",
       true, "is on a dependency cycle"},
      {"<adag>" + job + R"(<child ref="A"><parent ref="Z"/></child></adag>)", true,
       "parent 'Z' is not a job"},
      {R"(<adag><job id="A" runtime="-1"/></adag>)", true, "runtime '-1' is not a number of seconds >= 0"},
      {R"(<adag><job id="A"/></adag>)", true, "job 'A' has no runtime"},
      {"<adag>" + job + job + "</adag>", true, "job 'A' twice"},
      {"<adag>\n<job id=\"A\" runtime=\"1\">\n</adag>", true, "w.xml:3: XML: mismatched tag"},
      {"<adag></adag>", true, "no job"},
      {R"(<adag><job id="A" runtime="1"><uses file="f" link="input" size="x"/></job></adag>)", true,
       "size 'x' is not a number of bytes"},
      {R"({"workflow": {"tasks": [{"name": "x", "runtime": 1, "parents": ["q"]}]}})", false,
       "parent 'q' is not a task"},
      {R"({"workflow": {"tasks": [{"name": "x", "runtime": -2}]}})", false, "negative value"},
      {R"({"workflow": {"specification": {"tasks": [{"id": "t"}]}}})", false, "has no runtimeInSeconds"},
      {R"({"workflow": {"tasks": []}})", false, "no task"},
  };
  for (const Case& c : cases) {
    const std::string message = refusal(c.text, c.dax);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.text << " -> " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  try {
    read_workflow(std::string(STRATA_SOURCE_DIR) + "/README.md");
    ADD_FAILURE() << "README.md read as a workflow";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("neither a DAX (XML) nor a WfFormat (JSON) workflow"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace strata
