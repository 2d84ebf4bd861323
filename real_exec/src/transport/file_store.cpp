// An object store in a folder, and LambdaML's exchanges through it (file_store.hpp).
#include "strata/real/transport/file_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <thread>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace fs = std::filesystem;
namespace {

// How long a GET waits for its object before it calls the run broken: far beyond any exchange
// this machine runs (a rank that died takes its MPI job with it sooner).
constexpr std::chrono::seconds kGetPatience{600};

std::string key_path(const std::string& task, std::size_t round, std::size_t rank, const std::string& name) {
  std::string folder = task;
  std::replace(folder.begin(), folder.end(), '/', '.');
  return folder + "/" + std::to_string(round) + "/r" + std::to_string(rank) + "/" + name;
}

// Elements [begin, end) of shard j of `size` elements split n ways (sizes differ by one at most).
std::pair<std::size_t, std::size_t> shard(std::size_t j, std::size_t n, std::size_t size) {
  return {j * size / n, (j + 1) * size / n};
}

}  // namespace

FileObjectStore::FileObjectStore(fs::path folder) : folder_(std::move(folder)) {}

void FileObjectStore::put(const std::string& key, const void* data, std::size_t bytes) {
  const fs::path target = folder_ / key;
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  // One temporary name per writer: process id and a per-process counter.
  static std::atomic<unsigned long> counter{0};
  const fs::path temporary =
      target.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::FILE* f = std::fopen(temporary.c_str(), "wb");
  if (f == nullptr) throw InputError("object store " + folder_.string() + ": cannot write " + key);
  const bool written = bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    fs::remove(temporary, ec);
    throw InputError("object store " + folder_.string() + ": cannot write " + key + " (disk full?)");
  }
  fs::rename(temporary, target, ec);
  if (ec)
    throw InputError("object store " + folder_.string() + ": cannot place " + key + ": " + ec.message());
}

void FileObjectStore::get(const std::string& key, void* data, std::size_t bytes) {
  const fs::path source = folder_ / key;
  const auto start = std::chrono::steady_clock::now();
  // Polled: yielding for the first 200 us (a sleep oversleeps by ~60 us on Linux), then
  // sleeping 100 us to 1 ms between looks.
  auto pause = std::chrono::microseconds(100);
  std::FILE* f = nullptr;
  while ((f = std::fopen(source.c_str(), "rb")) == nullptr) {
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited > kGetPatience)
      throw InputError("object store " + folder_.string() + ": " + key + " never appeared (waited 600 s)");
    if (waited < std::chrono::microseconds(200)) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  const bool read = bytes == 0 || std::fread(data, 1, bytes, f) == bytes;
  const bool at_end = std::fgetc(f) == EOF;
  std::fclose(f);
  if (!read || !at_end)
    throw InputError("object store " + folder_.string() + ": " + key + " does not hold " +
                     std::to_string(bytes) + " B");
}

void FileObjectStore::remove_all(const std::string& prefix) {
  std::error_code ec;
  fs::remove_all(folder_ / prefix, ec);
}

TemporaryFolder::TemporaryFolder(const std::string& stem, Medium medium) {
  std::string root;
  if (medium == Medium::memory) {
    root = "/dev/shm";
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      throw InputError("the cache needs a folder in RAM and this machine has no " + root + " (tmpfs)");
  } else {
    const char* tmp = std::getenv("TMPDIR");
    root = tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp");
  }
  std::string pattern = root + "/" + stem + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw InputError("cannot create a folder " + pattern + " for the object store");
  path_ = pattern;
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

template <typename T>
std::size_t storage_exchange_phase(FileObjectStore& store, CollectiveAlgo algo, const std::string& task,
                                   std::size_t round, std::size_t me, std::size_t n, std::vector<T>& data,
                                   int phase) {
  STRATA_ASSERT((is_storage_algo(algo) || is_cache_algo(algo)) && me < n,
                "storage exchange: not a storage or cache algorithm, or not a rank");
  const std::size_t size = data.size();
  auto key = [&](std::size_t rank, const std::string& name) { return key_path(task, round, rank, name); };
  auto put = [&](std::size_t rank, const std::string& name, std::size_t begin, std::size_t end) {
    store.put(key(rank, name), data.data() + begin, (end - begin) * sizeof(T));
    return (end - begin) * sizeof(T);
  };
  auto get = [&](std::size_t rank, const std::string& name, std::size_t begin, std::size_t end, T* into) {
    store.get(key(rank, name), into, (end - begin) * sizeof(T));
  };
  std::size_t sent = 0;
  std::vector<T> other;
  if (algo == CollectiveAlgo::storage_allreduce || algo == CollectiveAlgo::cache_allreduce) {
    if (phase == 1) {
      if (round >= 2) store.remove_all(key_path(task, round - 2, me, ""));
      sent += put(me, "g", 0, size);
    } else if (phase == 2 && me == 0) {
      other.resize(size);
      for (std::size_t i = 1; i < n; ++i) {
        get(i, "g", 0, size, other.data());
        for (std::size_t e = 0; e < size; ++e) data[e] += other[e];
      }
      sent += put(0, "sum", 0, size);
    } else if (phase == 3 && me != 0) {
      get(0, "sum", 0, size, data.data());
    }
    return sent;
  }
  const auto [mine_begin, mine_end] = shard(me, n, size);
  if (phase == 1) {
    if (round >= 2) store.remove_all(key_path(task, round - 2, me, ""));
    for (std::size_t j = 0; j < n; ++j)
      if (j != me) {
        const auto [b, e] = shard(j, n, size);
        sent += put(me, "s" + std::to_string(j), b, e);
      }
  } else if (phase == 2) {
    other.resize(mine_end - mine_begin);
    for (std::size_t i = 0; i < n; ++i)
      if (i != me) {
        get(i, "s" + std::to_string(me), mine_begin, mine_end, other.data());
        for (std::size_t e = 0; e < other.size(); ++e) data[mine_begin + e] += other[e];
      }
    sent += put(me, "sum", mine_begin, mine_end);
  } else if (phase == 3) {
    for (std::size_t j = 0; j < n; ++j)
      if (j != me) {
        const auto [b, e] = shard(j, n, size);
        get(j, "sum", b, e, data.data() + b);
      }
  }
  return sent;
}

template std::size_t storage_exchange_phase<float>(FileObjectStore&, CollectiveAlgo, const std::string&,
                                                   std::size_t, std::size_t, std::size_t, std::vector<float>&,
                                                   int);
template std::size_t storage_exchange_phase<double>(FileObjectStore&, CollectiveAlgo, const std::string&,
                                                    std::size_t, std::size_t, std::size_t,
                                                    std::vector<double>&, int);

}  // namespace strata::real
