// Internal to plan_json.cpp: PlanInfo <-> the "info" object of a Plan file, in every schema
// version this strata reads.
//
// Version 2 writes the solver, the pipeline schedule and the solver's parameters as typed fields.
// Version 1 (strata before the Plan said what it is) wrote one "schedule" string holding either
// the pipeline schedule (gpipe, 1f1b, none) or the solver's name (ampnet, local, dladmm, pdadmm,
// pdadmm-g-q, gist), and the solver's parameters only inside the "strategy" label
// ("pp=2,max_active_keys=4,..."). Reading it derives the typed fields from those two strings
// (legacy_info) and the graph size from the Plan's spmm tasks (legacy_graph_nodes); the input
// width stays 0 (unknown), which the real executor then derives from the global batch.
#pragma once

#include <cstdint>

#include "strata/traces/json_io.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {
namespace plan_json {

nlohmann::ordered_json info_to_json(const PlanInfo& info);

// REQUIRES: `version` is one this strata reads (1 or 2; the caller checked).
PlanInfo read_info(const JsonNode& node, std::int64_t version);

// Version 1: a GCN's node count, from the first spmm task's "nodes" attribute (0 when none).
std::int64_t legacy_graph_nodes(const Plan& plan);

}  // namespace plan_json
}  // namespace traces
}  // namespace strata
