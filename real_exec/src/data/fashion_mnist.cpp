#include "strata/real/data/fashion_mnist.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <utility>

#include "strata/traces/error.hpp"
#include "strata/traces/random_draws.hpp"

namespace strata::real {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;
constexpr std::uint32_t kLabelsMagic = 0x00000801;
// A guard against allocating whatever a corrupt header claims: 2^31 bytes is ~45 times the
// Fashion-MNIST training set.
constexpr std::int64_t kMaxPayloadBytes = std::int64_t{1} << 31;
// Deflate's largest expansion: a gzip file of n bytes holds at most about 1032 n bytes.
constexpr std::int64_t kMaxGzipRatio = 1032;

std::string hex32(std::uint32_t value) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), "0x%08x", value);
  return text.data();
}

// A gzip (or plain) file read front to back, tracking the byte offset for error messages.
class IdxFile {
 public:
  explicit IdxFile(std::string path) : path_(std::move(path)), file_(gzopen(path_.c_str(), "rb")) {
    if (file_ != nullptr) return;
    const std::string problem = std::filesystem::exists(path_)
                                    ? "cannot open file"
                                    : "missing file (install dataset-fashion-mnist or set "
                                      "STRATA_FASHION_MNIST)";
    throw InputError(input_error_message(path_, "", problem));
  }

  const std::string& path() const { return path_; }
  std::int64_t offset() const { return offset_; }

  [[noreturn]] void fail(std::int64_t at, const std::string& problem) const {
    throw InputError(input_error_message(path_, "byte " + std::to_string(at), problem));
  }

  // Reads up to `size` bytes and returns how many came. zlib hands over what it decompressed
  // before a damaged or cut stream and reports the damage on the next call, so the offset in
  // the message is where the readable data ends.
  std::int64_t read(unsigned char* out, std::int64_t size) {
    std::int64_t done = 0;
    while (done < size) {
      const auto chunk = static_cast<unsigned>(std::min<std::int64_t>(size - done, 1 << 30));
      const int got = gzread(file_.get(), out + done, chunk);
      if (got > 0) {
        done += got;
        continue;
      }
      int error = Z_OK;
      const char* message = gzerror(file_.get(), &error);
      if (got < 0 || error != Z_OK) {
        fail(offset_ + done, "corrupt or truncated gzip stream: " + without_path(message));
      }
      break;  // a clean end of file
    }
    offset_ += done;
    return done;
  }

  std::uint32_t read_u32(const char* what) {
    std::array<unsigned char, 4> b{};
    const std::int64_t at = offset_;
    if (read(b.data(), 4) != 4) fail(at, std::string("truncated header: no ") + what);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  }

  void expect_magic(std::uint32_t expected, const char* kind) {
    const std::uint32_t magic = read_u32("magic number");
    if (magic != expected) {
      fail(0, "bad IDX magic " + hex32(magic) + " (expected " + hex32(expected) + " for " + kind + ")");
    }
  }

  // Refuses a header that declares more payload than the file can hold, before anything is
  // allocated for it: exactly what follows the header in a plain file, deflate's largest
  // expansion of the file's size in a gzip file. (A 116-byte file once made `run` zero 2.2 GB.)
  void check_declared(std::int64_t size, const std::string& what, std::int64_t header_at) {
    std::error_code error;
    const auto bytes = std::filesystem::file_size(path_, error);
    if (error || !std::filesystem::is_regular_file(path_, error)) return;  // a pipe: read_payload bounds it
    const auto file_bytes = static_cast<std::int64_t>(bytes);
    const bool plain = gzdirect(file_.get()) == 1;
    const std::int64_t most = plain ? file_bytes - offset_ : file_bytes * kMaxGzipRatio;
    if (size <= most) return;
    fail(header_at, "the header declares " + std::to_string(size) + " bytes of " + what +
                        ", more than this " + std::to_string(file_bytes) + "-byte " +
                        (plain ? "file holds after its header" : "gzip file can hold") + " (at most " +
                        std::to_string(most) + ")");
  }

  // Reads exactly `size` payload bytes, then checks nothing follows them. The buffer grows with
  // what is read (1 MiB at a time), so a cut file costs only what it holds.
  std::vector<unsigned char> read_payload(std::int64_t size, const std::string& what) {
    constexpr std::int64_t kStep = std::int64_t{1} << 20;
    std::vector<unsigned char> bytes;
    const std::int64_t start = offset_;
    std::int64_t got = 0;
    while (got < size) {
      const std::int64_t want = std::min(kStep, size - got);
      bytes.resize(static_cast<std::size_t>(got + want));
      const std::int64_t n = read(bytes.data() + got, want);
      got += n;
      if (n < want) break;
    }
    if (got != size) {
      fail(start + got, "truncated data: expected " + std::to_string(size) + " bytes of " + what +
                            " after the header, got " + std::to_string(got));
    }
    unsigned char extra = 0;
    if (read(&extra, 1) != 0) fail(offset_ - 1, "unexpected bytes after the " + what);
    return bytes;
  }

 private:
  // gzerror prefixes its message with the path, which the error line already starts with.
  std::string without_path(const std::string& message) const {
    const std::string prefix = path_ + ": ";
    return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
  }

  struct GzClose {
    void operator()(gzFile f) const { gzclose(f); }
  };
  std::string path_;
  std::unique_ptr<gzFile_s, GzClose> file_;
  std::int64_t offset_ = 0;
};

void read_images(const std::string& path, LabelledImages& out) {
  IdxFile file(path);
  file.expect_magic(kImagesMagic, "images");
  const std::int64_t count = file.read_u32("image count");
  out.rows = file.read_u32("row count");
  out.cols = file.read_u32("column count");
  if (out.rows == 0 || out.cols == 0) {
    file.fail(8, "empty image size " + std::to_string(out.rows) + "x" + std::to_string(out.cols));
  }
  // Checked factor by factor: the product of three 32-bit dimensions can overflow 64 bits.
  if (out.rows * out.cols > kMaxPayloadBytes || count > kMaxPayloadBytes / (out.rows * out.cols)) {
    file.fail(4, "implausible size: " + std::to_string(count) + " images of " + std::to_string(out.rows) +
                     "x" + std::to_string(out.cols));
  }
  const std::int64_t pixels = count * out.rows * out.cols;
  file.check_declared(pixels, "pixels", 4);
  const std::vector<unsigned char> bytes = file.read_payload(pixels, "pixels");
  out.count = count;
  out.images = Tensor<float>::zeros({count, out.rows * out.cols});
  float* values = out.images.data();
  for (std::int64_t i = 0; i < pixels; ++i) values[i] = static_cast<float>(bytes[i]) / 255.0f;
}

void read_labels(const std::string& path, const std::string& images_path, LabelledImages& out) {
  IdxFile file(path);
  file.expect_magic(kLabelsMagic, "labels");
  const std::int64_t count = file.read_u32("label count");
  if (count != out.count) {
    file.fail(
        4, std::to_string(count) + " labels for " + std::to_string(out.count) + " images in " + images_path);
  }
  const std::int64_t header = file.offset();
  file.check_declared(count, "labels", 4);
  std::vector<unsigned char> bytes = file.read_payload(count, "labels");
  for (std::int64_t i = 0; i < count; ++i) {
    if (bytes[i] >= kFashionMnistClasses) {
      file.fail(header + i, "label " + std::to_string(bytes[i]) + " out of range [0, " +
                                std::to_string(kFashionMnistClasses - 1) + "]");
    }
  }
  out.labels.assign(bytes.begin(), bytes.end());
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::string fashion_mnist_dir() {
  const char* env = std::getenv("STRATA_FASHION_MNIST");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kFashionMnistDefaultDir);
}

LabelledImages load_fashion_mnist(const std::string& dir, DatasetSplit split) {
  const std::string prefix = split == DatasetSplit::train ? "train" : "t10k";
  const std::string images_path = (std::filesystem::path(dir) / (prefix + "-images-idx3-ubyte.gz")).string();
  const std::string labels_path = (std::filesystem::path(dir) / (prefix + "-labels-idx1-ubyte.gz")).string();
  LabelledImages out;
  read_images(images_path, out);
  read_labels(labels_path, images_path, out);
  return out;
}

LabelledImages load_fashion_mnist(DatasetSplit split) {
  return load_fashion_mnist(fashion_mnist_dir(), split);
}

std::vector<std::int64_t> shuffled_indices(std::int64_t count, std::mt19937_64& rng) {
  STRATA_ASSERT(count >= 0, "shuffle of " + std::to_string(count) + " elements");
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) order[i] = i;
  for (std::int64_t i = count - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(uniform_below(static_cast<std::uint64_t>(i) + 1, rng));
    std::swap(order[i], order[j]);
  }
  return order;
}

EpochBatches::EpochBatches(std::int64_t count, std::int64_t batch_size, std::uint64_t seed)
    : count_(count), batch_size_(batch_size), seed_(seed) {
  STRATA_ASSERT(count >= 0 && batch_size > 0,
                "batches of " + std::to_string(batch_size) + " over " + std::to_string(count) + " examples");
  start_epoch(0);
}

void EpochBatches::start_epoch(std::int64_t epoch) {
  STRATA_ASSERT(epoch >= 0, "epoch " + std::to_string(epoch));
  epoch_ = epoch;
  // Mixing (seed, epoch) through splitmix64 gives unrelated streams for neighbouring epochs.
  std::mt19937_64 rng(splitmix64(seed_ ^ splitmix64(static_cast<std::uint64_t>(epoch))));
  order_ = shuffled_indices(count_, rng);
}

std::int64_t EpochBatches::batch_count() const { return (count_ + batch_size_ - 1) / batch_size_; }

std::span<const std::int64_t> EpochBatches::batch(std::int64_t index) const {
  STRATA_ASSERT(index >= 0 && index < batch_count(),
                "batch " + std::to_string(index) + " of " + std::to_string(batch_count()));
  const std::int64_t begin = index * batch_size_;
  const std::int64_t size = std::min(batch_size_, count_ - begin);
  return std::span<const std::int64_t>(order_).subspan(static_cast<std::size_t>(begin),
                                                       static_cast<std::size_t>(size));
}

void gather_batch(const LabelledImages& data, std::span<const std::int64_t> indices, Tensor<float>& images,
                  std::vector<std::int32_t>& labels) {
  const std::int64_t pixels = data.rows * data.cols;
  const auto n = static_cast<std::int64_t>(indices.size());
  images = Tensor<float>::zeros({n, pixels});
  labels.resize(indices.size());
  for (std::int64_t b = 0; b < n; ++b) {
    const std::int64_t i = indices[b];
    STRATA_ASSERT(i >= 0 && i < data.count,
                  "example " + std::to_string(i) + " of " + std::to_string(data.count));
    std::copy_n(data.images.data() + i * pixels, pixels, images.data() + b * pixels);
    labels[b] = data.labels[i];
  }
}

}  // namespace strata::real
