// int8_codec.hpp: the grid rounding of pdADMM-G-Q, vectorisable.
#include "strata/real/core/int8_codec.hpp"

#include <limits>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// GCC keeps loops with float compares scalar under its default -ftrapping-math ("control flow
// in loop"); nothing here relies on floating-point traps.
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_VECTORIZE_COMPARES __attribute__((optimize("no-trapping-math")))
#else
#define STRATA_VECTORIZE_COMPARES
#endif

// Codes of x / step rounded to the nearest integer (ties to even) and clamped to [−128, 127];
// NaN maps to −128. Rounding by adding and subtracting 1.5·2^(digits−1) keeps the loop
// vectorisable (std::round is a libm call per element without SSE4.1).
template <typename T>
STRATA_VECTORIZE_COMPARES void grid_codes(const T* __restrict x, std::int64_t n, T inv_step,
                                          std::int8_t* __restrict codes) {
  constexpr T kMagic = T(1.5) * T(1ULL << (std::numeric_limits<T>::digits - 1));
  for (std::int64_t i = 0; i < n; ++i) {
    T v = x[i] * inv_step;
    v = v > T{-128} ? v : T{-128};
    v = v < T{127} ? v : T{127};
    v = (v + kMagic) - kMagic;
    codes[i] = static_cast<std::int8_t>(static_cast<int>(v));
  }
}
#undef STRATA_VECTORIZE_COMPARES

template <typename T>
void grid_values(const std::int8_t* __restrict codes, std::int64_t n, T step, T* __restrict out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(codes[i]) * step;
}

}  // namespace

template <typename T>
void quantize_into(const T* values, std::int64_t n, const QuantGrid& grid, std::int8_t* codes) {
  grid_codes(values, n, static_cast<T>(1 / grid.step), codes);
}

template <typename T>
void dequantize_into(const std::int8_t* codes, std::int64_t n, const QuantGrid& grid, T* values) {
  grid_values(codes, n, static_cast<T>(grid.step), values);
}

template <typename T>
std::vector<std::int8_t> quantize(const Tensor<T>& values, const QuantGrid& grid) {
  std::vector<std::int8_t> codes(static_cast<std::size_t>(values.size()));
  quantize_into(values.data(), values.size(), grid, codes.data());
  return codes;
}

template <typename T>
Tensor<T> dequantize(const std::vector<std::int8_t>& codes, const Shape& shape, const QuantGrid& grid) {
  STRATA_ASSERT(static_cast<std::int64_t>(codes.size()) == element_count(shape),
                "int8 codec: code count differs from shape");
  Tensor<T> t = Tensor<T>::zeros(shape);
  dequantize_into(codes.data(), t.size(), grid, t.data());
  return t;
}

#define STRATA_CODEC_INSTANTIATE(T)                                                      \
  template void quantize_into(const T*, std::int64_t, const QuantGrid&, std::int8_t*);   \
  template void dequantize_into(const std::int8_t*, std::int64_t, const QuantGrid&, T*); \
  template std::vector<std::int8_t> quantize(const Tensor<T>&, const QuantGrid&);        \
  template Tensor<T> dequantize(const std::vector<std::int8_t>&, const Shape&, const QuantGrid&);

STRATA_CODEC_INSTANTIATE(float)
STRATA_CODEC_INSTANTIATE(double)
#undef STRATA_CODEC_INSTANTIATE

}  // namespace strata::real
