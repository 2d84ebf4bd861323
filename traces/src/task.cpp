#include "strata/traces/task.hpp"

#include <array>

namespace strata {
inline namespace traces {
namespace {

constexpr std::array<std::string_view, kTaskKindCount> kKindNames = {
    "linear_fwd",     "linear_bwd_data", "linear_bwd_weight", "conv_fwd",
    "conv_bwd_data",  "conv_bwd_weight", "attention_fwd",     "attention_bwd",
    "embedding_fwd",  "embedding_bwd",   "norm_fwd",          "norm_bwd",
    "activation_fwd", "activation_bwd",  "pool_fwd",          "pool_bwd",
    "loss_fwd",       "loss_bwd",        "elementwise",       "grad_accumulate",
    "optimizer_step", "fixed",           "admm_backward",     "admm_forward",
    "spmm",           "host_copy",       "compress",          "send",
    "recv",           "allreduce",       "allgather",         "reduce_scatter",
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
constexpr std::array<std::string_view, 10> kAlgoNames = {"none",
                                                         "ring",
                                                         "tree",
                                                         "halving_doubling",
                                                         "hierarchical",
                                                         "storage_allreduce",
                                                         "storage_scatter_reduce",
                                                         "cache_allreduce",
                                                         "cache_scatter_reduce",
                                                         "parameter_server"};

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

namespace {

// Where parse_coords stores a coordinate, or null when `name` is none.
std::int32_t* coord_field(TaskCoords& c, std::string_view name) {
  if (name == "it") return &c.iteration;
  if (name == "dp") return &c.dp;
  if (name == "pp") return &c.pp;
  if (name == "tp") return &c.tp;
  if (name == "mb") return &c.mb;
  if (name == "l" || name == "gc") return &c.layer;
  if (name == "b") return &c.block;
  if (name == "site") return &c.site;
  if (name == "step") return &c.step;
  return nullptr;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

TaskPhase phase_of(std::string_view segment) {
  if (segment == "fwd") return TaskPhase::fwd;
  if (segment == "bwd") return TaskPhase::bwd;
  if (segment == "bwdw") return TaskPhase::bwdw;
  if (segment == "opt") return TaskPhase::opt;
  return TaskPhase::none;
}

}  // namespace

TaskCoords parse_coords(std::string_view id) {
  TaskCoords coords;
  std::size_t start = 0;
  while (start <= id.size()) {
    std::size_t end = id.find('/', start);
    if (end == std::string_view::npos) end = id.size();
    const std::string_view segment = id.substr(start, end - start);
    if (coords.phase == TaskPhase::none) coords.phase = phase_of(segment);
    std::size_t digits = segment.size();
    while (digits > 0 && is_digit(segment[digits - 1])) --digits;
    // A name, then at most 9 digits (an int32), nothing else.
    if (digits > 0 && digits < segment.size() && segment.size() - digits <= 9) {
      std::int32_t* field = coord_field(coords, segment.substr(0, digits));
      if (field != nullptr && *field < 0) {
        std::int32_t value = 0;
        for (std::size_t i = digits; i < segment.size(); ++i) value = value * 10 + (segment[i] - '0');
        *field = value;
      }
    }
    start = end + 1;
  }
  return coords;
}

}  // namespace traces
}  // namespace strata
