// ThreadTransport<T>: communication between workers that are threads of one process.
//
// Every worker's buffers live in one Workspace, so a transfer is a real copy between two
// workers' arrays and its bytes are counted:
// - send copies its buffer into a staging area keyed by the send task; the matching recv
//   (which data-depends on it) copies it into the receiver's buffer. The staged copy is charged
//   to the receiver until the recv (a message waiting in its receive queue);
// - allreduce runs the ring algorithm in place over the group's buffers (ring_chunk() and its steps in
//   task_runner.hpp, the same as MpiTransport's): n−1 reduce-scatter steps then n−1 allgather
//   steps, each moving one chunk of S/n elements from rank i to rank i+1, so each rank sends
//   2(n−1)/n·S elements, as on a network. The steps run one after another in the thread that
//   executes the task, so the copies and additions are real but the ranks do not overlap them
//   as separate GPUs would. A reduce_scatter runs the first half only, an allgather the second
//   (ZeRO-1/2's gradients and parameters). An allreduce with attribute compression int8 or fp8
//   sends each message as codes (compressed_ring; each rank sends 2(n−1) messages of S/n codes
//   and a 4-byte scale); it works on a copy of each rank's bucket, charged to that rank.
// - an allreduce through an object store (dp_algo=storage_allreduce or storage_scatter_reduce)
//   runs LambdaML's PUTs and GETs through files in a folder of its own on disk
//   (file_store.hpp), through a cache (cache_allreduce, cache_scatter_reduce) the same in a
//   folder in RAM (/dev/shm). Each of the exchange's three phases runs every rank's requests at
//   once, one thread per rank (free to run on any core of the process), as concurrent functions
//   issue them; each rank's bucket is copied
//   out and back, the copy charged to it.
// - an allreduce through a parameter server (parameter_server): every rank's bucket is pushed
//   (copied) into the server's slot for it, the server adds the slots in rank order, and every
//   rank pulls (copies) the sum back, in the thread that executes the task. The server's slots
//   are the server's memory (a VM's), charged to no worker; pushes and pulls count as sent.
// Thread safety: send/recv/collective may be called from several threads at once.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "strata/real/core/grad_codec.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/real/transport/file_store.hpp"

namespace strata::real {

template <typename T>
class ThreadTransport final : public Transport<T> {
 public:
  // Remembers the constructing thread's CPU affinity (the process's, before the interpreter pins
  // its streams): the store's rank threads run with it, not with the pinned core of the stream
  // that runs the exchange, so that the ranks' requests run side by side.
  ThreadTransport();
  void send(const Plan& plan, TaskIndex task, Workspace<T>& ws) override;
  void recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) override;
  void send_values(const Plan& plan, TaskIndex task, std::vector<T> values, Workspace<T>& ws) override;
  void recv_values(const Plan& plan, TaskIndex task, std::span<T> into, Workspace<T>& ws) override;
  void collective(const Plan& plan, TaskIndex task, Workspace<T>& ws) override;
  std::uint64_t bytes_sent() const override { return bytes_.load(); }
  std::string name() const override { return "threads"; }

 private:
  void ring(TaskKind kind, const std::vector<RingPieces<T>>& data);
  void compressed_ring(std::vector<std::vector<T>>& data, ByteCodec codec);
  void through_store(const Plan& plan, TaskIndex task, Workspace<T>& ws);
  void through_server(const Plan& plan, TaskIndex task, Workspace<T>& ws);

  template <typename V>
  struct Staged {
    V payload;
    Held held;  // its bytes, charged to the receiver
  };
  std::mutex mutex_;
  std::map<TaskIndex, Staged<std::vector<T>>> staged_;           // by send task
  std::map<TaskIndex, Staged<std::vector<std::int8_t>>> codes_;  // by send task, int8-encoded payloads
  std::atomic<std::uint64_t> bytes_{0};
  std::unique_ptr<TemporaryFolder> store_folder_;  // created by the first storage collective
  std::unique_ptr<TemporaryFolder> cache_folder_;  // created by the first cache collective
  std::vector<unsigned char> affinity_;            // a cpu_set_t: the constructing thread's
  std::map<TaskIndex, std::size_t> rounds_;        // storage and cache collectives: runs so far, by task
};

extern template class ThreadTransport<float>;
extern template class ThreadTransport<double>;

}  // namespace strata::real
