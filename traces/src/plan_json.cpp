#include "strata/traces/plan_json.hpp"

#include <unordered_map>
#include <variant>

#include "plan_info_json.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace traces {
namespace {

// The file keeps fields in the documented order (id and kind first), which plain nlohmann::json
// would sort away.
using OrderedJson = nlohmann::ordered_json;
using BufferIds = std::unordered_map<std::string, BufferIndex>;

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
  return j;
}

void put_placement(const Task& task, OrderedJson& j) {
  if (is_collective(task.kind)) {
    j["group"] = task.group;
    j["algo"] = to_string(task.algo);
  } else {
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

OrderedJson plan_document(const Plan& plan) {
  OrderedJson doc;
  doc["schema_version"] = kPlanSchemaVersion;
  doc["format"] = kFormat;
  doc["info"] = plan_json::info_to_json(plan.info);
  doc["num_workers"] = plan.num_workers();
  OrderedJson& buffers = doc["buffers"] = OrderedJson::array();
  for (const Buffer& b : plan.buffers()) buffers.push_back(buffer_to_json(b));
  OrderedJson& tasks = doc["tasks"] = OrderedJson::array();
  for (const Task& t : plan.tasks()) tasks.push_back(task_to_json(plan, t));
  return doc;
}

// ---- reading ----------------------------------------------------------------------------------

double optional_size(const JsonNode& node, std::string_view key) {
  std::optional<JsonNode> child = node.find(key);
  return child ? child->as_size() : 0.0;
}

std::int64_t optional_int(const JsonNode& node, std::string_view key, std::int64_t fallback,
                          std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX) {
  std::optional<JsonNode> child = node.find(key);
  return child ? child->as_int(min, max) : fallback;
}

DType optional_dtype(const JsonNode& node) {
  std::optional<JsonNode> child = node.find("dtype");
  return child ? read_enum<DType>(*child, parse_dtype, "dtype") : DType::fp32;
}

Buffer read_buffer(const JsonNode& node) {
  node.reject_unknown_fields({"id", "worker", "bytes", "dtype", "persistent"});
  Buffer buffer;
  buffer.id = node.at("id").as_string();
  buffer.worker = static_cast<WorkerId>(node.at("worker").as_int(0, INT32_MAX));
  buffer.bytes = node.at("bytes").as_size();
  buffer.dtype = optional_dtype(node);
  if (std::optional<JsonNode> p = node.find("persistent")) buffer.persistent = p->as_bool();
  return buffer;
}

// A field that the task's kind does not use must be absent.
void reject_field(const JsonNode& task, std::string_view key, const std::string& why) {
  if (std::optional<JsonNode> child = task.find(key)) child->fail(why);
}

void read_placement(const JsonNode& node, Task& task) {
  if (is_collective(task.kind)) {
    reject_field(node, "worker", "a collective has a group, not a worker");
    JsonNode group = node.at("group");
    for (std::size_t i = 0; i < group.size(); ++i)
      task.group.push_back(static_cast<WorkerId>(group.at(i).as_int(0, INT32_MAX)));
    std::optional<JsonNode> algo = node.find("algo");
    task.algo = algo ? read_enum<CollectiveAlgo>(*algo, parse_collective_algo, "collective algorithm")
                     : CollectiveAlgo::ring;
  } else {
    task.worker = static_cast<WorkerId>(node.at("worker").as_int(0, INT32_MAX));
    const std::string kind_name = quote_for_message(to_string(task.kind));
    reject_field(node, "group", "only collectives have a group, " + kind_name + " is not one");
    reject_field(node, "algo", "only collectives have an algorithm, " + kind_name + " is not one");
  }
  if (task.kind == TaskKind::send || task.kind == TaskKind::recv)
    task.peer = static_cast<WorkerId>(node.at("peer").as_int(0, INT32_MAX));
  else
    reject_field(node, "peer", "only send and recv have a peer");
}

void read_sizes(const JsonNode& node, Task& task) {
  // The size that defines a task's cost must be stated, even if zero: a forgotten "flops" would
  // otherwise make a layer free.
  if (is_communication(task.kind))
    node.at("comm_bytes");
  else
    node.at("flops");
  task.flops = optional_size(node, "flops");
  task.bytes_read = optional_size(node, "bytes_read");
  task.bytes_written = optional_size(node, "bytes_written");
  task.comm_bytes = optional_size(node, "comm_bytes");
  task.mem_alloc = optional_size(node, "mem_alloc");
  task.mem_free = optional_size(node, "mem_free");
}

AttrValue read_attr(const JsonNode& node) {
  const nlohmann::json& v = node.value();
  if (v.is_number_integer()) return node.as_int();
  if (v.is_number_float()) return node.as_number();
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) node.fail("expected an integer, a number, a string or a list of integers");
  std::vector<std::int64_t> list;
  for (std::size_t i = 0; i < node.size(); ++i) list.push_back(node.at(i).as_int());
  return list;
}

std::vector<BufferIndex> read_buffer_refs(const JsonNode& task, std::string_view key,
                                          const BufferIds& buffer_ids) {
  std::vector<BufferIndex> out;
  std::optional<JsonNode> list = task.find(key);
  if (!list) return out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    JsonNode ref = list->at(i);
    auto it = buffer_ids.find(ref.as_string());
    if (it == buffer_ids.end()) ref.fail("unknown buffer " + quote_for_message(ref.as_string()));
    out.push_back(it->second);
  }
  return out;
}

// Everything but the dependencies, which may name tasks further down the file.
Task read_task(const JsonNode& node, const BufferIds& buffer_ids) {
  node.reject_unknown_fields(
      {"id",        "kind",      "stream",   "worker", "group",      "peer",          "algo",
       "dtype",     "iteration", "priority", "flops",  "bytes_read", "bytes_written", "comm_bytes",
       "mem_alloc", "mem_free",  "reads",    "writes", "data_deps",  "control_deps",  "attrs"});
  Task task;
  task.id = node.at("id").as_string();
  task.kind = read_enum<TaskKind>(node.at("kind"), parse_task_kind, "task kind");
  std::optional<JsonNode> stream = node.find("stream");
  task.stream = stream ? read_enum<Stream>(*stream, parse_stream, "stream")
                       : (is_communication(task.kind) ? Stream::comm : Stream::compute);
  read_placement(node, task);
  task.dtype = optional_dtype(node);
  task.iteration = static_cast<std::int32_t>(optional_int(node, "iteration", 0, 0, INT32_MAX));
  task.priority = optional_int(node, "priority", 0);
  read_sizes(node, task);
  task.reads = read_buffer_refs(node, "reads", buffer_ids);
  task.writes = read_buffer_refs(node, "writes", buffer_ids);
  if (std::optional<JsonNode> attrs = node.find("attrs")) {
    for (const std::string& key : attrs->keys()) task.attrs[key] = read_attr(attrs->at(key));
  }
  return task;
}

void read_dependencies(const JsonNode& tasks, Plan& plan) {
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    JsonNode node = tasks.at(i);
    for (const char* key : {"data_deps", "control_deps"}) {
      std::optional<JsonNode> deps = node.find(key);
      if (!deps) continue;
      for (std::size_t d = 0; d < deps->size(); ++d) {
        JsonNode ref = deps->at(d);
        long dep = plan.find(ref.as_string());
        if (dep < 0) ref.fail("unknown task " + quote_for_message(ref.as_string()));
        auto consumer = static_cast<TaskIndex>(i);
        if (key[0] == 'd')
          plan.add_data_dep(static_cast<TaskIndex>(dep), consumer);
        else
          plan.add_control_dep(static_cast<TaskIndex>(dep), consumer);
      }
    }
  }
}

// The file's schema version, when this strata reads it: kPlanSchemaVersion, or an older one whose
// missing fields read_info derives. A newer file names the version it needs.
std::int64_t check_header(const JsonNode& root) {
  JsonNode schema_version = root.at("schema_version");
  const std::int64_t v = schema_version.as_int();
  if (v > kPlanSchemaVersion)
    schema_version.fail(
        "unsupported version " + std::to_string(v) + ": this Plan needs a strata that reads " +
        "plan schema version " + std::to_string(v) + " (this strata reads " +
        std::to_string(kOldestPlanSchemaVersion) + " to " + std::to_string(kPlanSchemaVersion) + ")");
  if (v < kOldestPlanSchemaVersion)
    schema_version.fail("unsupported version " + std::to_string(v) + " (this strata reads " +
                        std::to_string(kOldestPlanSchemaVersion) + " to " +
                        std::to_string(kPlanSchemaVersion) + ")");
  check_file_header(root, kFormat, static_cast<int>(v));  // the format, as every strata file checks it
  return v;
}

Plan build_plan(const JsonNode& root, std::int64_t version) {
  root.reject_unknown_fields({"schema_version", "format", "info", "num_workers", "buffers", "tasks"});
  Plan plan(static_cast<int>(root.at("num_workers").as_int(0, INT32_MAX)));
  if (std::optional<JsonNode> info = root.find("info")) plan.info = plan_json::read_info(*info, version);

  BufferIds buffer_ids;
  if (std::optional<JsonNode> buffers = root.find("buffers")) {
    for (std::size_t b = 0; b < buffers->size(); ++b) {
      JsonNode node = buffers->at(b);
      Buffer buffer = read_buffer(node);
      if (!buffer_ids.emplace(buffer.id, plan.add_buffer(buffer)).second)
        node.at("id").fail("duplicate buffer id " + quote_for_message(buffer.id));
    }
  }
  JsonNode tasks = root.at("tasks");
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    JsonNode node = tasks.at(i);
    Task task = read_task(node, buffer_ids);
    // Plan::add_task detects the duplicate in its own index (one hash lookup per task, which
    // matters at 10^5 tasks); only then look up where the first one was, to say so.
    try {
      plan.add_task(std::move(task));
    } catch (const InputError&) {
      const std::string id = node.at("id").as_string();
      node.at("id").fail("duplicate task id " + quote_for_message(id) + " (first at /tasks/" +
                         std::to_string(plan.find(id)) + ")");
    }
  }
  read_dependencies(tasks, plan);
  if (version == 1) plan.info.graph_nodes = plan_json::legacy_graph_nodes(plan);
  return plan;
}

}  // namespace

Plan plan_from_json(const nlohmann::json& doc, const std::string& source) {
  JsonNode root(doc, source);
  const std::int64_t version = check_header(root);
  Plan plan = build_plan(root, version);
  // Ranges, stream/kind agreement, self-dependencies and cycles: one check shared with Plans
  // that strategies build in memory. Task N of the file is task index N, so pointers agree.
  plan.validate(source);
  return plan;
}

Plan read_plan(const std::string& path) { return plan_from_json(read_json_file(path), path); }

nlohmann::json plan_to_json(const Plan& plan) { return nlohmann::json(plan_document(plan)); }

void write_plan(const Plan& plan, const std::string& path) {
  write_file_atomically(path, dump_one_element_per_line(plan_document(plan), path));
}

}  // namespace traces
}  // namespace strata
