#include "strata/traces/dispatch.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace traces {

Dispatcher::Dispatcher(const Plan& plan, CommStreams comm_streams)
    : plan_(plan),
      offsets_(plan.size() + 1, 0),
      pending_(plan.size(), 0),
      state_(plan.size(), State::waiting),
      queues_(static_cast<std::size_t>(plan.num_workers()) * 2),
      busy_(static_cast<std::size_t>(plan.num_workers()) * 2, false) {
  if (comm_streams == CommStreams::per_group) assign_comm_streams();
  std::vector<bool> used(queues_.size(), false);
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& t = plan.task(i);
    for (std::size_t k = 0; k < t.participants().size(); ++k) used[slot_of(i, t, k)] = true;
  }
  streams_used_ = static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& t = plan.task(i);
    for (const auto* deps : {&t.data_deps, &t.control_deps})
      for (TaskIndex d : *deps) {
        ++offsets_[d + 1];
        ++pending_[i];
      }
  }
  for (std::size_t i = 1; i < offsets_.size(); ++i) offsets_[i] += offsets_[i - 1];
  successors_.resize(offsets_.back());
  std::vector<std::size_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& t = plan.task(i);
    for (const auto* deps : {&t.data_deps, &t.control_deps})
      for (TaskIndex d : *deps) successors_[fill[d]++] = i;
  }
  if (plan.info.stream_order == StreamOrder::issue) order_streams();
  for (TaskIndex i = 0; i < plan.size(); ++i)
    if (pending_[i] == 0) make_ready(i);
}

void Dispatcher::order_streams() {
  in_issue_order_ = true;
  const std::size_t slots = queues_.size();
  issue_offsets_.assign(slots + 1, 0);
  for (TaskIndex i = 0; i < plan_.size(); ++i) {
    const Task& t = plan_.task(i);
    for (std::size_t k = 0; k < t.participants().size(); ++k) ++issue_offsets_[slot_of(i, t, k) + 1];
  }
  for (std::size_t s = 1; s <= slots; ++s) issue_offsets_[s] += issue_offsets_[s - 1];
  issue_.resize(issue_offsets_.back());
  std::vector<std::size_t> fill(issue_offsets_.begin(), issue_offsets_.end() - 1);
  for (TaskIndex i = 0; i < plan_.size(); ++i) {  // by index: each slot's run is sorted by index
    const Task& t = plan_.task(i);
    for (std::size_t k = 0; k < t.participants().size(); ++k) issue_[fill[slot_of(i, t, k)]++] = i;
  }
  for (std::size_t s = 0; s < slots; ++s)
    std::stable_sort(
        issue_.begin() + static_cast<std::ptrdiff_t>(issue_offsets_[s]),
        issue_.begin() + static_cast<std::ptrdiff_t>(issue_offsets_[s + 1]),
        [this](TaskIndex a, TaskIndex b) { return plan_.task(a).priority < plan_.task(b).priority; });
  cursor_.assign(issue_offsets_.begin(), issue_offsets_.end() - 1);
  check_issue_order_finishes();
}

std::vector<std::pair<TaskIndex, TaskIndex>> Dispatcher::issue_edges() const {
  std::vector<std::pair<TaskIndex, TaskIndex>> edges;
  if (!in_issue_order_) return edges;
  for (std::size_t s = 0; s + 1 < issue_offsets_.size(); ++s)
    for (std::size_t p = issue_offsets_[s] + 1; p < issue_offsets_[s + 1]; ++p)
      edges.emplace_back(issue_[p - 1], issue_[p]);
  return edges;
}

// Kahn's algorithm over the dependencies plus an edge from each task to the next of its stream:
// the issue order can finish exactly when that graph is acyclic (a collective waits for every
// member's stream, so it is one node with an edge from each). Otherwise names a task on a cycle,
// found by walking back from a task left over through predecessors that are left over too.
void Dispatcher::check_issue_order_finishes() const {
  const std::size_t n = plan_.size();
  std::vector<std::uint32_t> pending(pending_);
  std::vector<TaskIndex> next_in_stream;  // CSR: stream successors of task i
  std::vector<std::size_t> next_offsets(n + 1, 0);
  const std::size_t slots = issue_offsets_.size() - 1;
  for (std::size_t s = 0; s < slots; ++s)
    for (std::size_t p = issue_offsets_[s] + 1; p < issue_offsets_[s + 1]; ++p) {
      ++next_offsets[issue_[p - 1] + 1];
      ++pending[issue_[p]];
    }
  for (std::size_t i = 1; i <= n; ++i) next_offsets[i] += next_offsets[i - 1];
  next_in_stream.resize(next_offsets.back());
  std::vector<std::size_t> fill(next_offsets.begin(), next_offsets.end() - 1);
  for (std::size_t s = 0; s < slots; ++s)
    for (std::size_t p = issue_offsets_[s] + 1; p < issue_offsets_[s + 1]; ++p)
      next_in_stream[fill[issue_[p - 1]]++] = issue_[p];
  std::vector<TaskIndex> stack;
  for (TaskIndex i = 0; i < n; ++i)
    if (pending[i] == 0) stack.push_back(i);
  std::size_t done = 0;
  while (!stack.empty()) {
    const TaskIndex t = stack.back();
    stack.pop_back();
    ++done;
    for (std::size_t k = offsets_[t]; k < offsets_[t + 1]; ++k)
      if (--pending[successors_[k]] == 0) stack.push_back(successors_[k]);
    for (std::size_t k = next_offsets[t]; k < next_offsets[t + 1]; ++k)
      if (--pending[next_in_stream[k]] == 0) stack.push_back(next_in_stream[k]);
  }
  if (done == n) return;
  // Every left-over task has a left-over predecessor (a dependency or the previous task of one of
  // its streams); following them from any left-over task must revisit one, which is on a cycle.
  std::vector<TaskIndex> previous(n, kNone);
  for (std::size_t s = 0; s < slots; ++s)
    for (std::size_t p = issue_offsets_[s] + 1; p < issue_offsets_[s + 1]; ++p)
      if (pending[issue_[p]] > 0 && pending[issue_[p - 1]] > 0) previous[issue_[p]] = issue_[p - 1];
  TaskIndex t = 0;
  while (pending[t] == 0) ++t;
  std::vector<bool> seen(n, false);
  while (!seen[t]) {
    seen[t] = true;
    TaskIndex before = previous[t];
    const Task& task = plan_.task(t);
    for (const auto* deps : {&task.data_deps, &task.control_deps})
      for (TaskIndex d : *deps)
        if (pending[d] > 0) before = d;
    t = before;
  }
  throw InvalidPlanError("plan: task " + plan_.task(t).id +
                         " can never start: in the order its streams issue tasks (priority, then index) it "
                         "waits, through its dependencies, for a task issued after it on one of its streams");
}

// CommStreams::per_group: gives every (worker, communicator) its own slot, numbered after the
// 2 · workers slots of the one_per_worker rule. A communicator is a `comm_group` name, a
// collective's group as a sorted set of ranks, or a p2p task's (peer, direction); its key packs
// (worker, kind of key, id) into 64 bits for one hash lookup per participant.
void Dispatcher::assign_comm_streams() {
  const std::size_t n = plan_.size();
  comm_offsets_.assign(n + 1, 0);
  for (TaskIndex i = 0; i < n; ++i) {
    const Task& t = plan_.task(i);
    comm_offsets_[i + 1] = comm_offsets_[i] + (t.stream == Stream::comm ? t.participants().size() : 0);
  }
  comm_slots_.resize(comm_offsets_.back());
  constexpr std::uint64_t kByName = 0, kByGroup = 1, kByPeer = 2;  // the kind of key
  std::map<std::string, std::uint64_t> names;
  std::map<std::vector<WorkerId>, std::uint64_t> groups;
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of_key;
  std::vector<WorkerId> sorted;
  std::size_t next_slot = queues_.size();
  for (TaskIndex i = 0; i < n; ++i) {
    const Task& t = plan_.task(i);
    if (t.stream != Stream::comm) continue;
    std::uint64_t kind = kByPeer;
    std::uint64_t id = static_cast<std::uint64_t>(t.peer) * 2 + (t.kind == TaskKind::recv ? 1 : 0);
    std::optional<std::string> name = t.attrs.empty() ? std::nullopt : t.attr_string(kCommGroupAttr);
    if (name) {
      kind = kByName;
      id = names.emplace(*name, names.size()).first->second;
    } else if (is_collective(t.kind)) {
      sorted.assign(t.group.begin(), t.group.end());
      std::sort(sorted.begin(), sorted.end());
      kind = kByGroup;
      id = groups.emplace(sorted, groups.size()).first->second;
    }
    STRATA_ASSERT(id < (std::uint64_t{1} << 30), "too many communicators in the plan");
    const auto members = t.participants();
    for (std::size_t k = 0; k < members.size(); ++k) {
      const std::uint64_t key = static_cast<std::uint64_t>(members[k]) << 32 | kind << 30 | id;
      auto [it, fresh] = slot_of_key.emplace(key, static_cast<std::uint32_t>(next_slot));
      if (fresh) ++next_slot;
      comm_slots_[comm_offsets_[i] + k] = it->second;
    }
  }
  queues_.resize(next_slot);
  busy_.resize(next_slot, false);
}

void Dispatcher::make_ready(TaskIndex task) {
  if (state_[task] != State::waiting) return;  // runs elsewhere, or completed unstarted already
  const Task& t = plan_.task(task);
  if (in_issue_order_) {  // its streams run it when they reach it
    for (std::size_t k = 0; k < t.participants().size(); ++k) dirty_.push_back(slot_of(task, t, k));
    return;
  }
  for (std::size_t k = 0; k < t.participants().size(); ++k) {
    std::size_t slot = slot_of(task, t, k);
    queues_[slot].push(Key{t.priority, task});
    dirty_.push_back(slot);
  }
}

// Queued tasks that were completed unstarted or marked run_elsewhere() leave their queues here.
void Dispatcher::drop_stale_heads(std::size_t slot) {
  Queue& q = queues_[slot];
  while (!q.empty() && state_[q.top().index] != State::waiting) q.pop();
}

TaskIndex Dispatcher::issue_head(std::size_t slot) {
  std::size_t& c = cursor_[slot];
  while (c < issue_offsets_[slot + 1] && state_[issue_[c]] != State::waiting) ++c;
  return c < issue_offsets_[slot + 1] ? issue_[c] : kNone;
}

// Starts the head of `slot` if every stream it needs is idle and has it at its head.
void Dispatcher::try_start_head(std::size_t slot, std::vector<TaskIndex>& out) {
  if (in_issue_order_) {
    if (busy_[slot]) return;
    const TaskIndex head = issue_head(slot);
    if (head == kNone || pending_[head] > 0) return;
    const Task& t = plan_.task(head);
    const std::size_t members = t.participants().size();
    for (std::size_t k = 0; k < members; ++k) {
      const std::size_t s = slot_of(head, t, k);
      if (busy_[s] || issue_head(s) != head) return;
    }
    for (std::size_t k = 0; k < members; ++k) {
      const std::size_t s = slot_of(head, t, k);
      ++cursor_[s];
      busy_[s] = true;
    }
    state_[head] = State::running;
    ++running_;
    out.push_back(head);
    return;
  }
  drop_stale_heads(slot);
  if (busy_[slot] || queues_[slot].empty()) return;
  TaskIndex head = queues_[slot].top().index;
  const Task& t = plan_.task(head);
  const std::size_t members = t.participants().size();
  for (std::size_t k = 0; k < members; ++k) {
    std::size_t s = slot_of(head, t, k);
    drop_stale_heads(s);
    if (busy_[s] || queues_[s].empty() || queues_[s].top().index != head) return;
  }
  for (std::size_t k = 0; k < members; ++k) {
    std::size_t s = slot_of(head, t, k);
    queues_[s].pop();
    busy_[s] = true;
  }
  state_[head] = State::running;
  ++running_;
  out.push_back(head);
}

const std::vector<TaskIndex>& Dispatcher::take_startable() {
  startable_.clear();
  slots_.clear();
  slots_.swap(dirty_);
  if (slots_.size() > 1) {
    std::sort(slots_.begin(), slots_.end());
    slots_.erase(std::unique(slots_.begin(), slots_.end()), slots_.end());
  }
  for (std::size_t slot : slots_) try_start_head(slot, startable_);
  if (startable_.size() > 1)
    std::sort(startable_.begin(), startable_.end(), [this](TaskIndex a, TaskIndex b) {
      const Task& ta = plan_.task(a);
      const Task& tb = plan_.task(b);
      return ta.priority != tb.priority ? ta.priority < tb.priority : a < b;
    });
  return startable_;
}

void Dispatcher::complete(TaskIndex task) {
  const Task& t = plan_.task(task);
  STRATA_ASSERT(state_[task] == State::running, "complete() of task " + t.id + ", which is not running");
  for (std::size_t k = 0; k < t.participants().size(); ++k) {
    std::size_t slot = slot_of(task, t, k);
    busy_[slot] = false;
    dirty_.push_back(slot);
  }
  state_[task] = State::done;
  --running_;
  ++completed_;
  release_successors(task);
}

void Dispatcher::complete_unstarted(TaskIndex task) {
  const Task& t = plan_.task(task);
  STRATA_ASSERT(state_[task] == State::waiting || state_[task] == State::elsewhere,
                "complete_unstarted() of task " + t.id + ", which has started");
  state_[task] = State::done;
  for (std::size_t k = 0; k < t.participants().size(); ++k)
    dirty_.push_back(slot_of(task, t, k));  // it may be a head
  ++completed_;
  release_successors(task);
}

void Dispatcher::run_elsewhere(TaskIndex task) {
  const Task& t = plan_.task(task);
  STRATA_ASSERT(state_[task] == State::waiting, "run_elsewhere() of task " + t.id + ", which has started");
  state_[task] = State::elsewhere;
  for (std::size_t k = 0; k < t.participants().size(); ++k)
    dirty_.push_back(slot_of(task, t, k));  // it may be a head
}

void Dispatcher::release_successors(TaskIndex task) {
  for (std::size_t k = offsets_[task]; k < offsets_[task + 1]; ++k)
    if (--pending_[successors_[k]] == 0) make_ready(successors_[k]);
}

}  // namespace traces
}  // namespace strata
