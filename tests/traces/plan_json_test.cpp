// Plan JSON: round trips, determinism, one-line errors, atomic writes, cycle reports.
#include "strata/traces/plan_json.hpp"
#include "../temp_dir.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
namespace {

namespace fs = std::filesystem;

class PlanJsonTest : public strata_test::TempDirTest {
 protected:
  PlanJsonTest() : TempDirTest("strata_plan_json_") {}
};

using strata_test::slurp;
using strata_test::spit;

Task make_task(std::string id, TaskKind kind, WorkerId worker) {
  Task t;
  t.id = std::move(id);
  t.kind = kind;
  t.worker = worker;
  t.stream = is_communication(kind) ? Stream::comm : Stream::compute;
  return t;
}

// Every field set to something other than its default somewhere, and a dependency on a task
// further down the list (files may name tasks before defining them).
Plan sample_plan() {
  Plan plan(3);
  plan.info.model = "mlp-3";
  plan.info.strategy = "dp=3";
  plan.info.schedule = PlanSchedule::none;
  plan.info.optimizer = "adam";
  plan.info.dtype = DType::bf16;
  plan.info.global_batch = 96;
  plan.info.microbatches = 4;
  plan.info.tokens_per_sample = 2;
  plan.info.model_flops_per_iteration = 1.5e12;
  plan.info.seed = 42;
  plan.add_buffer(Buffer{"dp0/w/l0", 0, 4096, DType::bf16, true});
  plan.add_buffer(Buffer{"dp0/act/l0", 0, 1024.5, DType::fp32, false});

  Task fwd = make_task("it0/dp0/fwd/l0", TaskKind::linear_fwd, 0);
  fwd.dtype = DType::bf16;
  fwd.iteration = 1;
  fwd.priority = -3;
  fwd.flops = 2.5e9;
  fwd.bytes_read = 4096;
  fwd.bytes_written = 1024.5;
  fwd.mem_alloc = 1024.5;
  fwd.mem_free = 0.25;
  fwd.reads = {0};
  fwd.writes = {1};
  fwd.attrs = {{"m", std::int64_t{128}},
               {"scale", 2.0},
               {"act", std::string("gelu")},
               {"shape", std::vector<std::int64_t>{4, -1, 8}},
               {"empty", std::vector<std::int64_t>{}}};
  plan.add_task(fwd);

  Task send = make_task("it0/dp0/send", TaskKind::send, 0);
  send.peer = 1;
  send.comm_bytes = 1e6;
  plan.add_task(send);
  Task recv = make_task("it0/dp1/recv", TaskKind::recv, 1);
  recv.peer = 0;
  recv.comm_bytes = 1e6;
  plan.add_task(recv);

  Task ar;
  ar.id = "it0/ar/l0";
  ar.kind = TaskKind::allreduce;
  ar.stream = Stream::comm;
  ar.group = {2, 0, 1};
  ar.algo = CollectiveAlgo::halving_doubling;
  ar.comm_bytes = 0;  // required field, written even when zero
  plan.add_task(ar);

  Task init = make_task("it0/dp0/init", TaskKind::fixed, 0);
  init.attrs = {{"duration_s", 0.001}};
  plan.add_task(init);

  plan.add_control_dep(4, 0);  // forward reference
  plan.add_data_dep(0, 1);
  plan.add_data_dep(1, 2);
  plan.add_data_dep(0, 3);
  plan.add_control_dep(2, 3);
  return plan;
}

void expect_same_task(const Task& a, const Task& b) {
  SCOPED_TRACE(a.id);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.worker, b.worker);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(a.algo, b.algo);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.iteration, b.iteration);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.bytes_read, b.bytes_read);
  EXPECT_EQ(a.bytes_written, b.bytes_written);
  EXPECT_EQ(a.comm_bytes, b.comm_bytes);
  EXPECT_EQ(a.mem_alloc, b.mem_alloc);
  EXPECT_EQ(a.mem_free, b.mem_free);
  EXPECT_EQ(a.reads, b.reads);
  EXPECT_EQ(a.writes, b.writes);
  EXPECT_EQ(a.data_deps, b.data_deps);
  EXPECT_EQ(a.control_deps, b.control_deps);
  EXPECT_EQ(a.attrs, b.attrs);  // variant equality: 2.0 stays a double, 128 an integer
}

void expect_same_plan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.num_workers(), b.num_workers());
  EXPECT_EQ(a.info.model, b.info.model);
  EXPECT_EQ(a.info.strategy, b.info.strategy);
  EXPECT_EQ(a.info.schedule, b.info.schedule);
  EXPECT_EQ(a.info.optimizer, b.info.optimizer);
  EXPECT_EQ(a.info.dtype, b.info.dtype);
  EXPECT_EQ(a.info.global_batch, b.info.global_batch);
  EXPECT_EQ(a.info.microbatches, b.info.microbatches);
  EXPECT_EQ(a.info.tokens_per_sample, b.info.tokens_per_sample);
  EXPECT_EQ(a.info.model_flops_per_iteration, b.info.model_flops_per_iteration);
  EXPECT_EQ(a.info.seed, b.info.seed);
  ASSERT_EQ(a.buffers().size(), b.buffers().size());
  for (std::size_t i = 0; i < a.buffers().size(); ++i) {
    EXPECT_EQ(a.buffer(i).id, b.buffer(i).id);
    EXPECT_EQ(a.buffer(i).worker, b.buffer(i).worker);
    EXPECT_EQ(a.buffer(i).bytes, b.buffer(i).bytes);
    EXPECT_EQ(a.buffer(i).dtype, b.buffer(i).dtype);
    EXPECT_EQ(a.buffer(i).persistent, b.buffer(i).persistent);
  }
  ASSERT_EQ(a.size(), b.size());
  for (TaskIndex i = 0; i < a.size(); ++i) expect_same_task(a.task(i), b.task(i));
}

TEST_F(PlanJsonTest, RoundTripInMemoryPreservesEveryField) {
  Plan plan = sample_plan();
  plan.validate();
  expect_same_plan(plan, plan_from_json(plan_to_json(plan), "mem"));
}

TEST_F(PlanJsonTest, RoundTripThroughFilePreservesEveryFieldAndBytes) {
  Plan plan = sample_plan();
  write_plan(plan, path("a.json"));
  Plan back = read_plan(path("a.json"));
  expect_same_plan(plan, back);
  write_plan(back, path("b.json"));
  EXPECT_EQ(slurp(path("a.json")), slurp(path("b.json")));
}

TEST_F(PlanJsonTest, OutputIsByteIdenticalAndOneTaskPerLine) {
  write_plan(sample_plan(), path("a.json"));
  write_plan(sample_plan(), path("b.json"));
  const std::string text = slurp(path("a.json"));
  EXPECT_EQ(text, slurp(path("b.json")));
  // Header line, 2 buffers, "],\"tasks\":[" is on the last buffer's closing line, 5 tasks, "]}".
  std::istringstream lines(text);
  std::string line;
  int task_lines = 0;
  while (std::getline(lines, line)) task_lines += line.rfind("{\"id\":\"it0/", 0) == 0;
  EXPECT_EQ(task_lines, 5);
  EXPECT_EQ(text.rfind("{\"schema_version\":3,\"format\":\"strata-plan\",", 0), 0u);
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(PlanJsonTest, OmitsZeroOptionalFieldsButKeepsTheDefiningSize) {
  nlohmann::json doc = plan_to_json(sample_plan());
  const nlohmann::json& init = doc["tasks"][4];
  EXPECT_EQ(init["flops"], 0.0);  // compute tasks state flops even when zero
  for (const char* key : {"bytes_read", "mem_alloc", "reads", "data_deps", "peer", "group", "algo", "dtype",
                          "iteration", "priority", "comm_bytes"})
    EXPECT_FALSE(init.contains(key)) << key;
  const nlohmann::json& ar = doc["tasks"][3];
  EXPECT_EQ(ar["comm_bytes"], 0.0);
  EXPECT_FALSE(ar.contains("worker"));
  EXPECT_FALSE(ar.contains("flops"));
}

TEST_F(PlanJsonTest, ReaderAcceptsOptionalFieldsPresentWithDefaultValues) {
  nlohmann::json doc = plan_to_json(sample_plan());
  nlohmann::json& init = doc["tasks"][4];
  for (const char* key :
       {"bytes_read", "bytes_written", "comm_bytes", "mem_alloc", "mem_free", "iteration", "priority"})
    init[key] = 0;
  for (const char* key : {"reads", "writes", "data_deps"}) init[key] = nlohmann::json::array();
  init["dtype"] = "fp32";
  init.erase("stream");  // defaults from the kind
  expect_same_plan(sample_plan(), plan_from_json(doc, "mem"));
}

// One mutation of a valid document and the exact one-line error it must produce.
struct BadCase {
  const char* name;
  std::function<void(nlohmann::json&)> mutate;
  const char* message;
};

// Each mutates the document of sample_plan().
std::vector<BadCase> bad_cases() {
  return {
      {"negative", [](auto& d) { d["tasks"][4]["flops"] = -1; },
       "plan.json: /tasks/4/flops: negative value -1"},
      {"kind", [](auto& d) { d["tasks"][2]["kind"] = "foo"; },
       "plan.json: /tasks/2/kind: unknown task kind 'foo'"},
      {"dep", [](auto& d) { d["tasks"][1]["data_deps"][0] = "x"; },
       "plan.json: /tasks/1/data_deps/0: unknown task 'x'"},
      {"flops", [](auto& d) { d["tasks"][4].erase("flops"); }, "plan.json: /tasks/4/flops: missing"},
      {"comm_bytes", [](auto& d) { d["tasks"][3].erase("comm_bytes"); },
       "plan.json: /tasks/3/comm_bytes: missing"},
      {"id", [](auto& d) { d["tasks"][0].erase("id"); }, "plan.json: /tasks/0/id: missing"},
      {"version", [](auto& d) { d["schema_version"] = 4; },
       "plan.json: /schema_version: unsupported version 4: this Plan needs a strata that reads plan schema "
       "version 4 (this strata reads 1 to 3)"},
      {"stream order", [](auto& d) { d["info"]["stream_order"] = "fifo"; },
       "plan.json: /info/stream_order: unknown stream_order 'fifo'"},
      {"format", [](auto& d) { d["format"] = "strata-trace"; },
       "plan.json: /format: expected 'strata-plan', got 'strata-trace'"},
      {"not int", [](auto& d) { d["tasks"][0]["iteration"] = 1.5; },
       "plan.json: /tasks/0/iteration: expected an integer, got 1.5"},
      {"int as real", [](auto& d) { d["tasks"][0]["worker"] = 0.0; },
       "plan.json: /tasks/0/worker: expected an integer, got 0.0"},
      {"escaped pointer", [](auto& d) { d["tasks"][0]["a/b~"] = 1; },
       "plan.json: /tasks/0/a~1b~0: unknown field"},
      {"one line", [](auto& d) { d["tasks"][2]["kind"] = "a\nb"; },
       "plan.json: /tasks/2/kind: unknown task kind 'a\\nb'"},
      {"unknown field", [](auto& d) { d["tasks"][0]["flop"] = 1; },
       "plan.json: /tasks/0/flop: unknown field"},
      {"buffer", [](auto& d) { d["tasks"][0]["reads"][0] = "nope"; },
       "plan.json: /tasks/0/reads/0: unknown buffer 'nope'"},
      {"duplicate", [](auto& d) { d["tasks"][2]["id"] = "it0/dp0/send"; },
       "plan.json: /tasks/2/id: duplicate task id 'it0/dp0/send' (first at /tasks/1)"},
      {"worker on collective", [](auto& d) { d["tasks"][3]["worker"] = 0; },
       "plan.json: /tasks/3/worker: a collective has a group, not a worker"},
      {"peer on compute", [](auto& d) { d["tasks"][0]["peer"] = 1; },
       "plan.json: /tasks/0/peer: only send and recv have a peer"},
      {"attr type", [](auto& d) { d["tasks"][0]["attrs"]["shape"][1] = "x"; },
       "plan.json: /tasks/0/attrs/shape/1: expected an integer, got 'x'"},
      {"algo", [](auto& d) { d["tasks"][3]["algo"] = "star"; },
       "plan.json: /tasks/3/algo: unknown collective algorithm 'star'"},
      {"tasks type", [](auto& d) { d["tasks"] = 3; }, "plan.json: /tasks: expected an array, got 3"},
      {"cycle", [](auto& d) { d["tasks"][4]["control_deps"] = {"it0/dp1/recv"}; },
       "plan.json: /tasks/0: dependency cycle through 'it0/dp0/fwd/l0' -> 'it0/dp0/send' -> "
       "'it0/dp1/recv' -> 'it0/dp0/init' -> 'it0/dp0/fwd/l0'"},
  };
}

TEST_F(PlanJsonTest, BadInputGivesExactlyOneLineNamingFilePointerAndProblem) {
  const std::vector<BadCase> cases = bad_cases();
  const nlohmann::json good = plan_to_json(sample_plan());
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json doc = good;
    c.mutate(doc);
    try {
      plan_from_json(doc, "plan.json");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
}

TEST_F(PlanJsonTest, MalformedJsonNamesLineAndColumn) {
  spit(path("plan.json"), "{\n  \"schema_version\": 1,\n  \"format\": strata\n}\n");
  try {
    read_plan(path("plan.json"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path("plan.json") + ":3:13: parse error: syntax error", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TEST_F(PlanJsonTest, MissingFileIsOneLine) {
  EXPECT_THROW(
      {
        try {
          read_plan(path("absent.json"));
        } catch (const InputError& e) {
          EXPECT_EQ(std::string(e.what()), path("absent.json") + ": cannot open: No such file or directory");
          throw;
        }
      },
      InputError);
}

TEST_F(PlanJsonTest, WriteIntoMissingDirectoryThrowsAndLeavesNothing) {
  const std::string target = path("no/such/dir/plan.json");
  EXPECT_THROW(write_plan(sample_plan(), target), InputError);
  EXPECT_FALSE(fs::exists(path("no")));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(PlanJsonTest, UnwritablePlanLeavesNoFileAndKeepsTheOldOne) {
  Plan plan = sample_plan();
  plan.mutable_task(0).flops = std::nan("");
  try {
    write_plan(plan, path("plan.json"));
    FAIL() << "wrote a NaN";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path("plan.json") + ": /tasks/0/flops: cannot write nan: JSON has no non-finite numbers");
  }
  EXPECT_TRUE(fs::is_empty(dir_));

  write_file_atomically(path("plan.json"), "old");
  EXPECT_THROW(write_plan(plan, path("plan.json")), InputError);
  EXPECT_EQ(slurp(path("plan.json")), "old");
  write_file_atomically(path("plan.json"), "new");
  EXPECT_EQ(slurp(path("plan.json")), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(PlanJsonTest, TopologicalOrderIsSmallestIndexFirst) {
  Plan plan(1);
  for (const char* id : {"a", "b", "c", "d"}) plan.add_task(make_task(id, TaskKind::fixed, 0));
  plan.add_data_dep(3, 0);     // d -> a
  plan.add_control_dep(2, 1);  // c -> b
  EXPECT_EQ(topological_order(plan), (std::vector<TaskIndex>{2, 1, 3, 0}));
}

TEST_F(PlanJsonTest, CycleInAHandBuiltPlanIsReportedWithPointer) {
  Plan plan(1);
  for (const char* id : {"it0/mb0/fwd/l0", "it0/mb0/fwd/l1", "it0/mb0/fwd/l2"})
    plan.add_task(make_task(id, TaskKind::fixed, 0));
  plan.add_data_dep(0, 1);
  plan.add_data_dep(1, 2);
  plan.add_control_dep(2, 1);
  try {
    topological_order(plan, "plan.json");
    FAIL() << "cycle accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "plan.json: /tasks/1: dependency cycle through 'it0/mb0/fwd/l1' -> "
              "'it0/mb0/fwd/l2' -> 'it0/mb0/fwd/l1'");
  }
}

// Every task kind strata knows is in the Plan and Trace schemas, and nothing else.
TEST_F(PlanJsonTest, SchemasListExactlyTheTaskKinds) {
  for (const char* file : {"/plan.schema.json", "/trace.schema.json"}) {
    const nlohmann::json schema = read_json_file(std::string(STRATA_SCHEMA_DIR) + file);
    const nlohmann::json* kinds = nullptr;
    for (const auto& def : schema["$defs"])
      if (def.contains("properties") && def["properties"].contains("kind"))
        kinds = &def["properties"]["kind"]["enum"];
    ASSERT_NE(kinds, nullptr) << file;
    ASSERT_EQ(kinds->size(), static_cast<std::size_t>(kTaskKindCount)) << file;
    for (int k = 0; k < kTaskKindCount; ++k)
      EXPECT_EQ((*kinds)[static_cast<std::size_t>(k)], std::string(to_string(static_cast<TaskKind>(k))))
          << file;
  }
}

TEST_F(PlanJsonTest, SchemaListsEveryFieldTheWriterWrites) {
  nlohmann::json schema = read_json_file(std::string(STRATA_SCHEMA_DIR) + "/plan.schema.json");
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  nlohmann::json doc = plan_to_json(sample_plan());
  const nlohmann::json& defs = schema["$defs"];
  for (auto& [key, value] : doc.items()) EXPECT_TRUE(schema["properties"].contains(key)) << key;
  for (auto& [key, value] : doc["info"].items()) EXPECT_TRUE(defs["info"]["properties"].contains(key)) << key;
  for (const auto& buffer : doc["buffers"])
    for (auto& [key, value] : buffer.items()) EXPECT_TRUE(defs["buffer"]["properties"].contains(key)) << key;
  for (const auto& task : doc["tasks"])
    for (auto& [key, value] : task.items()) EXPECT_TRUE(defs["task"]["properties"].contains(key)) << key;
}

}  // namespace
}  // namespace strata
