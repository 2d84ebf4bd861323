// Trainer<T>: trains a model on Fashion-MNIST by running its Plan for real, batch after batch.
//
// Images: a Plan whose input is a larger square than the data's (lenet5 or a CIFAR ResNet at
// image=32) gets each image padded to it, centred; with TrainConfig::augment = crop_flip each
// training image is then shifted and flipped (augment.hpp), from a generator seeded by the seed,
// so a run is reproducible.
//
// The Plan (one iteration, global batch B, dp data-parallel ranks, M microbatches of m samples)
// is run once per batch. Before each run the batch's samples are bound to the Plan's input
// buffers: rank r's microbatch j gets samples [r·B/dp + j·m, … + m) of the batch, and its labels
// go to the loss tasks of (r, j). Weights are He-initialised from the seed (biases zero), the
// same way on every rank, so data-parallel replicas start equal. An epoch is the whole training
// set in a seeded order (EpochBatches); a last partial batch is dropped.
//
// Test accuracy runs the Plan's forward tasks only (forward kernels and forward transfers, in
// topological order, one thread) on the test set, reading the logits each loss task would read:
// evaluation goes through the same buffers and kernels as training. A last partial test batch is
// padded by repeating its first sample and the padding is not counted.
//
// Over MPI (a transport that spreads the workers over processes) every process builds the same
// Trainer and calls the same methods in the same order, as with any collective. Each process
// holds a full-size Workspace (every worker's buffers, allocated and zeroed, though it touches
// only its own workers': memory grows with the process count; fine for the models the real
// executor trains) and binds every sample, so the arrays of its own workers are right. The
// loss, the test accuracy and the bytes sent are summed over the processes, and the timings of
// a run are merged (each process times its own tasks), so every process gets the whole figures.
// The test pass runs each process's own forward tasks in the one topological order of the Plan,
// a recv waiting for its payload: no deadlock, since sends never wait (MpiTransport receives
// eagerly) and a cycle of waiting recvs would contradict that order.
//
// Executor: the tasks run on what an ExecutorFactory builds — TaskRunner on the CPU (the Backend
// constructors), or a device executor (real_exec/cuda's CudaTaskRunner) that keeps the buffers in
// its own memory; the Trainer then uploads inputs, labels and initial weights and downloads the
// losses and logits it reads (TaskExecutor's copy calls, no-ops on the CPU).
//
// Ownership: the Trainer owns the Workspace, runner and interpreter of the Plan, and the
// ThreadTransport when it is given none; a transport passed in outlives the Trainer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "strata/real/core/backend.hpp"
#include "strata/real/data/augment.hpp"
#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/exec/buffer_lifetimes.hpp"
#include "strata/real/exec/plan_execution.hpp"
#include "strata/real/train/plan_trainer.hpp"
#include "strata/real/transport/thread_transport.hpp"

namespace strata::real {

struct TrainConfig {
  std::uint64_t seed = 0;
  OptimizerSettings optimizer;
  bool pin_workers = true;
  WeightInit init = WeightInit::he_normal;
  double cpu_share = 1;  // each worker's share of its core (Interpreter::set_cpu_share)
  // Give a run's activations back as soon as it is done with them (the measured peak memory);
  // false keeps every buffer after a run, for inspecting a run's intermediate values.
  bool release_buffers = true;
  // Training images shifted and flipped (augment.hpp); images smaller than the Plan's square
  // input are padded to it whatever this says.
  Augment augment = Augment::none;
};

struct EpochResult {
  std::int64_t epoch = 0;    // 1-based
  double train_loss = 0;     // mean over the epoch's batches
  double test_accuracy = 0;  // fraction in [0, 1]
  double train_seconds = 0;  // s, wall time of the epoch's Plan runs
  double samples_per_second = 0;
};

template <typename T>
class Trainer {
 public:
  // REQUIRES: plan validated, one iteration, a backprop Plan of a model without a graph;
  // check_kernels passes (thrown otherwise). Samples bound later must have the Plan's input
  // width (info.input_elements, e.g. 784 pixels; thrown otherwise). `backend` outlives the Trainer.
  // Workers are threads of this process (ThreadTransport).
  Trainer(const Plan& plan, Backend& backend, const TrainConfig& config);
  // Workers as `transport` places them (e.g. MpiTransport: one per process).
  Trainer(const Plan& plan, Backend& backend, const TrainConfig& config, Transport<T>& transport);
  // Tasks run by what `executor` builds (a GPU executor, say); workers are threads of this process.
  Trainer(const Plan& plan, const ExecutorFactory<T>& executor, const TrainConfig& config);
  Trainer(const Plan& plan, const ExecutorFactory<T>& executor, const TrainConfig& config,
          Transport<T>& transport);
  ~Trainer();

  // Binds `indices` (B of them) of `data`, runs the Plan once; returns the batch's mean loss.
  // With `timings` (every process passing one, or none), the timing of every task of the run.
  double train_batch(const LabelledImages& data, const std::vector<std::int64_t>& indices,
                     std::vector<TaskTiming>* timings = nullptr);
  // One epoch over `train`, then test accuracy on `test`. `progress(batch, batches)` is called
  // after every batch when set.
  EpochResult train_epoch(std::int64_t epoch, const LabelledImages& train, const LabelledImages& test,
                          const std::function<void(std::int64_t, std::int64_t)>& progress = {});
  double test_accuracy(const LabelledImages& test);

  // The Plan's buffers, brought up to date from the executor's memory first (a GPU's).
  Workspace<T>& workspace();
  // The name of the kernels' backend ("cpu-openblas", "cuda-cublas").
  std::string backend_name() const { return runner_->backend_name(); }
  // Payload bytes moved between workers so far, by all processes (a collective under MPI).
  std::uint64_t bytes_sent() const;
  // The most bytes of buffer arrays each worker held during the training runs so far (the
  // Workspace's allocator figures in release mode, workspace.hpp); the test passes' forward runs
  // are not counted. Collective under MPI (each process knows its own workers).
  std::vector<std::int64_t> peak_memory_per_worker() const;
  std::int64_t global_batch() const { return global_batch_; }
  Transport<T>& transport() { return *transport_; }
  const Plan& plan() const { return plan_; }
  // Carries on where `from` stopped: every persistent buffer of this Trainer's Plan (weights,
  // optimizer state with its step count, a solver's per-sample stores) takes the contents of
  // `from`'s buffer of the same id. For two Plans of one model on the same workers (the
  // serial-parallel hybrid's warm-up Plan and its own); a persistent buffer `from` lacks, or of
  // another size, throws InputError naming it. CPU executors (a device's copy is not uploaded).
  void continue_from(Trainer& from);

 private:
  struct Slot {  // one (dp rank, microbatch)
    std::int64_t dp = 0;
    std::int64_t mb = 0;
    BufferIndex input = 0;
    BufferIndex logits = 0;
    BufferIndex loss = 0;
    bool local = true;  // its loss task runs in this process
    // Its forward is a pass of the model, which evaluation can run (not a serial-parallel
    // minibatch of the parallel phase, whose blocks start from stored states).
    bool evaluates = true;
  };
  void set_up(const ExecutorFactory<T>& executor);  // after transport_ is set
  void initialise_weights(std::uint64_t seed);
  // `train`: a training batch, augmented as config_.augment says; test batches never are.
  void bind(const LabelledImages& data, const std::vector<std::int64_t>& indices, bool train);

  const Plan& plan_;
  TrainConfig config_;
  std::unique_ptr<Workspace<T>> ws_;
  std::unique_ptr<ThreadTransport<T>> own_transport_;  // when none is given
  Transport<T>* transport_ = nullptr;
  std::unique_ptr<TaskExecutor<T>> runner_;
  std::unique_ptr<Interpreter<T>> interpreter_;
  std::unique_ptr<BufferLifetimes<T>> lifetimes_;
  std::vector<std::int64_t> peaks_;  // per worker, over the training runs
  std::vector<Slot> slots_;
  std::vector<TaskIndex> forward_order_;  // local forward tasks in topological order
  std::int64_t global_batch_ = 0;
  std::int64_t dp_ = 1;
  std::int64_t micro_ = 0;       // samples per microbatch
  std::mt19937_64 augment_rng_;  // crop-flip draws, seeded from config_.seed
};

extern template class Trainer<float>;
extern template class Trainer<double>;

}  // namespace strata::real
