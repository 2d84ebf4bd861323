// TaskRunner<T>: runs one Plan task for real — the kernel its kind names, on the buffers it
// reads and writes — and Transport<T>, which carries the communication tasks.
//
// What each kind means to the real executor (the Plan's buffers are the operands, in the order
// the strategies write them, docs/plan-format.md):
// - linear_fwd      reads [X, W]        writes [Y]       attrs m, k, n (W holds k·n + n bias)
// - linear_bwd_data reads [dY, X, W]    writes [dX]
// - linear_bwd_weight reads [dY, X]     writes [dW]      adds into dW (microbatches accumulate)
// - conv_*          as linear, attrs n, c_in, c_out, h_in, w_in, kh, kw, pad, stride
// - activation_fwd/bwd  attr fn relu | tanh; bwd reads [dY, X], or, with attr saved = "output"
//                   (the backprop lowering: what a framework keeps), [dY, Y]
// - pool_fwd/bwd    attr fn max, 2×2 stride 2; bwd reads [dY, X]
// - loss_fwd        reads [logits] writes [loss]: softmax cross-entropy on the labels bound to
//                   the task's (dp, mb); loss[0] = the microbatch's mean loss
// - loss_bwd        reads [logits] writes [dlogits] = (softmax − onehot) / global batch, so that
//                   summing over microbatches and data-parallel ranks gives the mean gradient
// - grad_accumulate reads [src, dst] writes [dst]: dst += src
// - optimizer_step  reads [dW…, state] writes [W…, state]: sgd (momentum) or adam over the
//                   concatenated parameters, then zeroes the dW (PyTorch's zero_grad); with attr
//                   fresh_state = 1 (GIST's first local step of a round) the state and its step
//                   count are zeroed first
// GCN Plans (zoo_gcn.cpp, solver_gist.cpp) run with a graph set (set_graph; GcnPlanTrainer does
// it), and then, as gcn.hpp computes Z = Â (H W) + b:
// - spmm            reads [X (, Â)]     writes [Y] = Â X, Â the graph's CSR matrix (Â is
//                   symmetric, so the backward dP = Â dZ is the same kernel); the Plan's Â buffer
//                   (sized from avg_degree, for the simulator) is not read. A split graph's spmm
//                   reads [X, halo, Â]: the rank's part (GraphOperands::parts[dp]) over its own
//                   rows of X then the halo's rows
// - send/recv of a split graph's halo (a send with attr rows; its recv): the rows of X the
//   receiving part's halo takes from the sender (GraphPart::sends), gathered, and written at that
//   sender's place in the halo buffer (GraphPart::halo_start)
// - a linear whose output an spmm aggregates adds no bias; that spmm adds it after Â, and the
//   linear's dW task takes db from the spmm's dZ (found from the buffers, set_graph)
// - loss_fwd/bwd    the mean softmax cross-entropy over the graph's training nodes (mean_over and
//                   the Workspace's labels are not used); other nodes get a zero gradient. A split
//                   graph's part sums over its training rows and divides by all the graph's:
//                   the allreduce of the weight gradients then gives the whole graph's
// - elementwise     GIST's copies only (ids …/site<i>/extract, …/site<i>/write_back, …/average;
//                   attr sites = m): a site's slices of the global weights for the round's
//                   partition (gist.cpp's extract_subgcn, write_back_subgcn, average_shared)
// - fixed           reads []            writes []        attr duration_s (s, finite, >= 0): busy-waits it on
//                   the steady clock; 0 = an empty task (dispatch benchmarks, synthetic workloads)
// - admm_backward   reads [p, W, b, z, Wp, q, u | labels, (q_prev, u_prev)] writes [(p), W, b, z, Wp]
//                   attrs layer, n_in, n_out, samples, rho, nu, quantize: one ADMM layer's backward
//                   phase (admm.hpp update_layer_backward; samples are columns)
// - admm_forward    reads [z, q, u, p_next]  writes [q, u]: its forward phase (update_layer_forward)
//                   Both borrow their arrays whole (moved into Tensors and back, O(1)): an ADMM
//                   Plan's dependencies leave no other task touching them meanwhile.
// - send / recv / allreduce: Transport (allreduce sums: gradients are already scaled).
// - reduce_scatter / allgather: Transport, the two halves of the ring allreduce over the same
//                   chunks (ZeRO-1: the gradients' reduce-scatter before the sharded step, the
//                   parameters' all-gather after it), or, with attribute per_buffer, one ring per
//                   layer between unsharded buffers and shards (ZeRO-2 and -3, below). Only these
//                   are run: a reduce_scatter of activations (sequence parallelism) or an
//                   allgather before a use that is not per_buffer is refused by check_kernels,
//                   as is a linear or conv task whose weight or gradient buffer is smaller than
//                   the layer.
// - optimizer_step after a reduce_scatter (a data dependency): the step runs on this rank's ring
//                   chunk of each reduce-scattered bucket only (owned_chunk), its state holding
//                   that shard's moments; every gradient is zeroed whole. After a per_buffer
//                   reduce_scatter (ZeRO-2, -3: per_buffer below) each gradient is a shard: the
//                   step updates the layer's chunk of the whole weights (ZeRO-2) or the weight
//                   shard itself (ZeRO-3).
// - host_copy       offload's copies (lowering_offload.cpp): `<step>/d2h` moves the gradients to
//                   host memory, `<step>/h2d` the updated weights back; the step between them
//                   (on_host = 1) runs on the CPU. On the CPU executor host and device memory
//                   are one and the copies move nothing; the CUDA executor copies.
// - compress        a gradient codec step (task_runner_codec.cpp: encode, project, decode of
//                   int8, fp8, topk, powersgd); an allreduce with attribute compression int8 or
//                   fp8 sends each ring message as one-byte codes and a scale (grad_codec.hpp),
//                   an allgather with compression topk gathers the ranks' top-k slots.
// Any other kind has no kernel: check_kernels() refuses the Plan before anything runs.
//
// Thread safety: run() may be called concurrently for tasks the Plan lets run concurrently
// (they touch different buffers); the runner holds no mutable state besides the Workspace's
// (set_graph only between runs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/real/core/backend.hpp"
#include "strata/real/core/workspace.hpp"
#include "strata/real/kernels/kernels.hpp"
#include "strata/traces/plan.hpp"

namespace strata::real {

// Throws InputError naming `source`, the first task whose kind (or attribute: fn, optimizer,
// pool size) has no real kernel, and the kinds that do.
void check_kernels(const Plan& plan, const std::string& source);
// What the CUDA executor (cuda_task_runner.hpp) adds to check_kernels: it runs backprop's kinds
// only, no ADMM, GCN or codec kernels and no compressed collectives or encoded sends. Throws
// InputError naming `source`, the task and its kind, and pointing to --device cpu.
// REQUIRES: check_kernels(plan) passed (the CLI's plan_to_run checks it).
void check_cuda_kernels(const Plan& plan, const std::string& source);

// The optimizer of a run, as an Experiment gives it (models/optimizer.hpp): learning_rate,
// momentum (SGD), adam (betas, eps). The kind the Plan's optimizer-step tasks name wins.
using OptimizerSettings = strata::OptimizerSettings;

// "extract", "write_back" or "average" for GIST's copy tasks (their "copy" attribute, which
// models/ lower_gist sets; a Plan file of schema version 1, without it: their id's last segment),
// else "".
std::string gist_copy_name(const Task& task);

// Why a Stochastic Block-ADMM elementwise task (attribute block_admm: penalty or update) cannot
// run, or "" when it can (task_runner_block_admm.cpp).
std::string block_admm_problem(const Plan& plan, const Task& task);
// Why a ResNet kernel (batch norm, a residual add, a shortcut's gradient) cannot run `task`, or ""
// (also "" for a task that is none of them; task_runner_resnet.cpp).
std::string resnet_kernel_problem(const Plan& plan, const Task& task);

// The grid step of a send whose payload travels as int8 codes (attribute encoding "int8",
// quant_step: pdADMM-G-Q's p, which lies on that grid, so nothing is lost), or 0 for a payload
// sent as its values. Both transports encode such a payload and count one byte per value.
double int8_encoding(const Task& send);

// A PowerSGD codec task's gradients (its attribute matrices, lowering_compression.cpp): per
// gradient buffer, in order, a rows x cols matrix then `rest` values sent whole. Empty when the
// text is not "<rows>x<cols>+<rest>" items joined by ';'.
struct CodecMatrix {
  std::int64_t rows = 0, cols = 0, rest = 0;
};
std::vector<CodecMatrix> parse_codec_matrices(const std::string& text);

// An offloaded optimizer step's copies (ZeRO-Offload, lowering_offload.cpp): `<step>/d2h`, a
// host_copy among its data dependencies that reads the gradients, and `<step>/h2d`, the
// host_copy that writes the weights back; nullopt when either is missing or they differ in
// length.
struct OffloadCopies {
  TaskIndex d2h = 0;
  TaskIndex h2d = 0;
};
std::optional<OffloadCopies> offload_copies(const Plan& plan, const Task& step);

// The send a recv receives: its data dependency of kind send from its peer to its worker.
// Checked: a recv without one is an internal error. (Shared by the transports.)
TaskIndex matching_send(const Plan& plan, const Task& recv);

// The ring allreduce every transport runs, so that all give the same floating-point sums. The
// S elements are cut into n chunks, chunk c = [c·S/n, (c+1)·S/n). Reduce-scatter step s
// (0 ≤ s < n−1): rank r sends chunk (r − s) mod n to rank r+1, which adds it to its own
// (own + received). Allgather step s: rank r sends chunk (r + 1 − s) mod n, which rank r+1
// copies. Each rank sends 2(n−1) chunks, 2(n−1)/n·S elements, as on a network.
struct RingChunk {
  std::size_t begin = 0;
  std::size_t end = 0;
};
inline RingChunk ring_chunk(std::size_t chunk, std::size_t size, std::size_t n) {
  return {chunk * size / n, (chunk + 1) * size / n};
}
inline std::size_t reduce_scatter_chunk(std::size_t rank, std::size_t step, std::size_t n) {
  return (rank + n - step) % n;
}
inline std::size_t allgather_chunk(std::size_t rank, std::size_t step, std::size_t n) {
  return (rank + 1 + n - step) % n;
}
// The chunk rank r holds fully reduced after the reduce-scatter steps, and sends first in the
// allgather: (r + 1) mod n. ZeRO's owner of those elements.
inline std::size_t owned_chunk(std::size_t rank, std::size_t n) { return (rank + 1) % n; }
// The ring phases a collective task's kind runs.
inline bool runs_reduce_scatter(TaskKind kind) {
  return kind == TaskKind::allreduce || kind == TaskKind::reduce_scatter;
}
inline bool runs_allgather(TaskKind kind) {
  return kind == TaskKind::allreduce || kind == TaskKind::allgather;
}

// A collective's buffers by the position of their worker in its group (its reads, in order):
// what each rank contributes. Checked (internal errors): a buffer outside the group, and ranks
// whose buffers differ in number, size or dtype, so the executors need not check them again.
std::vector<std::vector<BufferIndex>> buffers_by_rank(const Plan& plan, const Task& collective);

// ZeRO-2 and -3 (lowering.cpp): a collective with attribute per_buffer = 1 runs one ring per
// buffer position instead of one over each rank's buffers concatenated, and each rank's i-th
// read pairs with its i-th write. The rank at group position p holds chunk owned_chunk(p, n)
// of each layer (shard_chunk) in a shard of ceil(elements / n) elements:
// - reduce_scatter: reads an unsharded gradient, adds the rank's reduced chunk into the shard
//   it writes, and zeroes the gradient it consumed (what a framework frees);
// - allgather: reads the rank's shard (ZeRO-3) or the whole weights whose chunk the optimizer
//   step updated (ZeRO-2's gather after the step) and writes the unsharded weights.
bool per_buffer(const Task& collective);
struct BufferPair {
  BufferIndex read = 0;
  BufferIndex write = 0;
};
// A per_buffer collective's pairs by the position of their worker in its group. Checked
// (internal errors) as buffers_by_rank.
std::vector<std::vector<BufferPair>> buffer_pairs_by_rank(const Plan& plan, const Task& collective);
inline RingChunk shard_chunk(std::size_t position, std::size_t elements, std::size_t n) {
  return ring_chunk(owned_chunk(position, n), elements, n);
}

// A rank's ring data, in place: its buffers' arrays one after another (the collective's S
// elements are their concatenation). The transports run the ring on the arrays themselves, as
// NCCL does, so a collective holds no copy of its bucket.
template <typename T>
struct RingPiece {
  T* data = nullptr;
  std::size_t size = 0;
};
template <typename T>
using RingPieces = std::vector<RingPiece<T>>;
// Calls f(pointer, offset from `begin`, length) for each run of [begin, end) within one piece.
template <typename T, typename F>
void for_each_run(const RingPieces<T>& pieces, std::size_t begin, std::size_t end, F&& f) {
  std::size_t at = 0;
  for (const RingPiece<T>& p : pieces) {
    const std::size_t lo = std::max(begin, at), hi = std::min(end, at + p.size);
    if (lo < hi) f(p.data + (lo - at), lo - begin, hi - lo);
    at += p.size;
    if (at >= end) return;
  }
}
template <typename T>
std::size_t ring_size(const RingPieces<T>& pieces) {
  std::size_t n = 0;
  for (const RingPiece<T>& p : pieces) n += p.size;
  return n;
}
// The arrays of `buffers`, in order.
template <typename T>
RingPieces<T> ring_pieces(const std::vector<BufferIndex>& buffers, Workspace<T>& ws) {
  RingPieces<T> pieces;
  for (BufferIndex b : buffers) pieces.push_back({ws.data(b), static_cast<std::size_t>(ws.size(b))});
  return pieces;
}
// A per_buffer pair's ring data at group position p, in place: the unsharded gradient (a
// reduce_scatter), or the unsharded weights with the rank's shard copied to its chunk (an
// allgather from a shard; the ring writes every other chunk).
template <typename T>
RingPieces<T> per_buffer_ring_prepare(TaskKind kind, BufferPair pair, std::size_t position, std::size_t n,
                                      Workspace<T>& ws);
// After a reduce_scatter's ring: the rank's reduced chunk added into its shard, the consumed
// gradient zeroed. Nothing to do after an allgather.
template <typename T>
void per_buffer_ring_finish(TaskKind kind, BufferPair pair, std::size_t position, std::size_t n,
                            Workspace<T>& ws);

// Told that tasks run by other processes have completed (see Transport::begin_run).
class RemoteCompletions {
 public:
  virtual ~RemoteCompletions() = default;
  // Called from the transport's own thread, once per process that runs a part of `task`.
  virtual void remote_completed(TaskIndex task) = 0;
};

// Moves tensors between workers. Implementations: threads of one process (ThreadTransport,
// thread_transport.hpp) and OpenMPI processes (MpiTransport, real_exec/mpi/, optional).
template <typename T>
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void send(const Plan& plan, TaskIndex task, Workspace<T>& ws) = 0;
  virtual void recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) = 0;
  // The same over values the caller chose: send `values` (taken, not copied again) in place of
  // the task's read buffer (the rows of a graph part that another part's halo takes, gathered by
  // the runner), and recv into
  // `into` in place of its write buffer (that part's slice of the halo). The payload's size must
  // be into's (checked).
  virtual void send_values(const Plan& plan, TaskIndex task, std::vector<T> values, Workspace<T>& ws) = 0;
  virtual void recv_values(const Plan& plan, TaskIndex task, std::span<T> into, Workspace<T>& ws) = 0;
  // An allreduce, reduce_scatter or allgather task: the ring phases its kind runs
  // (runs_reduce_scatter, runs_allgather) over each rank's buffers among its reads, in order.
  virtual void collective(const Plan& plan, TaskIndex task, Workspace<T>& ws) = 0;
  virtual std::uint64_t bytes_sent() const = 0;  // payload bytes moved by this process's workers
  virtual std::string name() const = 0;

  // --- Workers spread over several processes (MPI). The defaults describe one process that
  // holds every worker, so the Interpreter and the Trainer need no special case for it. The
  // calls marked collective must be made by every process, in the same order.
  virtual int process_of(WorkerId /*worker*/) const { return 0; }  // the process running it
  virtual int process() const { return 0; }                        // this process
  // Collective: returns once every process has begun the run (their clocks start together).
  // Until end_run(), `sink` hears of each remote task this process waits for: a send to one of
  // its workers when the payload has arrived, any other task when announce() says so.
  virtual void begin_run(RemoteCompletions& /*sink*/) {}
  // The meter this process's staged messages are charged to (the Workspace's), from before the
  // first run; transports that stage nothing outside a task ignore it.
  virtual void set_meter(std::shared_ptr<MemoryMeter> /*meter*/) {}
  virtual void end_run() {}
  // Tells `processes` that this process's part of `task` has completed (during a run).
  virtual void announce(TaskIndex /*task*/, const std::vector<int>& /*processes*/) {}
  // Collective: the sum of `local` over the processes.
  virtual double sum_over_processes(double local) { return local; }
  // Collective: element-wise maximum over the processes, in place (same size everywhere).
  virtual void max_over_processes(std::vector<double>& /*values*/) {}
};

// TaskExecutor<T>: what the Interpreter and the Trainer run a Plan's tasks with. TaskRunner runs
// them on the host's memory (the Workspace itself); a device executor (CudaTaskRunner,
// real_exec/cuda/) keeps its own copy of every buffer in the device's memory, and the Trainer
// moves what the host writes or reads (inputs and labels, weights at the start, the loss and the
// logits) with the copy calls below, which are no-ops for the host.
// Thread safety: run() as TaskRunner's; the copy calls only between runs, from one thread.
template <typename T>
class TaskExecutor {
 public:
  virtual ~TaskExecutor() = default;
  // Runs the task to completion: when it returns, its results are visible to every later task.
  virtual void run(TaskIndex task) = 0;
  // Where the workers run (Transport::process_of and the run's collective calls).
  virtual Transport<T>& transport() = 0;
  // Payload bytes this process's workers moved so far.
  virtual std::uint64_t bytes_sent() const = 0;
  // Host Workspace -> executor memory, and back. `upload_labels` copies every label array bound
  // in the Workspace (Workspace::label_keys()).
  virtual void upload(BufferIndex /*buffer*/) {}
  virtual void download(BufferIndex /*buffer*/) {}
  virtual void upload_labels() {}
  // Drops what forward tasks saved for their backward (max-pool argmax, loss probabilities)
  // when no backward will run: after the Trainer's forward-only test passes.
  virtual void discard_saved() {}
  // The name of the kernels' backend, recorded in reports ("cpu-openblas", "cuda-cublas").
  virtual std::string backend_name() const = 0;
};

// Builds the executor that runs a Plan's tasks (TaskRunner on the host; CudaTaskRunner on a GPU)
// over a trainer's Workspace and transport.
template <typename T>
using ExecutorFactory = std::function<std::unique_ptr<TaskExecutor<T>>(
    const Plan& plan, Workspace<T>& ws, Transport<T>& transport, const OptimizerSettings& optimizer)>;

template <typename T>
struct GraphOperands;  // kernels/gcn.hpp
template <typename T>
struct GraphPart;  // kernels/gcn.hpp

// Busy-waits a fixed task's duration_s on the steady clock (see task_runner.cpp); shared by the
// executors. REQUIRES: check_kernels accepted the task.
void run_fixed_task(const Task& task);

// What the executors share of a task's meaning (their kernels differ, the operands do not).
// A conv task's shape from its attributes.
Conv2dShape conv_shape(const Task& task);
// Whether an activation_bwd task reads its forward's output Y (attribute saved = "output")
// rather than its input X.
bool reads_activation_output(const Task& task);
// A 2x2 max pooling task's shape: channels and output size from its attributes, the batch from
// its input's element count (checked to be exactly twice the output in each dimension).
Pool2dShape pool_shape(const Task& task, std::int64_t input_elements);
// What a loss_bwd's gradient is a mean over: the samples one optimizer step sees, the task's
// mean_over (an AMPNet instance's f minibatches) or else the Plan's global batch, or else its own
// batch, so that summing over microbatches and data-parallel ranks gives the mean gradient.
std::int64_t loss_divisor(const Plan& plan, const Task& task, std::int64_t batch);
// An optimizer_step task's work: Adam or SGD over each (gradient, weight) pair, whose moments lie
// at `first` (and, for Adam, `second`) elements into the state buffer, after the pairs before it.
struct OptimizerSlice {
  BufferIndex grad = 0;
  BufferIndex weight = 0;
  std::int64_t begin = 0;         // the slice is elements [begin, begin + elements) of grad and
  std::int64_t weight_begin = 0;  // [weight_begin, weight_begin + elements) of weight
  std::int64_t elements = 0;
  std::int64_t first = 0;   // offset of its velocity or first moments in the state
  std::int64_t second = 0;  // offset of its second moments (Adam)
};
struct OptimizerWork {
  bool adam = false;
  BufferIndex state = 0;
  std::int64_t step = 0;     // this update's number, from 1 (the Workspace's counter, incremented)
  bool fresh_state = false;  // attribute fresh_state: zero the state first, the step counts from 1
  AdamConfig adam_config;
  SgdConfig sgd_config;
  std::vector<OptimizerSlice> slices;
  std::vector<BufferIndex> grads;  // every gradient it reads, zeroed whole after the step
  bool on_host = false;            // offloaded: the step runs on the CPU (its pairs: the copies')
};
// REQUIRES: check_kernels accepted the task. Increments the state's step counter. A gradient
// that a reduce_scatter among the task's data dependencies reduced is stepped on this rank's
// owned chunk of that bucket only (ZeRO-1), in the bucket's order.
template <typename T>
OptimizerWork optimizer_work(const Plan& plan, const Task& task, Workspace<T>& ws,
                             const OptimizerSettings& settings);

template <typename T>
class TaskRunner final : public TaskExecutor<T> {
 public:
  // REQUIRES: check_kernels(plan) passed; everything outlives the runner.
  TaskRunner(const Plan& plan, Backend& backend, Workspace<T>& ws, Transport<T>& transport,
             OptimizerSettings optimizer);

  void run(TaskIndex task) override;
  // What a GCN Plan's kernels read besides the Workspace (the graph, the training nodes, GIST's
  // partitions); nullptr for other Plans. REQUIRES: `graph` outlives the runner, is changed only
  // between runs, and fits the Plan (GcnPlanTrainer builds it from the Plan).
  void set_graph(const GraphOperands<T>* graph);
  Transport<T>& transport() override { return transport_; }
  std::uint64_t bytes_sent() const override { return transport_.bytes_sent(); }
  std::string backend_name() const override { return backend_.name(); }
  void discard_saved() override;

 private:
  void run_linear(TaskIndex index);
  void run_conv(const Task& t);
  void run_activation(const Task& t);
  void run_pool(const Task& t);
  void run_loss(const Task& t);
  void run_optimizer(const Task& t);
  void run_admm(const Task& t);
  void run_block_admm(const Task& t);  // task_runner_block_admm.cpp
  // ResNets (task_runner_resnet.cpp): batch norm, the residual add, its shortcut's gradient, and
  // global average pooling.
  void run_norm(const Task& t);
  void run_residual(const Task& t);
  void add_shortcut_grad(const Task& t);
  void run_global_avg_pool(const Task& t);
  void run_kernel(TaskIndex index);
  void run_codec(const Task& t);  // task_runner_codec.cpp
  // GCN Plans (task_runner_graph.cpp).
  void run_spmm(TaskIndex index);
  void run_graph_loss(const Task& t);
  void run_gist_copy(const Task& t);
  const BufferIndex* bias_route(TaskIndex index) const;
  // A split graph (graph_->parts): the part of a task's rank, and a halo message's rows moved.
  const GraphPart<T>* part_of(const Task& t) const;
  void run_halo_send(TaskIndex index);
  void run_halo_recv(TaskIndex index);

  T* buf(BufferIndex b) { return ws_.data(b); }
  std::int64_t elems(BufferIndex b) const { return ws_.size(b); }

  const Plan& plan_;
  Backend& backend_;
  Workspace<T>& ws_;
  Transport<T>& transport_;
  OptimizerSettings optimizer_;
  const GraphOperands<T>* graph_ = nullptr;
  // GCN bias placement (set_graph): for a linear_fwd, its bias is deferred (value unused); for
  // an spmm forward, the weight buffer whose bias it adds; for a linear_bwd_weight, its dZ.
  std::unordered_map<TaskIndex, BufferIndex> bias_routes_;
  // A split graph's halo messages (set_graph): per send or recv, the other part's rank.
  std::unordered_map<TaskIndex, int> halo_peers_;
  // What a forward keeps for its backward outside the Plan's buffers, as frameworks do: a
  // 2x2 max pool's argmax (int32, keyed by the pool's input buffer) and the loss's
  // probabilities (keyed by its logits), each charged to its worker until the backward
  // consumes it. The Plan counts both as the layer's saved activations (zoo_vision.cpp).
  template <typename V>
  struct Saved {
    V values;
    Held held;
  };
  // Stores what a forward saved under `key`, and takes it back (empty when nothing is saved).
  template <typename V>
  void keep_saved(std::unordered_map<BufferIndex, Saved<V>>& saved, BufferIndex key, Saved<V> value);
  template <typename V>
  Saved<V> take_saved(std::unordered_map<BufferIndex, Saved<V>>& saved, BufferIndex key);
  std::mutex saved_mutex_;
  std::unordered_map<BufferIndex, Saved<std::vector<std::int32_t>>> saved_argmax_;
  std::unordered_map<BufferIndex, Saved<std::vector<T>>> saved_probs_;
};

extern template class TaskRunner<float>;
extern template class TaskRunner<double>;

}  // namespace strata::real
