#include "strata/traces/task.hpp"

#include <array>

namespace strata {
namespace {

constexpr std::array<std::string_view, kTaskKindCount> kKindNames = {
    "linear_fwd",
    "linear_bwd_data",
    "linear_bwd_weight",
    "conv_fwd",
    "conv_bwd_data",
    "conv_bwd_weight",
    "attention_fwd",
    "attention_bwd",
    "embedding_fwd",
    "embedding_bwd",
    "norm_fwd",
    "norm_bwd",
    "activation_fwd",
    "activation_bwd",
    "pool_fwd",
    "pool_bwd",
    "loss_fwd",
    "loss_bwd",
    "elementwise",
    "grad_accumulate",
    "optimizer_step",
    "fixed",
    "admm_backward",
    "admm_forward",
    "spmm",
    "send",
    "recv",
    "allreduce",
    "allgather",
    "reduce_scatter",
    "broadcast",
};

template <typename Enum, std::size_t N>
std::optional<Enum> parse_enum(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

constexpr std::array<std::string_view, 4> kDTypeNames = {"fp32", "bf16", "fp16", "fp64"};
constexpr std::array<std::string_view, 2> kStreamNames = {"compute", "comm"};
constexpr std::array<std::string_view, 5> kAlgoNames = {"none", "ring", "tree", "halving_doubling",
                                                        "hierarchical"};

}  // namespace

std::string_view to_string(TaskKind kind) { return kKindNames[static_cast<std::size_t>(kind)]; }
std::optional<TaskKind> parse_task_kind(std::string_view name) {
  return parse_enum<TaskKind>(kKindNames, name);
}

std::string_view to_string(DType dtype) { return kDTypeNames[static_cast<std::size_t>(dtype)]; }
std::optional<DType> parse_dtype(std::string_view name) { return parse_enum<DType>(kDTypeNames, name); }
int bytes_per_element(DType dtype) {
  switch (dtype) {
    case DType::fp64:
      return 8;
    case DType::fp32:
      return 4;
    case DType::bf16:
    case DType::fp16:
      return 2;
  }
  return 4;
}

std::string_view to_string(Stream stream) { return kStreamNames[static_cast<std::size_t>(stream)]; }
std::optional<Stream> parse_stream(std::string_view name) { return parse_enum<Stream>(kStreamNames, name); }

std::string_view to_string(CollectiveAlgo algo) { return kAlgoNames[static_cast<std::size_t>(algo)]; }
std::optional<CollectiveAlgo> parse_collective_algo(std::string_view name) {
  return parse_enum<CollectiveAlgo>(kAlgoNames, name);
}

std::optional<double> Task::attr_real(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return std::nullopt;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<std::int64_t> Task::attr_int(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return *i;
  return std::nullopt;
}

std::optional<std::string> Task::attr_string(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return std::nullopt;
}

}  // namespace strata
