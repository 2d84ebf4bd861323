#include "strata/real/exec/buffer_lifetimes.hpp"

#include <algorithm>

namespace strata::real {

template <typename T>
BufferLifetimes<T>::BufferLifetimes(const Plan& plan, Workspace<T>& ws,
                                    const std::function<bool(TaskIndex)>& runs_here)
    : ws_(ws), touched_(plan.size()) {
  constexpr std::uint32_t kNone = UINT32_MAX;
  std::vector<std::uint32_t> current(plan.buffers().size(), kNone);  // per buffer: its open segment
  for (TaskIndex t : topological_order(plan)) {
    if (!runs_here(t)) continue;
    const Task& task = plan.task(t);
    std::vector<BufferIndex> mine(task.reads.begin(), task.reads.end());
    mine.insert(mine.end(), task.writes.begin(), task.writes.end());
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    for (BufferIndex b : mine) {
      if (plan.buffer(b).persistent) continue;
      const bool fresh_write = std::find(task.reads.begin(), task.reads.end(), b) == task.reads.end();
      if (current[b] == kNone || fresh_write) {
        current[b] = static_cast<std::uint32_t>(uses_.size());
        uses_.push_back(0);
      }
      ++uses_[current[b]];
      touched_[t].push_back(Touch{b, current[b]});
    }
  }
  left_ = std::make_unique<std::atomic<std::int32_t>[]>(uses_.size());
  begin_run();
}

template <typename T>
void BufferLifetimes<T>::begin_run() {
  for (std::size_t s = 0; s < uses_.size(); ++s) left_[s].store(uses_[s], std::memory_order_relaxed);
}

template <typename T>
void BufferLifetimes<T>::task_done(TaskIndex t) {
  for (const Touch& touch : touched_[t])
    if (left_[touch.segment].fetch_sub(1, std::memory_order_acq_rel) == 1) ws_.release(touch.buffer);
}

template class BufferLifetimes<float>;
template class BufferLifetimes<double>;

}  // namespace strata::real
