// The shape checks of the kernels, one definition for the CPU kernels (kernels.hpp) and the CUDA
// kernels (real_exec/cuda, cuda_kernels.hpp), so that both executors refuse the same operands
// with the same message. A failed check is a bug in the caller (the task runner read the shape
// from the Plan, which validate() checked), so each throws through STRATA_ASSERT.
#pragma once

#include <cstdint>

#include "strata/real/kernels/kernels.hpp"

namespace strata::real {

// batch >= 0 (an empty microbatch runs nothing), in and out features >= 1.
void check_linear_shape(const LinearShape& shape);
// Sizes, kernel and stride >= 1, padding >= 0, and the kernel fits in the padded input.
void check_conv_shape(const Conv2dShape& shape);
// A 2x2 max pool: batch >= 0, channels >= 1, input at least 2x2.
void check_pool2x2_shape(const Pool2dShape& shape);
// A softmax cross-entropy over batch >= 1 rows of classes >= 1 logits.
void check_softmax_shape(std::int64_t batch, std::int64_t classes);
// An element-wise kernel over n >= 0 elements; `kernel` names it in the message.
void check_length(std::int64_t n, const char* kernel);
// Adam's step counter, from 1 (its bias corrections divide by 1 − β^step).
void check_adam_step(std::int64_t step);

}  // namespace strata::real
