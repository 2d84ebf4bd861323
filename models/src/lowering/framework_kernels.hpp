// The memory-bound kernels a framework runs for one layer task of a GPT model (layer_tasks.hpp,
// KernelSet), private to the lowering.
#pragma once

#include <optional>
#include <string>

#include "strata/models/lowering/layer_tasks.hpp"

namespace strata {
inline namespace models {

// A layer task's elements on its rank for one microbatch (layer_tasks.cpp's footprint).
struct TaskElements {
  double input = 0;
  double output = 0;
  double weights = 0;
};

// A layer's shape attribute `key` as a number (integer or real), nullopt when absent or a string
// (layer_tasks.cpp).
std::optional<double> shape_real(const Attributes& shape, const std::string& key);

// Rewrites `task` (built for `layer` in `phase` by the generic accounting, with its GEMM shape
// attributes set) to count the kernels of options.kernels. Nothing for KernelSet::generic or a
// layer that is not one of the GPT zoo's (its name's last segment: ln1, qkv, attn, proj, res1,
// ln2, fc1, gelu, fc2, res2, embed, lnf, head, loss).
void apply_framework_kernels(Task& task, const Layer& layer, Phase phase, const TaskElements& elems, int tp,
                             const LayerTaskOptions& options);

}  // namespace models
}  // namespace strata
