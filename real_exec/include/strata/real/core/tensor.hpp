// Tensor<T>: a dense, row-major array of float or double that owns its values.
//
// It is the unit of data the real executor hands to kernels: activations, weights, gradients,
// optimizer state. It is deliberately plain (no views, no strides, no expression templates):
// kernels take raw pointers and sizes, so a worker can slice one Tensor into microbatches
// without a view type.
//
// Invariants: every dimension is >= 0 and size() == product of shape() (1 for rank 0); the
// values are contiguous, the last dimension varies fastest. reshape() keeps the values and
// checks the element count. Violations are bugs in the caller and trip STRATA_ASSERT.
// Ownership: a Tensor owns its std::vector; copies are deep, moves are cheap. data() stays
// valid until the Tensor is resized, reassigned or destroyed.
// Memory: a Tensor made inside a MeterScope (a task of the real executor) charges its values'
// bytes to that scope's worker for as long as it holds them (memory_meter.hpp), so the ADMM,
// GCN and GIST kernels' temporaries count; one that borrows a Workspace array (borrowed())
// does not, the Workspace already counts it.
// Thread safety: none of its own; concurrent readers are fine, writers need exclusion.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/real/core/memory_meter.hpp"

namespace strata::real {

using Shape = std::vector<std::int64_t>;

// Product of the dimensions (1 for an empty shape). Asserts every dimension is >= 0.
std::int64_t element_count(const Shape& shape);

template <typename T>
class Tensor {
 public:
  Tensor() = default;  // shape {0}: no elements (a scalar needs an explicit shape {})
  // REQUIRES: values.size() == element_count(shape).
  Tensor(Shape shape, std::vector<T> values);
  // The same, charging nothing: `values` are an array someone else already counts.
  static Tensor borrowed(Shape shape, std::vector<T> values);
  ~Tensor() = default;
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  static Tensor zeros(Shape shape);
  static Tensor filled(Shape shape, T value);

  std::int64_t size() const { return static_cast<std::int64_t>(values_.size()); }
  std::int64_t rank() const { return static_cast<std::int64_t>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  // REQUIRES: 0 <= axis < rank().
  std::int64_t dim(std::int64_t axis) const;

  T* data() { return values_.data(); }
  const T* data() const { return values_.data(); }
  const std::vector<T>& values() const { return values_; }
  T& operator[](std::int64_t i) { return values_[static_cast<std::size_t>(i)]; }
  const T& operator[](std::int64_t i) const { return values_[static_cast<std::size_t>(i)]; }

  // REQUIRES: element_count(shape) == size().
  void reshape(Shape shape);
  void fill(T value);
  // Gives the values away (O(1)) and leaves an empty Tensor (shape {0}): with the constructor,
  // a kernel borrows an array it does not own as a Tensor and hands it back.
  std::vector<T> release();

 private:
  Shape shape_ = {0};
  std::vector<T> values_;
  Held held_;  // values_'s bytes, charged to the scope's worker (none when borrowed)
};

extern template class Tensor<float>;
extern template class Tensor<double>;

}  // namespace strata::real
