#include "strata/real/core/workspace.hpp"

#include <cctype>

#include "strata/traces/error.hpp"

namespace strata::real {

std::int64_t coordinate(const std::string& id, const std::string& name) {
  std::size_t start = 0;
  while (start <= id.size()) {
    std::size_t end = id.find('/', start);
    if (end == std::string::npos) end = id.size();
    const std::string segment = id.substr(start, end - start);
    if (segment.size() > name.size() && segment.compare(0, name.size(), name) == 0) {
      bool digits = true;
      for (std::size_t i = name.size(); i < segment.size(); ++i)
        digits = digits && std::isdigit(static_cast<unsigned char>(segment[i])) != 0;
      if (digits) return std::stoll(segment.substr(name.size()));
    }
    start = end + 1;
  }
  return -1;
}

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
