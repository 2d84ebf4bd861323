#include "strata/real/core/tensor.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "strata/traces/error.hpp"

namespace strata::real {

std::int64_t element_count(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    STRATA_ASSERT(d >= 0, "negative tensor dimension " + std::to_string(d));
    count *= d;
  }
  return count;
}

template <typename T>
Tensor<T>::Tensor(Shape shape, std::vector<T> values)
    : shape_(std::move(shape)), values_(std::move(values)), held_(Held::here(allocated_bytes(values_))) {
  STRATA_ASSERT(element_count(shape_) == size(), std::to_string(values_.size()) + " values for a shape of " +
                                                     std::to_string(element_count(shape_)) + " elements");
}

template <typename T>
Tensor<T> Tensor<T>::borrowed(Shape shape, std::vector<T> values) {
  Tensor t(std::move(shape), std::move(values));
  t.held_.release();
  return t;
}

template <typename T>
Tensor<T>::Tensor(const Tensor& other)
    : shape_(other.shape_), values_(other.values_), held_(Held::here(allocated_bytes(values_))) {}

template <typename T>
Tensor<T>& Tensor<T>::operator=(const Tensor& other) {
  if (this != &other) {
    shape_ = other.shape_;
    values_ = other.values_;
    held_ = Held::here(allocated_bytes(values_));
  }
  return *this;
}

template <typename T>
Tensor<T> Tensor<T>::zeros(Shape shape) {
  return filled(std::move(shape), T{0});
}

template <typename T>
Tensor<T> Tensor<T>::filled(Shape shape, T value) {
  const auto count = static_cast<std::size_t>(element_count(shape));
  return Tensor(std::move(shape), std::vector<T>(count, value));
}

template <typename T>
std::int64_t Tensor<T>::dim(std::int64_t axis) const {
  STRATA_ASSERT(axis >= 0 && axis < rank(),
                "axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank()) + " tensor");
  return shape_[static_cast<std::size_t>(axis)];
}

template <typename T>
void Tensor<T>::reshape(Shape shape) {
  STRATA_ASSERT(element_count(shape) == size(), "reshape of " + std::to_string(size()) + " elements to " +
                                                    std::to_string(element_count(shape)));
  shape_ = std::move(shape);
}

template <typename T>
void Tensor<T>::fill(T value) {
  std::fill(values_.begin(), values_.end(), value);
}

template <typename T>
std::vector<T> Tensor<T>::release() {
  shape_ = {0};
  held_.release();
  return std::move(values_);
}

template class Tensor<float>;
template class Tensor<double>;

}  // namespace strata::real
