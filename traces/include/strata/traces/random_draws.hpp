// Portable draws from std::mt19937_64. The standard fixes the generator's raw outputs but not what
// its distributions make of them, so strata draws from raw outputs only: a seed gives the same
// numbers with every standard library (byte-identical outputs, DESIGN.md).
#pragma once

#include <cstdint>
#include <random>

namespace strata {
inline namespace traces {

// [0, 1) from the generator's next 53 bits.
inline double unit_draw(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Uniform in [0, bound) by rejection: draws below 2^64 mod bound are rejected, so the rest split
// evenly. REQUIRES: bound > 0.
inline std::uint64_t uniform_below(std::uint64_t bound, std::mt19937_64& rng) {
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace traces
}  // namespace strata
