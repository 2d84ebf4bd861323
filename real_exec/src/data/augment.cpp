// Padding and crop-flip augmentation of square images (augment.hpp).
#include "strata/real/data/augment.hpp"

#include <algorithm>

#include "strata/traces/random_draws.hpp"

namespace strata::real {

std::string_view to_string(Augment augment) { return augment == Augment::crop_flip ? "crop-flip" : "none"; }

std::optional<Augment> parse_augment(std::string_view name) {
  if (name == "none") return Augment::none;
  if (name == "crop-flip") return Augment::crop_flip;
  return std::nullopt;
}

void pad_image(const float* src, std::int64_t from, std::int64_t to, float* dst) {
  std::fill(dst, dst + to * to, 0.0F);
  const std::int64_t at = (to - from) / 2;
  for (std::int64_t y = 0; y < from; ++y)
    std::copy(src + y * from, src + (y + 1) * from, dst + (y + at) * to + at);
}

void crop_flip(const float* src, std::int64_t side, const CropFlip& c, float* dst) {
  for (std::int64_t y = 0; y < side; ++y)
    for (std::int64_t x = 0; x < side; ++x) {
      const std::int64_t sy = y + c.dy, sx = (c.flip ? side - 1 - x : x) + c.dx;
      dst[y * side + x] = sy >= 0 && sy < side && sx >= 0 && sx < side ? src[sy * side + sx] : 0.0F;
    }
}

CropFlip draw_crop_flip(std::mt19937_64& rng) {
  CropFlip c;
  const auto span = static_cast<std::uint64_t>(2 * kCropPad + 1);
  c.dy = static_cast<std::int64_t>(uniform_below(span, rng)) - kCropPad;
  c.dx = static_cast<std::int64_t>(uniform_below(span, rng)) - kCropPad;
  c.flip = uniform_below(2, rng) == 1;
  return c;
}

}  // namespace strata::real
