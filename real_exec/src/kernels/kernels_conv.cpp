// conv2d as im2col + GEMM, one image at a time: the column matrix of one image is
// [in_channels * kernel_h * kernel_w, out_height * out_width], small enough for LeNet-sized
// layers to stay in cache, and the per-image GEMMs are the unit a later batched or GPU
// backend replaces. That one matrix is each conv task's workspace (charged to its worker,
// memory_meter.hpp; the lowering's Task::mem_temp predicts it).
#include "strata/real/kernels/kernels.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "strata/real/core/memory_meter.hpp"
#include "strata/real/kernels/shapes.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

std::int64_t column_rows(const Conv2dShape& s) { return s.in_channels * s.kernel_h * s.kernel_w; }
std::int64_t column_cols(const Conv2dShape& s) { return s.out_height() * s.out_width(); }

// cols[(c, i, j), (r, q)] = image[c, r * stride - padding + i, q * stride - padding + j], zero
// outside the image.
template <typename T>
void im2col(const Conv2dShape& s, const T* image, T* cols) {
  const std::int64_t oh = s.out_height(), ow = s.out_width();
  T* out = cols;
  for (std::int64_t c = 0; c < s.in_channels; ++c) {
    const T* plane = image + c * s.height * s.width;
    for (std::int64_t i = 0; i < s.kernel_h; ++i) {
      for (std::int64_t j = 0; j < s.kernel_w; ++j) {
        for (std::int64_t r = 0; r < oh; ++r) {
          const std::int64_t row = r * s.stride - s.padding + i;
          const bool row_inside = row >= 0 && row < s.height;
          for (std::int64_t q = 0; q < ow; ++q) {
            const std::int64_t col = q * s.stride - s.padding + j;
            *out++ = row_inside && col >= 0 && col < s.width ? plane[row * s.width + col] : T{0};
          }
        }
      }
    }
  }
}

// The adjoint of im2col: image[c, row, col] += cols[(c, i, j), (r, q)] for every window that
// covered that pixel.
template <typename T>
void col2im_add(const Conv2dShape& s, const T* cols, T* image) {
  const std::int64_t oh = s.out_height(), ow = s.out_width();
  const T* in = cols;
  for (std::int64_t c = 0; c < s.in_channels; ++c) {
    T* plane = image + c * s.height * s.width;
    for (std::int64_t i = 0; i < s.kernel_h; ++i) {
      for (std::int64_t j = 0; j < s.kernel_w; ++j) {
        for (std::int64_t r = 0; r < oh; ++r) {
          const std::int64_t row = r * s.stride - s.padding + i;
          const bool row_inside = row >= 0 && row < s.height;
          for (std::int64_t q = 0; q < ow; ++q, ++in) {
            const std::int64_t col = q * s.stride - s.padding + j;
            if (row_inside && col >= 0 && col < s.width) plane[row * s.width + col] += *in;
          }
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void conv2d_forward(Backend& backend, const Conv2dShape& shape, const T* x, const T* w, const T* b, T* y) {
  check_conv_shape(shape);
  const std::int64_t rows = column_rows(shape), cols_n = column_cols(shape);
  const std::int64_t image_size = shape.in_channels * shape.height * shape.width;
  const std::int64_t out_image_size = shape.out_channels * cols_n;
  std::vector<T> cols(static_cast<std::size_t>(rows * cols_n));
  const Held cols_held = Held::here(allocated_bytes(cols));  // the conv's workspace
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    im2col(shape, x + n * image_size, cols.data());
    T* y_n = y + n * out_image_size;
    if (b != nullptr) {
      for (std::int64_t oc = 0; oc < shape.out_channels; ++oc) {
        std::fill(y_n + oc * cols_n, y_n + (oc + 1) * cols_n, b[oc]);
      }
    }
    // y_n[OC, OH*OW] = W[OC, C*KH*KW] cols[C*KH*KW, OH*OW] (+ the bias already there)
    backend.gemm(Transpose::no, Transpose::no, shape.out_channels, cols_n, rows, T{1}, w, rows, cols.data(),
                 cols_n, b != nullptr ? T{1} : T{0}, y_n, cols_n);
  }
}

template <typename T>
void conv2d_backward_data(Backend& backend, const Conv2dShape& shape, const T* dy, const T* w, T* dx,
                          bool accumulate) {
  check_conv_shape(shape);
  const std::int64_t rows = column_rows(shape), cols_n = column_cols(shape);
  const std::int64_t image_size = shape.in_channels * shape.height * shape.width;
  const std::int64_t out_image_size = shape.out_channels * cols_n;
  if (!accumulate) std::fill(dx, dx + shape.input_size(), T{0});
  std::vector<T> dcols(static_cast<std::size_t>(rows * cols_n));
  const Held dcols_held = Held::here(allocated_bytes(dcols));
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    // dcols[C*KH*KW, OH*OW] = W^T dy_n, then scattered back onto the pixels it came from.
    backend.gemm(Transpose::yes, Transpose::no, rows, cols_n, shape.out_channels, T{1}, w, rows,
                 dy + n * out_image_size, cols_n, T{0}, dcols.data(), cols_n);
    col2im_add(shape, dcols.data(), dx + n * image_size);
  }
}

template <typename T>
void conv2d_backward_weight(Backend& backend, const Conv2dShape& shape, const T* x, const T* dy, T* dw, T* db,
                            bool accumulate) {
  check_conv_shape(shape);
  const std::int64_t rows = column_rows(shape), cols_n = column_cols(shape);
  const std::int64_t image_size = shape.in_channels * shape.height * shape.width;
  const std::int64_t out_image_size = shape.out_channels * cols_n;
  // Zeroing once up front lets every image's GEMM add with beta = 1, including an empty batch.
  if (!accumulate) {
    std::fill(dw, dw + shape.weight_size(), T{0});
    if (db != nullptr) std::fill(db, db + shape.out_channels, T{0});
  }
  std::vector<T> cols(static_cast<std::size_t>(rows * cols_n));
  const Held cols_held = Held::here(allocated_bytes(cols));  // the conv's workspace
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    const T* dy_n = dy + n * out_image_size;
    im2col(shape, x + n * image_size, cols.data());
    // dW[OC, C*KH*KW] += dy_n[OC, OH*OW] cols^T
    backend.gemm(Transpose::no, Transpose::yes, shape.out_channels, rows, cols_n, T{1}, dy_n, cols_n,
                 cols.data(), cols_n, T{1}, dw, rows);
    if (db == nullptr) continue;
    for (std::int64_t oc = 0; oc < shape.out_channels; ++oc) {
      const T* channel = dy_n + oc * cols_n;
      T sum{0};
      for (std::int64_t p = 0; p < cols_n; ++p) sum += channel[p];
      db[oc] += sum;
    }
  }
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                        \
  template void conv2d_forward<T>(Backend&, const Conv2dShape&, const T*, const T*, const T*, T*);   \
  template void conv2d_backward_data<T>(Backend&, const Conv2dShape&, const T*, const T*, T*, bool); \
  template void conv2d_backward_weight<T>(Backend&, const Conv2dShape&, const T*, const T*, T*, T*, bool);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
