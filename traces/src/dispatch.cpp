#include "strata/traces/dispatch.hpp"

#include <algorithm>

#include "strata/traces/error.hpp"

namespace strata {

Dispatcher::Dispatcher(const Plan& plan)
    : plan_(plan),
      successors_(plan.size()),
      pending_(plan.size(), 0),
      queues_(static_cast<std::size_t>(plan.num_workers()) * 2),
      busy_(static_cast<std::size_t>(plan.num_workers()) * 2, false) {
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& t = plan.task(i);
    for (const auto* deps : {&t.data_deps, &t.control_deps})
      for (TaskIndex d : *deps) {
        successors_[d].push_back(i);
        ++pending_[i];
      }
  }
  for (TaskIndex i = 0; i < plan.size(); ++i)
    if (pending_[i] == 0) make_ready(i);
}

void Dispatcher::make_ready(TaskIndex task) {
  const Task& t = plan_.task(task);
  for (WorkerId w : t.participants()) {
    std::size_t slot = stream_slot(w, t.stream);
    queues_[slot].push(Key{t.priority, task});
    dirty_.push_back(slot);
  }
}

// Starts the head of `slot` if every stream it needs is idle and has it at its head.
void Dispatcher::try_start_head(std::size_t slot, std::vector<TaskIndex>& out) {
  if (busy_[slot] || queues_[slot].empty()) return;
  TaskIndex head = queues_[slot].top().index;
  const Task& t = plan_.task(head);
  const auto members = t.participants();
  for (WorkerId w : members) {
    std::size_t s = stream_slot(w, t.stream);
    if (busy_[s] || queues_[s].empty() || queues_[s].top().index != head) return;
  }
  for (WorkerId w : members) {
    std::size_t s = stream_slot(w, t.stream);
    queues_[s].pop();
    busy_[s] = true;
  }
  ++running_;
  out.push_back(head);
}

std::vector<TaskIndex> Dispatcher::take_startable() {
  std::vector<TaskIndex> out;
  std::vector<std::size_t> slots;
  slots.swap(dirty_);
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  for (std::size_t slot : slots) try_start_head(slot, out);
  std::sort(out.begin(), out.end(), [this](TaskIndex a, TaskIndex b) {
    const Task& ta = plan_.task(a);
    const Task& tb = plan_.task(b);
    return ta.priority != tb.priority ? ta.priority < tb.priority : a < b;
  });
  return out;
}

void Dispatcher::complete(TaskIndex task) {
  const Task& t = plan_.task(task);
  STRATA_ASSERT(running_ > 0, "complete() without a running task");
  for (WorkerId w : t.participants()) {
    std::size_t slot = stream_slot(w, t.stream);
    busy_[slot] = false;
    dirty_.push_back(slot);
  }
  --running_;
  ++completed_;
  for (TaskIndex s : successors_[task])
    if (--pending_[s] == 0) make_ready(s);
}

}  // namespace strata
