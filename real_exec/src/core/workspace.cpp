#include "strata/real/core/workspace.hpp"

#include "strata/traces/error.hpp"

namespace strata::real {

template <typename T>
Workspace<T>::Workspace(const Plan& plan) : steps_(plan.buffers().size(), 0) {
  arrays_.reserve(plan.buffers().size());
  for (const Buffer& b : plan.buffers()) {
    const auto elements = static_cast<std::size_t>(b.bytes / bytes_per_element(b.dtype) + 0.5);
    arrays_.emplace_back(elements, T{0});
  }
}

template <typename T>
void Workspace<T>::set_labels(std::int64_t dp, std::int64_t microbatch, std::vector<std::int32_t> labels) {
  labels_[{dp, microbatch}] = std::move(labels);
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
