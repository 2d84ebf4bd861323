// add_temporaries (strategy.hpp): each task's mem_temp, the memory its kernels hold only while
// it runs. The figures are what strata's real executor allocates for the task, derived here
// from the task's shape attributes and buffer sizes, not from the executor's code (which the
// measurement counts on its own, real_exec/core/memory_meter.hpp):
// - conv (forward, backward data, backward weight): one image's column matrix, im2col of the
//   input, C_in·kh·kw × H_out·W_out elements (the role a cuDNN workspace plays on a GPU);
// - 2×2 max pool: the kernel's argmax of every output (8-byte indices), forward and backward
//   (the 4-byte copy the forward keeps for the backward is the layer's saved activation);
// - tanh's backward when the Plan kept its input instead of its output: the output re-made;
// - recv: the message (its send's bytes), staged until the receiver copies it into its buffer;
// - allreduce with compression int8/fp8: the rank's bucket copied, one chunk's outgoing and owned
//   messages (codes and a 4-byte scale) and incoming values; a plain collective runs in place;
// - compress (gradient codecs): M = G + E gathered, and int8/fp8's rounded copy or top-k's
//   8-byte indices; decoding top-k or PowerSGD builds G in a scratch array first.
// The ADMM family's updates and the GCN loss allocate through their own Tensors; they are
// measured but not predicted here (mem_temp 0).
#include <algorithm>
#include <cmath>
#include <string>

#include "strata/models/lowering/strategy.hpp"

namespace strata {
namespace models {
namespace {

double buffer_bytes(const Plan& plan, BufferIndex b) { return plan.buffer(b).bytes; }

double sum_bytes(const Plan& plan, const std::vector<BufferIndex>& list, std::size_t count) {
  double sum = 0;
  for (std::size_t i = 0; i < count && i < list.size(); ++i) sum += buffer_bytes(plan, list[i]);
  return sum;
}

double conv_workspace(const Task& t, double elem) {
  const auto get = [&](const char* key) { return t.attr_int(key).value_or(0); };
  const std::int64_t stride = std::max<std::int64_t>(1, get("stride"));
  const std::int64_t oh = (get("h_in") + 2 * get("pad") - get("kh")) / stride + 1;
  const std::int64_t ow = (get("w_in") + 2 * get("pad") - get("kw")) / stride + 1;
  if (oh <= 0 || ow <= 0) return 0;
  return static_cast<double>(get("c_in") * get("kh") * get("kw") * oh * ow) * elem;
}

double codec_scratch(const Plan& plan, const Task& t) {
  const std::string codec = t.attr_string("codec").value_or("");
  const std::string step = t.attr_string("step").value_or("");
  const std::size_t lowrank = codec == "powersgd" ? 1 : 0;
  const double elem = bytes_per_element(t.dtype);
  if (step == "project") return 0;
  if (step == "decode") {
    if (t.writes.size() < lowrank) return 0;
    return sum_bytes(plan, t.writes, t.writes.size() - lowrank);
  }
  if (t.reads.size() < 1 + lowrank) return 0;
  const double g = sum_bytes(plan, t.reads, t.reads.size() - 1 - lowrank);
  if (codec == "int8" || codec == "fp8") return 2 * g;
  if (codec == "topk") return g + g / elem * 8;
  return g;
}

double temporary_bytes(const Plan& plan, const Task& t) {
  const double elem = bytes_per_element(t.dtype);
  switch (t.kind) {
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
      return conv_workspace(t, elem);
    case TaskKind::pool_fwd:
      return t.writes.empty() ? 0 : buffer_bytes(plan, t.writes[0]) / elem * 8;
    case TaskKind::pool_bwd:
      return t.writes.empty() ? 0 : buffer_bytes(plan, t.writes[0]) / 4 / elem * 8;
    case TaskKind::activation_bwd:
      if (t.attr_string("fn").value_or("") != "tanh" || t.attr_string("saved").value_or("") == "output" ||
          t.writes.empty())
        return 0;
      return buffer_bytes(plan, t.writes[0]);
    case TaskKind::recv:  // the message its send carries (a halo's slice of its buffer), else the buffer
      for (TaskIndex d : t.data_deps)
        if (plan.task(d).kind == TaskKind::send && plan.task(d).comm_bytes > 0)
          return plan.task(d).comm_bytes;
      return t.writes.empty() ? 0 : buffer_bytes(plan, t.writes[0]);
    case TaskKind::allreduce: {
      const std::string c = t.attr_string("compression").value_or("");
      if ((c != "int8" && c != "fp8") || t.group.empty()) return 0;
      const double n = static_cast<double>(t.group.size());
      const double chunk = std::ceil(t.comm_bytes / elem / n);
      return t.comm_bytes + 2 * (4 + chunk) + chunk * elem;
    }
    case TaskKind::compress:
      return codec_scratch(plan, t);
    default:
      return 0;
  }
}

}  // namespace

void add_temporaries(Plan& plan) {
  for (TaskIndex i = 0; i < plan.size(); ++i)
    plan.mutable_task(i).mem_temp = temporary_bytes(plan, plan.task(i));
}

}  // namespace models
}  // namespace strata
