#include "strata/real/core/workspace.hpp"

#include "strata/traces/error.hpp"

namespace strata::real {

template <typename T>
Workspace<T>::Workspace(const Plan& plan)
    : plan_(&plan),
      releasable_(plan.buffers().size(), 0),
      is_held_(std::make_unique<std::atomic<bool>[]>(plan.buffers().size())),
      meter_(std::make_shared<MemoryMeter>(static_cast<std::size_t>(plan.num_workers()))),
      allocation_(std::make_unique<std::mutex>()),
      steps_(plan.buffers().size(), 0) {
  arrays_.reserve(plan.buffers().size());
  sizes_.reserve(plan.buffers().size());
  for (BufferIndex i = 0; i < plan.buffers().size(); ++i) {
    const Buffer& b = plan.buffer(i);
    const auto elements = static_cast<std::size_t>(b.bytes / bytes_per_element(b.dtype) + 0.5);
    arrays_.emplace_back(elements, T{0});
    sizes_.push_back(static_cast<std::int64_t>(elements));
    is_held_[i].store(true);
    charge(i, static_cast<std::int64_t>(elements * sizeof(T)));
  }
}

template <typename T>
Workspace<T>::~Workspace() = default;
template <typename T>
Workspace<T>::Workspace(Workspace&&) noexcept = default;

template <typename T>
void Workspace<T>::charge(BufferIndex b, std::int64_t bytes) const {
  meter_->add(plan_->buffer(b).worker, bytes);
}

template <typename T>
std::vector<T>& Workspace<T>::held(BufferIndex b) const {
  if (!releasing_ || releasable_[b] == 0 || is_held_[b].load(std::memory_order_acquire)) return arrays_[b];
  std::lock_guard<std::mutex> lock(*allocation_);
  if (!is_held_[b].load(std::memory_order_relaxed)) {
    arrays_[b].assign(static_cast<std::size_t>(sizes_[b]), T{0});
    charge(b, sizes_[b] * static_cast<std::int64_t>(sizeof(T)));
    is_held_[b].store(true, std::memory_order_release);
  }
  return arrays_[b];
}

template <typename T>
void Workspace<T>::set_releasing(const std::vector<BufferIndex>& kept) {
  releasing_ = true;
  for (BufferIndex b = 0; b < arrays_.size(); ++b) releasable_[b] = plan_->buffer(b).persistent ? 0 : 1;
  for (BufferIndex b : kept) releasable_[b] = 0;
  release_all();
}

template <typename T>
void Workspace<T>::release(BufferIndex b) {
  if (!releasing_ || releasable_[b] == 0) return;
  std::lock_guard<std::mutex> lock(*allocation_);
  if (!is_held_[b].load(std::memory_order_relaxed)) return;
  std::vector<T>().swap(arrays_[b]);
  charge(b, -sizes_[b] * static_cast<std::int64_t>(sizeof(T)));
  is_held_[b].store(false, std::memory_order_release);
}

template <typename T>
void Workspace<T>::release_all() {
  for (BufferIndex b = 0; b < arrays_.size(); ++b) release(b);
}

template <typename T>
std::int64_t Workspace<T>::live_bytes(WorkerId w) const {
  return meter_->live(w);
}

template <typename T>
std::int64_t Workspace<T>::peak_bytes(WorkerId w) const {
  return meter_->peak(w);
}

template <typename T>
void Workspace<T>::reset_peaks() {
  meter_->reset_peaks();
}

template <typename T>
void Workspace<T>::set_labels(std::int64_t dp, std::int64_t microbatch, std::vector<std::int32_t> labels) {
  labels_[{dp, microbatch}] = std::move(labels);
}

template <typename T>
void Workspace<T>::set_sample_ids(std::int64_t dp, std::int64_t microbatch, std::vector<std::int64_t> ids) {
  sample_ids_[{dp, microbatch}] = std::move(ids);
}

template <typename T>
const std::vector<std::int64_t>& Workspace<T>::sample_ids(std::int64_t dp, std::int64_t microbatch) const {
  auto it = sample_ids_.find({dp, microbatch});
  STRATA_ASSERT(it != sample_ids_.end(),
                "no sample ids bound for dp" + std::to_string(dp) + "/mb" + std::to_string(microbatch));
  return it->second;
}

template <typename T>
const std::vector<std::int32_t>& Workspace<T>::labels(std::int64_t dp, std::int64_t microbatch) const {
  auto it = labels_.find({dp, microbatch});
  STRATA_ASSERT(it != labels_.end(),
                "no labels bound for dp" + std::to_string(dp) + "/mb" + std::to_string(microbatch));
  return it->second;
}

template <typename T>
std::vector<std::pair<std::int64_t, std::int64_t>> Workspace<T>::label_keys() const {
  std::vector<std::pair<std::int64_t, std::int64_t>> keys;
  keys.reserve(labels_.size());
  for (const auto& entry : labels_) keys.push_back(entry.first);
  return keys;
}

template class Workspace<float>;
template class Workspace<double>;

}  // namespace strata::real
