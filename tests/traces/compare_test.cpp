// compare_traces against hand-computed medians and percentiles; the side-by-side Perfetto
// document and the comparison plot.
#include "strata/traces/compare.hpp"

#include <gtest/gtest.h>

#include <set>

#include "strata/traces/error.hpp"
#include "strata/traces/perfetto.hpp"

namespace strata {
namespace {

TraceRecord record(const std::string& id, TaskKind kind, WorkerId worker, double start, double end) {
  TraceRecord r;
  r.id = id;
  r.kind = kind;
  r.stream = is_communication(kind) ? Stream::comm : Stream::compute;
  r.worker = worker;
  r.host = "h";
  r.start = start;
  r.end = end;
  return r;
}

// Predicted: a 1.0 s, b 2.0 s, c 0.5 s (linear_fwd), ar 1.0 s (allreduce over workers 0 and 1).
Trace predicted() {
  Trace t;
  t.executor = "sim";
  t.records = {record("a", TaskKind::linear_fwd, 0, 0, 1), record("b", TaskKind::linear_fwd, 0, 1, 3),
               record("c", TaskKind::linear_fwd, 1, 0, 0.5), record("ar", TaskKind::allreduce, 0, 3, 4),
               record("ar", TaskKind::allreduce, 1, 3, 4)};
  return t;
}

Trace measured(double a, double b, double c, double ar) {
  Trace t;
  t.executor = "real";
  t.records = {record("a", TaskKind::linear_fwd, 0, 0, a), record("b", TaskKind::linear_fwd, 0, 10, 10 + b),
               record("c", TaskKind::linear_fwd, 1, 0, c), record("ar", TaskKind::allreduce, 1, 5, 5 + ar),
               record("ar", TaskKind::allreduce, 0, 5, 5 + ar)};
  return t;
}

TEST(CompareTraces, MedianOverRunsThenErrorPerTaskAndPerKind) {
  // Medians over three runs: a 0.8 (runs 0.8, 0.5, 2.0), b 2.5, c 0.5, ar 2.0.
  const TraceComparison c = compare_traces(
      predicted(),
      {measured(0.8, 2.5, 0.5, 2.0), measured(0.5, 2.5, 0.4, 2.0), measured(2.0, 3.0, 0.5, 1.0)});
  ASSERT_EQ(c.tasks.size(), 4u);
  EXPECT_EQ(c.tasks[0].id, "a");
  EXPECT_DOUBLE_EQ(c.tasks[0].measured_s, 0.8);
  EXPECT_DOUBLE_EQ(c.tasks[0].relative_error(), 0.25);  // (1 − 0.8) / 0.8
  EXPECT_EQ(c.tasks[1].id, "ar");
  EXPECT_DOUBLE_EQ(c.tasks[1].relative_error(), -0.5);  // (1 − 2) / 2
  EXPECT_DOUBLE_EQ(c.tasks[2].relative_error(), -0.2);  // b: (2 − 2.5) / 2.5
  EXPECT_DOUBLE_EQ(c.tasks[3].relative_error(), 0.0);   // c
  ASSERT_EQ(c.kinds.size(), 2u);
  EXPECT_EQ(c.kinds[0].kind, TaskKind::linear_fwd);
  EXPECT_EQ(c.kinds[0].tasks, 3u);
  EXPECT_DOUBLE_EQ(c.kinds[0].median_abs_error, 0.2);  // of {0.25, 0.2, 0}
  EXPECT_DOUBLE_EQ(c.kinds[0].p90_abs_error, 0.25);    // nearest rank ceil(2.7) = 3rd
  EXPECT_DOUBLE_EQ(c.kinds[0].predicted_total_s, 3.5);
  EXPECT_DOUBLE_EQ(c.kinds[0].measured_total_s, 3.8);
  EXPECT_DOUBLE_EQ(c.compute_median_abs_error, 0.2);  // the allreduce is not compute
  ASSERT_EQ(c.worst(2).size(), 2u);
  EXPECT_EQ(c.worst(2)[0].id, "ar");
  EXPECT_EQ(c.worst(2)[1].id, "a");
}

TEST(CompareTraces, RefusesTracesOfDifferentPlans) {
  Trace other = measured(1, 1, 1, 1);
  other.records[1].id = "z";
  try {
    compare_traces(predicted(), {other});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "traces differ: task 'b' is in the predicted trace and not in the measured one (not runs of "
                 "the same Plan)");
  }
}

TEST(CompareTraces, SideBySidePerfettoKeepsEachTraceInItsOwnProcessGroup) {
  const Trace p = predicted();
  const Trace m = measured(1, 1, 1, 1);
  const nlohmann::json doc = traces_to_chrome({{"predicted", &p}, {"measured", &m}});
  std::set<std::int64_t> pids;
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    pids.insert(e["pid"].get<std::int64_t>());
    if (e["name"] == "process_name") names.insert(e["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(pids, (std::set<std::int64_t>{1, 2, 10001, 10002}));
  EXPECT_EQ(names.count("predicted: worker 0 (h)"), 1u);
  EXPECT_EQ(names.count("measured: worker 1 (h)"), 1u);
  EXPECT_EQ(doc["otherData"]["groups"][1]["executor"], "real");
}

TEST(CompareTraces, PlotHasOnePointPerTaskAndALegendEntryPerKind) {
  const TraceComparison c = compare_traces(predicted(), {measured(0.8, 2.5, 0.5, 2.0)});
  const std::string svg = comparison_svg(c, "mlp dp=2");
  std::size_t titles = 0;
  for (std::size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1))
    ++titles;
  EXPECT_EQ(titles, 4u);
  EXPECT_NE(svg.find("linear_fwd (20 %)"), std::string::npos);
  EXPECT_NE(svg.find("allreduce (50 %)"), std::string::npos);
  EXPECT_EQ(svg, comparison_svg(c, "mlp dp=2"));  // deterministic
}

}  // namespace
}  // namespace strata
