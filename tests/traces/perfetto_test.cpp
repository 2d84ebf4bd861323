// Trace outputs: the Chrome trace event export (Perfetto) and the strata trace JSON.
#include "strata/traces/perfetto.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/trace.hpp"
#include "strata/traces/trace_json.hpp"

namespace strata {
namespace {

namespace fs = std::filesystem;

TraceRecord record(std::string id, TaskKind kind, WorkerId worker, std::string host, double start,
                   double end) {
  TraceRecord r;
  r.id = std::move(id);
  r.kind = kind;
  r.stream = is_communication(kind) ? Stream::comm : Stream::compute;
  r.worker = worker;
  r.host = std::move(host);
  r.start = start;
  r.end = end;
  return r;
}

// Two workers on two hosts; an allreduce recorded once per rank, as executors record it.
// Records are deliberately out of canonical order.
Trace sample_trace() {
  Trace t;
  t.executor = "sim";
  t.source = "mlp dp=2";
  TraceRecord fwd1 = record("it0/dp1/fwd/l0", TaskKind::linear_fwd, 1, "gpu-1", 0.0, 0.0015);
  fwd1.flops = 2e9;
  fwd1.bytes = 4096;
  fwd1.iteration = 0;
  TraceRecord fwd0 = record("it0/dp0/fwd/l0", TaskKind::linear_fwd, 0, "gpu-0", 0.0, 0.001);
  fwd0.flops = 2e9;
  TraceRecord ar1 = record("it0/ar/l0", TaskKind::allreduce, 1, "gpu-1", 0.0015, 0.0025);
  TraceRecord ar0 = record("it0/ar/l0", TaskKind::allreduce, 0, "gpu-0", 0.0015, 0.0025);
  ar0.bytes = ar1.bytes = 1e6;
  ar0.iteration = ar1.iteration = 0;
  TraceRecord opt = record("it1/dp0/opt", TaskKind::optimizer_step, 0, "gpu-0", 0.0025, 0.003);
  opt.iteration = 1;
  t.records = {ar1, fwd1, opt, ar0, fwd0};
  return t;
}

std::vector<nlohmann::json> events_named(const nlohmann::json& chrome, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& e : chrome["traceEvents"])
    if (e["name"] == name) out.push_back(e);
  return out;
}

TEST(PerfettoTest, MetadataNamesEachWorkerAndItsTwoRows) {
  nlohmann::json chrome = trace_to_chrome(sample_trace());
  std::vector<nlohmann::json> processes = events_named(chrome, "process_name");
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0]["ph"], "M");
  EXPECT_EQ(processes[0]["pid"], 1);
  EXPECT_EQ(processes[0]["args"]["name"], "worker 0 (gpu-0)");
  EXPECT_EQ(processes[1]["pid"], 2);
  EXPECT_EQ(processes[1]["args"]["name"], "worker 1 (gpu-1)");

  std::vector<nlohmann::json> threads = events_named(chrome, "thread_name");
  ASSERT_EQ(threads.size(), 4u);
  std::map<std::pair<int, int>, std::string> rows;
  for (const auto& t : threads) rows[{t["pid"].get<int>(), t["tid"].get<int>()}] = t["args"]["name"];
  EXPECT_EQ((rows[{1, 1}]), "compute");
  EXPECT_EQ((rows[{1, 2}]), "comm");
  EXPECT_EQ((rows[{2, 3}]), "compute");
  EXPECT_EQ((rows[{2, 4}]), "comm");
}

TEST(PerfettoTest, CompleteEventsAreInMicrosecondsWithArgs) {
  nlohmann::json chrome = trace_to_chrome(sample_trace());
  std::vector<nlohmann::json> fwd = events_named(chrome, "it0/dp1/fwd/l0");
  ASSERT_EQ(fwd.size(), 1u);
  const nlohmann::json& e = fwd[0];
  EXPECT_EQ(e["ph"], "X");
  EXPECT_EQ(e["cat"], "linear_fwd");
  EXPECT_EQ(e["pid"], 2);
  EXPECT_EQ(e["tid"], 3);  // worker 1's compute row
  EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1500.0);  // 1.5 ms
  EXPECT_EQ(e["args"]["bytes"], 4096.0);
  EXPECT_EQ(e["args"]["flops"], 2e9);
  EXPECT_EQ(e["args"]["iteration"], 0);

  std::vector<nlohmann::json> opt = events_named(chrome, "it1/dp0/opt");
  ASSERT_EQ(opt.size(), 1u);
  EXPECT_EQ(opt[0]["ts"].get<double>(), 2500.0);
  EXPECT_EQ(opt[0]["dur"].get<double>(), 500.0);
  EXPECT_EQ(opt[0]["args"]["iteration"], 1);
  EXPECT_EQ(chrome["otherData"]["executor"], "sim");
}

TEST(PerfettoTest, CollectiveAppearsOnEveryParticipantsCommRow) {
  std::vector<nlohmann::json> ar = events_named(trace_to_chrome(sample_trace()), "it0/ar/l0");
  ASSERT_EQ(ar.size(), 2u);
  EXPECT_EQ(ar[0]["pid"], 1);
  EXPECT_EQ(ar[0]["tid"], 2);
  EXPECT_EQ(ar[1]["pid"], 2);
  EXPECT_EQ(ar[1]["tid"], 4);
  for (const auto& e : ar) {
    EXPECT_EQ(e["cat"], "allreduce");
    EXPECT_EQ(e["ts"].get<double>(), 1500.0);
    EXPECT_EQ(e["dur"].get<double>(), 1000.0);
  }
}

// The simulator's communicators overlap on one worker: the DP allreduce (0-3 ms) and a TP
// allreduce (1-2 ms) cannot share a row, so the TP one goes to "comm 2". Rows are taken first
// free from the top: a send from 2 ms finds "comm" busy (to 3 ms) and "comm 2" free again; a
// recv at 3 ms finds "comm" free.
TEST(PerfettoTest, OverlappingCommRecordsOfOneWorkerGoToSeparateRows) {
  Trace t;
  t.records = {record("dp_ar", TaskKind::allreduce, 0, "gpu-0", 0.0, 0.003),
               record("tp_ar", TaskKind::allreduce, 0, "gpu-0", 0.001, 0.002),
               record("send", TaskKind::send, 0, "gpu-0", 0.002, 0.0035),
               record("recv", TaskKind::recv, 0, "gpu-0", 0.003, 0.003)};
  const nlohmann::json chrome = trace_to_chrome(t);
  const std::int64_t comm2 = 2 + (std::int64_t{1} << 32);
  EXPECT_EQ(events_named(chrome, "dp_ar")[0]["tid"], 2);
  EXPECT_EQ(events_named(chrome, "tp_ar")[0]["tid"], comm2);
  EXPECT_EQ(events_named(chrome, "send")[0]["tid"], comm2);
  EXPECT_EQ(events_named(chrome, "recv")[0]["tid"], 2);
  std::map<std::int64_t, std::string> rows;
  for (const auto& e : events_named(chrome, "thread_name"))
    rows[e["tid"].get<std::int64_t>()] = e["args"]["name"];
  EXPECT_EQ(rows, (std::map<std::int64_t, std::string>{{1, "compute"}, {2, "comm"}, {comm2, "comm 2"}}));
}

TEST(PerfettoTest, OrderIsDeterministicRegardlessOfRecordOrder) {
  Trace a = sample_trace();
  Trace b = sample_trace();
  std::reverse(b.records.begin(), b.records.end());
  EXPECT_EQ(trace_to_chrome(a).dump(), trace_to_chrome(b).dump());
  // Metadata first, then complete events by (start, worker, id).
  const nlohmann::json chrome = trace_to_chrome(a);
  std::vector<std::string> names;
  for (const auto& e : chrome["traceEvents"])
    if (e["ph"] == "X") names.push_back(e["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"it0/dp0/fwd/l0", "it0/dp1/fwd/l0", "it0/ar/l0", "it0/ar/l0",
                                             "it1/dp0/opt"}));
  EXPECT_EQ(chrome["traceEvents"][0]["ph"], "M");
}

TEST(PerfettoTest, TraceSortIsCanonical) {
  Trace t = sample_trace();
  t.sort();
  ASSERT_EQ(t.records.size(), 5u);
  EXPECT_EQ(t.records[0].id, "it0/dp0/fwd/l0");
  EXPECT_EQ(t.records[2].worker, 0);  // it0/ar/l0 on worker 0 before worker 1
  EXPECT_EQ(t.records[3].worker, 1);
}

// A fresh directory per test, removed afterwards.
class TraceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_trace_json_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

TEST_F(TraceFileTest, ChromeTraceFileIsValidJsonOneEventPerLine) {
  write_chrome_trace(sample_trace(), path("t.json"));
  const std::string text = slurp(path("t.json"));
  EXPECT_EQ(parse_json_text(text, "t.json"), trace_to_chrome(sample_trace()));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 * 6 + 5 + 2);
}

TEST_F(TraceFileTest, TraceRoundTripKeepsEveryFieldInCanonicalOrder) {
  Trace trace = sample_trace();
  write_trace(trace, path("a.json"));
  Trace back = read_trace(path("a.json"));
  trace.sort();
  EXPECT_EQ(back.executor, trace.executor);
  EXPECT_EQ(back.source, trace.source);
  ASSERT_EQ(back.records.size(), trace.records.size());
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    const TraceRecord& a = trace.records[i];
    const TraceRecord& b = back.records[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.worker, b.worker);
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.iteration, b.iteration);
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.flops, b.flops);
  }
  write_trace(back, path("b.json"));
  EXPECT_EQ(slurp(path("a.json")), slurp(path("b.json")));
}

TEST_F(TraceFileTest, BadTraceRecordsGiveOneLineErrors) {
  const nlohmann::json good = trace_to_json(sample_trace());
  auto error_of = [&](auto mutate) {
    nlohmann::json doc = good;
    mutate(doc);
    try {
      trace_from_json(doc, "trace.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of([](auto& d) { d["records"][4]["end"] = 0.001; }),
            "trace.json: /records/4/end: ends before it starts (end 0.001 < start 0.0025)");
  EXPECT_EQ(error_of([](auto& d) { d["records"][0]["kind"] = "matmul"; }),
            "trace.json: /records/0/kind: unknown task kind 'matmul'");
  EXPECT_EQ(error_of([](auto& d) { d["records"][1].erase("start"); }),
            "trace.json: /records/1/start: missing");
  EXPECT_EQ(error_of([](auto& d) { d["records"][1]["worker"] = -2; }),
            "trace.json: /records/1/worker: negative value -2");
  EXPECT_EQ(error_of([](auto& d) { d["schema_version"] = 7; }),
            "trace.json: /schema_version: unsupported version 7 (this strata reads 1)");
  EXPECT_EQ(error_of([](auto& d) { d["format"] = "strata-plan"; }),
            "trace.json: /format: expected 'strata-trace', got 'strata-plan'");
}

TEST_F(TraceFileTest, SchemaListsEveryFieldTheWriterWrites) {
  nlohmann::json schema = read_json_file(std::string(STRATA_SCHEMA_DIR) + "/trace.schema.json");
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  nlohmann::json doc = trace_to_json(sample_trace());
  for (auto& [key, value] : doc.items()) EXPECT_TRUE(schema["properties"].contains(key)) << key;
  for (auto& [key, value] : doc["records"][0].items())
    EXPECT_TRUE(schema["$defs"]["record"]["properties"].contains(key)) << key;
}

}  // namespace
}  // namespace strata
