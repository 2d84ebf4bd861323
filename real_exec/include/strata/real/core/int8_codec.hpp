// The int8 codec of pdADMM-G-Q (Wang, Li, Chai, Wang, Cheng & Zhao, "Towards quantized model
// parallelism for graph-augmented MLPs based on gradient-free ADMM", 2021): a value on the grid
// Δ = {step·k : k = −128..127} travels as its one-byte code k.
//
// Who uses it: the transports (thread_transport.hpp, mpi_transport.hpp) encode a send marked
// int8 and decode it at the receiver; the ADMM kernels (kernels/admm.hpp) round p onto the grid.
// It lives in core/ so that neither transport needs the ADMM numerics.
//
// Rounding: nearest grid point, ties to even, clamped to the ends [−128·step, 127·step]; NaN
// encodes as −128. Decoding is exact (step·k in T), so encode(decode(c)) == c for every code.
// Thread safety: pure functions on caller-owned arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/real/core/tensor.hpp"

namespace strata::real {

// The grid's spacing. Values beyond the ends are clamped to them.
struct QuantGrid {
  double step = 1.0 / 16;  // a power of two keeps step·k exact in float and double
};

// The codes of n values into `codes` (n of them), and back. Arrays must not overlap.
template <typename T>
void quantize_into(const T* values, std::int64_t n, const QuantGrid& grid, std::int8_t* codes);
template <typename T>
void dequantize_into(const std::int8_t* codes, std::int64_t n, const QuantGrid& grid, T* values);

// The int8 code of each value: one byte per element, which is what a transport sends.
template <typename T>
std::vector<std::int8_t> quantize(const Tensor<T>& values, const QuantGrid& grid);
// REQUIRES: codes.size() == element_count(shape).
template <typename T>
Tensor<T> dequantize(const std::vector<std::int8_t>& codes, const Shape& shape, const QuantGrid& grid);

}  // namespace strata::real
