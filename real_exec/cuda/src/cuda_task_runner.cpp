// CudaTaskRunner<T>: TaskRunner's kernels on the GPU (the table of kinds is task_runner.hpp's;
// the streams, copies and counting are described in cuda_task_runner.hpp).
#include "strata/real/cuda_task_runner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <exception>
#include <string>

#include "cuda_error.hpp"
#include "strata/real/cuda_kernels.hpp"
#include "strata/real/kernels/kernels.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using cuda_detail::check_cuda;

std::int64_t attr(const Task& t, const std::string& key) {
  auto v = t.attr_int(key);
  STRATA_ASSERT(v.has_value(), "task " + t.id + " lacks integer attribute '" + key + "'");
  return *v;
}

bool is_relu(const Task& t) { return t.attr_string("fn").value_or("") == "relu"; }

}  // namespace

template <typename T>
CudaTaskRunner<T>::CudaTaskRunner(const Plan& plan, Workspace<T>& ws, Transport<T>& transport,
                                  OptimizerSettings optimizer, int device)
    : plan_(plan), ws_(ws), transport_(transport), optimizer_(optimizer), device_(device) {
  const int workers = std::max(1, plan.num_workers());
  for (int i = 0; i < 2 * workers; ++i) streams_.push_back(std::make_unique<CudaBackend>(device));
  streams_[0]->activate();  // the device the arrays below are allocated on
  arrays_.reserve(plan.buffers().size());
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    arrays_.emplace_back(ws.size(b));
    arrays_.back().zero();
  }
  scratch_.resize(plan.size());
  staged_.resize(plan.size());
  for (TaskIndex i = 0; i < plan.size(); ++i) allocate_scratch(i);
}

template <typename T>
CudaTaskRunner<T>::~CudaTaskRunner() {
  // Wait for every stream before the arrays they may still use are freed (cudaFree waits for
  // the device too, but a stream's own error would otherwise go unnoticed; it is dropped here).
  for (auto& s : streams_) {
    try {
      cudaStreamSynchronize(s->activate());
    } catch (const std::exception&) {  // a destructor cannot report it; cudaFree waits anyway
    }
  }
}

template <typename T>
void CudaTaskRunner<T>::allocate_scratch(TaskIndex index) {
  const Task& t = plan_.task(index);
  Scratch& s = scratch_[index];
  switch (t.kind) {
    case TaskKind::activation_bwd:
      if (!is_relu(t) && !reads_activation_output(t)) s.values = DeviceArray<T>(elems(t.writes[0]));
      break;
    case TaskKind::pool_fwd:
      s.argmax = DeviceArray<std::int64_t>(elems(t.writes[0]));
      break;
    case TaskKind::pool_bwd:
      s.values = DeviceArray<T>(elems(t.reads[0]));
      s.argmax = DeviceArray<std::int64_t>(elems(t.reads[0]));
      break;
    case TaskKind::loss_fwd:
    case TaskKind::loss_bwd:
      s.values = DeviceArray<T>(elems(t.reads[0]));
      s.scalar = DeviceArray<T>(1);
      break;
    case TaskKind::send:
      STRATA_ASSERT(t.reads.size() == 1, "send " + t.id + " must read one buffer");
      staged_[index] = DeviceArray<T>(elems(t.reads[0]));
      break;
    default:
      break;
  }
}

template <typename T>
CudaBackend& CudaTaskRunner<T>::stream_of(const Task& t) {
  const WorkerId worker = t.worker >= 0 ? t.worker : t.group.at(0);
  return *streams_[static_cast<std::size_t>(worker) * 2 + (t.stream == Stream::comm ? 1 : 0)];
}

template <typename T>
void CudaTaskRunner<T>::run(TaskIndex index) {
  const Task& t = plan_.task(index);
  if (t.kind == TaskKind::fixed) return run_fixed_task(t);
  CudaBackend& s = stream_of(t);
  run_kernel(index, s);
  s.synchronize();
}

template <typename T>
void CudaTaskRunner<T>::run_kernel(TaskIndex index, CudaBackend& s) {
  const Task& t = plan_.task(index);
  switch (t.kind) {
    case TaskKind::linear_fwd:
    case TaskKind::linear_bwd_data:
    case TaskKind::linear_bwd_weight:
      return run_linear(t, s);
    case TaskKind::conv_fwd:
    case TaskKind::conv_bwd_data:
    case TaskKind::conv_bwd_weight:
      return run_conv(t, s);
    case TaskKind::activation_fwd:
    case TaskKind::activation_bwd:
      return run_activation(index, s);
    case TaskKind::pool_fwd:
    case TaskKind::pool_bwd:
      return run_pool(index, s);
    case TaskKind::loss_fwd:
    case TaskKind::loss_bwd:
      return run_loss(index, s);
    case TaskKind::grad_accumulate:
      return gpu::accumulate(s, elems(t.writes[0]), buf(t.reads[0]), buf(t.writes[0]));
    case TaskKind::optimizer_step:
      return run_optimizer(t, s);
    case TaskKind::host_copy:
      return host_copy(t);
    case TaskKind::send:
      return send(index, s);
    case TaskKind::recv:
      return recv(index, s);
    case TaskKind::allreduce:
    case TaskKind::reduce_scatter:
      return allreduce(t, s);
    case TaskKind::allgather:
      return allgather(t, s);
    default:
      STRATA_ASSERT(false, "task " + t.id + ": no kernel (check_kernels was not called)");
  }
}

template <typename T>
void CudaTaskRunner<T>::run_linear(const Task& t, CudaBackend& s) {
  const LinearShape shape{attr(t, "m"), attr(t, "k"), attr(t, "n")};
  const std::int64_t weights = shape.in_features * shape.out_features;
  if (t.kind == TaskKind::linear_fwd) {
    const T* w = buf(t.reads[1]);
    gpu::linear_forward(s, shape, buf(t.reads[0]), w, w + weights, buf(t.writes[0]));
  } else if (t.kind == TaskKind::linear_bwd_data) {
    gpu::linear_backward_data(s, shape, buf(t.reads[0]), buf(t.reads[2]), buf(t.writes[0]), false);
  } else {
    T* dw = buf(t.writes[0]);
    gpu::linear_backward_weight(s, shape, buf(t.reads[1]), buf(t.reads[0]), dw, dw + weights, true);
  }
}

template <typename T>
void CudaTaskRunner<T>::run_conv(const Task& t, CudaBackend& s) {
  const Conv2dShape shape = conv_shape(t);
  if (t.kind == TaskKind::conv_fwd) {
    const T* w = buf(t.reads[1]);
    gpu::conv2d_forward(s, shape, buf(t.reads[0]), w, w + shape.weight_size(), buf(t.writes[0]));
  } else if (t.kind == TaskKind::conv_bwd_data) {
    gpu::conv2d_backward_data(s, shape, buf(t.reads[0]), buf(t.reads[2]), buf(t.writes[0]), false);
  } else {
    T* dw = buf(t.writes[0]);
    gpu::conv2d_backward_weight(s, shape, buf(t.reads[1]), buf(t.reads[0]), dw, dw + shape.weight_size(),
                                true);
  }
}

template <typename T>
void CudaTaskRunner<T>::run_activation(TaskIndex index, CudaBackend& s) {
  const Task& t = plan_.task(index);
  const std::int64_t n = elems(t.writes[0]);
  if (t.kind == TaskKind::activation_fwd) {
    if (is_relu(t))
      gpu::relu_forward(s, n, buf(t.reads[0]), buf(t.writes[0]));
    else
      gpu::tanh_forward(s, n, buf(t.reads[0]), buf(t.writes[0]));
  } else if (is_relu(t)) {  // Y > 0 exactly where X > 0: either serves
    gpu::relu_backward(s, n, buf(t.reads[1]), buf(t.reads[0]), buf(t.writes[0]));
  } else if (reads_activation_output(t)) {
    gpu::tanh_backward(s, n, buf(t.reads[1]), buf(t.reads[0]), buf(t.writes[0]));
  } else {
    T* y = scratch_[index].values.data();  // the Plan keeps X; tanh' needs Y
    gpu::tanh_forward(s, n, buf(t.reads[1]), y);
    gpu::tanh_backward(s, n, y, buf(t.reads[0]), buf(t.writes[0]));
  }
}

template <typename T>
void CudaTaskRunner<T>::run_pool(TaskIndex index, CudaBackend& s) {
  const Task& t = plan_.task(index);
  const BufferIndex x = t.kind == TaskKind::pool_fwd ? t.reads[0] : t.reads[1];
  const Pool2dShape shape = pool_shape(t, elems(x));
  Scratch& scratch = scratch_[index];
  if (t.kind == TaskKind::pool_fwd) {
    gpu::maxpool2x2_forward(s, shape, buf(x), buf(t.writes[0]), scratch.argmax.data());
    return;
  }
  gpu::maxpool2x2_forward(s, shape, buf(x), scratch.values.data(),
                          scratch.argmax.data());  // recompute the argmax
  gpu::maxpool2x2_backward(s, shape, buf(t.reads[0]), scratch.argmax.data(), buf(t.writes[0]));
}

template <typename T>
void CudaTaskRunner<T>::run_loss(TaskIndex index, CudaBackend& s) {
  const Task& t = plan_.task(index);
  const std::int64_t classes = attr(t, "classes");
  const BufferIndex logits = t.reads[0];
  const std::int64_t batch = elems(logits) / classes;
  const auto key = std::make_pair(std::int64_t{t.coords.dp}, std::max<std::int64_t>(0, t.coords.mb));
  auto labels = labels_.find(key);
  STRATA_ASSERT(labels != labels_.end() && labels->second.size() == batch,
                "task " + t.id + ": no labels of its batch were uploaded");
  Scratch& scratch = scratch_[index];
  T* loss = t.kind == TaskKind::loss_fwd ? buf(t.writes[0]) : scratch.scalar.data();
  gpu::softmax_cross_entropy_forward(s, batch, classes, buf(logits), labels->second.data(),
                                     scratch.values.data(), loss);
  if (t.kind == TaskKind::loss_fwd) return;
  gpu::softmax_cross_entropy_backward(s, batch, classes, scratch.values.data(), labels->second.data(),
                                      loss_divisor(plan_, t, batch), buf(t.writes[0]));
}

template <typename T>
void CudaTaskRunner<T>::run_optimizer(const Task& t, CudaBackend& s) {
  // The host Workspace has every buffer's size and the step counters; the values are here.
  const OptimizerWork w = optimizer_work(plan_, t, ws_, optimizer_);
  if (w.on_host) return run_host_optimizer(w);
  T* state = buf(w.state);
  if (w.fresh_state) gpu::zero(s, elems(w.state), state);
  for (const OptimizerSlice& slice : w.slices) {
    T* grad = buf(slice.grad) + slice.begin;
    T* weight = buf(slice.weight) + slice.weight_begin;
    if (w.adam)
      gpu::adam_step(s, w.adam_config, w.step, slice.elements, grad, state + slice.first,
                     state + slice.second, weight);
    else
      gpu::sgd_momentum_step(s, w.sgd_config, slice.elements, grad, state + slice.first, weight);
  }
  for (BufferIndex g : w.grads) gpu::zero(s, elems(g), buf(g));
}

// Offload: the d2h copy brings the gradients into the host Workspace, the step runs there with
// the CPU kernels on the host copies of the state and the weights (the host holds this rank's
// shard of the weights current: only its owner steps a shard), and the h2d copy sends the
// weights back; the all-gather that follows overwrites what is not this rank's.
template <typename T>
void CudaTaskRunner<T>::host_copy(const Task& t) {
  const bool to_host = t.attr_int("to_host").value_or(0) != 0;
  for (BufferIndex b : to_host ? t.reads : t.writes) {
    if (to_host)
      download(b);
    else
      upload(b);
  }
}

template <typename T>
void CudaTaskRunner<T>::run_host_optimizer(const OptimizerWork& w) {
  T* state = ws_.data(w.state);
  if (w.fresh_state) std::fill(state, state + ws_.size(w.state), T{0});
  for (const OptimizerSlice& slice : w.slices) {
    T* grad = ws_.data(slice.grad) + slice.begin;
    T* weight = ws_.data(slice.weight) + slice.weight_begin;
    if (w.adam)
      adam_step(w.adam_config, w.step, slice.elements, grad, state + slice.first, state + slice.second,
                weight);
    else
      sgd_momentum_step(w.sgd_config, slice.elements, grad, state + slice.first, weight);
  }
  for (BufferIndex g : w.grads) arrays_[g].zero();  // the device's gradients, for the next iteration
}

template <typename T>
void CudaTaskRunner<T>::copy(CudaBackend& s, T* dst, const T* src, std::int64_t n) {
  if (n == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDeviceToDevice,
                             s.activate()),
             "cudaMemcpyAsync(device to device, " + std::to_string(n * static_cast<std::int64_t>(sizeof(T))) +
                 " bytes)");
}

template <typename T>
void CudaTaskRunner<T>::send(TaskIndex index, CudaBackend& s) {
  const Task& t = plan_.task(index);
  const std::int64_t n = elems(t.reads[0]);
  copy(s, staged_[index].data(), buf(t.reads[0]), n);
  bytes_ += static_cast<std::uint64_t>(n) * sizeof(T);
}

template <typename T>
void CudaTaskRunner<T>::recv(TaskIndex index, CudaBackend& s) {
  const Task& t = plan_.task(index);
  STRATA_ASSERT(t.writes.size() == 1, "recv " + t.id + " must write one buffer");
  const DeviceArray<T>& payload = staged_[matching_send(plan_, t)];
  STRATA_ASSERT(payload.size() == elems(t.writes[0]),
                "recv " + t.id + ": payload size differs from the receiving buffer");
  copy(s, buf(t.writes[0]), payload.data(), payload.size());
}

template <typename T>
void CudaTaskRunner<T>::allreduce(const Task& t, CudaBackend& s) {
  const std::size_t n = t.group.size();
  const std::vector<std::vector<BufferIndex>> parts =
      buffers_by_rank(plan_, t);  // each rank's, checked alike
  std::int64_t size = 0;
  for (std::size_t j = 0; j < parts[0].size(); ++j) {
    const BufferIndex sum = parts[0][j];
    for (std::size_t r = 1; r < n; ++r) s.axpy(elems(sum), T{1}, buf(parts[r][j]), buf(sum));
    for (std::size_t r = 1; r < n; ++r) copy(s, buf(parts[r][j]), buf(sum), elems(sum));
    size += elems(sum);
  }
  // As a ring moves it: 2(n−1) chunks of size/n per rank (a reduce-scatter, half of that).
  bytes_ += (t.kind == TaskKind::allreduce ? 2 : 1) * (n - 1) * static_cast<std::uint64_t>(size) * sizeof(T);
}

template <typename T>
void CudaTaskRunner<T>::allgather(const Task& t, CudaBackend& s) {
  const std::size_t n = t.group.size();
  const std::vector<std::vector<BufferIndex>> parts =
      buffers_by_rank(plan_, t);  // each rank's, checked alike
  std::int64_t size = 0;
  for (BufferIndex b : parts[0]) size += elems(b);
  // Rank q's owned chunk of the concatenation (what its sharded step updated) to every other rank.
  for (std::size_t q = 0; q < n; ++q) {
    const RingChunk chunk = ring_chunk(owned_chunk(q, n), static_cast<std::size_t>(size), n);
    std::int64_t offset = 0;
    for (std::size_t j = 0; j < parts[q].size(); ++j) {
      const std::int64_t lo = std::max(offset, static_cast<std::int64_t>(chunk.begin));
      const std::int64_t hi = std::min(offset + elems(parts[q][j]), static_cast<std::int64_t>(chunk.end));
      for (std::size_t r = 0; r < n && hi > lo; ++r)
        if (r != q) copy(s, buf(parts[r][j]) + (lo - offset), buf(parts[q][j]) + (lo - offset), hi - lo);
      offset += elems(parts[q][j]);
    }
  }
  bytes_ += (n - 1) * static_cast<std::uint64_t>(size) * sizeof(T);
}

template <typename T>
void CudaTaskRunner<T>::upload(BufferIndex buffer) {
  arrays_[buffer].upload(ws_.data(buffer), ws_.size(buffer));
}

template <typename T>
void CudaTaskRunner<T>::download(BufferIndex buffer) {
  arrays_[buffer].download(ws_.data(buffer), ws_.size(buffer));
}

template <typename T>
void CudaTaskRunner<T>::upload_labels() {
  for (const auto& key : ws_.label_keys()) {
    const std::vector<std::int32_t>& host = ws_.labels(key.first, key.second);
    auto it = labels_.find(key);
    if (it == labels_.end() || it->second.size() != static_cast<std::int64_t>(host.size()))
      it = labels_.insert_or_assign(key, DeviceArray<std::int32_t>(static_cast<std::int64_t>(host.size())))
               .first;
    it->second.upload(host);
  }
}

template <typename T>
ExecutorFactory<T> cuda_executor(int device) {
  return [device](const Plan& plan, Workspace<T>& ws, Transport<T>& transport,
                  const OptimizerSettings& optimizer) {
    return std::unique_ptr<TaskExecutor<T>>(
        std::make_unique<CudaTaskRunner<T>>(plan, ws, transport, optimizer, device));
  };
}

template class CudaTaskRunner<float>;
template class CudaTaskRunner<double>;
template ExecutorFactory<float> cuda_executor<float>(int);
template ExecutorFactory<double> cuda_executor<double>(int);

}  // namespace strata::real
