#include "strata/traces/json_stream.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <new>
#include <system_error>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace traces {
namespace {

std::string errno_text(int error) { return std::generic_category().message(error); }

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line L,
// column C: " prefix (the place is already in our own prefix); other exceptions (406, a number
// out of range) lose their "[json.exception.out_of_range.406] " tag.
std::string parse_problem(const std::string& what) {
  std::size_t at = what.find("parse error");
  if (at != std::string::npos) {
    std::size_t colon = what.find(": ", at);
    return colon == std::string::npos ? what : what.substr(colon + 2);
  }
  std::size_t tag = what.find("] ");
  return what.starts_with("[json.exception.") && tag != std::string::npos ? what.substr(tag + 2) : what;
}

// 4294967296 -> "4 GiB", 1048576 -> "1 MiB", 1000 -> "1000 bytes".
std::string size_text(std::uint64_t bytes) {
  if (bytes != 0 && bytes % (std::uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes != 0 && bytes % (std::uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// The bytes of one input (a file descriptor read in 64 KiB chunks, or text in memory), with the
// line and column of the last two bytes handed out, for parse errors.
class ByteSource {
 public:
  ByteSource(const std::string& path, std::uint64_t non_regular_cap) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(input_error_message(path, "", "cannot open: " + errno_text(errno)));
    struct stat st {};
    // A regular file is read up to its size when opened; /proc files say 0 and are capped.
    regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
    limit_ = regular_ ? static_cast<std::uint64_t>(st.st_size) : non_regular_cap;
    buffer_.resize(kChunk);
  }
  explicit ByteSource(std::string_view text) : data_(text.data()), length_(text.size()) {}
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  ~ByteSource() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool has_byte() { return position_ < length_ || refill(); }
  char peek() const { return data_[position_]; }
  void advance() {
    previous_ = last_;
    last_ = Place{offset_, line_, line_start_};
    if (data_[position_++] == '\n') {
      ++line_;
      line_start_ = offset_ + 1;
    }
    ++offset_;
  }
  std::uint64_t offset() const { return offset_; }

  // "line:column" (both 1-based) of the byte the parser stopped at. nlohmann reports `byte` as the
  // count of bytes read, so the offending byte is at index byte - 1.
  std::string line_column(std::uint64_t byte) const {
    const std::uint64_t at = std::min(byte == 0 ? 0 : byte - 1, offset_);
    Place place{offset_, line_, line_start_};
    if (at == last_.offset) place = last_;
    if (at == previous_.offset) place = previous_;
    return std::to_string(place.line) + ":" + std::to_string(at - place.line_start + 1);
  }

 private:
  static constexpr std::size_t kChunk = std::size_t{1} << 16;
  struct Place {
    std::uint64_t offset = UINT64_MAX, line = 1, line_start = 0;
  };

  bool refill() {
    if (fd_ < 0) return false;
    for (;;) {
      const std::uint64_t left = limit_ - consumed_;
      // One byte past the cap tells a stream that ends there from one that goes on.
      std::size_t want = regular_ ? std::min<std::uint64_t>(left, kChunk) : kChunk;
      if (want == 0) return false;
      ssize_t n = ::read(fd_, buffer_.data(), want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(input_error_message(path_, "", "cannot read: " + errno_text(errno)));
      if (n == 0) return false;
      consumed_ += static_cast<std::uint64_t>(n);
      if (!regular_ && consumed_ > limit_)
        throw InputError(
            input_error_message(path_, "",
                                "more than " + size_text(limit_) +
                                    " from an input that is not a regular file (pipe or device); refused"));
      data_ = buffer_.data();
      length_ = static_cast<std::size_t>(n);
      position_ = 0;
      return true;
    }
  }

  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
  std::uint64_t limit_ = 0, consumed_ = 0;
  std::vector<char> buffer_;
  const char* data_ = nullptr;
  std::size_t length_ = 0, position_ = 0;
  std::uint64_t offset_ = 0, line_ = 1, line_start_ = 0;
  Place last_, previous_;
};

// The input iterator nlohmann's iterator adapter reads; only ever compared with the end.
class ByteIterator {
 public:
  // NOLINTBEGIN(readability-identifier-naming): the names std::iterator_traits reads
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;
  // NOLINTEND(readability-identifier-naming)

  explicit ByteIterator(ByteSource* source = nullptr) : source_(source) {}
  char operator*() const { return source_->peek(); }
  ByteIterator& operator++() {
    source_->advance();
    return *this;
  }
  bool operator==(const ByteIterator& other) const { return at_end() == other.at_end(); }

 private:
  bool at_end() const { return source_ == nullptr || !source_->has_byte(); }
  ByteSource* source_;
};

// A SAX handler that builds the document, except the elements of the streamed top-level arrays,
// which it builds one at a time and hands over.
class StreamingBuilder {
 public:
  using Json = nlohmann::json;
  StreamingBuilder(const std::vector<std::string_view>& streamed, const JsonElementHandler& on_element,
                   const ByteSource& input, const std::string& source)
      : streamed_(streamed), on_element_(on_element), input_(input), source_(source) {}

  Json& root() { return root_; }
  Json& element() { return element_; }

  bool null() { return add(Json(nullptr)); }
  bool boolean(bool v) { return add(Json(v)); }
  bool number_integer(std::int64_t v) { return add(Json(v)); }
  bool number_unsigned(std::uint64_t v) { return add(Json(v)); }
  bool number_float(double v, const std::string& /*text*/) { return add(Json(v)); }
  bool string(std::string& v) { return add(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return add(Json(std::move(v))); }
  bool start_object(std::size_t /*size*/) { return add(Json::object()); }
  bool start_array(std::size_t /*size*/) { return add(Json::array()); }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t byte, const std::string& /*token*/, const nlohmann::detail::exception& e) {
    throw InputError(source_ + ":" + input_.line_column(byte) + ": parse error: " + parse_problem(e.what()));
  }

 private:
  static bool is_container(const Json& v) { return v.is_object() || v.is_array(); }

  // A streamed array: nullptr on the stack stands for it.
  bool starts_streamed_array(const Json& value) {
    if (stack_.size() != 1 || stack_.back() != &root_ || !value.is_array()) return false;
    if (std::find(streamed_.begin(), streamed_.end(), key_) == streamed_.end()) return false;
    if (root_.contains(key_)) throw InputError(input_error_message(source_, "/" + key_, "duplicate field"));
    root_[key_] = Json::array();
    streamed_name_ = key_;
    index_ = 0;
    stack_.push_back(nullptr);
    return true;
  }

  bool add(Json value) {
    const bool container = is_container(value);
    if (stack_.empty()) {
      if (!streamed_.empty() && value.is_array())
        throw InputError(input_error_message(source_, "", "expected an object, got an array"));
      root_ = std::move(value);
      if (container) stack_.push_back(&root_);
      return true;
    }
    Json* top = stack_.back();
    if (top == nullptr) {
      element_ = std::move(value);
      if (container)
        stack_.push_back(&element_);
      else
        hand_over();
      return true;
    }
    if (starts_streamed_array(value)) return true;
    Json* slot = nullptr;
    if (top->is_array()) {
      top->push_back(std::move(value));
      slot = &top->back();
    } else {
      // A key twice in one object: nlohmann's DOM would keep the last silently, and the streamed
      // readers (read_plan) see the first; both refuse it instead.
      if (top->contains(key_))
        throw InputError(input_error_message(source_, top == &root_ ? "/" + json_pointer_token(key_) : "",
                                             "duplicate key " + quote_for_message(key_) + " in one object"));
      slot = &(*top)[key_];
      *slot = std::move(value);
    }
    if (container) stack_.push_back(slot);
    return true;
  }

  bool close() {
    stack_.pop_back();
    if (!stack_.empty() && stack_.back() == nullptr) hand_over();
    return true;
  }

  void hand_over() {
    on_element_(streamed_name_, index_++, element_, root_);
    element_ = Json();
  }

  const std::vector<std::string_view>& streamed_;
  const JsonElementHandler& on_element_;
  const ByteSource& input_;
  const std::string& source_;
  Json root_;
  Json element_;
  std::vector<Json*> stack_;
  std::string key_;
  std::string streamed_name_;
  std::size_t index_ = 0;
};

nlohmann::json run_parser(ByteSource& input, const std::string& source,
                          const std::vector<std::string_view>& streamed,
                          const JsonElementHandler& on_element) {
  StreamingBuilder builder(streamed, on_element, input, source);
  try {
    nlohmann::json::sax_parse(ByteIterator(&input), ByteIterator(), &builder);
  } catch (const std::bad_alloc&) {
    dismantle_json(builder.element());
    dismantle_json(builder.root());
    throw;
  }
  return std::move(builder.root());
}

// The last child of a non-empty container.
nlohmann::json& last_child(nlohmann::json& v) {
  return v.is_array() ? v.back() : std::prev(v.get_ref<nlohmann::json::object_t&>().end())->second;
}

void remove_last_child(nlohmann::json& v) {
  if (v.is_array()) {
    v.get_ref<nlohmann::json::array_t&>().pop_back();
  } else {
    auto& object = v.get_ref<nlohmann::json::object_t&>();
    object.erase(std::prev(object.end()));
  }
}

bool non_empty_container(const nlohmann::json& v) { return (v.is_array() || v.is_object()) && !v.empty(); }

}  // namespace

nlohmann::json stream_json_file(const std::string& path, const std::vector<std::string_view>& streamed,
                                const JsonElementHandler& on_element, std::uint64_t max_non_regular_bytes) {
  note_input(path);
  ByteSource input(path, max_non_regular_bytes);
  return run_parser(input, path, streamed, on_element);
}

nlohmann::json stream_json_text(std::string_view text, const std::string& source,
                                const std::vector<std::string_view>& streamed,
                                const JsonElementHandler& on_element) {
  ByteSource input(text);
  return run_parser(input, source, streamed, on_element);
}

std::uint64_t memory_available_bytes() {
  std::uint64_t available = UINT64_MAX;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      unsigned long long kib = 0;
      if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
        available = static_cast<std::uint64_t>(kib) * 1024;
        break;
      }
    }
    std::fclose(f);
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::uint64_t mapped = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      unsigned long pages = 0;
      if (std::fscanf(f, "%lu", &pages) == 1)
        mapped = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
      std::fclose(f);
    }
    const auto cap = static_cast<std::uint64_t>(limit.rlim_cur);
    available = std::min(available, cap > mapped ? cap - mapped : 0);
  }
  return available;
}

std::string address_space_in_use() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return "";
  unsigned long pages = 0;
  const bool read = std::fscanf(f, "%lu", &pages) == 1;
  std::fclose(f);
  if (!read) return "";
  const double gb = static_cast<double>(pages) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1e9;
  char text[64];
  std::snprintf(text, sizeof text, "%.2f GB of address space in use", gb);
  return text;
}

void dismantle_json(nlohmann::json& value) noexcept {
  // Removing only children that hold nothing (scalars, empty containers) frees memory without
  // ever making nlohmann::json's destructor allocate its flattening stack.
  while (non_empty_container(value)) {
    nlohmann::json* node = &value;
    while (non_empty_container(last_child(*node))) node = &last_child(*node);
    remove_last_child(*node);
  }
}

}  // namespace traces
}  // namespace strata
