// check_p2p_pairs and check_buffer_order (plan_checks.hpp).
#include "plan_checks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace traces {
namespace {

constexpr TaskIndex kNoTask = std::numeric_limits<TaskIndex>::max();

[[noreturn]] void fail(const std::string& source, TaskIndex task, const std::string& field,
                       const std::string& problem) {
  std::string place = "/tasks/" + std::to_string(task);
  if (!field.empty()) place += "/" + field;
  throw InvalidPlanError(input_error_message(source, place, problem));
}

// Exact (a rounded unit could print two different sizes alike).
std::string bytes_text(double bytes) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g B", bytes);
  return text;
}

std::string quoted(const Plan& plan, TaskIndex t) { return quote_for_message(plan.task(t).id); }

bool matches(const Task& send, const Task& recv) {
  return send.kind == TaskKind::send && send.worker == recv.peer && send.peer == recv.worker;
}

// The send `recv` completes: its one matching data dependency.
TaskIndex matching_send(const Plan& plan, TaskIndex r, const std::string& source) {
  const Task& recv = plan.task(r);
  TaskIndex match = kNoTask;
  for (TaskIndex d : recv.data_deps) {
    if (d == match || !matches(plan.task(d), recv)) continue;
    if (match != kNoTask)
      fail(source, r, "data_deps",
           "recv " + quoted(plan, r) + " matches two sends, " + quoted(plan, match) + " and " +
               quoted(plan, d));
    match = d;
  }
  if (match == kNoTask)
    fail(source, r, "data_deps",
         "recv " + quoted(plan, r) + " has no send from worker " + std::to_string(recv.peer) + " to worker " +
             std::to_string(recv.worker) + " among its data dependencies");
  const Task& send = plan.task(match);
  if (recv.comm_bytes != 0 && recv.comm_bytes != send.comm_bytes)
    fail(source, r, "comm_bytes",
         "recv " + quoted(plan, r) + " expects " + bytes_text(recv.comm_bytes) + " but its send " +
             quoted(plan, match) + " carries " + bytes_text(send.comm_bytes));
  return match;
}

// Whether `reader` depends, directly or transitively, on a task that writes buffer `b`. Breadth
// first, each task tested as it is found, so a writer k dependencies away is found after the
// tasks within k - 1; never below `floor` (the first writer's position: nothing ordered before it
// can depend on it). On the Plans strata lowers the writer is a direct dependency or one step
// further, so the check stays linear in the Plan; `stamp` marks the tasks this search found (the
// caller gives each search its own `mark`).
bool depends_on_writer(const Plan& plan, TaskIndex reader, BufferIndex b,
                       const std::vector<std::size_t>& position, std::size_t floor,
                       std::vector<std::uint32_t>& stamp, std::uint32_t mark, std::vector<TaskIndex>& queue) {
  queue.assign(1, reader);
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const Task& task = plan.task(queue[head]);
    for (const auto* deps : {&task.data_deps, &task.control_deps})
      for (TaskIndex d : *deps) {
        if (stamp[d] == mark || position[d] < floor) continue;
        stamp[d] = mark;
        const std::vector<BufferIndex>& writes = plan.task(d).writes;
        if (std::find(writes.begin(), writes.end(), b) != writes.end()) return true;
        queue.push_back(d);
      }
  }
  return false;
}

}  // namespace

void check_p2p_pairs(const Plan& plan, const std::string& source) {
  std::vector<TaskIndex> received_by(plan.size(), kNoTask);  // per send: its recv
  for (TaskIndex r = 0; r < plan.size(); ++r) {
    if (plan.task(r).kind != TaskKind::recv) continue;
    const TaskIndex s = matching_send(plan, r, source);
    if (received_by[s] != kNoTask)
      fail(source, r, "data_deps",
           "send " + quoted(plan, s) + " is received twice, by " + quoted(plan, received_by[s]) + " and " +
               quoted(plan, r));
    received_by[s] = r;
  }
  for (TaskIndex s = 0; s < plan.size(); ++s)
    if (plan.task(s).kind == TaskKind::send && received_by[s] == kNoTask)
      fail(source, s, "",
           "send " + quoted(plan, s) + " to worker " + std::to_string(plan.task(s).peer) +
               " has no recv (a recv on that worker with a data dependency on it)");
}

void check_buffer_order(const Plan& plan, const std::vector<TaskIndex>& order, const std::string& source) {
  std::vector<std::size_t> position(plan.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Per buffer: the lowest position of a task that writes it, and that task.
  std::vector<TaskIndex> first_writer(plan.buffers().size(), kNoTask);
  for (TaskIndex t : order)
    for (BufferIndex b : plan.task(t).writes)
      if (first_writer[b] == kNoTask) first_writer[b] = t;

  std::vector<std::uint32_t> stamp(plan.size(), 0);
  std::vector<TaskIndex> queue;
  std::uint32_t mark = 0;
  for (TaskIndex r = 0; r < plan.size(); ++r) {
    const Task& task = plan.task(r);
    for (std::size_t j = 0; j < task.reads.size(); ++j) {
      const BufferIndex b = task.reads[j];
      if (plan.buffer(b).persistent || first_writer[b] == kNoTask) continue;
      if (std::find(task.writes.begin(), task.writes.end(), b) != task.writes.end()) continue;
      if (++mark == 0) {  // wrapped: start the stamps afresh
        std::fill(stamp.begin(), stamp.end(), 0);
        mark = 1;
      }
      if (!depends_on_writer(plan, r, b, position, position[first_writer[b]], stamp, mark, queue))
        fail(source, r, "reads/" + std::to_string(j),
             "task " + quoted(plan, r) + " reads buffer " + quote_for_message(plan.buffer(b).id) +
                 " but depends on no task that writes it (e.g. " + quoted(plan, first_writer[b]) + ")");
    }
  }
}

}  // namespace traces
}  // namespace strata
