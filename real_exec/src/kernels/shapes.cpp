// shapes.hpp: the checks both kernel sets call before touching their operands.
#include "strata/real/kernels/shapes.hpp"

#include <string>

#include "strata/traces/error.hpp"

namespace strata::real {

void check_linear_shape(const LinearShape& s) {
  STRATA_ASSERT(s.batch >= 0 && s.in_features > 0 && s.out_features > 0,
                "linear shape batch " + std::to_string(s.batch) + ", in " + std::to_string(s.in_features) +
                    ", out " + std::to_string(s.out_features));
}

void check_conv_shape(const Conv2dShape& s) {
  STRATA_ASSERT(s.batch >= 0 && s.in_channels > 0 && s.out_channels > 0 && s.kernel_h > 0 && s.kernel_w > 0 &&
                    s.stride > 0 && s.padding >= 0,
                "conv2d shape with a non-positive size, stride or negative padding");
  STRATA_ASSERT(s.height + 2 * s.padding >= s.kernel_h && s.width + 2 * s.padding >= s.kernel_w,
                "conv2d kernel " + std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) +
                    " larger than the padded input " + std::to_string(s.height) + "x" +
                    std::to_string(s.width));
}

void check_pool2x2_shape(const Pool2dShape& shape) {
  STRATA_ASSERT(shape.batch >= 0 && shape.channels > 0 && shape.height >= 2 && shape.width >= 2,
                "max-pool input " + std::to_string(shape.height) + "x" + std::to_string(shape.width));
}

void check_softmax_shape(std::int64_t batch, std::int64_t classes) {
  STRATA_ASSERT(batch > 0 && classes > 0, "softmax over an empty batch or no classes");
}

void check_length(std::int64_t n, const char* kernel) {
  STRATA_ASSERT(n >= 0, std::string(kernel) + " over " + std::to_string(n) + " elements");
}

void check_adam_step(std::int64_t step) {
  STRATA_ASSERT(step >= 1, "Adam step " + std::to_string(step) + " (steps count from 1)");
}

}  // namespace strata::real
