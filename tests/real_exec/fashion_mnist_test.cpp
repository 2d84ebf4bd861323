// Fashion-MNIST reader: the real files, one-line errors naming the file for broken ones
// (written into a temporary directory with zlib), and the seeded batch order.
#include "strata/real/data/fashion_mnist.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

using Bytes = std::vector<unsigned char>;

void append_be32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

Bytes idx_images(std::uint32_t magic, std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                 std::size_t pixel_bytes) {
  Bytes out;
  for (std::uint32_t v : {magic, count, rows, cols}) append_be32(out, v);
  for (std::size_t i = 0; i < pixel_bytes; ++i) out.push_back(static_cast<unsigned char>(i % 256));
  return out;
}

Bytes idx_labels(const Bytes& labels) {
  Bytes out;
  append_be32(out, 0x00000801);
  append_be32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// A fresh directory per test, removed afterwards.
class FashionMnistFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_fmnist_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path images() const { return dir_ / "t10k-images-idx3-ubyte.gz"; }
  fs::path labels() const { return dir_ / "t10k-labels-idx1-ubyte.gz"; }

  // The message of the InputError that loading the test split throws ("" if none).
  std::string load_error() const {
    try {
      load_fashion_mnist(dir_.string(), DatasetSplit::test);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

auto one_line_about(const fs::path& file, const std::string& problem) {
  return AllOf(HasSubstr(file.string() + ": "), HasSubstr(problem), Not(HasSubstr("\n")));
}

TEST(FashionMnist, TrainSetHas60000BalancedImagesOf28x28InZeroOne) {
  const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  EXPECT_EQ(train.count, 60000);
  EXPECT_EQ(train.rows, 28);
  EXPECT_EQ(train.cols, 28);
  EXPECT_EQ(train.images.shape(), (Shape{60000, 784}));
  ASSERT_EQ(train.labels.size(), 60000u);
  EXPECT_EQ(train.labels[0], 9);  // the first training image is an ankle boot
  const auto [lo, hi] = std::minmax_element(train.images.values().begin(), train.images.values().end());
  EXPECT_EQ(*lo, 0.0f);
  EXPECT_EQ(*hi, 1.0f);
  for (int c = 0; c < kFashionMnistClasses; ++c) {
    EXPECT_EQ(std::count(train.labels.begin(), train.labels.end(), c), 6000) << "class " << c;
  }
}

TEST(FashionMnist, TestSetHas10000Images) {
  const LabelledImages test = load_fashion_mnist(fashion_mnist_dir(), DatasetSplit::test);
  EXPECT_EQ(test.count, 10000);
  EXPECT_EQ(test.images.shape(), (Shape{10000, 784}));
  EXPECT_EQ(test.labels.size(), 10000u);
}

TEST_F(FashionMnistFiles, MissingDirectoryNamesTheFile) {
  const fs::path missing = dir_ / "nowhere";
  try {
    load_fashion_mnist(missing.string(), DatasetSplit::train);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(),
                one_line_about(missing / "train-images-idx3-ubyte.gz",
                               "missing file (install dataset-fashion-mnist or set STRATA_FASHION_MNIST)"));
  }
}

TEST_F(FashionMnistFiles, WrongMagicNamesTheFileAndByte) {
  write_gz(images(), idx_images(0x00000801, 1, 2, 2, 4));
  EXPECT_THAT(load_error(),
              one_line_about(images(), "byte 0: bad IDX magic 0x00000801 (expected 0x00000803 for images)"));
}

TEST_F(FashionMnistFiles, TruncatedPixelsNameTheFile) {
  write_gz(images(), idx_images(0x00000803, 10, 28, 28, 784 * 3 + 5));
  EXPECT_THAT(load_error(),
              one_line_about(images(), "byte 2373: truncated data: expected 7840 bytes of pixels"));
}

TEST_F(FashionMnistFiles, TruncatedHeaderNamesTheFile) {
  Bytes header = idx_images(0x00000803, 10, 28, 28, 0);
  header.resize(10);
  write_gz(images(), header);
  EXPECT_THAT(load_error(), one_line_about(images(), "byte 8: truncated header"));
}

// 116 bytes declaring 2.7 million images: refused from the file's size before the 2.1 GB of
// pixels are allocated (they were allocated and zeroed before the truncation was seen).
TEST_F(FashionMnistFiles, HeaderDeclaringMoreThanTheFileHoldsIsRefusedBeforeAllocating) {
  write_gz(images(), idx_images(0x00000803, 2700000, 28, 28, 100));
  EXPECT_THAT(load_error(), one_line_about(images(),
                                           "byte 4: the header declares 2116800000 bytes of pixels, "
                                           "more than this"));
  // A plain (not gzipped) file is held to exactly what follows its header.
  std::ofstream(images(), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(idx_images(0x00000803, 3, 2, 2, 11).data()), 16 + 11);
  EXPECT_THAT(load_error(), one_line_about(images(),
                                           "byte 4: the header declares 12 bytes of pixels, more than "
                                           "this 27-byte file holds after its header (at most 11)"));
}

TEST_F(FashionMnistFiles, CutGzipStreamNamesTheFile) {
  write_gz(images(), idx_images(0x00000803, 100, 28, 28, 78400));
  const auto size = fs::file_size(images());
  fs::resize_file(images(), size / 2);
  const std::string error = load_error();
  EXPECT_THAT(error, one_line_about(images(), "corrupt or truncated gzip stream: unexpected end of file"));
  // The offset is where the readable data ends: past the header, before the last pixel.
  const std::size_t at = error.find(": byte ");
  ASSERT_NE(at, std::string::npos) << error;
  const long byte = std::stol(error.substr(at + 7));
  EXPECT_GT(byte, 16);
  EXPECT_LT(byte, 16 + 78400);
  EXPECT_EQ(error.find(images().string(), at), std::string::npos) << "path repeated: " << error;
}

TEST_F(FashionMnistFiles, LabelCountDifferentFromImageCount) {
  write_gz(images(), idx_images(0x00000803, 3, 2, 2, 12));
  write_gz(labels(), idx_labels({1, 2}));
  EXPECT_THAT(load_error(), one_line_about(labels(), "2 labels for 3 images in " + images().string()));
}

TEST_F(FashionMnistFiles, LabelOutOfRangeNamesItsByte) {
  write_gz(images(), idx_images(0x00000803, 3, 2, 2, 12));
  write_gz(labels(), idx_labels({1, 12, 2}));
  EXPECT_THAT(load_error(), one_line_about(labels(), "byte 9: label 12 out of range [0, 9]"));
}

TEST_F(FashionMnistFiles, SmallValidFilesLoadThroughTheEnvironmentVariable) {
  write_gz(images(), idx_images(0x00000803, 3, 2, 2, 12));
  write_gz(labels(), idx_labels({1, 0, 9}));
  ASSERT_EQ(::setenv("STRATA_FASHION_MNIST", dir_.c_str(), 1), 0);
  EXPECT_EQ(fashion_mnist_dir(), dir_.string());
  const LabelledImages data = load_fashion_mnist(DatasetSplit::test);
  ::unsetenv("STRATA_FASHION_MNIST");
  EXPECT_EQ(fashion_mnist_dir(), kFashionMnistDefaultDir);
  EXPECT_EQ(data.count, 3);
  EXPECT_EQ(data.images.shape(), (Shape{3, 4}));
  EXPECT_EQ(data.images[5], 5.0f / 255.0f);
  EXPECT_EQ(data.labels, (std::vector<std::uint8_t>{1, 0, 9}));
}

TEST(FashionMnistBatches, EpochOrderIsASeededPermutation) {
  EpochBatches batches(10, 4, 123);
  ASSERT_EQ(batches.batch_count(), 3);
  EXPECT_EQ(batches.batch(2).size(), 2u);  // the remainder
  std::vector<std::int64_t> epoch0;
  for (std::int64_t b = 0; b < 3; ++b)
    epoch0.insert(epoch0.end(), batches.batch(b).begin(), batches.batch(b).end());
  EXPECT_EQ(std::set<std::int64_t>(epoch0.begin(), epoch0.end()).size(), 10u);
  EXPECT_EQ(*std::max_element(epoch0.begin(), epoch0.end()), 9);

  EpochBatches same(10, 4, 123);
  EXPECT_TRUE(std::ranges::equal(same.batch(0), batches.batch(0)));
  batches.start_epoch(1);
  std::vector<std::int64_t> epoch1;
  for (std::int64_t b = 0; b < 3; ++b)
    epoch1.insert(epoch1.end(), batches.batch(b).begin(), batches.batch(b).end());
  EXPECT_NE(epoch1, epoch0);
  batches.start_epoch(0);  // any epoch can be recomputed on its own
  EXPECT_TRUE(std::ranges::equal(batches.batch(0), same.batch(0)));
}

TEST(FashionMnistBatches, ShuffleIsUniformOverPositions) {
  // Each of 4 elements lands in each of 4 positions with probability 1/4.
  std::mt19937_64 rng(9);
  int counts[4][4] = {};
  const int trials = 40000;
  for (int t = 0; t < trials; ++t) {
    const std::vector<std::int64_t> order = shuffled_indices(4, rng);
    for (int pos = 0; pos < 4; ++pos) ++counts[order[pos]][pos];
  }
  for (auto& row : counts)
    for (int c : row) EXPECT_NEAR(c, trials / 4.0, 400);  // ~4.6 standard deviations
}

TEST(FashionMnistBatches, GatherCopiesTheChosenExamples) {
  LabelledImages data;
  data.count = 3;
  data.rows = 1;
  data.cols = 2;
  data.images = Tensor<float>(Shape{3, 2}, {0.f, 0.1f, 1.f, 1.1f, 2.f, 2.1f});
  data.labels = {7, 8, 9};
  Tensor<float> images;
  std::vector<std::int32_t> labels;
  const std::vector<std::int64_t> indices = {2, 0};
  gather_batch(data, indices, images, labels);
  EXPECT_EQ(images.shape(), (Shape{2, 2}));
  EXPECT_EQ(images.values(), (std::vector<float>{2.f, 2.1f, 0.f, 0.1f}));
  EXPECT_EQ(labels, (std::vector<std::int32_t>{9, 7}));
}

}  // namespace
}  // namespace strata::real
