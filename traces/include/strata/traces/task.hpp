// A Task: one node of a Plan (see plan.hpp).
//
// Task ids are stable and independent of placement. Grammar (docs/plan-format.md):
//
//   id      := segment ("/" segment)*
//   segment := coord | phase | name
//   coord   := ("it" | "dp" | "pp" | "tp" | "mb" | "l" | "gc" | "b" | "site" | "step") <non-negative integer>
//   phase   := "fwd" | "bwd" | "bwdw" | "opt" | "ar" | "send" | "recv" | ...
//
// e.g. `it0/dp1/pp2/tp0/mb3/fwd/l7/qkv`: iteration 0, data-parallel rank 1, pipeline stage 2,
// tensor rank 0, microbatch 3, forward, layer 7, its QKV projection. Coordinates appear in the
// fixed order it, dp, pp, tp, mb; a strategy omits the ones it does not use. Ids never contain a
// host name or a global worker number, so one Plan placed two ways keeps its ids.
//
// parse_coords() is the one reader of that grammar: Plan::add_task stores its result in
// Task::coords and Plan::add_buffer in Plan::buffer_coords, so executors read typed coordinates
// and never parse ids again. Buffer ids follow the same grammar (e.g. `dp0/pp1/tp0/mb2/act/input`).
//
// `kind` is a closed set: executors dispatch on it (a real kernel per kind, a cost formula per
// kind). Compute kinds run on a worker's compute stream, communication kinds on its comm stream,
// or on its compute stream as a blocking call (the compute waits for it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata {
inline namespace traces {

using TaskIndex = std::uint32_t;
using BufferIndex = std::uint32_t;
using WorkerId = std::int32_t;

enum class TaskKind : std::uint8_t {
  // compute
  linear_fwd,         // Y = X W: attrs m, n, k
  linear_bwd_data,    // dX = dY W^T
  linear_bwd_weight,  // dW = X^T dY
  conv_fwd,           // attrs n, c_in, c_out, h_out, w_out, kh, kw
  conv_bwd_data,
  conv_bwd_weight,
  attention_fwd,  // softmax(QK^T)V core: attrs batch, heads, seq, head_dim
  attention_bwd,
  embedding_fwd,
  embedding_bwd,
  norm_fwd,  // layer norm / batch norm
  norm_bwd,
  activation_fwd,  // relu, gelu, tanh
  activation_bwd,
  pool_fwd,
  pool_bwd,
  loss_fwd,  // softmax cross-entropy
  loss_bwd,
  elementwise,      // residual add, scale, dropout
  grad_accumulate,  // dW += dW_mb
  optimizer_step,   // sgd / adam update of a parameter shard
  fixed,            // a compute task of given duration (attr duration_s): synthetic workloads
  admm_backward,    // ADMM layer update of p, W, b, z (attrs layer, n_in, n_out, samples)
  admm_forward,     // ADMM layer update of q, u (same attrs)
  spmm,             // Y = Â X, Â sparse (a GCN's aggregation): attrs nodes, nnz, width
  host_copy,        // copy between device and host memory over the host link: attr to_host (1: D2H,
                    // 0: H2D); bytes_read (D2H) or bytes_written (H2D) is the payload
  compress,         // a gradient codec step around a compressed DP exchange: attrs codec (int8 |
                    // fp8 | topk | powersgd) and step (encode | project | decode), docs/compression.md
  // communication
  send,  // point-to-point: carries the transfer to `peer`
  recv,  // the receiver's completion of the matching send (data-dependent on it)
  allreduce,
  allgather,
  reduce_scatter,
  broadcast,
};

inline constexpr int kTaskKindCount = static_cast<int>(TaskKind::broadcast) + 1;

std::string_view to_string(TaskKind kind);
std::optional<TaskKind> parse_task_kind(std::string_view name);
constexpr bool is_collective(TaskKind kind) {
  return kind == TaskKind::allreduce || kind == TaskKind::allgather || kind == TaskKind::reduce_scatter ||
         kind == TaskKind::broadcast;
}
constexpr bool is_linear(TaskKind kind) {  // a GEMM: forward, backward data or backward weight
  return kind == TaskKind::linear_fwd || kind == TaskKind::linear_bwd_data ||
         kind == TaskKind::linear_bwd_weight;
}
constexpr bool is_conv(TaskKind kind) {
  return kind == TaskKind::conv_fwd || kind == TaskKind::conv_bwd_data || kind == TaskKind::conv_bwd_weight;
}
constexpr bool is_communication(TaskKind kind) {  // p2p or collective
  return is_collective(kind) || kind == TaskKind::send || kind == TaskKind::recv;
}

enum class DType : std::uint8_t { fp32, bf16, fp16, fp64 };
std::string_view to_string(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
int bytes_per_element(DType dtype);

enum class Stream : std::uint8_t { compute, comm };
std::string_view to_string(Stream stream);
std::optional<Stream> parse_stream(std::string_view name);

// How a collective is carried out; executors expand it their own way.
enum class CollectiveAlgo : std::uint8_t {
  none,  // not a collective
  ring,  // bandwidth-optimal ring
  tree,  // binary tree reduce + broadcast
  halving_doubling,
  hierarchical,  // intra-host ring reduce-scatter, inter-host ring allreduce, intra-host allgather
  // Through an object store, as LambdaML runs them (docs/serverless.md); allreduce only:
  storage_allreduce,       // every rank PUTs; the first GETs the others, sums, PUTs; the rest GET
  storage_scatter_reduce,  // rank j merges shard j of every rank's buffer, the ranks GET the merged shards
  // The same two through an in-memory cache VM (LambdaML's Memcached/Redis channel):
  cache_allreduce,
  cache_scatter_reduce,
  // Through a parameter server on a VM (LambdaML's hybrid): every rank sends its buffer to the
  // server, which sums them and sends the sum back to every rank.
  parameter_server,
};
// Through the object store (the real executor runs these through files).
constexpr bool is_storage_algo(CollectiveAlgo algo) {
  return algo == CollectiveAlgo::storage_allreduce || algo == CollectiveAlgo::storage_scatter_reduce;
}
constexpr bool is_cache_algo(CollectiveAlgo algo) {
  return algo == CollectiveAlgo::cache_allreduce || algo == CollectiveAlgo::cache_scatter_reduce;
}
// Through a host of the platform that runs no worker (store, cache or server): data-parallel
// allreduces only.
constexpr bool is_hub_algo(CollectiveAlgo algo) {
  return is_storage_algo(algo) || is_cache_algo(algo) || algo == CollectiveAlgo::parameter_server;
}
std::string_view to_string(CollectiveAlgo algo);
std::optional<CollectiveAlgo> parse_collective_algo(std::string_view name);

// The phase segment of an id (fwd, bwd, bwdw, opt), none when it has none.
enum class TaskPhase : std::uint8_t { none, fwd, bwd, bwdw, opt };

// The coordinates of a task or buffer id, -1 where the id has none. `layer` is an MLP or
// transformer layer l<n> or a GCN layer gc<n>; `block` b<n>; `site` and `step` are GIST's
// sub-GCN and local step. The first segment of a kind wins.
struct TaskCoords {
  std::int32_t iteration = -1;  // it<n>
  std::int32_t dp = -1;
  std::int32_t pp = -1;
  std::int32_t tp = -1;
  std::int32_t mb = -1;  // microbatch (an instance, for ampnet and local)
  std::int32_t layer = -1;
  std::int32_t block = -1;
  std::int32_t site = -1;
  std::int32_t step = -1;
  TaskPhase phase = TaskPhase::none;  // e.g. fwd for it0/dp0/mb1/fwd/l2 and for …/send/fwd

  bool operator==(const TaskCoords&) const = default;
};
// Reads the coordinate segments of `id` (a segment is a coordinate when it is one of the names
// above followed by digits only) and its first phase segment; other segments are names.
// Allocates nothing.
TaskCoords parse_coords(std::string_view id);

// A typed attribute value: integer, real, string or list of integers (shapes).
using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;
using Attributes = std::map<std::string, AttrValue>;  // ordered: deterministic output

struct Task {
  std::string id;
  TaskKind kind = TaskKind::fixed;
  Stream stream = Stream::compute;
  WorkerId worker = -1;         // the rank it runs on; -1 for collectives (see group)
  std::vector<WorkerId> group;  // collectives: participating ranks, in ring order
  WorkerId peer = -1;           // send: destination rank; recv: source rank
  CollectiveAlgo algo = CollectiveAlgo::none;
  DType dtype = DType::fp32;
  std::int32_t iteration = 0;
  std::int64_t priority = 0;  // dispatch order: lower first, then plan order (dispatch.hpp)

  double flops = 0;          // FLOP (compute tasks)
  double bytes_read = 0;     // B moved from device memory
  double bytes_written = 0;  // B moved to device memory
  double comm_bytes = 0;     // B: send payload, or the per-rank buffer of a collective
  double mem_alloc = 0;      // B allocated when the task starts (held until a mem_free)
  double mem_free = 0;       // B released when the task ends
  double mem_temp = 0;       // B held only while the task runs (its kernels' workspace, a staged message)

  std::vector<BufferIndex> reads;
  std::vector<BufferIndex> writes;
  std::vector<TaskIndex> data_deps;     // producers of what this task reads
  std::vector<TaskIndex> control_deps;  // ordering only (schedule, in-flight limits)

  Attributes attrs;
  TaskCoords coords;  // parsed from id by Plan::add_task; not written to JSON

  // Ranks that take part: {worker} or group. A view into the task: no allocation.
  std::span<const WorkerId> participants() const {
    if (is_collective(kind)) return {group.data(), group.size()};
    return {&worker, 1};
  }
  std::optional<double> attr_real(const std::string& key) const;
  std::optional<std::int64_t> attr_int(const std::string& key) const;
  std::optional<std::string> attr_string(const std::string& key) const;
};

// A named piece of memory on one worker that tasks read and write (activations, weights,
// gradients, optimizer state). Lets an interpreter allocate and run a Plan.
struct Buffer {
  std::string id;  // e.g. "dp0/pp1/tp0/w/l7/qkv"
  WorkerId worker = 0;
  double bytes = 0;  // B
  DType dtype = DType::fp32;
  bool persistent = false;  // weights, gradients, optimizer state: held for the whole run
  bool on_host = false;     // in the worker's host memory, not its device's (offloaded state)
};

}  // namespace traces
}  // namespace strata
