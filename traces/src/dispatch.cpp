#include "strata/traces/dispatch.hpp"

#include <algorithm>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace traces {

Dispatcher::Dispatcher(const Plan& plan)
    : plan_(plan),
      offsets_(plan.size() + 1, 0),
      pending_(plan.size(), 0),
      state_(plan.size(), State::waiting),
      queues_(static_cast<std::size_t>(plan.num_workers()) * 2),
      busy_(static_cast<std::size_t>(plan.num_workers()) * 2, false) {
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
  for (TaskIndex i = 0; i < plan.size(); ++i)
    if (pending_[i] == 0) make_ready(i);
}

void Dispatcher::make_ready(TaskIndex task) {
  if (state_[task] != State::waiting) return;  // runs elsewhere, or completed unstarted already
  const Task& t = plan_.task(task);
  for (WorkerId w : t.participants()) {
    std::size_t slot = stream_slot(w, t.stream);
    queues_[slot].push(Key{t.priority, task});
    dirty_.push_back(slot);
  }
}

// Queued tasks that were completed unstarted or marked run_elsewhere() leave their queues here.
void Dispatcher::drop_stale_heads(std::size_t slot) {
  Queue& q = queues_[slot];
  while (!q.empty() && state_[q.top().index] != State::waiting) q.pop();
}

// Starts the head of `slot` if every stream it needs is idle and has it at its head.
void Dispatcher::try_start_head(std::size_t slot, std::vector<TaskIndex>& out) {
  drop_stale_heads(slot);
  if (busy_[slot] || queues_[slot].empty()) return;
  TaskIndex head = queues_[slot].top().index;
  const Task& t = plan_.task(head);
  const auto members = t.participants();
  for (WorkerId w : members) {
    std::size_t s = stream_slot(w, t.stream);
    drop_stale_heads(s);
    if (busy_[s] || queues_[s].empty() || queues_[s].top().index != head) return;
  }
  for (WorkerId w : members) {
    std::size_t s = stream_slot(w, t.stream);
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
  for (WorkerId w : t.participants()) {
    std::size_t slot = stream_slot(w, t.stream);
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
  for (WorkerId w : t.participants()) dirty_.push_back(stream_slot(w, t.stream));  // it may be a head
  ++completed_;
  release_successors(task);
}

void Dispatcher::run_elsewhere(TaskIndex task) {
  const Task& t = plan_.task(task);
  STRATA_ASSERT(state_[task] == State::waiting, "run_elsewhere() of task " + t.id + ", which has started");
  state_[task] = State::elsewhere;
  for (WorkerId w : t.participants()) dirty_.push_back(stream_slot(w, t.stream));  // it may be a head
}

void Dispatcher::release_successors(TaskIndex task) {
  for (std::size_t k = offsets_[task]; k < offsets_[task + 1]; ++k)
    if (--pending_[successors_[k]] == 0) make_ready(successors_[k]);
}

}  // namespace traces
}  // namespace strata
