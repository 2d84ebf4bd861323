// What a Plan says it is: the typed task coordinates (one parser of the id grammar), PlanInfo's
// solver, schedule and parameters, and their Plan JSON (schema version 2; version 1 files load
// with those fields derived; newer versions are refused naming the version they need).
#include <gtest/gtest.h>

#include <string>

#include "strata/traces/error.hpp"
#include "strata/traces/plan.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata {
namespace {

// Two workers, five tasks (the fifth a compute task the tests turn into an spmm), one buffer.
Plan sample_plan() {
  Plan plan(2);
  plan.info.model = "mlp";
  plan.info.strategy = "dp=2";
  plan.info.optimizer = "sgd";
  plan.info.global_batch = 64;
  plan.add_buffer(Buffer{"dp0/mb0/act/input", 0, 4096, DType::fp32, false});
  for (int i = 0; i < 5; ++i) {
    Task t;
    t.id = "it0/dp0/mb0/fwd/l" + std::to_string(i);
    t.kind = TaskKind::linear_fwd;
    t.worker = 0;
    t.flops = 1;
    if (i > 0) t.data_deps = {static_cast<TaskIndex>(i - 1)};
    plan.add_task(t);
  }
  return plan;
}

// The one parser of the id grammar (task.hpp): typed coordinates, -1 where absent.
TEST(TaskCoords, ParsesEveryCoordinateOnceAndIgnoresNames) {
  const TaskCoords c = parse_coords("it3/dp1/pp2/tp0/mb12/fwd/l7/qkv");
  EXPECT_EQ(c.iteration, 3);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.pp, 2);
  EXPECT_EQ(c.tp, 0);
  EXPECT_EQ(c.mb, 12);
  EXPECT_EQ(c.layer, 7);
  EXPECT_EQ(c.block, -1);
  EXPECT_EQ(c.site, -1);
  EXPECT_EQ(c.phase, TaskPhase::fwd);
  EXPECT_EQ(parse_coords("it0/dp0/pp1/tp0/mb2/send/fwd").phase, TaskPhase::fwd);
  EXPECT_EQ(parse_coords("it0/dp0/mb2/bwdw/l3").phase, TaskPhase::bwdw);
  EXPECT_EQ(parse_coords("it0/dp0/opt/fwdx").phase, TaskPhase::opt);
  EXPECT_EQ(parse_coords("it0/ar/l0").phase, TaskPhase::none);
  const TaskCoords g = parse_coords("it0/site2/step9/gc1/agg");
  EXPECT_EQ(g.site, 2);
  EXPECT_EQ(g.step, 9);
  EXPECT_EQ(g.layer, 1);
  EXPECT_EQ(g.dp, -1);
  // Names that merely start like a coordinate, or carry letters after the digits, are names.
  const TaskCoords n = parse_coords("linear/b2x/mbx/dp/l/fc1/conv2_1/b4");
  EXPECT_EQ(n.layer, -1);
  EXPECT_EQ(n.mb, -1);
  EXPECT_EQ(n.dp, -1);
  EXPECT_EQ(n.block, 4);
  // The first segment of a kind wins; a number too long for an int32 is no coordinate.
  EXPECT_EQ(parse_coords("mb1/mb2").mb, 1);
  EXPECT_EQ(parse_coords("mb12345678901").mb, -1);
  EXPECT_EQ(parse_coords("").mb, -1);
}

TEST(TaskCoords, PlanFillsThemWhenTasksAndBuffersAreAdded) {
  Plan plan(1);
  Task t;
  t.id = "it0/dp0/mb3/fwd/l2";
  t.worker = 0;
  plan.add_task(t);
  plan.add_buffer(Buffer{"dp0/mb5/act/input", 0, 4, DType::fp32, false});
  EXPECT_EQ(plan.task(0).coords.mb, 3);
  EXPECT_EQ(plan.task(0).coords.layer, 2);
  EXPECT_EQ(plan.buffer_coords(0).mb, 5);
  EXPECT_EQ(plan.buffer_coords(0).dp, 0);
}

TEST(PlanInfo, NamesRoundTripAndTheScheduleLabelIsTheSolverOrTheSchedule) {
  for (int s = 0; s <= static_cast<int>(PlanSolver::gist); ++s)
    EXPECT_EQ(parse_plan_solver(to_string(static_cast<PlanSolver>(s))), static_cast<PlanSolver>(s));
  EXPECT_EQ(to_string(PlanSolver::pdadmm_g_q), "pdadmm-g-q");
  EXPECT_EQ(parse_plan_schedule("1f1b"), PlanSchedule::one_f_one_b);
  EXPECT_EQ(parse_plan_schedule("ampnet"), std::nullopt);
  PlanInfo info;
  info.schedule = PlanSchedule::gpipe;
  EXPECT_EQ(info.schedule_label(), "gpipe");
  info.solver = PlanSolver::gist;
  info.schedule = PlanSchedule::none;
  EXPECT_EQ(info.schedule_label(), "gist");
  EXPECT_TRUE(is_admm(PlanSolver::dladmm));
  EXPECT_FALSE(is_admm(PlanSolver::gist));
}

void expect_error_line(const nlohmann::json& doc, const std::string& message) {
  try {
    plan_from_json(doc, "plan.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

// What a Plan is (solver, schedule, parameters, input width, graph) survives a round trip.
TEST(PlanInfoJson, RoundTripKeepsTheSolverAndItsParameters) {
  Plan plan = sample_plan();
  plan.info.solver = PlanSolver::local;
  plan.info.parameters.instances = 8;
  plan.info.parameters.chunks = 3;
  plan.info.parameters.local_variant = SolverParameters::LocalVariant::overlapping;
  plan.info.parameters.rho = 0.25;
  plan.info.input_elements = 784;
  plan.info.graph_nodes = 1000;
  const nlohmann::json doc = plan_to_json(plan);
  EXPECT_EQ(doc["info"]["solver"], "local");
  EXPECT_EQ(doc["info"]["schedule"], "none");
  EXPECT_EQ(doc["info"]["parameters"],
            nlohmann::json::parse(R"({"instances":8,"chunks":3,"local_variant":"overlapping","rho":0.25})"));
  const Plan back = plan_from_json(doc, "plan.json");
  EXPECT_EQ(back.info.solver, PlanSolver::local);
  EXPECT_EQ(back.info.parameters, plan.info.parameters);
  EXPECT_EQ(back.info.input_elements, 784);
  EXPECT_EQ(back.info.graph_nodes, 1000);
  EXPECT_EQ(back.info.schedule_label(), "local");
}

// Schema version 3 says how a Plan's streams pick their tasks; a version 2 file, which cannot say
// it, ran as a dataflow and still does.
TEST(PlanInfoJson, StreamOrderRoundTripsAndOlderFilesAreDataflows) {
  Plan plan = sample_plan();
  EXPECT_EQ(plan_to_json(plan)["info"]["stream_order"], "ready");
  plan.info.stream_order = StreamOrder::issue;
  nlohmann::json doc = plan_to_json(plan);
  EXPECT_EQ(doc["schema_version"], 3);
  EXPECT_EQ(doc["info"]["stream_order"], "issue");
  EXPECT_EQ(plan_from_json(doc, "plan.json").info.stream_order, StreamOrder::issue);
  doc["info"]["stream_order"] = "program";
  expect_error_line(doc, "plan.json: /info/stream_order: unknown stream_order 'program'");
  doc["schema_version"] = 2;
  expect_error_line(doc, "plan.json: /info/stream_order: unknown field");
  const std::string data = std::string(STRATA_SOURCE_DIR) + "/tests/traces/data/";
  const Plan v2 = read_plan(data + "plan_v2_backprop_dp2.json");
  EXPECT_EQ(v2.info.stream_order, StreamOrder::ready);
  EXPECT_EQ(plan_to_json(v2), plan_to_json(read_plan(data + "plans/backprop-dp2.json")));
}

TEST(PlanInfoJson, BadSolverFieldsAreOneLine) {
  nlohmann::json doc = plan_to_json(sample_plan());
  doc["info"]["solver"] = "sgd2";
  expect_error_line(doc, "plan.json: /info/solver: unknown solver 'sgd2'");
  doc = plan_to_json(sample_plan());
  doc["info"]["schedule"] = "ampnet";  // version 2: a solver is not a schedule
  expect_error_line(doc, "plan.json: /info/schedule: unknown schedule 'ampnet'");
  doc = plan_to_json(sample_plan());
  doc["info"]["parameters"] = {{"chunk", 2}};
  expect_error_line(doc, "plan.json: /info/parameters/chunk: unknown field");
}

// A Plan file of schema version 1 (strata before PlanInfo said what a Plan is) still loads: the
// solver and its parameters are derived from its schedule and strategy strings.
TEST(PlanInfoJson, VersionOneFileLoadsWithItsSolverDerived) {
  const Plan plan = read_plan(std::string(STRATA_SOURCE_DIR) + "/tests/traces/data/plan_v1_ampnet.json");
  EXPECT_EQ(plan.info.solver, PlanSolver::ampnet);
  EXPECT_EQ(plan.info.schedule, PlanSchedule::none);
  EXPECT_EQ(plan.info.parameters.max_active_keys, 3);
  EXPECT_EQ(plan.info.parameters.min_update_frequency, 2);
  EXPECT_EQ(plan.info.parameters.instances, 4);
  EXPECT_EQ(plan.info.parameters.chunks, 0);
  EXPECT_EQ(plan.info.input_elements, 0);  // unknown in version 1
  EXPECT_EQ(plan.info.graph_nodes, 0);
  EXPECT_EQ(plan.info.schedule_label(), "ampnet");
  EXPECT_EQ(plan.task(0).coords.mb, 1);
  EXPECT_EQ(plan.buffer_coords(0).mb, 1);
  // Written again, it is a version 2 file that reads back the same.
  const Plan again = plan_from_json(plan_to_json(plan), "again.json");
  EXPECT_EQ(again.info.parameters, plan.info.parameters);
  EXPECT_EQ(again.info.solver, PlanSolver::ampnet);
}

TEST(PlanInfoJson, VersionOneScheduleAndGraphAreDerived) {
  nlohmann::json doc = plan_to_json(sample_plan());
  doc["schema_version"] = 1;
  doc["info"].erase("solver");
  doc["info"].erase("stream_order");
  doc["info"]["schedule"] = "1f1b";
  Plan plan = plan_from_json(doc, "plan.json");
  EXPECT_EQ(plan.info.solver, PlanSolver::backprop);
  EXPECT_EQ(plan.info.schedule, PlanSchedule::one_f_one_b);
  doc["info"]["schedule"] = "pdadmm-g-q";
  doc["info"]["strategy"] = "workers=2,layers=784-16-10,rho=0.500000,nu=0.010000,iterations=3";
  plan = plan_from_json(doc, "plan.json");
  EXPECT_EQ(plan.info.solver, PlanSolver::pdadmm_g_q);
  EXPECT_EQ(plan.info.parameters.admm_iterations, 3);
  EXPECT_DOUBLE_EQ(plan.info.parameters.rho, 0.5);
  EXPECT_DOUBLE_EQ(plan.info.parameters.nu, 0.01);
  EXPECT_EQ(plan.info.parameters.quant_bits, 8);
  doc["info"]["schedule"] = "gist";
  doc["tasks"][4]["kind"] = "spmm";
  doc["tasks"][4]["attrs"] = {{"nodes", 500}, {"nnz", 5000}, {"width", 16}};
  plan = plan_from_json(doc, "plan.json");
  EXPECT_EQ(plan.info.graph_nodes, 500);
  EXPECT_TRUE(plan.info.trains_graph());
  // Version 1 had no solver field: it is refused there as any unknown field is.
  doc["info"]["solver"] = "gist";
  expect_error_line(doc, "plan.json: /info/solver: unknown field");
}

TEST(PlanInfoJson, NewerVersionNamesTheVersionItNeeds) {
  nlohmann::json doc = plan_to_json(sample_plan());
  doc["schema_version"] = 7;
  expect_error_line(doc,
                    "plan.json: /schema_version: unsupported version 7: this Plan needs a strata that reads "
                    "plan schema version 7 (this strata reads 1 to 3)");
  doc["schema_version"] = 0;
  expect_error_line(doc, "plan.json: /schema_version: unsupported version 0 (this strata reads 1 to 3)");
}

}  // namespace
}  // namespace strata
