// CudaTaskRunner<T>: runs a Plan's tasks on one NVIDIA GPU — the device counterpart of
// TaskRunner (task_runner.hpp), with the same kernel per kind, the same operands and the same
// meaning of every attribute, so the Interpreter and the Trainer run a Plan on the GPU unchanged.
//
// Memory: every Plan buffer has a DeviceArray of its own, allocated and zeroed up front; the
// host Workspace stays the place where the Trainer writes inputs, labels and initial weights and
// reads the loss and logits, through upload()/download(). Kernels read and write the device
// arrays only.
//
// Streams: each worker has a compute stream and a communication stream (a CudaBackend each, with
// its own cuBLAS handle), the GPU counterparts of the Interpreter's two threads per worker. A
// task is queued on the stream of its worker (a collective: its group's first rank) and kind, and
// run() returns once that stream has run it (cudaStreamSynchronize): the Interpreter's rule that
// a task starts when its dependencies have finished holds as on the CPU, and its steady-clock
// time of a task is launch + GPU time + completion, which is what the calibration measures and
// the simulator predicts. Work of different streams overlaps on the GPU: two workers' kernels,
// or a worker's transfer beside its own compute ("stream overlap"). What this leaves out: the
// launch-ahead of frameworks that queue many kernels before waiting (docs/validation.md).
//
// Communication between workers of the one GPU is device-to-device copies: a send copies its
// buffer into a staging array of its own (so the sender may overwrite the buffer at once, as
// ThreadTransport's send does), the matching recv copies the staging array into its buffer. An
// allreduce sums its group's buckets with cuBLAS axpy into the first rank's and copies the sum
// back to the others; a reduce_scatter does the same (every rank then holds the sum, its owned
// chunk included); an allgather copies each rank's owned chunk (task_runner.hpp owned_chunk) to
// the others. Bytes are counted as ThreadTransport counts them (a ring allreduce moves 2(n−1)/n
// of the bucket per rank, each half of it (n−1)/n), so reports compare across executors.
//
// Errors: a failing CUDA call throws InputError naming it; a kernel's fault surfaces at the
// synchronize that ends its task. Ownership: the runner owns its device arrays and streams; the
// Plan and Workspace are borrowed and must outlive it. Thread safety: run() may be called
// concurrently for tasks the Plan lets run concurrently, like TaskRunner's; the copy calls only
// between runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/real/cuda_backend.hpp"
#include "strata/real/device_array.hpp"
#include "strata/real/exec/plan_execution.hpp"
#include "strata/real/exec/task_runner.hpp"

namespace strata::real {

template <typename T>
class CudaTaskRunner final : public TaskExecutor<T> {
 public:
  // Allocates the Plan's buffers on `device`. `transport` answers where workers run (all in this
  // process); the runner moves the data itself. REQUIRES: check_kernels(plan) passed.
  CudaTaskRunner(const Plan& plan, Workspace<T>& ws, Transport<T>& transport, OptimizerSettings optimizer,
                 int device = 0);
  ~CudaTaskRunner() override;

  void run(TaskIndex task) override;
  Transport<T>& transport() override { return transport_; }
  std::uint64_t bytes_sent() const override { return bytes_.load(); }
  void upload(BufferIndex buffer) override;
  void download(BufferIndex buffer) override;
  void upload_labels() override;
  std::string backend_name() const override { return "cuda-cublas"; }

 private:
  struct Scratch {                     // per task: what its kernels need beyond the Plan's buffers
    DeviceArray<T> values;             // tanh' output, pool recompute, softmax probabilities
    DeviceArray<T> scalar;             // loss_bwd's unused mean loss
    DeviceArray<std::int64_t> argmax;  // max pooling
  };

  CudaBackend& stream_of(const Task& t);
  T* buf(BufferIndex b) { return arrays_[b].data(); }
  std::int64_t elems(BufferIndex b) const { return arrays_[b].size(); }
  void allocate_scratch(TaskIndex index);
  void run_kernel(TaskIndex index, CudaBackend& s);
  void run_linear(const Task& t, CudaBackend& s);
  void run_conv(const Task& t, CudaBackend& s);
  void run_activation(TaskIndex index, CudaBackend& s);
  void run_pool(TaskIndex index, CudaBackend& s);
  void run_loss(TaskIndex index, CudaBackend& s);
  void run_optimizer(const Task& t, CudaBackend& s);
  void send(TaskIndex index, CudaBackend& s);
  void recv(TaskIndex index, CudaBackend& s);
  void allreduce(const Task& t, CudaBackend& s);  // also a reduce_scatter (every rank gets the sum)
  void allgather(const Task& t, CudaBackend& s);
  void host_copy(const Task& t);                    // offload: d2h downloads, h2d uploads
  void run_host_optimizer(const OptimizerWork& w);  // offload: the step on the CPU
  void copy(CudaBackend& s, T* dst, const T* src, std::int64_t n);

  const Plan& plan_;
  Workspace<T>& ws_;
  Transport<T>& transport_;
  OptimizerSettings optimizer_;
  int device_;
  std::vector<std::unique_ptr<CudaBackend>> streams_;  // worker * 2 + (comm ? 1 : 0)
  std::vector<DeviceArray<T>> arrays_;                 // per buffer
  std::vector<Scratch> scratch_;                       // per task
  std::vector<DeviceArray<T>> staged_;                 // per send task
  std::map<std::pair<std::int64_t, std::int64_t>, DeviceArray<std::int32_t>> labels_;
  std::atomic<std::uint64_t> bytes_{0};
};

// A Trainer's executor on `device`: `Trainer(plan, cuda_executor<T>(0), config)`.
template <typename T>
ExecutorFactory<T> cuda_executor(int device = 0);

extern template class CudaTaskRunner<float>;
extern template class CudaTaskRunner<double>;

}  // namespace strata::real
