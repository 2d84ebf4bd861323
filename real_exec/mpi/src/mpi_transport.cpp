#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <type_traits>

#include "strata/real/core/grad_codec.hpp"
#include "strata/real/core/int8_codec.hpp"
#include "strata/real/mpi_transport.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// The progress thread's sleep between polls while idle. Measured on 2 cores (mlp, 2 processes):
// growing it while idle (doubling up to 160 or 640 µs) cut 1F1B pp=2 from ~18,000 to ~9,000 and
// ~6,700 samples/s, since a sender waits in MPI_Send for the receiver's poll; 2–50 µs fixed
// were all within the noise of a shared machine.
constexpr std::chrono::microseconds kIdlePoll{20};

// Elements per ring message: a chunk larger than this goes as several MPI_Sendrecv calls, so
// the ring's own buffers stay at two slices however large the bucket (NCCL also moves a chunk
// in slices through fixed buffers). 4,096 values: 16 KiB in fp32, 32 KiB in fp64.
constexpr std::size_t kRingSlice = 4096;

template <typename T>
MPI_Datatype datatype() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

int count_of(std::size_t elements, const std::string& what) {
  STRATA_ASSERT(elements <= static_cast<std::size_t>(INT_MAX),
                what + ": more elements than one MPI message holds");
  return static_cast<int>(elements);
}

MPI_Comm duplicate_world() {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return comm;
}

}  // namespace

template <typename T>
MpiTransport<T>::MpiTransport(const MpiSession& session, const Plan& plan)
    : plan_(plan), rank_(session.rank()) {
  if (session.size() != plan.num_workers())
    throw InputError("MPI: world size " + std::to_string(session.size()) + " differs from the Plan's " +
                     std::to_string(plan.num_workers()) + " workers (one process per worker)");
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  const long long stop_tag = 2LL * static_cast<long long>(plan.size());
  if (found == 0 || stop_tag > *tag_ub)
    throw InputError("MPI: the Plan's " + std::to_string(plan.size()) + " tasks need message tags up to " +
                     std::to_string(stop_tag) + ", beyond this MPI's MPI_TAG_UB");
  tasks_ = static_cast<int>(plan.size());
  // Rank 0's folders (on disk for the store, in RAM for the cache), their paths told to every rank.
  auto shared_folder = [&](bool wanted, const char* stem, Medium medium,
                           std::unique_ptr<TemporaryFolder>& folder) {
    if (!wanted) return std::string();
    std::vector<char> path(4096, '\0');
    if (rank_ == 0) {
      folder = std::make_unique<TemporaryFolder>(stem, medium);
      const std::string& p = folder->path().string();
      STRATA_ASSERT(p.size() < path.size(), "object store path too long: " + p);
      std::copy(p.begin(), p.end(), path.begin());
    }
    MPI_Bcast(path.data(), static_cast<int>(path.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
    return std::string(path.data());
  };
  auto any_algo = [&](bool (*is)(CollectiveAlgo)) {
    return std::any_of(plan.tasks().begin(), plan.tasks().end(),
                       [&](const Task& t) { return is_collective(t.kind) && is(t.algo); });
  };
  store_path_ = shared_folder(any_algo(&is_storage_algo), "strata-store", Medium::disk, store_folder_);
  cache_path_ = shared_folder(any_algo(&is_cache_algo), "strata-cache", Medium::memory, cache_folder_);
  p2p_ = duplicate_world();
  ring_ = duplicate_world();
  control_ = duplicate_world();
  progress_ = std::thread([this] { progress_loop(); });
}

template <typename T>
MpiTransport<T>::~MpiTransport() {
  // A message to itself with the reserved tag ends the progress thread's loop.
  MPI_Send(nullptr, 0, MPI_BYTE, rank_, 2 * tasks_, p2p_);
  progress_.join();
  // every rank done with the store and the cache before rank 0 removes them
  if (!store_path_.empty() || !cache_path_.empty()) MPI_Barrier(control_);
  MPI_Comm_free(&control_);
  MPI_Comm_free(&ring_);
  MPI_Comm_free(&p2p_);
}

// OpenMPI's blocking probe polls in a loop: a progress thread blocked in MPI_Mprobe would burn
// a core for the whole run, the core this process's worker computes on when there are as many
// processes as cores. So it polls MPI_Improbe and sleeps between polls once idle, with a small
// timer slack so that a sleep lasts about what it asks.
template <typename T>
void MpiTransport<T>::progress_loop() {
  ::prctl(PR_SET_TIMERSLACK, 1000UL);  // ns; best effort
  try {
    for (;;) {
      MPI_Message message = MPI_MESSAGE_NULL;
      MPI_Status status;
      int found = 0;
      MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, p2p_, &found, &message, &status);
      if (found == 0) {
        std::this_thread::sleep_for(kIdlePoll);
        continue;
      }
      int count = 0;  // bytes: point-to-point messages travel as MPI_BYTE (values or int8 codes)
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<char> wire(static_cast<std::size_t>(count));
      std::shared_ptr<MemoryMeter> meter;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        meter = meter_;
      }
      const Held wire_held(meter, rank_, allocated_bytes(wire));
      MPI_Mrecv(wire.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      if (status.MPI_TAG == 2 * tasks_) return;
      Payload payload{decode(status.MPI_TAG, wire), Held{}};
      payload.held = Held(meter, rank_, allocated_bytes(payload.values));
      take_message(status.MPI_TAG, std::move(payload));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: rank %d: internal error in the MPI progress thread: %s\n", rank_, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// The values of a message: its bytes as T, or its int8 codes decoded on the send's grid.
template <typename T>
std::vector<T> MpiTransport<T>::decode(int tag, const std::vector<char>& wire) const {
  if (tag < 2 * tasks_) {
    const Task& send = plan_.task(static_cast<TaskIndex>(tag >= tasks_ ? tag - tasks_ : tag));
    if (const double step = send.kind == TaskKind::send ? int8_encoding(send) : 0; step > 0) {
      std::vector<T> values(wire.size());
      dequantize_into(reinterpret_cast<const std::int8_t*>(wire.data()),
                      static_cast<std::int64_t>(wire.size()), QuantGrid{step}, values.data());
      return values;
    }
  }
  STRATA_ASSERT(wire.size() % sizeof(T) == 0, "MPI message of a size that is not whole values");
  std::vector<T> values(wire.size() / sizeof(T));
  std::memcpy(values.data(), wire.data(), wire.size());
  return values;
}

template <typename T>
void MpiTransport<T>::take_message(int tag, Payload payload) {
  if (tag >= tasks_) {  // a forward-only pass: a payload, nothing to tell
    std::lock_guard<std::mutex> lock(mutex_);
    staged_outside_[static_cast<TaskIndex>(tag - tasks_)].push_back(std::move(payload));
    arrived_.notify_all();
    return;
  }
  const auto task = static_cast<TaskIndex>(tag);
  const Task& t = plan_.task(task);
  RemoteCompletions* sink = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (t.kind == TaskKind::send && t.peer == rank_) {
      staged_run_[task].push_back(std::move(payload));
      arrived_.notify_all();
    }
    sink = sink_;
  }
  // Every message of a run reaches a process that waits for it, so during its own run: other
  // processes begin the next run only after this one has begun it (begin_run's barrier).
  STRATA_ASSERT(sink != nullptr, "message for task " + t.id + " outside a run");
  sink->remote_completed(task);
}

template <typename T>
int MpiTransport<T>::tag_of(TaskIndex task) const {
  return in_run_.load() ? static_cast<int>(task) : tasks_ + static_cast<int>(task);
}

template <typename T>
void MpiTransport<T>::send(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  STRATA_ASSERT(t.reads.size() == 1, "send " + t.id + " must read one buffer");
  STRATA_ASSERT(t.peer != rank_, "send " + t.id + " to its own process");
  const auto elements = static_cast<std::size_t>(ws.size(t.reads[0]));
  if (const double step = int8_encoding(t); step > 0) {  // pdADMM-G-Q's p: one byte per value
    std::vector<std::int8_t> codes(elements);
    quantize_into(ws.data(t.reads[0]), ws.size(t.reads[0]), QuantGrid{step}, codes.data());
    MPI_Send(codes.data(), count_of(elements, "send " + t.id), MPI_BYTE, t.peer, tag_of(task), p2p_);
    bytes_ += elements;
    return;
  }
  send_span(t, task, std::span<const T>(ws.data(t.reads[0]), elements));
}

template <typename T>
void MpiTransport<T>::send_values(const Plan& plan, TaskIndex task, std::vector<T> values,
                                  Workspace<T>& /*ws*/) {
  const Task& t = plan.task(task);
  STRATA_ASSERT(t.peer != rank_, "send " + t.id + " to its own process");
  send_span(t, task, values);
}

template <typename T>
void MpiTransport<T>::send_span(const Task& t, TaskIndex task, std::span<const T> values) {
  MPI_Send(values.data(), count_of(values.size() * sizeof(T), "send " + t.id), MPI_BYTE, t.peer, tag_of(task),
           p2p_);
  bytes_ += values.size() * sizeof(T);
}

template <typename T>
void MpiTransport<T>::recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  STRATA_ASSERT(t.writes.size() == 1, "recv " + t.id + " must write one buffer");
  recv_values(plan, task, std::span<T>(ws.data(t.writes[0]), static_cast<std::size_t>(ws.size(t.writes[0]))),
              ws);
}

template <typename T>
void MpiTransport<T>::recv_values(const Plan& plan, TaskIndex task, std::span<T> into, Workspace<T>& /*ws*/) {
  const Task& t = plan.task(task);
  const TaskIndex from = matching_send(plan, t);
  Payload staged;
  {
    // During a run the payload is already here (the recv started because it arrived); in a
    // forward-only pass the recv waits for it.
    std::unique_lock<std::mutex> lock(mutex_);
    std::deque<Payload>& queue = (in_run_.load() ? staged_run_ : staged_outside_)[from];
    arrived_.wait(lock, [&] { return !queue.empty(); });
    staged = std::move(queue.front());
    queue.pop_front();
  }
  const std::vector<T>& payload = staged.values;
  STRATA_ASSERT(payload.size() == into.size(),
                "recv " + t.id + ": payload size differs from the receiving buffer");
  std::copy(payload.begin(), payload.end(), into.begin());
}

// The server in the process of the group's first rank (me == 0): it receives every other rank's
// bucket at once, adds the n in rank order, and sends the sum to each.
template <typename T>
void MpiTransport<T>::through_server(const Task& t, TaskIndex task, std::size_t me, std::vector<T>& data) {
  const std::size_t n = t.group.size();
  const std::string what = "parameter server " + t.id;
  const int count = count_of(data.size(), what);
  const int tag = static_cast<int>(task);
  if (me != 0) {
    MPI_Send(data.data(), count, datatype<T>(), t.group[0], tag, ring_);
    bytes_ += data.size() * sizeof(T);
    MPI_Recv(data.data(), count, datatype<T>(), t.group[0], tag, ring_, MPI_STATUS_IGNORE);
    return;
  }
  std::vector<std::vector<T>> slots(n);
  std::vector<MPI_Request> requests;
  for (std::size_t r = 1; r < n; ++r) {
    slots[r].resize(data.size());
    requests.emplace_back();
    MPI_Irecv(slots[r].data(), count, datatype<T>(), t.group[r], tag, ring_, &requests.back());
  }
  slots[0] = data;  // this rank's own push
  bytes_ += data.size() * sizeof(T);
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  std::vector<T>& sum = slots[0];
  for (std::size_t r = 1; r < n; ++r)
    for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += slots[r][e];
  requests.clear();
  for (std::size_t r = 1; r < n; ++r) {
    requests.emplace_back();
    MPI_Isend(sum.data(), count, datatype<T>(), t.group[r], tag, ring_, &requests.back());
    bytes_ += sum.size() * sizeof(T);
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  data = sum;
  bytes_ += sum.size() * sizeof(T);
}

template <typename T>
void MpiTransport<T>::collective(const Plan& plan, TaskIndex task, Workspace<T>& ws) {
  const Task& t = plan.task(task);
  const std::size_t n = t.group.size();
  const auto me =
      static_cast<std::size_t>(std::find(t.group.begin(), t.group.end(), rank_) - t.group.begin());
  STRATA_ASSERT(me < n, "allreduce " + t.id + " run by a process outside its group");
  const std::size_t prev = (me + n - 1) % n;
  const int to = t.group[(me + 1) % n];
  const int from = t.group[prev];
  const std::string what = std::string(to_string(t.kind)) + " " + t.id;

  // The plain ring in place over this rank's arrays: each step sends chunk `out` to the next
  // rank and receives chunk `in` from the previous one, kRingSlice elements per message; a
  // received slice is added (reduce-scatter) or copied (allgather) where it belongs.
  std::vector<T> incoming, packed;
  Held incoming_held, packed_held;
  auto slice_of = [](RingChunk c, std::size_t s) {
    const std::size_t b = std::min(c.end, c.begin + s * kRingSlice);
    return RingChunk{b, std::min(c.end, b + kRingSlice)};
  };
  // Every rank sends and receives the same number of messages per step: enough slices for the
  // widest chunk, ceil(S/n), some of them empty.
  auto in_place_step = [&](const RingPieces<T>& mine, RingChunk out, RingChunk in, bool reduce) {
    const std::size_t widest = (ring_size(mine) + n - 1) / n;
    const std::size_t slices = (widest + kRingSlice - 1) / kRingSlice;
    for (std::size_t s = 0; s < slices; ++s) {
      const RingChunk o = slice_of(out, s), i = slice_of(in, s);
      const T* send = nullptr;
      std::size_t runs = 0;
      for_each_run(mine, o.begin, o.end,
                   [&](T* p, std::size_t, std::size_t) { send = runs++ == 0 ? p : send; });
      if (runs > 1) {  // the slice spans two arrays: packed into one message
        if (packed.empty()) {
          packed.resize(kRingSlice);
          packed_held = Held(ws.meter(), rank_, allocated_bytes(packed));
        }
        for_each_run(mine, o.begin, o.end, [&](T* p, std::size_t at, std::size_t len) {
          std::copy(p, p + len, packed.data() + at);
        });
        send = packed.data();
      }
      if (incoming.empty()) {
        incoming.resize(kRingSlice);
        incoming_held = Held(ws.meter(), rank_, allocated_bytes(incoming));
      }
      MPI_Sendrecv(send, count_of(o.end - o.begin, what), datatype<T>(), to, static_cast<int>(task),
                   incoming.data(), count_of(i.end - i.begin, what), datatype<T>(), from,
                   static_cast<int>(task), ring_, MPI_STATUS_IGNORE);
      bytes_ += (o.end - o.begin) * sizeof(T);
      for_each_run(mine, i.begin, i.end, [&](T* p, std::size_t at, std::size_t len) {
        const T* src = incoming.data() + at;
        if (reduce)
          for (std::size_t k = 0; k < len; ++k) p[k] += src[k];
        else
          std::copy(src, src + len, p);
      });
    }
  };
  auto plain_ring = [&](const RingPieces<T>& mine) {
    const std::size_t size = ring_size(mine);
    for (std::size_t s = 0; runs_reduce_scatter(t.kind) && s + 1 < n; ++s)
      in_place_step(mine, ring_chunk(reduce_scatter_chunk(me, s, n), size, n),
                    ring_chunk(reduce_scatter_chunk(prev, s, n), size, n), true);
    for (std::size_t s = 0; runs_allgather(t.kind) && s + 1 < n; ++s)
      in_place_step(mine, ring_chunk(allgather_chunk(me, s, n), size, n),
                    ring_chunk(allgather_chunk(prev, s, n), size, n), false);
  };
  if (per_buffer(t)) {  // ZeRO-2, -3: one ring per layer, between unsharded buffers and shards
    const std::vector<std::vector<BufferPair>> pairs = buffer_pairs_by_rank(plan, t);
    for (const BufferPair& pair : pairs[me]) {
      plain_ring(per_buffer_ring_prepare(t.kind, pair, me, n, ws));
      per_buffer_ring_finish(t.kind, pair, me, n, ws);
    }
    return;
  }
  // This rank's part of the bucket: its buffers among the task's reads, in order.
  std::vector<BufferIndex> part;
  for (BufferIndex b : t.reads)
    if (plan.buffer(b).worker == rank_) part.push_back(b);
  if (is_hub_algo(t.algo)) {  // through files or the server: a copy of the part, charged to this rank
    std::vector<T> data;
    for (BufferIndex b : part) data.insert(data.end(), ws.data(b), ws.data(b) + ws.size(b));
    const Held held(ws.meter(), rank_, allocated_bytes(data));
    if (t.algo == CollectiveAlgo::parameter_server) {
      through_server(t, task, me, data);
    } else {
      std::size_t round = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        round = rounds_[task]++;
      }
      FileObjectStore store(is_cache_algo(t.algo) ? cache_path_ : store_path_);
      for (int phase = 1; phase <= 3; ++phase)
        bytes_ += storage_exchange_phase(store, t.algo, t.id, round, me, n, data, phase);
    }
    std::size_t offset = 0;
    for (BufferIndex b : part) {
      std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(offset), ws.size(b), ws.data(b));
      offset += static_cast<std::size_t>(ws.size(b));
    }
    return;
  }
  ByteCodec codec{};
  if (!parse_byte_codec(t.attr_string("compression").value_or(""), codec)) {
    plain_ring(ring_pieces(part, ws));
    return;
  }
  // A compressed ring (ThreadTransport::compressed_ring) on a copy of the part, messages of
  // codes and a scale; the copy and the messages are charged to this rank.
  std::vector<T> data;
  for (BufferIndex b : part) data.insert(data.end(), ws.data(b), ws.data(b) + ws.size(b));
  const std::size_t size = data.size();
  const std::size_t widest = (size + n - 1) / n;
  const Held held(
      ws.meter(), rank_,
      allocated_bytes(data) + static_cast<std::int64_t>(2 * message_bytes(widest) + widest * sizeof(T)));
  std::vector<std::uint8_t> out_message, in_message;
  auto coded_step = [&](RingChunk out, RingChunk in, bool encode) {
    if (encode) {
      out_message.clear();
      encode_message(data.data() + out.begin, out.end - out.begin, codec, out_message);
    }
    in_message.resize(message_bytes(in.end - in.begin));
    MPI_Sendrecv(out_message.data(), count_of(out_message.size(), what), MPI_BYTE, to, static_cast<int>(task),
                 in_message.data(), count_of(in_message.size(), what), MPI_BYTE, from, static_cast<int>(task),
                 ring_, MPI_STATUS_IGNORE);
    bytes_ += out_message.size();
    incoming.resize(in.end - in.begin);
    decode_message(in_message.data(), incoming.size(), codec, incoming.data());
  };
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const RingChunk in = ring_chunk(reduce_scatter_chunk(prev, s, n), size, n);
    coded_step(ring_chunk(reduce_scatter_chunk(me, s, n), size, n), in, true);
    for (std::size_t i = in.begin; i < in.end; ++i) data[i] += incoming[i - in.begin];
  }
  // The owned chunk encoded once; each allgather step forwards what it received.
  const RingChunk own = ring_chunk(owned_chunk(me, n), size, n);
  out_message.clear();
  encode_message(data.data() + own.begin, own.end - own.begin, codec, out_message);
  decode_message(out_message.data(), own.end - own.begin, codec, data.data() + own.begin);
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const RingChunk in = ring_chunk(allgather_chunk(prev, s, n), size, n);
    coded_step(ring_chunk(allgather_chunk(me, s, n), size, n), in, false);
    std::copy(incoming.begin(), incoming.end(), data.begin() + static_cast<std::ptrdiff_t>(in.begin));
    std::swap(out_message, in_message);
  }
  std::size_t offset = 0;
  for (BufferIndex b : part) {
    std::copy(data.begin() + static_cast<std::ptrdiff_t>(offset),
              data.begin() + static_cast<std::ptrdiff_t>(offset + static_cast<std::size_t>(ws.size(b))),
              ws.data(b));
    offset += static_cast<std::size_t>(ws.size(b));
  }
}

template <typename T>
void MpiTransport<T>::set_meter(std::shared_ptr<MemoryMeter> meter) {
  std::lock_guard<std::mutex> lock(mutex_);
  meter_ = std::move(meter);
}

template <typename T>
void MpiTransport<T>::begin_run(RemoteCompletions& sink) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sink_ = &sink;
  }
  in_run_ = true;
  MPI_Barrier(control_);
}

template <typename T>
void MpiTransport<T>::end_run() {
  in_run_ = false;
  std::lock_guard<std::mutex> lock(mutex_);
  sink_ = nullptr;
}

template <typename T>
void MpiTransport<T>::announce(TaskIndex task, const std::vector<int>& processes) {
  for (int p : processes) MPI_Send(nullptr, 0, MPI_BYTE, p, tag_of(task), p2p_);
}

template <typename T>
double MpiTransport<T>::sum_over_processes(double local) {
  double sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, control_);
  return sum;
}

template <typename T>
void MpiTransport<T>::max_over_processes(std::vector<double>& values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), count_of(values.size(), "timings"), MPI_DOUBLE, MPI_MAX,
                control_);
}

template class MpiTransport<float>;
template class MpiTransport<double>;

}  // namespace strata::real
