// Plan <-> strata plan JSON (schema_version 2; docs/plan-format.md,
// traces/schema/plan.schema.json).
//
// Versions: 2 records what the Plan is (info.solver, info.schedule, info.parameters,
// info.input_elements, info.graph_nodes). A version 1 file (strata before them) still loads: its
// solver, schedule and parameters are derived from its "schedule" and "strategy" strings, its
// graph_nodes from its spmm tasks, and input_elements stays 0 (unknown). A file of a newer
// version fails with one line naming the version it needs. Writing always writes version 2.
//
// Reading checks everything a Plan promises (plan.hpp): a Plan returned by read_plan or
// plan_from_json has passed Plan::validate, so it is acyclic and every reference resolves. Any
// problem is one InputError line naming the file, the JSON pointer and the problem, e.g.
//   plan.json: /tasks/3/flops: negative value -1
//   plan.json: /tasks/1/data_deps/0: unknown task 'x'
//   plan.json:3:14: parse error: syntax error while parsing value - invalid literal; ...
//
// Streaming: read_plan parses the file as SAX events (json_stream.hpp) and adds each buffer and
// task to the Plan as it is parsed, so memory holds the Plan and one task's JSON, not the file's
// DOM (about 4 KB per task before); the "buffers" list must come before "tasks", as strata writes
// it. write_plan writes one element at a time. A file is read up to its size, a pipe or device up
// to 4 GiB. Out of memory is one line: "big.json: out of memory reading the Plan after 812,345
// tasks (1.93 GB of address space in use)".
//
// Writing is deterministic: equal Plans give byte-identical files. Fields a task kind does not use
// (a collective's worker, a compute task's peer) and zero-valued optional numbers and empty lists
// are left out to keep large plans small; the reader accepts them present. write_plan replaces the
// file atomically and writes nothing if the Plan cannot be represented (a non-finite number).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {

inline constexpr int kPlanSchemaVersion = 3;        // 3: PlanInfo::stream_order
inline constexpr int kOldestPlanSchemaVersion = 1;  // the oldest version read_plan reads

// Reads and validates the plan file at `path`; errors name `path`. `allow_unplaced`: compute
// tasks may have no worker (Plan::allow_unplaced), for a placement policy to place.
Plan read_plan(const std::string& path, bool allow_unplaced = false);

// Builds and validates a Plan from a parsed document; errors name `source`.
Plan plan_from_json(const nlohmann::json& doc, const std::string& source);

// The document write_plan writes (keys of each object in nlohmann::json's sorted order; the file
// itself keeps the documented field order).
nlohmann::json plan_to_json(const Plan& plan);

// Writes `plan` to `path`, one buffer and one task per line.
void write_plan(const Plan& plan, const std::string& path);

}  // namespace traces
}  // namespace strata
