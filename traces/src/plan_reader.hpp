// Internal to plan_json.cpp: the Plan reader behind read_plan (streamed) and plan_from_json (a DOM).
//
// Builds a Plan from its buffers and tasks as they come (a file streamed by stream_json_file, or
// the arrays of a DOM), then from the rest of the document: the header (schema_version, format,
// num_workers, info) is checked at the end, and the version as soon as the first buffer or task
// arrives, so that a newer file fails on its version rather than on a field it added.
// Dependencies on tasks further down the file are resolved at the end, in file order.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/traces/json_io.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {
namespace plan_json {

class PlanReader {
 public:
  explicit PlanReader(const std::string& source, bool allow_unplaced = false) : source_(source) {
    plan_.allow_unplaced(allow_unplaced);
  }

  void element(std::string_view array, std::size_t index, const nlohmann::json& value,
               const nlohmann::json& root);

  Plan finish(const nlohmann::json& doc);

  std::size_t tasks_read() const { return plan_.size(); }
  void release() { plan_ = Plan(); }

 private:
  // A dependency on a task not read yet: its slot in the consumer's list is filled at the end.
  struct ForwardDependency {
    TaskIndex consumer;
    bool control;
    std::uint32_t position;  // in the file's list (the JSON pointer)
    std::uint32_t slot;      // in the task's list
    std::string id;
  };

  void add_buffer(const JsonNode& node);

  void add_task(const JsonNode& node);

  void add_dependencies(const JsonNode& node, TaskIndex consumer);

  void resolve_forward_dependencies();

  const std::string& source_;
  Plan plan_;
  std::unordered_map<std::string, BufferIndex> buffer_ids_;
  std::vector<ForwardDependency> forward_;
  bool version_checked_ = false;
  bool buffers_came_first_ = true;
};

}  // namespace plan_json
}  // namespace traces
}  // namespace strata
