#include "strata/real/transport/thread_transport.hpp"

#include <algorithm>

#include "strata/real/core/grad_codec.hpp"
#include "strata/real/core/int8_codec.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {

TaskIndex matching_send(const Plan& plan, const Task& recv) {
  for (TaskIndex d : recv.data_deps) {
    const Task& s = plan.task(d);
    if (s.kind == TaskKind::send && s.worker == recv.peer && s.peer == recv.worker) return d;
  }
  STRATA_ASSERT(false, "recv " + recv.id + " has no matching send among its data dependencies");
  return 0;
}

template <typename T>
void ThreadTransport<T>::send(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  STRATA_ASSERT(t.reads.size() == 1, "send " + t.id + " must read one buffer");
  const T* src = ws.data(t.reads[0]);
  if (const double step = int8_encoding(t); step > 0) {
    std::vector<std::int8_t> codes(static_cast<std::size_t>(ws.size(t.reads[0])));
    quantize_into(src, ws.size(t.reads[0]), QuantGrid{step}, codes.data());
    bytes_ += codes.size();
    std::lock_guard<std::mutex> lock(mutex_);
    codes_[task] = std::move(codes);
    return;
  }
  std::vector<T> payload(src, src + ws.size(t.reads[0]));
  bytes_ += payload.size() * sizeof(T);
  std::lock_guard<std::mutex> lock(mutex_);
  staged_[task] = std::move(payload);
}

template <typename T>
void ThreadTransport<T>::recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  STRATA_ASSERT(t.writes.size() == 1, "recv " + t.id + " must write one buffer");
  const TaskIndex from = matching_send(plan, t);
  if (const double step = int8_encoding(plan.task(from)); step > 0) {
    std::vector<std::int8_t> codes;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = codes_.find(from);
      STRATA_ASSERT(it != codes_.end(), "recv " + t.id + " ran before its send");
      codes = std::move(it->second);
      codes_.erase(it);
    }
    STRATA_ASSERT(static_cast<std::int64_t>(codes.size()) == ws.size(t.writes[0]),
                  "recv " + t.id + ": payload size differs from the receiving buffer");
    dequantize_into(codes.data(), ws.size(t.writes[0]), QuantGrid{step}, ws.data(t.writes[0]));
    return;
  }
  std::vector<T> payload;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = staged_.find(from);
    STRATA_ASSERT(it != staged_.end(), "recv " + t.id + " ran before its send");
    payload = std::move(it->second);
    staged_.erase(it);
  }
  STRATA_ASSERT(static_cast<std::int64_t>(payload.size()) == ws.size(t.writes[0]),
                "recv " + t.id + ": payload size differs from the receiving buffer");
  std::copy(payload.begin(), payload.end(), ws.data(t.writes[0]));
}

template <typename T>
void ThreadTransport<T>::ring(TaskKind kind, std::vector<std::vector<T>>& data) {
  const std::size_t n = data.size(), size = data[0].size();
  for (std::size_t step = 0; runs_reduce_scatter(kind) && step + 1 < n; ++step)  // reduce-scatter
    for (std::size_t r = 0; r < n; ++r) {
      const RingChunk c = ring_chunk(reduce_scatter_chunk(r, step, n), size, n);
      auto& to = data[(r + 1) % n];
      for (std::size_t i = c.begin; i < c.end; ++i) to[i] += data[r][i];
      bytes_ += (c.end - c.begin) * sizeof(T);
    }
  for (std::size_t step = 0; runs_allgather(kind) && step + 1 < n; ++step)  // allgather
    for (std::size_t r = 0; r < n; ++r) {
      const RingChunk c = ring_chunk(allgather_chunk(r, step, n), size, n);
      std::copy(data[r].begin() + static_cast<std::ptrdiff_t>(c.begin),
                data[r].begin() + static_cast<std::ptrdiff_t>(c.end),
                data[(r + 1) % n].begin() + static_cast<std::ptrdiff_t>(c.begin));
      bytes_ += (c.end - c.begin) * sizeof(T);
    }
}

// The same ring with every message sent as codes (grad_codec.hpp): a reduce-scatter message is
// the sender's partial sum encoded, decoded by the receiver before it adds; the owner of each
// reduced chunk encodes it once and the allgather forwards those bytes, so every rank ends with
// the same values.
template <typename T>
void ThreadTransport<T>::compressed_ring(std::vector<std::vector<T>>& data, ByteCodec codec) {
  const std::size_t n = data.size(), size = data[0].size();
  std::vector<std::uint8_t> message;
  std::vector<T> decoded;
  for (std::size_t step = 0; step + 1 < n; ++step)
    for (std::size_t r = 0; r < n; ++r) {
      const RingChunk c = ring_chunk(reduce_scatter_chunk(r, step, n), size, n);
      message.clear();
      encode_message(data[r].data() + c.begin, c.end - c.begin, codec, message);
      decoded.resize(c.end - c.begin);
      decode_message(message.data(), decoded.size(), codec, decoded.data());
      auto& to = data[(r + 1) % n];
      for (std::size_t i = c.begin; i < c.end; ++i) to[i] += decoded[i - c.begin];
      bytes_ += message.size();
    }
  std::vector<std::vector<std::uint8_t>> reduced(n);  // per chunk: its owner's message
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t chunk = owned_chunk(r, n);
    const RingChunk c = ring_chunk(chunk, size, n);
    encode_message(data[r].data() + c.begin, c.end - c.begin, codec, reduced[chunk]);
    decode_message(reduced[chunk].data(), c.end - c.begin, codec, data[r].data() + c.begin);
  }
  for (std::size_t step = 0; step + 1 < n; ++step)
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t chunk = allgather_chunk(r, step, n);
      const RingChunk c = ring_chunk(chunk, size, n);
      decode_message(reduced[chunk].data(), c.end - c.begin, codec, data[(r + 1) % n].data() + c.begin);
      bytes_ += reduced[chunk].size();
    }
}

template <typename T>
void ThreadTransport<T>::collective(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  const std::size_t n = t.group.size();
  if (per_buffer(t)) {  // ZeRO-2, -3: one ring per layer, between unsharded buffers and shards
    const std::vector<std::vector<BufferPair>> pairs = buffer_pairs_by_rank(plan, t);
    std::vector<std::vector<T>> data(n);
    for (std::size_t i = 0; i < pairs[0].size(); ++i) {
      for (std::size_t r = 0; r < n; ++r) data[r] = per_buffer_ring_input(t.kind, pairs[r][i], r, n, ws);
      ring(t.kind, data);
      for (std::size_t r = 0; r < n; ++r) per_buffer_ring_output(t.kind, pairs[r][i], r, n, data[r], ws);
    }
    return;
  }
  // Each rank's part of the bucket: its buffers among the task's reads, in order, gathered.
  const std::vector<std::vector<BufferIndex>> parts = buffers_by_rank(plan, t);
  std::vector<std::vector<T>> data(n);
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t elems = 0;
    for (BufferIndex b : parts[r]) elems += static_cast<std::size_t>(ws.size(b));
    data[r].reserve(elems);  // one allocation: the bucket can be megabytes
    for (BufferIndex b : parts[r]) data[r].insert(data[r].end(), ws.data(b), ws.data(b) + ws.size(b));
  }
  ByteCodec codec{};
  if (parse_byte_codec(t.attr_string("compression").value_or(""), codec))
    compressed_ring(data, codec);
  else
    ring(t.kind, data);
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t offset = 0;
    for (BufferIndex b : parts[r]) {
      std::copy(data[r].begin() + static_cast<std::ptrdiff_t>(offset),
                data[r].begin() + static_cast<std::ptrdiff_t>(offset + static_cast<std::size_t>(ws.size(b))),
                ws.data(b));
      offset += static_cast<std::size_t>(ws.size(b));
    }
  }
}

template class ThreadTransport<float>;
template class ThreadTransport<double>;

}  // namespace strata::real
