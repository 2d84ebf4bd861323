// Trace <-> strata trace JSON (schema_version 1; traces/schema/trace.schema.json).
//
//   {"schema_version":1, "format":"strata-trace", "executor":"sim", "source":"...",
//    "records":[{"id","kind","stream","worker","host","iteration","start","end","bytes","flops"}]}
//
// start and end are seconds from the start of the run, bytes in B, flops in FLOP. Records are
// written in the canonical order of Trace::sort (the Trace itself is not changed), one per line,
// every field present: equal Traces give byte-identical files. The reader requires id, kind,
// worker, start and end, defaults the rest (stream from the kind), keeps the file's order, and
// reports problems as one InputError line, e.g. `trace.json: /records/4/end: ends before it
// starts (end 1 < start 2)`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "strata/traces/trace.hpp"

namespace strata {
inline namespace traces {

inline constexpr int kTraceSchemaVersion = 1;

// Reads the trace file at `path`; errors name `path`.
Trace read_trace(const std::string& path);

// Builds a Trace from a parsed document; errors name `source`.
Trace trace_from_json(const nlohmann::json& doc, const std::string& source);

// The document write_trace writes (object keys in nlohmann::json's sorted order).
nlohmann::json trace_to_json(const Trace& trace);

// The bytes write_trace writes; a time that is not finite throws InputError naming `where`.
std::string trace_json_text(const Trace& trace, const std::string& where);

// Writes `trace` to `path` atomically; writes nothing if a time is not finite.
void write_trace(const Trace& trace, const std::string& path);

}  // namespace traces
}  // namespace strata
