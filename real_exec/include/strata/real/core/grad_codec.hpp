// The gradient codecs of data-parallel compression (docs/compression.md), as the real executor
// runs them: byte codecs for the messages of a compressed ring allreduce, top-k selection and
// PowerSGD's linear algebra.
//
// Byte codecs (int8, fp8): a message of n values travels as a 4-byte float scale followed by n
// one-byte codes. int8: scale = max|v| / 127, code = round(v / scale) (ties to even) in
// [-127, 127] (Dettmers 2016's linear 8-bit quantisation with one scale per message). fp8: the
// OCP e4m3 format (Micikevicius et al. 2022, "FP8 formats for deep learning": 4 exponent bits,
// bias 7, 3 mantissa bits, no infinities, largest finite 448), scale = max|v| / 448, code = the
// e4m3 value nearest v / scale (ties to even). A message of zeros (or empty) has scale 0.
// A ring forwards a message it received as the same bytes, so every rank decodes the same values.
//
// Who uses it: the transports (a compressed allreduce's messages) and the codec tasks of
// exec/task_runner_codec.cpp (error feedback, top-k, PowerSGD). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "strata/real/core/backend.hpp"

namespace strata::real {

enum class ByteCodec : std::uint8_t { int8, fp8 };
// The codec a collective's "compression" attribute names, if it is a byte codec.
bool parse_byte_codec(std::string_view name, ByteCodec& out);

// Bytes of a message of n values: 4 + n.
constexpr std::size_t message_bytes(std::size_t n) { return 4 + n; }

// Appends the message of values[0, n) to `out`.
template <typename T>
void encode_message(const T* values, std::size_t n, ByteCodec codec, std::vector<std::uint8_t>& out);
// Decodes the message at `message` (message_bytes(n) bytes) into values[0, n).
template <typename T>
void decode_message(const std::uint8_t* message, std::size_t n, ByteCodec codec, T* values);
// values[0, n) replaced by what their message decodes to.
template <typename T>
void round_trip(T* values, std::size_t n, ByteCodec codec);

// e4m3 (see above): the nearest code of x (saturating to ±448; NaN encodes as 0x7F), and the
// value of a code.
std::uint8_t fp8_e4m3_encode(float x);
float fp8_e4m3_decode(std::uint8_t code);

// The indices of the k values of largest magnitude among values[0, n), ascending; ties go to the
// smaller index, so every rank and every run picks the same ones. REQUIRES: k <= n.
template <typename T>
std::vector<std::int64_t> top_k_indices(const T* values, std::int64_t n, std::int64_t k);

// PowerSGD (Vogels et al. 2019, algorithm 1): its three products as GEMMs of `backend`.
// Matrices are row-major.
// out[rows x r] = m[rows x cols] · q[cols x r]
template <typename T>
void matmul_mq(Backend& backend, const T* m, const T* q, std::int64_t rows, std::int64_t cols, std::int64_t r,
               T* out);
// out[cols x r] = m^T · p[rows x r]
template <typename T>
void matmul_mtp(Backend& backend, const T* m, const T* p, std::int64_t rows, std::int64_t cols,
                std::int64_t r, T* out);
// out[rows x cols] = p[rows x r] · q^T
template <typename T>
void matmul_pqt(Backend& backend, const T* p, const T* q, std::int64_t rows, std::int64_t cols,
                std::int64_t r, T* out);
// The columns of p[rows x r] made orthonormal in place by modified Gram-Schmidt, in column order;
// a column that vanishes (norm below 1e-30 after projection) is set to zero.
template <typename T>
void orthonormalize_columns(T* p, std::int64_t rows, std::int64_t r);

}  // namespace strata::real
