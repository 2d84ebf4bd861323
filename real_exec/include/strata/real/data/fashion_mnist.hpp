// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 28x28 grey images of clothing in 10 classes,
// 60,000 for training and 10,000 for testing, read from the gzip-compressed IDX files that
// Debian's dataset-fashion-mnist package installs; plus the seeded batch order the real
// executor trains with.
//
// Files: <dir>/train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
// t10k-labels-idx1-ubyte.gz. IDX: a big-endian magic (0x00000803 for a 3-D ubyte array of
// images, 0x00000801 for a 1-D array of labels), one big-endian uint32 per dimension, then the
// bytes row-major. Uncompressed files are read too (zlib reads them transparently).
// The directory is `dir` if given, else $STRATA_FASHION_MNIST if set and non-empty, else
// kFashionMnistDefaultDir.
//
// Errors: any problem with a file throws InputError with one line naming the file, the byte
// offset where it applies and the problem (missing file, bad magic, truncated header or data,
// trailing bytes, gzip stream errors, label count that differs from the image count, label out
// of range). Nothing is returned half-read.
// Invariants of a returned LabelledImages: images has shape [count, rows * cols], values in
// [0, 1] (pixel / 255); labels has count values in [0, kFashionMnistClasses).
// Ownership: LabelledImages owns its arrays; EpochBatches owns its index permutation.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "strata/real/core/tensor.hpp"

namespace strata::real {

inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;

enum class DatasetSplit : std::uint8_t { train, test };

struct LabelledImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Tensor<float> images;              // [count, rows * cols], values in [0, 1]
  std::vector<std::uint8_t> labels;  // count class indices
};

// $STRATA_FASHION_MNIST when set and non-empty, else kFashionMnistDefaultDir.
std::string fashion_mnist_dir();

// Reads one split; throws InputError as described above.
LabelledImages load_fashion_mnist(const std::string& dir, DatasetSplit split);
LabelledImages load_fashion_mnist(DatasetSplit split);

// A uniformly random permutation of [0, count) by Fisher-Yates. Bounded draws use rejection
// sampling on raw mt19937_64 outputs rather than std::shuffle or uniform_int_distribution,
// whose algorithms the standard leaves to each library, so a seed gives one order everywhere.
std::vector<std::int64_t> shuffled_indices(std::int64_t count, std::mt19937_64& rng);

// The batches of one epoch over `count` examples: a fresh permutation per epoch, cut into
// batches of batch_size; the last batch holds the remainder and may be smaller. The order of
// epoch e depends only on (seed, e), so any worker can compute any epoch's batches without
// replaying earlier epochs. REQUIRES: count >= 0, batch_size > 0.
class EpochBatches {
 public:
  EpochBatches(std::int64_t count, std::int64_t batch_size, std::uint64_t seed);

  // Reshuffles for `epoch` (>= 0). The constructor starts epoch 0.
  void start_epoch(std::int64_t epoch);

  std::int64_t epoch() const { return epoch_; }
  std::int64_t batch_count() const;
  // The example indices of batch `index` of the current epoch. REQUIRES: index < batch_count().
  std::span<const std::int64_t> batch(std::int64_t index) const;

 private:
  std::int64_t count_;
  std::int64_t batch_size_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
  std::vector<std::int64_t> order_;
};

// Copies the examples at `indices` into images [indices.size(), rows * cols] and labels (as
// int32, what the loss kernel takes). REQUIRES: every index < data.count.
void gather_batch(const LabelledImages& data, std::span<const std::int64_t> indices, Tensor<float>& images,
                  std::vector<std::int32_t>& labels);

}  // namespace strata::real
