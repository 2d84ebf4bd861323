#include "strata/real/transport/thread_transport.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <barrier>
#include <exception>
#include <thread>

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
ThreadTransport<T>::ThreadTransport() : affinity_(sizeof(cpu_set_t), 0) {
  auto* set = reinterpret_cast<cpu_set_t*>(affinity_.data());
  if (pthread_getaffinity_np(pthread_self(), sizeof(cpu_set_t), set) != 0) affinity_.clear();
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
    Held held(ws.meter(), t.peer, allocated_bytes(codes));
    std::lock_guard<std::mutex> lock(mutex_);
    codes_[task] = {std::move(codes), std::move(held)};
    return;
  }
  send_values(plan, task, std::vector<T>(src, src + ws.size(t.reads[0])), ws);
}

template <typename T>
void ThreadTransport<T>::send_values(const Plan& plan, TaskIndex task, std::vector<T> payload,
                                     Workspace<T>& ws) {
  bytes_ += payload.size() * sizeof(T);
  Held held(ws.meter(), plan.task(task).peer, allocated_bytes(payload));
  std::lock_guard<std::mutex> lock(mutex_);
  staged_[task] = {std::move(payload), std::move(held)};
}

template <typename T>
void ThreadTransport<T>::recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  STRATA_ASSERT(t.writes.size() == 1, "recv " + t.id + " must write one buffer");
  const TaskIndex from = matching_send(plan, t);
  if (const double step = int8_encoding(plan.task(from)); step > 0) {
    Staged<std::vector<std::int8_t>> staged;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = codes_.find(from);
      STRATA_ASSERT(it != codes_.end(), "recv " + t.id + " ran before its send");
      staged = std::move(it->second);
      codes_.erase(it);
    }
    const std::vector<std::int8_t>& codes = staged.payload;
    STRATA_ASSERT(static_cast<std::int64_t>(codes.size()) == ws.size(t.writes[0]),
                  "recv " + t.id + ": payload size differs from the receiving buffer");
    dequantize_into(codes.data(), ws.size(t.writes[0]), QuantGrid{step}, ws.data(t.writes[0]));
    return;
  }
  recv_values(plan, task, std::span<T>(ws.data(t.writes[0]), static_cast<std::size_t>(ws.size(t.writes[0]))),
              ws);
}

template <typename T>
void ThreadTransport<T>::recv_values(const Plan& plan, TaskIndex task, std::span<T> into,
                                     Workspace<T>& /*ws*/) {
  const Task& t = plan.task(task);
  const TaskIndex from = matching_send(plan, t);
  Staged<std::vector<T>> staged;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = staged_.find(from);
    STRATA_ASSERT(it != staged_.end(), "recv " + t.id + " ran before its send");
    staged = std::move(it->second);
    staged_.erase(it);
  }
  const std::vector<T>& payload = staged.payload;
  STRATA_ASSERT(payload.size() == into.size(),
                "recv " + t.id + ": payload size differs from the receiving buffer");
  std::copy(payload.begin(), payload.end(), into.begin());
}

template <typename T>
void ThreadTransport<T>::ring(TaskKind kind, const std::vector<RingPieces<T>>& data) {
  const std::size_t n = data.size(), size = ring_size(data[0]);
  // Rank r's chunk c into rank r+1's: the ranks' pieces have the same sizes (buffers_by_rank),
  // so a run of one lies within one piece of the other at the same offset.
  auto each = [&](std::size_t r, RingChunk c, auto&& f) {
    const RingPieces<T>& to = data[(r + 1) % n];
    std::size_t piece = 0, at = 0;
    for_each_run(data[r], c.begin, c.end, [&](T* src, std::size_t offset, std::size_t len) {
      const std::size_t begin = c.begin + offset;
      while (at + to[piece].size <= begin) at += to[piece++].size;
      f(src, to[piece].data + (begin - at), len);
    });
    bytes_ += (c.end - c.begin) * sizeof(T);
  };
  for (std::size_t step = 0; runs_reduce_scatter(kind) && step + 1 < n; ++step)  // reduce-scatter
    for (std::size_t r = 0; r < n; ++r)
      each(r, ring_chunk(reduce_scatter_chunk(r, step, n), size, n),
           [](const T* src, T* dst, std::size_t len) {
             for (std::size_t i = 0; i < len; ++i) dst[i] += src[i];
           });
  for (std::size_t step = 0; runs_allgather(kind) && step + 1 < n; ++step)  // allgather
    for (std::size_t r = 0; r < n; ++r)
      each(r, ring_chunk(allgather_chunk(r, step, n), size, n),
           [](const T* src, T* dst, std::size_t len) { std::copy(src, src + len, dst); });
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

// Each rank's bucket gathered into a copy (charged to it), exchanged through the store or the
// cache phase by phase (each phase's ranks in threads of their own), and copied back.
template <typename T>
void ThreadTransport<T>::through_store(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  const std::size_t n = t.group.size();
  const bool cache = is_cache_algo(t.algo);
  std::size_t round = 0;
  std::filesystem::path folder;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<TemporaryFolder>& held_folder = cache ? cache_folder_ : store_folder_;
    if (!held_folder)
      held_folder = std::make_unique<TemporaryFolder>(cache ? "strata-cache" : "strata-store",
                                                      cache ? Medium::memory : Medium::disk);
    folder = held_folder->path();
    round = rounds_[task]++;
  }
  FileObjectStore store(folder);
  const std::vector<std::vector<BufferIndex>> parts = buffers_by_rank(plan, t);
  std::vector<std::vector<T>> data(n);
  std::vector<Held> held;
  for (std::size_t r = 0; r < n; ++r) {
    for (BufferIndex b : parts[r]) data[r].insert(data[r].end(), ws.data(b), ws.data(b) + ws.size(b));
    held.emplace_back(ws.meter(), t.group[r], allocated_bytes(data[r]));
  }
  // Every phase's requests before any rank's next phase (a GET waits only for objects of an
  // earlier phase, so a rank that failed stops every rank at the next barrier).
  std::vector<std::exception_ptr> failed(n);
  std::atomic<bool> any_failed{false};
  std::barrier phases(static_cast<std::ptrdiff_t>(n));
  auto run_rank = [&](std::size_t r) {
    for (int phase = 1; phase <= 3; ++phase) {
      if (!any_failed.load()) try {
          bytes_ += storage_exchange_phase(store, t.algo, t.id, round, r, n, data[r], phase);
        } catch (...) {
          failed[r] = std::current_exception();
          any_failed = true;
        }
      phases.arrive_and_wait();
    }
  };
  {
    // The rank threads start with the process's cores, not this stream's one pinned core:
    // this thread takes the process's affinity while it creates them.
    cpu_set_t own;
    const bool widened = !affinity_.empty() &&
                         pthread_getaffinity_np(pthread_self(), sizeof own, &own) == 0 &&
                         pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t),
                                                reinterpret_cast<const cpu_set_t*>(affinity_.data())) == 0;
    std::vector<std::thread> others;
    others.reserve(n - 1);
    for (std::size_t r = 1; r < n; ++r) others.emplace_back(run_rank, r);
    if (widened) pthread_setaffinity_np(pthread_self(), sizeof own, &own);
    run_rank(0);
    for (std::thread& th : others) th.join();
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t offset = 0;
    for (BufferIndex b : parts[r]) {
      std::copy_n(data[r].begin() + static_cast<std::ptrdiff_t>(offset), ws.size(b), ws.data(b));
      offset += static_cast<std::size_t>(ws.size(b));
    }
  }
}

// Pushes into the server's slots, the server's sum in rank order, pulls back into the buckets.
template <typename T>
void ThreadTransport<T>::through_server(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  const std::size_t n = t.group.size();
  const std::vector<std::vector<BufferIndex>> parts = buffers_by_rank(plan, t);
  std::vector<std::vector<T>> slots(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (BufferIndex b : parts[r]) slots[r].insert(slots[r].end(), ws.data(b), ws.data(b) + ws.size(b));
    bytes_ += slots[r].size() * sizeof(T);
  }
  std::vector<T>& sum = slots[0];
  for (std::size_t r = 1; r < n; ++r) {
    STRATA_ASSERT(slots[r].size() == sum.size(), "parameter server: ranks push buckets of different sizes");
    for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += slots[r][e];
  }
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t offset = 0;
    for (BufferIndex b : parts[r]) {
      std::copy_n(sum.begin() + static_cast<std::ptrdiff_t>(offset), ws.size(b), ws.data(b));
      offset += static_cast<std::size_t>(ws.size(b));
    }
    bytes_ += sum.size() * sizeof(T);
  }
}

template <typename T>
void ThreadTransport<T>::collective(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  const std::size_t n = t.group.size();
  if (is_storage_algo(t.algo) || is_cache_algo(t.algo)) {
    through_store(plan, task, ws);
    return;
  }
  if (t.algo == CollectiveAlgo::parameter_server) {
    through_server(plan, task, ws);
    return;
  }
  if (per_buffer(t)) {  // ZeRO-2, -3: one ring per layer, between unsharded buffers and shards
    const std::vector<std::vector<BufferPair>> pairs = buffer_pairs_by_rank(plan, t);
    std::vector<RingPieces<T>> data(n);
    for (std::size_t i = 0; i < pairs[0].size(); ++i) {
      for (std::size_t r = 0; r < n; ++r) data[r] = per_buffer_ring_prepare(t.kind, pairs[r][i], r, n, ws);
      ring(t.kind, data);
      for (std::size_t r = 0; r < n; ++r) per_buffer_ring_finish(t.kind, pairs[r][i], r, n, ws);
    }
    return;
  }
  const std::vector<std::vector<BufferIndex>> parts = buffers_by_rank(plan, t);
  ByteCodec codec{};
  if (!parse_byte_codec(t.attr_string("compression").value_or(""), codec)) {
    std::vector<RingPieces<T>> data(n);
    for (std::size_t r = 0; r < n; ++r) data[r] = ring_pieces(parts[r], ws);
    ring(t.kind, data);
    return;
  }
  // Compressed: each rank's part of the bucket gathered into a copy, charged to it with one
  // chunk's outgoing message, incoming values and owned message (what it holds as a ring rank).
  std::vector<std::vector<T>> data(n);
  std::vector<Held> held;
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t elems = 0;
    for (BufferIndex b : parts[r]) elems += static_cast<std::size_t>(ws.size(b));
    data[r].reserve(elems);  // one allocation: the bucket can be megabytes
    for (BufferIndex b : parts[r]) data[r].insert(data[r].end(), ws.data(b), ws.data(b) + ws.size(b));
    const std::size_t chunk = (elems + n - 1) / n;
    held.emplace_back(
        ws.meter(), t.group[r],
        allocated_bytes(data[r]) + static_cast<std::int64_t>(2 * message_bytes(chunk) + chunk * sizeof(T)));
  }
  compressed_ring(data, codec);
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
