#include "output_target.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <system_error>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace traces {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw InputError(input_error_message(where, "", problem));
}

// ---- temporaries removed on SIGINT / SIGTERM ---------------------------------------------------
// The handler may only make async-signal-safe calls: it reads the names through lock-free atomic
// pointers, unlinks them, restores the previous action and raises the signal again. Names are
// owned by the process that registered them: a forked child that gets the signal leaves its
// parent's.

constexpr std::size_t kSlots = 256;
std::array<std::atomic<char*>, kSlots> g_temporaries{};
std::array<std::atomic<pid_t>, kSlots> g_owners{};
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

void on_signal(int signal) {
  const pid_t self = ::getpid();
  for (std::size_t i = 0; i < kSlots; ++i)
    if (char* name = g_temporaries[i].load(); name != nullptr && g_owners[i].load() == self) ::unlink(name);
  ::sigaction(signal, signal == SIGINT ? &g_previous_int : &g_previous_term, nullptr);
  ::raise(signal);
}

void install_handler(int signal, struct sigaction& previous) {
  struct sigaction current {};
  if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) return;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, &previous);
}

void install_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    install_handler(SIGINT, g_previous_int);
    install_handler(SIGTERM, g_previous_term);
  });
}

// ---- stale temporaries ----------------------------------------------------------------------

// The pid of a name ending in ".tmp.<digits>", or 0.
pid_t temporary_pid(const std::string& name) {
  const std::size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at + 5 >= name.size() || name.size() - at - 5 > 9) return 0;
  pid_t pid = 0;
  for (std::size_t i = at + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

void remove_stale_once(const std::string& folder) {
  static std::mutex mutex;
  static std::set<std::string> done;
  std::lock_guard<std::mutex> lock(mutex);
  if (!done.insert(folder).second) return;
  remove_stale_temporaries(folder);
}

std::string write_all(int fd, const std::string& content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_message(errno);
    done += static_cast<std::size_t>(n);
  }
  return "";
}

// The descriptor a path names without opening anything: "-", /dev/stdout, /dev/fd/N, ...; -1.
int named_descriptor(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::size_t n = std::strlen(prefix);
    if (path.compare(0, n, prefix) != 0 || path.size() == n || path.size() > n + 6) continue;
    int fd = 0;
    for (std::size_t i = n; i < path.size(); ++i) {
      if (path[i] < '0' || path[i] > '9') return -1;
      fd = fd * 10 + (path[i] - '0');
    }
    return fd;
  }
  return -1;
}

// The last target of a chain of symlinks starting at `path` (itself when it is no link).
fs::path follow_links(const std::string& path, const std::string& where) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    fs::path target = fs::read_symlink(p, ec);
    if (ec) fail(where, "cannot read the link: " + ec.message());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  fail(where, "too many levels of symbolic links");
}

void check_folder(const fs::path& folder, const std::string& where) {
  const std::string name = folder.empty() ? "." : folder.string();
  struct stat st {};
  if (::stat(name.c_str(), &st) != 0) fail(where, "folder " + quote_for_message(name) + " does not exist");
  if (!S_ISDIR(st.st_mode)) fail(where, quote_for_message(name) + " is not a folder");
  if (::access(name.c_str(), W_OK | X_OK) != 0)
    fail(where, "folder " + quote_for_message(name) + " is not writable (" + errno_message(errno) + ")");
}

}  // namespace

std::string errno_message(int error) { return std::generic_category().message(error); }

OutputTarget resolve_output(const std::string& path, const std::string& where) {
  OutputTarget t;
  if (path.empty()) fail(where, "empty path");
  if (int fd = named_descriptor(path); fd >= 0) {
    t.direct = true, t.fd = fd, t.path = path;
    return t;
  }
  const fs::path target = follow_links(path, where);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail(where, "is a directory");
    t.exists = true, t.dev = st.st_dev, t.ino = st.st_ino;
    if (!S_ISREG(st.st_mode)) {
      if (::access(target.c_str(), W_OK) != 0) fail(where, "cannot write: " + errno_message(errno));
      t.direct = true, t.path = target.string();
      return t;
    }
  }
  check_folder(target.parent_path(), where);
  // A link's target goes beside the target: its folder made canonical, the name kept.
  const bool linked = target.string() != path;
  t.folder = target.parent_path().empty() ? "." : target.parent_path().string();
  if (linked) t.folder = fs::canonical(t.folder).string();
  t.path = linked ? (fs::path(t.folder) / target.filename()).string() : path;
  return t;
}

void write_direct(const OutputTarget& target, const std::string& content, const std::string& where) {
  int fd = target.fd;
  if (fd < 0) fd = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) fail(where, "cannot open for writing: " + errno_message(errno));
  const std::string error = write_all(fd, content);
  if (target.fd < 0) ::close(fd);
  if (!error.empty()) fail(where, "cannot write: " + error);
}

std::string write_temporary(const OutputTarget& target, const OutputWriter& write, const std::string& where) {
  remove_stale_once(target.folder);
  install_handlers_once();
  const std::string tmp = target.path + ".tmp." + std::to_string(::getpid());
  register_temporary(tmp);
  const auto give_up = [&](int error) {
    ::unlink(tmp.c_str());
    forget_temporary(tmp);
    fail(where, "cannot write: " + errno_message(error == 0 ? EIO : error));
  };
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) give_up(errno);
  errno = 0;
  try {
    write(out);
  } catch (...) {
    out.close();
    ::unlink(tmp.c_str());
    forget_temporary(tmp);
    throw;
  }
  out.flush();
  if (!out.good()) give_up(errno);
  out.close();
  if (out.fail()) give_up(errno);
  // fsync before the rename: otherwise a crash can leave an empty file under the final name.
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    give_up(error);
  }
  ::close(fd);
  return tmp;
}

void register_temporary(const std::string& path) {
  char* name = ::strdup(path.c_str());
  if (name == nullptr) return;
  for (std::size_t i = 0; i < kSlots; ++i) {
    char* empty = nullptr;
    if (g_temporaries[i].compare_exchange_strong(empty, name)) {
      g_owners[i].store(::getpid());
      return;
    }
  }
  std::free(name);  // all slots taken: this one is not removed on a signal
}

void forget_temporary(const std::string& path) {
  for (std::atomic<char*>& slot : g_temporaries) {
    char* name = slot.load();
    if (name != nullptr && path == name && slot.compare_exchange_strong(name, nullptr)) {
      std::free(name);
      return;
    }
  }
}

int remove_stale_temporaries(const std::string& folder) {
  DIR* dir = ::opendir(folder.empty() ? "." : folder.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    const pid_t pid = temporary_pid(name);
    if (pid <= 0 || pid == self || !process_gone(pid)) continue;
    const std::string path = (fs::path(folder.empty() ? "." : folder) / name).string();
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

}  // namespace traces
}  // namespace strata
