// The image pipeline between the data set and a Plan's input: Fashion-MNIST's 28x28 images padded
// to the square a CIFAR-style network takes (32x32 for the CIFAR ResNets of He et al. 2016), and
// the standard CIFAR augmentation of He et al. 2016, section 4.2: each training image shifted by
// up to `kCropPad` pixels in each direction (a random crop of the image padded by 4 on every
// side, zeros outside) and flipped horizontally with probability 1/2. Test images are padded,
// never augmented.
//
// Draws come from raw mt19937_64 outputs (bounded by rejection, as shuffled_indices does), so a
// seed gives the same crops everywhere. Cost O(pixels) per image.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace strata::real {

enum class Augment : std::uint8_t { none, crop_flip };
std::string_view to_string(Augment augment);                  // none | crop-flip
std::optional<Augment> parse_augment(std::string_view name);  // none | crop-flip

inline constexpr std::int64_t kCropPad = 4;  // pixels, He et al. 2016 section 4.2

// One image of side `from` centred in a square of side `to` (>= from; offset (to - from) / 2),
// zeros around it. REQUIRES: to >= from >= 1; dst holds to * to values and does not overlap src.
void pad_image(const float* src, std::int64_t from, std::int64_t to, float* dst);

// One crop-and-flip: the image shifted by (dy, dx) and, with `flip`, mirrored left to right:
// dst(y, x) = src(y + dy, x' + dx) with x' = side - 1 - x when flipped, else x; zero where that
// falls outside. REQUIRES: dst holds side * side values and does not overlap src.
struct CropFlip {
  std::int64_t dy = 0, dx = 0;
  bool flip = false;
};
void crop_flip(const float* src, std::int64_t side, const CropFlip& c, float* dst);

// A shift in [-kCropPad, kCropPad] for each axis and a fair coin for the flip.
CropFlip draw_crop_flip(std::mt19937_64& rng);

}  // namespace strata::real
