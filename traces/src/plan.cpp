#include "strata/traces/plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <new>
#include <string_view>

#include "plan_checks.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/json_stream.hpp"

namespace strata {
inline namespace traces {
namespace {

std::string pointer(std::size_t index, const char* field) {
  std::string out = "/tasks/" + std::to_string(index);
  if (field != nullptr && *field != '\0') out += std::string("/") + field;
  return out;
}

// Upper bounds on a task's figures. Beyond them a value is a slip (a unit, an overflow), not a
// workload, and executors would misbehave on it:
// - bytes < 2^53 (9.0 PB): every byte count is then an exact integer in a double, so converting
//   it to std::uint64_t (the replay's transfer sizes, sim/src/replay.cpp) is defined and exact;
//   the largest buffer in the zoo (GPT-3 175B's fp32 weights) is 7.0e11 B.
// - flops < 1e24 FLOP: the whole training of GPT-3 175B is 3.1e23 FLOP (Brown et al. 2020,
//   table D.1), so no single task comes near it.
// - a fixed task's duration_s < 1e7 s (116 days): longer than any training run strata models;
//   a larger value is a unit slip (ms or µs given as s).
constexpr double kMaxBytes = 9007199254740992.0;  // 2^53
constexpr double kMaxFlops = 1e24;
constexpr double kMaxFixedSeconds = 1e7;
// - a task's kernels or passes <= 1e6: a layer's task launches tens of kernels.
constexpr std::int64_t kMaxKernels = 1000000;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

void check_size(const std::string& source, std::size_t index, const char* field, double value) {
  if (!std::isfinite(value))
    throw InvalidPlanError(input_error_message(source, pointer(index, field), "not a finite number"));
  if (value < 0)
    throw InvalidPlanError(
        input_error_message(source, pointer(index, field), "negative value " + std::to_string(value)));
}

// Figure `field` of the task `id` at `index`: finite, >= 0 and below `bound` (`unit` and
// `bound_name` for the message, which names the task).
void check_bound(const std::string& source, std::size_t index, const char* field, double value,
                 const std::string& id, double bound = kMaxBytes, const char* unit = "B",
                 const char* bound_name = "2^53 B") {
  check_size(source, index, field, value);
  if (value >= bound)
    throw InvalidPlanError(input_error_message(source, pointer(index, field),
                                               "task " + quote_for_message(id) + ": " + number(value) + " " +
                                                   unit + " is out of range (must be below " + bound_name +
                                                   ")"));
}

// The bounds above, on task i (validate() only: validate_graph() leaves values to executors).
void check_task_bounds(const Task& t, const std::string& source, std::size_t i) {
  check_bound(source, i, "flops", t.flops, t.id, kMaxFlops, "FLOP", "1e24 FLOP");
  check_bound(source, i, "bytes_read", t.bytes_read, t.id);
  check_bound(source, i, "bytes_written", t.bytes_written, t.id);
  check_bound(source, i, "comm_bytes", t.comm_bytes, t.id);
  check_bound(source, i, "mem_alloc", t.mem_alloc, t.id);
  check_bound(source, i, "mem_free", t.mem_free, t.id);
  check_bound(source, i, "mem_temp", t.mem_temp, t.id);
  if (t.kind == TaskKind::fixed)
    if (const std::optional<double> seconds = t.attr_real("duration_s"))
      check_bound(source, i, "attrs/duration_s", *seconds, t.id, kMaxFixedSeconds, "s", "1e7 s");
  // A framework's kernels and passes (models/cost/gpu_kernels.hpp): counts are whole numbers.
  if (t.attrs.contains("pass_bytes")) {
    const std::optional<double> bytes = t.attr_real("pass_bytes");
    if (!bytes)
      throw InvalidPlanError(input_error_message(source, pointer(i, "attrs/pass_bytes"), "not a number"));
    check_bound(source, i, "attrs/pass_bytes", *bytes, t.id);
  }
  for (const char* key : {"kernels", "passes"}) {
    if (!t.attrs.contains(key)) continue;
    const std::optional<std::int64_t> count = t.attr_int(key);
    const std::int64_t least = std::string_view(key) == "kernels" ? 1 : 0;
    if (!count || *count < least || *count > kMaxKernels)
      throw InvalidPlanError(input_error_message(source, pointer(i, (std::string("attrs/") + key).c_str()),
                                                 "task " + quote_for_message(t.id) + ": " + key +
                                                     " must be a whole number in [" + std::to_string(least) +
                                                     ", " + std::to_string(kMaxKernels) + "]"));
  }
}

void check_worker(const std::string& source, std::size_t index, const std::string& field, WorkerId worker,
                  int num_workers) {
  if (worker < 0 || worker >= num_workers)
    throw InvalidPlanError(input_error_message(
        source, pointer(index, field.c_str()),
        "worker " + std::to_string(worker) + " outside [0, " + std::to_string(num_workers) + ")"));
}

void check_task(const Plan& plan, const std::string& source, std::size_t i) {
  const Task& t = plan.task(static_cast<TaskIndex>(i));
  if (t.id.empty()) throw InvalidPlanError(input_error_message(source, pointer(i, "id"), "empty id"));
  check_size(source, i, "flops", t.flops);
  check_size(source, i, "bytes_read", t.bytes_read);
  check_size(source, i, "bytes_written", t.bytes_written);
  check_size(source, i, "comm_bytes", t.comm_bytes);
  check_size(source, i, "mem_alloc", t.mem_alloc);
  check_size(source, i, "mem_free", t.mem_free);
  check_size(source, i, "mem_temp", t.mem_temp);
  // A communication task on the compute stream is a blocking call: the compute waits for it.
  if (!is_communication(t.kind) && t.stream == Stream::comm)
    throw InvalidPlanError(input_error_message(
        source, pointer(i, "stream"),
        std::string("kind '") + std::string(to_string(t.kind)) + "' must run on the compute stream"));
  if (is_collective(t.kind)) {
    if (t.group.empty())
      throw InvalidPlanError(input_error_message(source, pointer(i, "group"), "collective without group"));
    std::vector<WorkerId> sorted = t.group;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw InvalidPlanError(input_error_message(source, pointer(i, "group"), "worker listed twice"));
    for (std::size_t g = 0; g < t.group.size(); ++g)
      check_worker(source, i, "group/" + std::to_string(g), t.group[g], plan.num_workers());
  } else if (t.worker == -1 && !is_communication(t.kind)) {
    if (!plan.unplaced_allowed())
      throw InvalidPlanError(input_error_message(
          source, pointer(i, "worker"),
          "task is unplaced: give --schedule-policy heft|cpop|peft|minmin|cp|rr to place it"));
    if (!t.reads.empty() || !t.writes.empty())
      throw InvalidPlanError(input_error_message(source, pointer(i, "worker"),
                                                 "an unplaced task reads or writes buffers, which live on "
                                                 "a worker: give it a worker"));
  } else {
    check_worker(source, i, "worker", t.worker, plan.num_workers());
  }
  if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
    check_worker(source, i, "peer", t.peer, plan.num_workers());
    if (t.peer == t.worker)
      throw InvalidPlanError(
          input_error_message(source, pointer(i, "peer"), "peer is the task's own worker"));
  }
  for (const auto* deps : {&t.data_deps, &t.control_deps}) {
    const char* field = deps == &t.data_deps ? "data_deps" : "control_deps";
    for (std::size_t d = 0; d < deps->size(); ++d) {
      TaskIndex dep = (*deps)[d];
      std::string place = pointer(i, field) + "/" + std::to_string(d);
      if (dep >= plan.size())
        throw InvalidPlanError(
            input_error_message(source, place, "unknown task index " + std::to_string(dep)));
      if (dep == i) throw InvalidPlanError(input_error_message(source, place, "task depends on itself"));
    }
  }
  for (const auto* bufs : {&t.reads, &t.writes})
    for (BufferIndex b : *bufs)
      if (b >= plan.buffers().size())
        throw InvalidPlanError(input_error_message(source, pointer(i, bufs == &t.reads ? "reads" : "writes"),
                                                   "unknown buffer index " + std::to_string(b)));
}

}  // namespace

namespace {

constexpr std::array<std::string_view, 9> kSolverNames = {
    "backprop", "ampnet", "local", "dladmm", "pdadmm", "pdadmm-g-q", "gist", "block-admm", "serial-parallel"};
constexpr std::array<std::string_view, 4> kScheduleNames = {"none", "gpipe", "1f1b", "zb-h1"};
constexpr std::array<std::string_view, 2> kStreamOrderNames = {"ready", "issue"};
constexpr std::array<std::string_view, 4> kVariantNames = {"none", "greedy", "chunked", "overlapping"};

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::string_view to_string(PlanSolver solver) { return kSolverNames.at(static_cast<std::size_t>(solver)); }
std::optional<PlanSolver> parse_plan_solver(std::string_view name) {
  return parse_name<PlanSolver>(kSolverNames, name);
}
std::string_view to_string(PlanSchedule schedule) {
  return kScheduleNames.at(static_cast<std::size_t>(schedule));
}
std::optional<PlanSchedule> parse_plan_schedule(std::string_view name) {
  return parse_name<PlanSchedule>(kScheduleNames, name);
}
std::string_view to_string(StreamOrder order) {
  return kStreamOrderNames.at(static_cast<std::size_t>(order));
}
std::optional<StreamOrder> parse_stream_order(std::string_view name) {
  return parse_name<StreamOrder>(kStreamOrderNames, name);
}
std::string_view to_string(SolverParameters::LocalVariant variant) {
  return kVariantNames.at(static_cast<std::size_t>(variant));
}
std::optional<SolverParameters::LocalVariant> parse_local_variant(std::string_view name) {
  return parse_name<SolverParameters::LocalVariant>(kVariantNames, name);
}

std::string PlanInfo::schedule_label() const {
  return std::string(solver == PlanSolver::backprop ? to_string(schedule) : to_string(solver));
}

// Replicas are contiguous blocks of workers and a stage's tensor-parallel ranks consecutive
// workers (models/lowering: worker = (replica·pp + device)·tp + t).
WorkerId PlanInfo::representative(WorkerId w, int num_workers) const {
  if (symmetric_tp > 0 && tp_ranks > 0) {
    const WorkerId t = w % tp_ranks;
    return w - t + t % symmetric_tp;
  }
  if (symmetric_replicas > 0 && dp_replicas > 0) {
    const WorkerId replayed = num_workers / dp_replicas * symmetric_replicas;
    return w % replayed;
  }
  return w;
}

namespace {

// Bytes of memory per task of a lowered Plan: the Task, its id (beyond the short string buffer),
// dependency and read/write vectors, attributes, its share of the buffers and the id index.
// Measured as the slope of `strata plan`'s peak resident memory over its task count (mlp dp=2,
// 3,030 and 30,304 iterations: 99,990 tasks at 141,836 KiB, 1,000,032 tasks at 1,069,416 KiB;
// 2026-12-07, this development machine).
constexpr double kPlanBytesPerTask = 1055;

std::string gigabytes(double bytes) {
  char text[48];
  if (bytes >= 1e12)
    std::snprintf(text, sizeof text, "%.1f TB", bytes / 1e12);
  else
    std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

}  // namespace

double plan_memory_bytes(double tasks) { return tasks * kPlanBytesPerTask; }

void check_plan_fits_memory(double tasks) {
  const double need = plan_memory_bytes(tasks);
  const std::uint64_t available = memory_available_bytes();
  if (need <= static_cast<double>(available)) return;
  char count[32];
  std::snprintf(count, sizeof count, "%.3g", tasks);
  throw InputError("the Plan would hold at least " + std::string(count) + " tasks (" + gigabytes(need) +
                   "), more than the " + gigabytes(static_cast<double>(available)) +
                   " of memory available; try fewer iterations or microbatches, or a smaller strategy");
}

TaskIndex Plan::add_task(Task task) {
  auto index = static_cast<TaskIndex>(tasks_.size());
  // Before the store grows (doubling: a logarithmic number of checks), whether as much again fits:
  // where it does not, out of memory now (a reader names its file and the tasks read), rather than
  // when the system takes the memory back by killing the process.
  if (tasks_.size() == tasks_.capacity() && tasks_.size() >= (std::size_t{1} << 16) &&
      plan_memory_bytes(static_cast<double>(tasks_.size())) > static_cast<double>(memory_available_bytes()))
    throw std::bad_alloc();
  auto [it, inserted] = index_.emplace(task.id, index);
  if (!inserted)
    throw InputError(
        input_error_message("plan", pointer(index, "id"), "duplicate task id '" + task.id + "'"));
  task.coords = parse_coords(task.id);
  tasks_.push_back(std::move(task));
  return index;
}

void Plan::reserve(std::size_t tasks, std::size_t buffers) {
  tasks_.reserve(tasks);
  index_.reserve(tasks);
  buffers_.reserve(buffers);
  buffer_coords_.reserve(buffers);
}

BufferIndex Plan::add_buffer(Buffer buffer) {
  buffer_coords_.push_back(parse_coords(buffer.id));
  buffers_.push_back(std::move(buffer));
  return static_cast<BufferIndex>(buffers_.size() - 1);
}

void Plan::add_data_dep(TaskIndex producer, TaskIndex consumer) {
  STRATA_ASSERT(producer < tasks_.size() && consumer < tasks_.size(), "dependency out of range");
  tasks_[consumer].data_deps.push_back(producer);
}

void Plan::add_control_dep(TaskIndex before, TaskIndex after) {
  STRATA_ASSERT(before < tasks_.size() && after < tasks_.size(), "dependency out of range");
  tasks_[after].control_deps.push_back(before);
}

long Plan::find(const std::string& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? -1 : static_cast<long>(it->second);
}

int Plan::num_iterations() const {
  int n = 0;
  for (const Task& t : tasks_) n = std::max(n, t.iteration + 1);
  return n;
}

void Plan::validate(const std::string& source) const {
  const std::vector<TaskIndex> order = checked_order(source);
  for (std::size_t i = 0; i < tasks_.size(); ++i) check_task_bounds(tasks_[i], source, i);
  for (std::size_t b = 0; b < buffers_.size(); ++b)
    if (buffers_[b].bytes >= kMaxBytes)
      throw InvalidPlanError(input_error_message(source, "/buffers/" + std::to_string(b) + "/bytes",
                                                 "buffer " + quote_for_message(buffers_[b].id) + ": " +
                                                     number(buffers_[b].bytes) +
                                                     " B is out of range (must be below 2^53 B)"));
  check_p2p_pairs(*this, source);
  check_buffer_order(*this, order, source);
}

void Plan::validate_graph(const std::string& source) const { checked_order(source); }

bool Plan::has_unplaced() const {
  return std::any_of(tasks_.begin(), tasks_.end(),
                     [](const Task& t) { return t.worker == -1 && !is_collective(t.kind); });
}

std::vector<TaskIndex> Plan::checked_order(const std::string& source) const {
  if (num_workers_ <= 0)
    throw InvalidPlanError(input_error_message(source, "/num_workers", "must be positive"));
  for (std::size_t i = 0; i < tasks_.size(); ++i) check_task(*this, source, i);
  for (std::size_t b = 0; b < buffers_.size(); ++b) {
    const double bytes = buffers_[b].bytes;
    const std::string place = "/buffers/" + std::to_string(b) + "/bytes";
    if (bytes < 0 || !std::isfinite(bytes))
      throw InvalidPlanError(input_error_message(source, place, "negative or non-finite size"));
    if (buffers_[b].worker < 0 || buffers_[b].worker >= num_workers_)
      throw InvalidPlanError(input_error_message(source, "/buffers/" + std::to_string(b) + "/worker",
                                                 "worker outside [0, num_workers)"));
  }
  return topological_order(*this, source);
}

}  // namespace traces
}  // namespace strata
