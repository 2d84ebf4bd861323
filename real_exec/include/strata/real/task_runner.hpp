// TaskRunner<T>: runs one Plan task for real — the kernel its kind names, on the buffers it
// reads and writes — and Transport<T>, which carries the communication tasks.
//
// What each kind means to the real executor (the Plan's buffers are the operands, in the order
// the strategies write them, docs/plan-format.md):
// - linear_fwd      reads [X, W]        writes [Y]       attrs m, k, n (W holds k·n + n bias)
// - linear_bwd_data reads [dY, X, W]    writes [dX]
// - linear_bwd_weight reads [dY, X]     writes [dW]      adds into dW (microbatches accumulate)
// - conv_*          as linear, attrs n, c_in, c_out, h_in, w_in, kh, kw, pad, stride
// - activation_fwd/bwd  attr fn relu | tanh; bwd reads [dY, X]
// - pool_fwd/bwd    attr fn max, 2×2 stride 2; bwd reads [dY, X]
// - loss_fwd        reads [logits] writes [loss]: softmax cross-entropy on the labels bound to
//                   the task's (dp, mb); loss[0] = the microbatch's mean loss
// - loss_bwd        reads [logits] writes [dlogits] = (softmax − onehot) / global batch, so that
//                   summing over microbatches and data-parallel ranks gives the mean gradient
// - grad_accumulate reads [src, dst] writes [dst]: dst += src
// - optimizer_step  reads [dW…, state] writes [W…, state]: sgd (momentum) or adam over the
//                   concatenated parameters, then zeroes the dW (PyTorch's zero_grad)
// - send / recv / allreduce: Transport (allreduce sums: gradients are already scaled).
// Any other kind has no kernel: check_kernels() refuses the Plan before anything runs.
//
// Thread safety: run() may be called concurrently for tasks the Plan lets run concurrently
// (they touch different buffers); the runner holds no mutable state besides the Workspace's.
#pragma once

#include <cstdint>
#include <string>

#include "strata/real/backend.hpp"
#include "strata/real/kernels.hpp"
#include "strata/real/workspace.hpp"
#include "strata/traces/plan.hpp"

namespace strata::real {

// Throws InputError naming `source`, the first task whose kind (or attribute: fn, optimizer,
// pool size) has no real kernel, and the kinds that do.
void check_kernels(const Plan& plan, const std::string& source);

struct OptimizerSettings {
  double learning_rate = 1e-3;  // Adam's default; SGD runs usually set 0.01–0.1
  double momentum = 0.0;        // SGD only
  AdamConfig adam;              // betas and eps (learning_rate above wins)
};

// Moves tensors between workers. Implementations: in-process threads (this header's
// ThreadTransport), MPI processes (later).
template <typename T>
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void send(const Plan& plan, TaskIndex task, Workspace<T>& ws) = 0;
  virtual void recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) = 0;
  virtual void allreduce(const Plan& plan, TaskIndex task, Workspace<T>& ws) = 0;
  virtual std::uint64_t bytes_sent() const = 0;  // payload bytes really moved, all workers
  virtual std::string name() const = 0;
};

template <typename T>
class TaskRunner {
 public:
  // REQUIRES: check_kernels(plan) passed; everything outlives the runner.
  TaskRunner(const Plan& plan, Backend& backend, Workspace<T>& ws, Transport<T>& transport,
             OptimizerSettings optimizer);

  void run(TaskIndex task);

 private:
  void run_linear(const Task& t);
  void run_conv(const Task& t);
  void run_activation(const Task& t);
  void run_pool(const Task& t);
  void run_loss(const Task& t);
  void run_optimizer(const Task& t);

  T* buf(BufferIndex b) { return ws_.data(b); }
  std::int64_t elems(BufferIndex b) const { return ws_.size(b); }

  const Plan& plan_;
  Backend& backend_;
  Workspace<T>& ws_;
  Transport<T>& transport_;
  OptimizerSettings optimizer_;
};

extern template class TaskRunner<float>;
extern template class TaskRunner<double>;

}  // namespace strata::real
