// conv2d on the GPU: im2col and its adjoint for one NCHW image, in kernels_conv.cpp's column
// layout (row (c, i, j) = c * kernel_h * kernel_w + i * kernel_w + j, column (r, q) =
// r * out_width + q), and the conv2d layers as kernels_conv.cpp composes them: the same GEMMs
// (operands, transposes, leading dimensions), one image at a time.
#include <cuda_runtime_api.h>

#include <string>

#include "launch.cuh"
#include "strata/real/cuda_kernels.hpp"
#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"

namespace strata::real::gpu {
namespace {

using cuda_detail::blocks_for;
using cuda_detail::check_launch;
using cuda_detail::first_index;
using cuda_detail::grid_stride;
using cuda_detail::kBlockSize;

// The sizes a kernel needs, passed by value (a Conv2dShape's member functions are host code).
struct ConvGeometry {
  std::int64_t channels, height, width, kernel_h, kernel_w, stride, padding, out_height, out_width;
};

ConvGeometry geometry_of(const Conv2dShape& s) {
  return {s.in_channels, s.height,  s.width,        s.kernel_h,   s.kernel_w,
          s.stride,      s.padding, s.out_height(), s.out_width()};
}

// One thread per column entry.
template <typename T>
__global__ void im2col_kernel(ConvGeometry g, const T* image, T* cols) {
  const std::int64_t columns = g.out_height * g.out_width;
  const std::int64_t total = g.channels * g.kernel_h * g.kernel_w * columns;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const std::int64_t row_index = e / columns, column = e % columns;
    const std::int64_t c = row_index / (g.kernel_h * g.kernel_w);
    const std::int64_t i = (row_index / g.kernel_w) % g.kernel_h, j = row_index % g.kernel_w;
    const std::int64_t row = (column / g.out_width) * g.stride - g.padding + i;
    const std::int64_t col = (column % g.out_width) * g.stride - g.padding + j;
    const bool inside = row >= 0 && row < g.height && col >= 0 && col < g.width;
    cols[e] = inside ? image[(c * g.height + row) * g.width + col] : T{0};
  }
}

// One thread per pixel, gathering the column entries that im2col copied from it. A pixel (row,
// col) sits at kernel offset (i, j) of the window (r, q) when row = r * stride - padding + i, so
// for each (i, j) at most one window qualifies. Going through (i, j) in increasing order adds the
// terms in the order the CPU's scatter loop does, hence the same rounding.
template <typename T>
__global__ void col2im_add_kernel(ConvGeometry g, const T* cols, T* image) {
  const std::int64_t columns = g.out_height * g.out_width;
  const std::int64_t total = g.channels * g.height * g.width;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const std::int64_t c = e / (g.height * g.width);
    const std::int64_t row = (e / g.width) % g.height, col = e % g.width;
    T value = image[e];
    for (std::int64_t i = 0; i < g.kernel_h; ++i) {
      const std::int64_t r_stride = row + g.padding - i;  // r * stride
      if (r_stride < 0 || r_stride % g.stride != 0 || r_stride / g.stride >= g.out_height) continue;
      const std::int64_t r = r_stride / g.stride;
      for (std::int64_t j = 0; j < g.kernel_w; ++j) {
        const std::int64_t q_stride = col + g.padding - j;
        if (q_stride < 0 || q_stride % g.stride != 0 || q_stride / g.stride >= g.out_width) continue;
        const std::int64_t q = q_stride / g.stride;
        value += cols[((c * g.kernel_h + i) * g.kernel_w + j) * columns + r * g.out_width + q];
      }
    }
    image[e] = value;
  }
}

// Column scratch of one convolution call, from the memory pool of the backend's stream: taken and
// given back in stream order, so that, unlike cudaFree, releasing it does not wait for the GPU.
template <typename T>
class StreamScratch {
 public:
  StreamScratch(cudaStream_t stream, std::int64_t size) : stream_(stream) {
    const std::size_t bytes = static_cast<std::size_t>(size) * sizeof(T);
    void* memory = nullptr;
    cuda_detail::check_cuda(cudaMallocAsync(&memory, bytes, stream),
                            "cudaMallocAsync(" + std::to_string(bytes) + " bytes)");
    data_ = static_cast<T*>(memory);
  }
  ~StreamScratch() { (void)cudaFreeAsync(data_, stream_); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;

  T* data() { return data_; }

 private:
  cudaStream_t stream_;
  T* data_ = nullptr;
};

std::int64_t column_rows(const Conv2dShape& s) { return s.in_channels * s.kernel_h * s.kernel_w; }
std::int64_t column_cols(const Conv2dShape& s) { return s.out_height() * s.out_width(); }

}  // namespace

template <typename T>
void im2col(CudaBackend& backend, const Conv2dShape& shape, const T* image, T* cols) {
  check_conv_shape(shape);
  const std::int64_t total =
      shape.in_channels * shape.kernel_h * shape.kernel_w * shape.out_height() * shape.out_width();
  im2col_kernel<<<blocks_for(total), kBlockSize, 0, backend.activate()>>>(geometry_of(shape), image, cols);
  check_launch("im2col_kernel");
}

template <typename T>
void col2im_add(CudaBackend& backend, const Conv2dShape& shape, const T* cols, T* image) {
  check_conv_shape(shape);
  const std::int64_t total = shape.in_channels * shape.height * shape.width;
  if (total == 0) return;
  col2im_add_kernel<<<blocks_for(total), kBlockSize, 0, backend.activate()>>>(geometry_of(shape), cols,
                                                                              image);
  check_launch("col2im_add_kernel");
}

template <typename T>
void conv2d_forward(CudaBackend& backend, const Conv2dShape& shape, const T* x, const T* w, const T* b,
                    T* y) {
  check_conv_shape(shape);
  const std::int64_t rows = column_rows(shape), cols_n = column_cols(shape);
  const std::int64_t image_size = shape.in_channels * shape.height * shape.width;
  const std::int64_t out_image_size = shape.out_channels * cols_n;
  if (shape.batch == 0) return;
  StreamScratch<T> cols(backend.activate(), rows * cols_n);
  if (b != nullptr) bias_broadcast(backend, shape.batch, shape.out_channels, cols_n, b, y, false);
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    im2col(backend, shape, x + n * image_size, cols.data());
    backend.gemm(Transpose::no, Transpose::no, shape.out_channels, cols_n, rows, T{1}, w, rows, cols.data(),
                 cols_n, b != nullptr ? T{1} : T{0}, y + n * out_image_size, cols_n);
  }
}

template <typename T>
void conv2d_backward_data(CudaBackend& backend, const Conv2dShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate) {
  check_conv_shape(shape);
  const std::int64_t rows = column_rows(shape), cols_n = column_cols(shape);
  const std::int64_t image_size = shape.in_channels * shape.height * shape.width;
  const std::int64_t out_image_size = shape.out_channels * cols_n;
  if (!accumulate) zero(backend, shape.input_size(), dx);
  if (shape.batch == 0) return;
  StreamScratch<T> dcols(backend.activate(), rows * cols_n);
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    backend.gemm(Transpose::yes, Transpose::no, rows, cols_n, shape.out_channels, T{1}, w, rows,
                 dy + n * out_image_size, cols_n, T{0}, dcols.data(), cols_n);
    col2im_add(backend, shape, dcols.data(), dx + n * image_size);
  }
}

template <typename T>
void conv2d_backward_weight(CudaBackend& backend, const Conv2dShape& shape, const T* x, const T* dy, T* dw,
                            T* db, bool accumulate) {
  check_conv_shape(shape);
  const std::int64_t rows = column_rows(shape), cols_n = column_cols(shape);
  const std::int64_t image_size = shape.in_channels * shape.height * shape.width;
  const std::int64_t out_image_size = shape.out_channels * cols_n;
  if (!accumulate) zero(backend, shape.weight_size(), dw);
  if (db != nullptr) bias_gradient(backend, shape.batch, shape.out_channels, cols_n, dy, db, accumulate);
  if (shape.batch == 0) return;
  StreamScratch<T> cols(backend.activate(), rows * cols_n);
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    im2col(backend, shape, x + n * image_size, cols.data());
    backend.gemm(Transpose::no, Transpose::yes, shape.out_channels, rows, cols_n, T{1},
                 dy + n * out_image_size, cols_n, cols.data(), cols_n, T{1}, dw, rows);
  }
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                            \
  template void im2col<T>(CudaBackend&, const Conv2dShape&, const T*, T*);                               \
  template void col2im_add<T>(CudaBackend&, const Conv2dShape&, const T*, T*);                           \
  template void conv2d_forward<T>(CudaBackend&, const Conv2dShape&, const T*, const T*, const T*, T*);   \
  template void conv2d_backward_data<T>(CudaBackend&, const Conv2dShape&, const T*, const T*, T*, bool); \
  template void conv2d_backward_weight<T>(CudaBackend&, const Conv2dShape&, const T*, const T*, T*, T*, bool);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real::gpu
