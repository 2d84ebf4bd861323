// MpiSession and MpiTransport<T>: the real executor's workers as OpenMPI processes, one worker
// per process (MPI rank = worker id), exchanging real tensors. `strata run --transport mpi`
// under `mpirun -np <workers>` uses them.
//
// Every process builds the same Plan, Trainer and Interpreter and dispatches the whole Plan,
// running only its own worker's tasks (ProcessShare, interpreter.hpp, says which, and which
// remote completions it waits for). MpiTransport carries the rest on three duplicates of
// MPI_COMM_WORLD, so their messages never mix:
// - p2p: every point-to-point message. A progress thread per process receives them eagerly
//   (MPI_Mprobe/MPI_Mrecv from any source), whatever this process is doing, so an MPI_Send
//   never waits for a receiver busy elsewhere and cannot deadlock. The tag names the task: during
//   a run, tag t is task t (the Plan's indices are the same in every process); a send's message
//   carries its payload, which is staged by send task, and tells the Interpreter that the remote
//   send completed, which is what makes the local recv startable; an empty message tells it that
//   some other remote task completed (Transport::announce). Outside runs (the Trainer's
//   forward-only test passes), a send is tagged N + t for a Plan of N tasks and only staged; the
//   recv waits for it. Tag 2N, sent to itself, stops the progress thread.
// - ring: the allreduce. Each member process runs its own rank's part of the ring of
//   task_runner.hpp with MPI_Sendrecv (tag = the task's index): the same chunks and the same
//   order of additions as ThreadTransport, so both give bit-identical sums. A reduce_scatter
//   runs the ring's first half only, an allgather its second (ZeRO-1/2). The ring works in
//   place on the rank's buffers, in slices of at most kRingSlice elements per message, so
//   what it allocates is one slice received and one sent (when a slice spans two buffers); a
//   compressed ring works on a copy of the rank's bucket. Both are charged to the rank.
//   A staged point-to-point payload is charged to the receiving rank from its arrival to its
//   recv (set_meter).
// - control: the collectives the Trainer calls from its own thread (barrier at the start of a
//   run, sums, maxima).
// An allreduce through an object store (dp_algo=storage_allreduce or storage_scatter_reduce)
// sends no MPI message: each rank runs its PUTs and GETs through files (file_store.hpp) in a
// folder rank 0 creates at construction, tells the others of, and removes at destruction; one
// through a cache (cache_allreduce, cache_scatter_reduce) does the same in a folder in RAM
// (/dev/shm). An allreduce through a parameter server (parameter_server) has its server in the
// process of the group's first rank: every other rank sends its bucket there (ring, tag = the
// task's index), the server adds the n buckets in rank order into a sum of its own and sends the
// sum back to each; the server's copies are its memory (a VM's), charged to no worker.
// Point-to-point messages travel as MPI_BYTE: a payload's values, or, for a send with an int8
// encoding (pdADMM-G-Q's p, task_runner.hpp int8_encoding), its one-byte grid codes, which the
// receiver decodes. Bytes counted are payload bytes this process sent (sends, as encoded, and
// ring chunks), as ThreadTransport counts them; the empty completion messages are not counted.
//
// Thread safety: as Transport requires (send/recv/collective from several threads at once), which
// is why MpiSession insists on MPI_THREAD_MULTIPLE. Errors: MPI's default handler aborts the job
// on an MPI failure; an exception in the progress thread prints one line and aborts the job,
// since no caller could catch it.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "strata/real/exec/task_runner.hpp"
#include "strata/real/transport/file_store.hpp"

namespace strata::real {

// MPI_Init_thread(MPI_THREAD_MULTIPLE) in the constructor, MPI_Finalize in the destructor: one
// per process, created before anything else uses MPI and destroyed after.
class MpiSession {
 public:
  // Throws InputError when the MPI library cannot give MPI_THREAD_MULTIPLE (after finalizing).
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ends every process of the job with exit status `code` (MPI_Abort). The way out after an
  // error on one rank: returning would leave the others waiting for it forever.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

template <typename T>
class MpiTransport final : public Transport<T> {
 public:
  // REQUIRES: plan validated; session and plan outlive the transport. Throws InputError when the
  // world size differs from the Plan's worker count, or the Plan has too many tasks for MPI's tags.
  MpiTransport(const MpiSession& session, const Plan& plan);
  ~MpiTransport() override;  // stops the progress thread; collective (frees the communicators)
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  void send(const Plan& plan, TaskIndex task, Workspace<T>& ws) override;
  void recv(const Plan& plan, TaskIndex task, Workspace<T>& ws) override;
  void send_values(const Plan& plan, TaskIndex task, std::vector<T> values, Workspace<T>& ws) override;
  void recv_values(const Plan& plan, TaskIndex task, std::span<T> into, Workspace<T>& ws) override;
  void collective(const Plan& plan, TaskIndex task, Workspace<T>& ws) override;
  std::uint64_t bytes_sent() const override { return bytes_.load(); }
  std::string name() const override { return "mpi"; }

  int process_of(WorkerId worker) const override { return worker; }
  int process() const override { return rank_; }
  void begin_run(RemoteCompletions& sink) override;
  void set_meter(std::shared_ptr<MemoryMeter> meter) override;
  void end_run() override;
  void announce(TaskIndex task, const std::vector<int>& processes) override;
  double sum_over_processes(double local) override;
  void max_over_processes(std::vector<double>& values) override;

 private:
  void send_span(const Task& t, TaskIndex task, std::span<const T> values);  // MPI_Send of the values
  struct Payload {
    std::vector<T> values;
    Held held;  // charged to this rank while staged
  };
  using Staged = std::map<TaskIndex, std::deque<Payload>>;  // payloads by send task, FIFO
  void progress_loop();
  void take_message(int tag, Payload payload);
  std::vector<T> decode(int tag, const std::vector<char>& wire) const;
  int tag_of(TaskIndex task) const;

  const Plan& plan_;
  int rank_ = 0;
  void through_server(const Task& t, TaskIndex task, std::size_t me, std::vector<T>& data);

  std::unique_ptr<TemporaryFolder> store_folder_;  // rank 0's, when the Plan has storage collectives
  std::string store_path_;                         // every rank's path to it
  std::unique_ptr<TemporaryFolder> cache_folder_;  // rank 0's, in RAM, when it has cache collectives
  std::string cache_path_;                         // every rank's path to it
  std::map<TaskIndex, std::size_t> rounds_;  // storage and cache collectives: runs so far; guarded by mutex_
  int tasks_ = 0;                            // N: run tags are [0, N), forward-only tags [N, 2N), 2N stops
  MPI_Comm p2p_ = MPI_COMM_NULL;
  MPI_Comm ring_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  std::mutex mutex_;
  std::condition_variable arrived_;
  Staged staged_run_;                   // guarded by mutex_
  Staged staged_outside_;               // guarded by mutex_
  RemoteCompletions* sink_ = nullptr;   // guarded by mutex_; set during a run
  std::shared_ptr<MemoryMeter> meter_;  // guarded by mutex_
  std::atomic<bool> in_run_{false};
  std::atomic<std::uint64_t> bytes_{0};
  std::thread progress_;
};

extern template class MpiTransport<float>;
extern template class MpiTransport<double>;

}  // namespace strata::real
