// LambdaML's exchanges through an object store of files (file_store.hpp): every rank ends with
// the sum, each rank PUTs what the algorithm says, old rounds are removed, a wrong object is an
// error naming it, the cache's folder is in RAM, and data parallelism through the store, the
// cache and a parameter server trains to the ring's weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "strata/real/transport/file_store.hpp"
#include "strata/traces/error.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

namespace fs = std::filesystem;

// Rank r holds r + 1 + k at element k (whole numbers: every order of the additions is exact).
std::vector<std::vector<double>> ranks_data(std::size_t n, std::size_t size) {
  std::vector<std::vector<double>> data(n, std::vector<double>(size));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t k = 0; k < size; ++k) data[r][k] = static_cast<double>(r + 1 + k);
  return data;
}

std::size_t files_under(const fs::path& folder) {
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) files += entry.is_regular_file() ? 1 : 0;
  return files;
}

TEST(StorageExchange, EveryRankEndsWithTheSumAndPutsWhatLambdaMlPuts) {
  const std::size_t n = 3, size = 10;  // 10 elements: shards of 3, 3 and 4
  for (CollectiveAlgo algo : {CollectiveAlgo::storage_allreduce, CollectiveAlgo::storage_scatter_reduce}) {
    SCOPED_TRACE(std::string(to_string(algo)));
    TemporaryFolder folder("strata-store-test");
    FileObjectStore store(folder.path());
    std::vector<std::vector<double>> data = ranks_data(n, size);
    std::vector<std::size_t> put(n, 0);
    for (int phase = 1; phase <= 3; ++phase)
      for (std::size_t r = 0; r < n; ++r)
        put[r] += storage_exchange_phase(store, algo, "it0/b0", 0, r, n, data[r], phase);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t k = 0; k < size; ++k)
        EXPECT_EQ(data[r][k], static_cast<double>(6 + 3 * k)) << r << " " << k;
    const std::size_t bytes = size * sizeof(double);
    if (algo == CollectiveAlgo::storage_allreduce) {
      // Each rank its gradient; the merger the sum besides.
      EXPECT_EQ(put[0], 2 * bytes);
      EXPECT_EQ(put[1], bytes);
      EXPECT_EQ(put[2], bytes);
      EXPECT_EQ(files_under(folder.path()), n + 1);
    } else {
      // Rank 0 (shard of 3): shards 1 and 2 (3 + 4 elements) and its summed shard (3).
      EXPECT_EQ(put[0], 10 * sizeof(double));
      EXPECT_EQ(put[2], (3 + 3 + 4) * sizeof(double));
      EXPECT_EQ(files_under(folder.path()), n * (n - 1) + n);
    }
  }
}

TEST(StorageExchange, ARankRemovesItsObjectsTwoRoundsLater) {
  TemporaryFolder folder("strata-store-test");
  FileObjectStore store(folder.path());
  const std::size_t n = 2;
  for (std::size_t round = 0; round < 3; ++round) {
    std::vector<std::vector<double>> data = ranks_data(n, 4);
    for (int phase = 1; phase <= 3; ++phase)
      for (std::size_t r = 0; r < n; ++r)
        storage_exchange_phase(store, CollectiveAlgo::storage_allreduce, "it0/b0", round, r, n, data[r],
                               phase);
  }
  // Rounds 1 and 2 remain: 3 objects each (two gradients and the sum).
  EXPECT_EQ(files_under(folder.path()), 6u);
  EXPECT_FALSE(fs::exists(folder.path() / "it0.b0" / "0" / "r0" / "g"));
  EXPECT_TRUE(fs::exists(folder.path() / "it0.b0" / "1" / "r0" / "g"));
}

TEST(StorageExchange, AnObjectOfAnotherSizeIsAnErrorNamingIt) {
  fs::path kept;
  {
    TemporaryFolder folder("strata-store-test");
    kept = folder.path();
    FileObjectStore store(folder.path());
    const double value[2] = {1, 2};
    store.put("a/b", value, sizeof value);
    double read[3] = {};
    try {
      store.get("a/b", read, sizeof read);
      FAIL() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a/b does not hold 24 B"), std::string::npos) << e.what();
    }
    store.get("a/b", read, sizeof value);
    EXPECT_EQ(read[1], 2.0);
  }
  EXPECT_FALSE(fs::exists(kept));  // the folder goes with its objects
}

TEST(StorageExchange, TheCachesFolderIsInRamAndGoesWithItsObjects) {
  fs::path kept;
  {
    TemporaryFolder folder("strata-cache-test", Medium::memory);
    kept = folder.path();
    EXPECT_EQ(kept.parent_path(), fs::path("/dev/shm"));
    FileObjectStore cache(folder.path());
    std::vector<std::vector<double>> data = ranks_data(2, 5);
    for (int phase = 1; phase <= 3; ++phase)
      for (std::size_t r = 0; r < 2; ++r)
        storage_exchange_phase(cache, CollectiveAlgo::cache_allreduce, "it0/b0", 0, r, 2, data[r], phase);
    EXPECT_EQ(data[1][4], 3.0 + 2 * 4);
    EXPECT_EQ(files_under(kept), 3u);  // two gradients and the sum, as the store's allreduce
  }
  EXPECT_FALSE(fs::exists(kept));
}

// Four workers: the merger (or the server) adds the others' gradients in rank order and the
// shards' owners add theirs in another order than the ring, so the weights agree within rounding.
TEST(StorageExchange, DataParallelThroughTheStoreTrainsToTheRingsWeights) {
  for (CollectiveAlgo algo : {CollectiveAlgo::storage_allreduce, CollectiveAlgo::storage_scatter_reduce,
                              CollectiveAlgo::cache_allreduce, CollectiveAlgo::cache_scatter_reduce,
                              CollectiveAlgo::parameter_server}) {
    SCOPED_TRACE(std::string(to_string(algo)));
    StrategyConfig c = training_runs::mlp_config(4, 1, 1);
    const Plan ring = lower(make_model("mlp", {}), c);
    c.dp_algo = algo;
    const Plan through_store = lower(make_model("mlp", {}), c);
    int collectives = 0;
    for (const Task& t : through_store.tasks())
      collectives += is_collective(t.kind) && t.algo == algo ? 1 : 0;
    ASSERT_GT(collectives, 0);
    CpuBackend backend;
    Trainer<double> a(ring, backend, training_runs::train_config());
    Trainer<double> b(through_store, backend, training_runs::train_config());
    training_runs::train_side_by_side(a, b, 3);
    int compared = 0;
    for (BufferIndex i = 0; i < ring.buffers().size(); ++i) {
      if (ring.buffer(i).id.find("/w/") == std::string::npos) continue;
      const std::int64_t size = a.workspace().size(i);
      ASSERT_EQ(b.workspace().size(i), size);
      double largest = 0, worst = 0;
      for (std::int64_t k = 0; k < size; ++k) {
        largest = std::max(largest, std::fabs(a.workspace().data(i)[k]));
        worst = std::max(worst, std::fabs(a.workspace().data(i)[k] - b.workspace().data(i)[k]));
      }
      EXPECT_LE(worst, 1e-12 * largest) << ring.buffer(i).id;
      ++compared;
    }
    EXPECT_GT(compared, 0);
  }
}

}  // namespace
}  // namespace strata::real
