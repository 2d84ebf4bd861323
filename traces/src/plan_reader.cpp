#include "plan_reader.hpp"

#include <optional>

#include "plan_info_json.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata {
inline namespace traces {
namespace plan_json {
namespace {

using BufferIds = std::unordered_map<std::string, BufferIndex>;

constexpr std::string_view kFormat = "strata-plan";

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
  node.reject_unknown_fields({"id", "worker", "bytes", "dtype", "persistent", "on_host"});
  Buffer buffer;
  buffer.id = node.at("id").as_string();
  buffer.worker = static_cast<WorkerId>(node.at("worker").as_int(0, INT32_MAX));
  buffer.bytes = node.at("bytes").as_size();
  buffer.dtype = optional_dtype(node);
  if (std::optional<JsonNode> p = node.find("persistent")) buffer.persistent = p->as_bool();
  if (std::optional<JsonNode> h = node.find("on_host")) buffer.on_host = h->as_bool();
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
    if (is_hub_algo(task.algo) && task.kind != TaskKind::allreduce)
      algo->fail("'" + std::string(to_string(task.algo)) + "' applies to allreduce only, not to " +
                 quote_for_message(to_string(task.kind)));
  } else {
    // No worker: an unplaced compute task (Plan::allow_unplaced says whether one is taken).
    const std::optional<JsonNode> worker = node.find("worker");
    task.worker = worker || is_communication(task.kind)
                      ? static_cast<WorkerId>(node.at("worker").as_int(0, INT32_MAX))
                      : -1;
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
  task.mem_temp = optional_size(node, "mem_temp");
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
  node.reject_unknown_fields({"id",           "kind",       "stream",        "worker",     "group",
                              "peer",         "algo",       "dtype",         "iteration",  "priority",
                              "flops",        "bytes_read", "bytes_written", "comm_bytes", "mem_alloc",
                              "mem_free",     "mem_temp",   "reads",         "writes",     "data_deps",
                              "control_deps", "attrs"});
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

}  // namespace

void PlanReader::element(std::string_view array, std::size_t index, const nlohmann::json& value,
                         const nlohmann::json& root) {
  if (!version_checked_ && root.is_object() && root.contains("schema_version")) {
    check_header(JsonNode(root, source_));
    version_checked_ = true;
  }
  const JsonNode node(value, source_, "/" + std::string(array) + "/" + std::to_string(index));
  if (array == "buffers") {
    add_buffer(node);
  } else {
    buffers_came_first_ = root.is_object() && root.contains("buffers");
    add_task(node);
  }
}

Plan PlanReader::finish(const nlohmann::json& doc) {
  const JsonNode root(doc, source_);
  const std::int64_t version = check_header(root);
  root.reject_unknown_fields(
      {"schema_version", "format", "info", "num_workers", "placement", "buffers", "tasks"});
  plan_.set_num_workers(static_cast<int>(root.at("num_workers").as_int(0, INT32_MAX)));
  if (std::optional<JsonNode> info = root.find("info")) plan_.info = read_info(*info, version);
  if (std::optional<JsonNode> placement = root.find("placement")) {
    placement->reject_unknown_fields({"policy", "workers", "function_memory_mb"});
    if (std::optional<JsonNode> memory = placement->find("function_memory_mb"))
      plan_.function_memory_mb = static_cast<double>(memory->as_int(1, 1 << 24));
    if (std::optional<JsonNode> policy = placement->find("policy"))
      plan_.placement_policy = policy->as_string();
    const JsonNode workers = placement->at("workers");
    if (workers.size() != static_cast<std::size_t>(plan_.num_workers()))
      workers.fail("names " + std::to_string(workers.size()) + " hosts, the plan has " +
                   std::to_string(plan_.num_workers()) + " workers");
    for (std::size_t w = 0; w < workers.size(); ++w) {
      std::string host = workers.at(w).as_string();
      if (host.empty()) workers.at(w).fail("empty host name");
      plan_.placement.push_back(std::move(host));
    }
  }
  if (std::optional<JsonNode> buffers = root.find("buffers")) buffers->size();  // an array
  const JsonNode tasks = root.at("tasks");
  tasks.size();  // an array (its elements streamed into plan_)
  if (plan_.tasks().empty()) tasks.fail("no tasks: a Plan has at least one");
  resolve_forward_dependencies();
  if (version == 1) plan_.info.graph_nodes = legacy_graph_nodes(plan_);
  // Ranges, stream/kind agreement, self-dependencies and cycles: one check shared with Plans
  // that strategies build in memory. Task N of the file is task index N, so pointers agree.
  plan_.validate(source_);
  return std::move(plan_);
}

void PlanReader::add_buffer(const JsonNode& node) {
  Buffer buffer = read_buffer(node);
  if (!buffer_ids_.emplace(buffer.id, plan_.add_buffer(buffer)).second)
    node.at("id").fail("duplicate buffer id " + quote_for_message(buffer.id));
}

void PlanReader::add_task(const JsonNode& node) {
  Task task;
  try {
    task = read_task(node, buffer_ids_);
  } catch (const InputError& e) {
    if (buffers_came_first_ || std::string_view(e.what()).find(": unknown buffer ") == std::string_view::npos)
      throw;
    throw InputError(std::string(e.what()) + " (the \"buffers\" list must come before \"tasks\")");
  }
  // Plan::add_task detects the duplicate in its own index (one hash lookup per task, which
  // matters at 10^5 tasks); only then look up where the first one was, to say so.
  TaskIndex index = 0;
  try {
    index = plan_.add_task(std::move(task));
  } catch (const InputError&) {
    const std::string id = node.at("id").as_string();
    node.at("id").fail("duplicate task id " + quote_for_message(id) + " (first at /tasks/" +
                       std::to_string(plan_.find(id)) + ")");
  }
  add_dependencies(node, index);
}

void PlanReader::add_dependencies(const JsonNode& node, TaskIndex consumer) {
  for (const bool control : {false, true}) {
    std::optional<JsonNode> deps = node.find(control ? "control_deps" : "data_deps");
    if (!deps) continue;
    std::vector<TaskIndex>& list =
        control ? plan_.mutable_task(consumer).control_deps : plan_.mutable_task(consumer).data_deps;
    for (std::size_t d = 0; d < deps->size(); ++d) {
      std::string id = deps->at(d).as_string();
      const long dep = plan_.find(id);
      if (dep < 0)
        forward_.push_back({consumer, control, static_cast<std::uint32_t>(d),
                            static_cast<std::uint32_t>(list.size()), std::move(id)});
      list.push_back(dep < 0 ? 0 : static_cast<TaskIndex>(dep));
    }
  }
}

void PlanReader::resolve_forward_dependencies() {
  for (const ForwardDependency& f : forward_) {
    const long dep = plan_.find(f.id);
    if (dep < 0)
      throw InputError(input_error_message(source_,
                                           "/tasks/" + std::to_string(f.consumer) +
                                               (f.control ? "/control_deps/" : "/data_deps/") +
                                               std::to_string(f.position),
                                           "unknown task " + quote_for_message(f.id)));
    Task& task = plan_.mutable_task(f.consumer);
    (f.control ? task.control_deps : task.data_deps)[f.slot] = static_cast<TaskIndex>(dep);
  }
  forward_.clear();
  forward_.shrink_to_fit();
}

}  // namespace plan_json
}  // namespace traces
}  // namespace strata
