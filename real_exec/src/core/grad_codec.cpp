#include "strata/real/core/grad_codec.hpp"

#include "strata/real/core/memory_meter.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

namespace strata::real {
namespace {

constexpr float kInt8Max = 127.0F;
constexpr float kFp8Max = 448.0F;  // e4m3: 1.75 * 2^8

float code_range(ByteCodec codec) { return codec == ByteCodec::int8 ? kInt8Max : kFp8Max; }

}  // namespace

bool parse_byte_codec(std::string_view name, ByteCodec& out) {
  if (name == "int8") return out = ByteCodec::int8, true;
  if (name == "fp8") return out = ByteCodec::fp8, true;
  return false;
}

// On the float's bits: e4m3 keeps 3 of the 23 mantissa bits, rounded to nearest even by adding
// 0x7FFFF plus the lowest kept bit before the shift (a carry moves into the exponent, as it
// should); below 2^-6 the result is subnormal, m * 2^-9.
std::uint8_t fp8_e4m3_encode(float x) {
  if (std::isnan(x)) return 0x7F;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::min(std::fabs(x), kFp8Max);
  if (a < 0x1.0p-6F) return static_cast<std::uint8_t>(sign | static_cast<int>(std::nearbyint(a * 512.0F)));
  std::uint32_t bits = 0;
  std::memcpy(&bits, &a, sizeof bits);
  bits += 0x7FFFFU + ((bits >> 20) & 1U);
  const auto exp = static_cast<int>(bits >> 23) - 127 + 7;  // >= 1 here
  const auto code = std::min((exp << 3) | static_cast<int>((bits >> 20) & 7U), 0x7E);
  return static_cast<std::uint8_t>(sign | code);
}

float fp8_e4m3_decode(std::uint8_t code) {
  const int e = (code >> 3) & 0xF;
  const int m = code & 0x7;
  if (e == 0xF && m == 0x7) return std::nanf("");
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0F + m / 8.0F, e - 7);
  return (code & 0x80) != 0 ? -mag : mag;
}

template <typename T>
void encode_message(const T* values, std::size_t n, ByteCodec codec, std::vector<std::uint8_t>& out) {
  float max_abs = 0;
  for (std::size_t i = 0; i < n; ++i) max_abs = std::max(max_abs, static_cast<float>(std::fabs(values[i])));
  const float scale = max_abs / code_range(codec);
  const std::size_t at = out.size();
  out.resize(at + message_bytes(n));
  std::memcpy(out.data() + at, &scale, sizeof scale);
  std::uint8_t* codes = out.data() + at + sizeof scale;
  if (scale == 0 || !std::isfinite(scale)) {
    std::fill(codes, codes + n, std::uint8_t{0});
    return;
  }
  // Round to nearest even by adding and taking away 1.5 x 2^23 (exact for |v| <= 127 in the
  // default rounding mode): the loop vectorises, where a call of lrint per value does not.
  constexpr float kRound = 12582912.0F;
  if (codec == ByteCodec::int8)
    for (std::size_t i = 0; i < n; ++i) {
      const float v = std::clamp(static_cast<float>(values[i]) / scale, -kInt8Max, kInt8Max);
      codes[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>((v + kRound) - kRound));
    }
  else
    for (std::size_t i = 0; i < n; ++i) codes[i] = fp8_e4m3_encode(static_cast<float>(values[i]) / scale);
}

template <typename T>
void decode_message(const std::uint8_t* message, std::size_t n, ByteCodec codec, T* values) {
  float scale = 0;
  std::memcpy(&scale, message, sizeof scale);
  const std::uint8_t* codes = message + sizeof scale;
  // Every code's value, once: a table lookup per element.
  static const std::array<float, 256> kFp8 = [] {
    std::array<float, 256> table{};
    for (int c = 0; c < 256; ++c)
      table[static_cast<std::size_t>(c)] = fp8_e4m3_decode(static_cast<std::uint8_t>(c));
    return table;
  }();
  const auto s = static_cast<T>(scale);
  if (codec == ByteCodec::int8)
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<T>(static_cast<std::int8_t>(codes[i])) * s;
  else
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<T>(kFp8[codes[i]]) * s;
}

template <typename T>
void round_trip(T* values, std::size_t n, ByteCodec codec) {
  std::vector<std::uint8_t> message;
  encode_message(values, n, codec, message);
  const Held held = Held::here(allocated_bytes(message));
  decode_message(message.data(), n, codec, values);
}

template <typename T>
std::vector<std::int64_t> top_k_indices(const T* values, std::int64_t n, std::int64_t k) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), std::int64_t{0});
  auto larger = [values](std::int64_t a, std::int64_t b) {
    const T fa = std::fabs(values[a]), fb = std::fabs(values[b]);
    return fa != fb ? fa > fb : a < b;
  };
  std::nth_element(idx.begin(), idx.begin() + k, idx.end(), larger);
  idx.resize(static_cast<std::size_t>(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}

template <typename T>
void matmul_mq(Backend& backend, const T* m, const T* q, std::int64_t rows, std::int64_t cols, std::int64_t r,
               T* out) {
  backend.gemm(Transpose::no, Transpose::no, rows, r, cols, T{1}, m, cols, q, r, T{0}, out, r);
}

template <typename T>
void matmul_mtp(Backend& backend, const T* m, const T* p, std::int64_t rows, std::int64_t cols,
                std::int64_t r, T* out) {
  backend.gemm(Transpose::yes, Transpose::no, cols, r, rows, T{1}, m, cols, p, r, T{0}, out, r);
}

template <typename T>
void matmul_pqt(Backend& backend, const T* p, const T* q, std::int64_t rows, std::int64_t cols,
                std::int64_t r, T* out) {
  backend.gemm(Transpose::no, Transpose::yes, rows, cols, r, T{1}, p, r, q, r, T{0}, out, cols);
}

template <typename T>
void orthonormalize_columns(T* p, std::int64_t rows, std::int64_t r) {
  for (std::int64_t c = 0; c < r; ++c) {
    for (std::int64_t prev = 0; prev < c; ++prev) {
      T dot = 0;
      for (std::int64_t i = 0; i < rows; ++i) dot += p[i * r + c] * p[i * r + prev];
      for (std::int64_t i = 0; i < rows; ++i) p[i * r + c] -= dot * p[i * r + prev];
    }
    T norm = 0;
    for (std::int64_t i = 0; i < rows; ++i) norm += p[i * r + c] * p[i * r + c];
    norm = std::sqrt(norm);
    const T inv = norm > T(1e-30) ? T{1} / norm : T{0};
    for (std::int64_t i = 0; i < rows; ++i) p[i * r + c] *= inv;
  }
}

#define STRATA_GRAD_CODEC(T)                                                                               \
  template void encode_message<T>(const T*, std::size_t, ByteCodec, std::vector<std::uint8_t>&);           \
  template void decode_message<T>(const std::uint8_t*, std::size_t, ByteCodec, T*);                        \
  template void round_trip<T>(T*, std::size_t, ByteCodec);                                                 \
  template std::vector<std::int64_t> top_k_indices<T>(const T*, std::int64_t, std::int64_t);               \
  template void matmul_mq<T>(Backend&, const T*, const T*, std::int64_t, std::int64_t, std::int64_t, T*);  \
  template void matmul_mtp<T>(Backend&, const T*, const T*, std::int64_t, std::int64_t, std::int64_t, T*); \
  template void matmul_pqt<T>(Backend&, const T*, const T*, std::int64_t, std::int64_t, std::int64_t, T*); \
  template void orthonormalize_columns<T>(T*, std::int64_t, std::int64_t);
STRATA_GRAD_CODEC(float)
STRATA_GRAD_CODEC(double)
#undef STRATA_GRAD_CODEC

}  // namespace strata::real
