// The linear layer on the GPU: kernels.cpp's sequence of bias fill, GEMMs (the same operands,
// transposes and leading dimensions) and bias reduction, with the host loops replaced by the
// kernels of cuda_kernels.hpp.
#include <string>

#include "strata/real/cuda_kernels.hpp"
#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"

namespace strata::real::gpu {
template <typename T>
void linear_forward(CudaBackend& backend, const LinearShape& shape, const T* x, const T* w, const T* b,
                    T* y) {
  check_linear_shape(shape);
  const std::int64_t m = shape.batch, k = shape.in_features, n = shape.out_features;
  if (b != nullptr) bias_broadcast(backend, m, n, 1, b, y, false);
  const T beta = b != nullptr ? T{1} : T{0};
  backend.gemm(Transpose::no, Transpose::no, m, n, k, T{1}, x, k, w, n, beta, y, n);
}

template <typename T>
void linear_backward_data(CudaBackend& backend, const LinearShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate) {
  check_linear_shape(shape);
  const std::int64_t m = shape.batch, k = shape.in_features, n = shape.out_features;
  backend.gemm(Transpose::no, Transpose::yes, m, k, n, T{1}, dy, n, w, n, accumulate ? T{1} : T{0}, dx, k);
}

template <typename T>
void linear_backward_weight(CudaBackend& backend, const LinearShape& shape, const T* x, const T* dy, T* dw,
                            T* db, bool accumulate) {
  check_linear_shape(shape);
  const std::int64_t m = shape.batch, k = shape.in_features, n = shape.out_features;
  // An empty batch makes a k = 0 GEMM, which still scales dW by beta, as BLAS does on the CPU.
  backend.gemm(Transpose::yes, Transpose::no, k, n, m, T{1}, x, k, dy, n, accumulate ? T{1} : T{0}, dw, n);
  if (db != nullptr) bias_gradient(backend, m, n, 1, dy, db, accumulate);
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                            \
  template void linear_forward<T>(CudaBackend&, const LinearShape&, const T*, const T*, const T*, T*);   \
  template void linear_backward_data<T>(CudaBackend&, const LinearShape&, const T*, const T*, T*, bool); \
  template void linear_backward_weight<T>(CudaBackend&, const LinearShape&, const T*, const T*, T*, T*, bool);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real::gpu
