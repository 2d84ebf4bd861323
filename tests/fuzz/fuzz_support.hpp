// What every strata fuzz harness checks (docs/fuzzing.md): for any input, a reader either
// returns or throws InputError with one line that names its file or flag. Anything else is a
// finding: another exception type, a multi-line or unlocated message, a crash, an ASan or UBSan
// report, or a value that does not read back as itself after being written. A finding prints
// what was wrong and traps, so that libFuzzer saves the input as crash-<sha1>.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>

#include "strata/traces/error.hpp"

namespace strata::fuzz {

[[noreturn]] inline void finding(std::string_view what) {
  std::fprintf(stderr, "strata fuzz finding: %.*s\n", static_cast<int>(what.size()), what.data());
  __builtin_trap();
}

// Checks an InputError's message: one line, naming `where` (the file or flag).
inline void check_message(const InputError& error, std::string_view where) {
  const std::string_view message = error.what();
  if (message.find('\n') != std::string_view::npos)
    finding("InputError message of several lines: " + std::string(message));
  if (message.find(where) == std::string_view::npos)
    finding("InputError message does not name '" + std::string(where) + "': " + std::string(message));
}

// Runs `read`, which returns a value. InputError is the expected outcome for bad input (nullopt);
// any other exception is a finding.
template <class Read>
auto read_or_input_error(std::string_view where, Read&& read) -> std::optional<decltype(read())> {
  try {
    return read();
  } catch (const InputError& e) {
    check_message(e, where);
  } catch (const std::exception& e) {
    finding(std::string("exception other than InputError (") + typeid(e).name() + "): " + e.what());
  } catch (...) {
    finding("exception of a type that is not std::exception");
  }
  return std::nullopt;
}

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A file rewritten with each input, for readers that take a path; one per harness process,
// removed at exit. It lives in memory (/dev/shm) when it can: on a disk, ext4 flushes a file
// truncated and rewritten at every close (auto_da_alloc), which made the harnesses 20 times
// slower. STRATA_FUZZ_TMPDIR chooses another folder.
class InputFile {
 public:
  explicit InputFile(const std::string& suffix) {
    const char* dir = std::getenv("STRATA_FUZZ_TMPDIR");
    if (dir == nullptr || *dir == '\0') dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/strata-fuzz-XXXXXX" + suffix;
    const int fd = ::mkstemps(path_.data(), static_cast<int>(suffix.size()));
    if (fd < 0) finding("cannot create a temporary file in " + std::string(dir));
    ::close(fd);
  }
  ~InputFile() { ::unlink(path_.c_str()); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Replaces the file's contents with `text`; returns its path.
  const std::string& write(std::string_view text) const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) finding("cannot open the temporary file " + path_);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n <= 0) finding("cannot write the temporary file " + path_);
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return path_;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace strata::fuzz
