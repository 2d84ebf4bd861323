#include "strata/traces/plan_json.hpp"

#include <functional>
#include <new>
#include <variant>

#include "plan_info_json.hpp"
#include "plan_reader.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/json_stream.hpp"

namespace strata {
inline namespace traces {
namespace {

// The file keeps fields in the documented order (id and kind first), which plain nlohmann::json
// would sort away.
using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kFormat = "strata-plan";

// ---- writing ----------------------------------------------------------------------------------

OrderedJson attr_to_json(const AttrValue& value) {
  return std::visit([](const auto& v) { return OrderedJson(v); }, value);
}

OrderedJson buffer_to_json(const Buffer& buffer) {
  OrderedJson j;
  j["id"] = buffer.id;
  j["worker"] = buffer.worker;
  j["bytes"] = buffer.bytes;
  if (buffer.dtype != DType::fp32) j["dtype"] = to_string(buffer.dtype);
  if (buffer.persistent) j["persistent"] = true;
  if (buffer.on_host) j["on_host"] = true;
  return j;
}

void put_placement(const Task& task, OrderedJson& j) {
  if (is_collective(task.kind)) {
    j["group"] = task.group;
    j["algo"] = to_string(task.algo);
  } else if (task.worker >= 0) {  // an unplaced task has none
    j["worker"] = task.worker;
  }
  if (task.kind == TaskKind::send || task.kind == TaskKind::recv) j["peer"] = task.peer;
  if (task.dtype != DType::fp32) j["dtype"] = to_string(task.dtype);
  if (task.iteration != 0) j["iteration"] = task.iteration;
  if (task.priority != 0) j["priority"] = task.priority;
}

void put_sizes(const Task& task, OrderedJson& j) {
  const bool comm = is_communication(task.kind);
  // The size that defines the task's cost is written even when zero: the reader requires it.
  auto put = [&j](const char* key, double value, bool required) {
    if (required || value != 0) j[key] = value;
  };
  put("flops", task.flops, !comm);
  put("bytes_read", task.bytes_read, false);
  put("bytes_written", task.bytes_written, false);
  put("comm_bytes", task.comm_bytes, comm);
  put("mem_alloc", task.mem_alloc, false);
  put("mem_free", task.mem_free, false);
  put("mem_temp", task.mem_temp, false);
}

void put_references(const Plan& plan, const Task& task, OrderedJson& j) {
  auto put_buffers = [&](const char* key, const std::vector<BufferIndex>& list) {
    if (list.empty()) return;
    OrderedJson& out = j[key] = OrderedJson::array();
    for (BufferIndex b : list) {
      STRATA_ASSERT(b < plan.buffers().size(), "buffer index out of range");
      out.push_back(plan.buffer(b).id);
    }
  };
  auto put_tasks = [&](const char* key, const std::vector<TaskIndex>& list) {
    if (list.empty()) return;
    OrderedJson& out = j[key] = OrderedJson::array();
    for (TaskIndex t : list) {
      STRATA_ASSERT(t < plan.size(), "task index out of range");
      out.push_back(plan.task(t).id);
    }
  };
  put_buffers("reads", task.reads);
  put_buffers("writes", task.writes);
  put_tasks("data_deps", task.data_deps);
  put_tasks("control_deps", task.control_deps);
}

OrderedJson task_to_json(const Plan& plan, const Task& task) {
  OrderedJson j;
  j["id"] = task.id;
  j["kind"] = to_string(task.kind);
  j["stream"] = to_string(task.stream);
  put_placement(task, j);
  put_sizes(task, j);
  put_references(plan, task, j);
  if (!task.attrs.empty()) {
    OrderedJson& attrs = j["attrs"] = OrderedJson::object();
    for (const auto& [key, value] : task.attrs) attrs[key] = attr_to_json(value);
  }
  return j;
}

// The members before the buffers and tasks, in the file's order.
OrderedJson plan_header(const Plan& plan) {
  OrderedJson doc;
  doc["schema_version"] = kPlanSchemaVersion;
  doc["format"] = kFormat;
  doc["info"] = plan_json::info_to_json(plan.info);
  doc["num_workers"] = plan.num_workers();
  if (!plan.placement.empty()) {
    OrderedJson& placement = doc["placement"];
    placement["policy"] = plan.placement_policy;
    placement["workers"] = plan.placement;
    if (plan.function_memory_mb > 0)
      placement["function_memory_mb"] = static_cast<std::int64_t>(plan.function_memory_mb);
  }
  return doc;
}

OrderedJson plan_document(const Plan& plan) {
  OrderedJson doc = plan_header(plan);
  OrderedJson& buffers = doc["buffers"] = OrderedJson::array();
  for (const Buffer& b : plan.buffers()) buffers.push_back(buffer_to_json(b));
  OrderedJson& tasks = doc["tasks"] = OrderedJson::array();
  for (const Task& t : plan.tasks()) tasks.push_back(task_to_json(plan, t));
  return doc;
}

// One element per line, as dump_one_element_per_line lays out a document (json_io.hpp), written
// element by element: at 10^6 tasks the whole document as a DOM took 4.2 GB.
void write_array(const char* key, std::size_t count, const std::function<OrderedJson(std::size_t)>& element,
                 const std::string& path, const ChunkWriter& write) {
  write(std::string(",\"") + key + "\":");
  if (count == 0) {
    write("[]");
    return;
  }
  write("[\n");
  const std::string pointer = std::string("/") + key + "/";
  for (std::size_t i = 0; i < count; ++i) {
    write(dump_json_value(element(i), path, pointer + std::to_string(i)));
    write(i + 1 < count ? ",\n" : "\n");
  }
  write("]");
}

void write_document(const Plan& plan, const std::string& path, const ChunkWriter& write) {
  const OrderedJson header = plan_header(plan);
  bool first = true;
  for (auto it = header.begin(); it != header.end(); ++it) {
    write(first ? "{" : ",");
    first = false;
    write(OrderedJson(it.key()).dump() + ":" + dump_json_value(*it, path, "/" + it.key()));
  }
  write_array(
      "buffers", plan.buffers().size(), [&](std::size_t b) { return buffer_to_json(plan.buffer(b)); }, path,
      write);
  write_array(
      "tasks", plan.size(),
      [&](std::size_t t) { return task_to_json(plan, plan.task(static_cast<TaskIndex>(t))); }, path, write);
  write("}\n");
}

// 1234567 -> "1,234,567".
std::string with_thousands(std::size_t n) {
  std::string digits = std::to_string(n);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(static_cast<std::size_t>(at), ",");
  return digits;
}

}  // namespace

Plan plan_from_json(const nlohmann::json& doc, const std::string& source) {
  plan_json::PlanReader reader(source);
  if (doc.is_object()) {
    for (const char* array : {"buffers", "tasks"}) {
      auto it = doc.find(array);
      if (it == doc.end() || !it->is_array()) continue;
      for (std::size_t i = 0; i < it->size(); ++i) reader.element(array, i, (*it)[i], doc);
    }
  }
  return reader.finish(doc);
}

Plan read_plan(const std::string& path, bool allow_unplaced) {
  plan_json::PlanReader reader(path, allow_unplaced);
  try {
    const nlohmann::json rest = stream_json_file(
        path, {"buffers", "tasks"},
        [&reader](std::string_view array, std::size_t index, const nlohmann::json& element,
                  const nlohmann::json& root) { reader.element(array, index, element, root); });
    return reader.finish(rest);
  } catch (const std::bad_alloc&) {
    const std::string in_use = address_space_in_use();
    const std::size_t tasks = reader.tasks_read();
    reader.release();
    throw InputError(input_error_message(
        path, "",
        "out of memory reading the Plan after " + with_thousands(tasks) + " tasks (" + in_use + ")"));
  }
}

nlohmann::json plan_to_json(const Plan& plan) { return nlohmann::json(plan_document(plan)); }

void write_plan(const Plan& plan, const std::string& path) {
  std::size_t written = 0;
  try {
    write_file_atomically(path, [&](const ChunkWriter& write) {
      write_document(plan, path, [&](std::string_view piece) {
        write(piece);
        written += piece.size();
      });
    });
  } catch (const std::bad_alloc&) {
    throw InputError(input_error_message(path, "",
                                         "out of memory writing a Plan of " + with_thousands(plan.size()) +
                                             " tasks after " + with_thousands(written) + " bytes (" +
                                             address_space_in_use() + ")"));
  }
}

}  // namespace traces
}  // namespace strata
