// An object store in a folder on this machine, and LambdaML's exchanges through it: what the
// real executor runs for a Plan's storage collectives (dp_algo=storage_allreduce or
// storage_scatter_reduce: a folder on disk) and cache collectives (cache_allreduce or
// cache_scatter_reduce: a folder in RAM, /dev/shm, standing for a Memcached VM), where the
// simulator sends the same PUTs and GETs to the platform's store or cache host
// (sim/collectives.hpp; docs/serverless.md).
//
// A PUT writes the object to a temporary file and renames it into place (a reader never sees
// half an object); a GET waits for the object to appear, polling as LambdaML polls S3 for a key,
// and reads it. Each rank's requests go one after another. Objects are named by task, round (the
// how-manieth run of the task) and rank; a rank removes its round k objects when it starts round
// k + 2, when every rank has read them (each rank's round k + 1 needed every rank's round k + 1
// objects, PUT after those ranks had read everything of round k).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata::real {

class FileObjectStore {
 public:
  // `folder`: an existing folder every rank sees (the ranks of one machine).
  explicit FileObjectStore(std::filesystem::path folder);
  const std::filesystem::path& folder() const { return folder_; }

  void put(const std::string& key, const void* data, std::size_t bytes);
  // Waits for `key` (up to 600 s: a peer that never PUTs it is an error naming the key), then
  // reads its `bytes` (an object of another size is an error).
  void get(const std::string& key, void* data, std::size_t bytes);
  void remove_all(const std::string& prefix);  // a folder of objects: "task/round/rank"

 private:
  std::filesystem::path folder_;
};

// Where a temporary folder lives: `disk`, the temporary directory (TMPDIR, else /tmp); `memory`,
// /dev/shm (tmpfs: RAM), the cache's medium (InputError when this machine has none).
enum class Medium : std::uint8_t { disk, memory };

// A fresh folder on `medium`, removed with what it holds by the destructor.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& stem, Medium medium = Medium::disk);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Rank `me` of `n` exchanging `data` (its whole buffer, the same length on every rank) through
// `store` as `algo` says, in three phases; every rank runs phase 1, then 2, then 3 (ranks of one
// thread: every rank's phase 1 before any rank's phase 2, and so on). `task` and `round` (the
// how-manieth run of the task, counted by each rank) name the objects. After phase 3 every rank
// holds the sum over the ranks. Phase 1 first removes the rank's objects of round - 2. Returns
// the bytes the rank PUT. The cache's exchanges are the store's, in another folder.
//   storage_allreduce, cache_allreduce: 1: PUT the buffer; 2: rank 0 GETs the others', sums,
//                      PUTs the sum; 3: the others GET the sum.
//   storage_scatter_reduce, cache_scatter_reduce: 1: PUT shard j for every j != me; 2: GET shard
//                      `me` of the others, sum, PUT it; 3: GET the summed shards j != me.
template <typename T>
std::size_t storage_exchange_phase(FileObjectStore& store, CollectiveAlgo algo, const std::string& task,
                                   std::size_t round, std::size_t me, std::size_t n, std::vector<T>& data,
                                   int phase);

}  // namespace strata::real
