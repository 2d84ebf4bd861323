#include "output_target.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <string_view>
#include <system_error>
#include <vector>

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
// pointers, unlinks them, writes one line, restores the default action and raises the signal
// again. Names are owned by the process that registered them: a forked child that gets the signal
// leaves its parent's and says nothing (the parent speaks for the command).

constexpr std::size_t kSlots = 256;
std::array<std::atomic<char*>, kSlots> g_temporaries{};
std::array<std::atomic<pid_t>, kSlots> g_owners{};
std::atomic<pid_t> g_speaker{0};  // the process that says "interrupted"

void write_stderr(const char* text) {
  const std::size_t n = std::strlen(text);
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text, n);
}

void on_signal(int signal) {
  const int saved = errno;
  const pid_t self = ::getpid();
  for (std::size_t i = 0; i < kSlots; ++i)
    if (char* name = g_temporaries[i].load(); name != nullptr && g_owners[i].load() == self) ::unlink(name);
  if (g_speaker.load() == self)
    write_stderr(signal == SIGINT ? "strata: interrupted (SIGINT)\n" : "strata: terminated (SIGTERM)\n");
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
  errno = saved;
  ::raise(signal);
}

// Installs on_signal for `signal` unless the signal is ignored (nohup, a background job of a
// shell without job control): an ignored signal stays ignored.
void install_handler(int signal) {
  struct sigaction current {};
  if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) return;
  if (current.sa_handler == on_signal) return;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
}

void install_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    install_handler(SIGINT);
    install_handler(SIGTERM);
  });
}

// ---- names of temporaries ---------------------------------------------------------------------
// `.strata-<pid>-<pid namespace>-<random>-<host>.tmp`: a name no user chooses, which says which
// process on which machine (and in which container: a pid namespace) made it. A stale one is
// removed only where all three are ours and the pid is gone, so a live process's temporary (here,
// on another host sharing the folder, or in another container) is never touched.

constexpr std::string_view kTemporaryPrefix = ".strata-";
constexpr std::string_view kTemporarySuffix = ".tmp";

// The host name, reduced to letters, digits and '_' (at most 32 of them).
const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = "";
    if (::gethostname(name, sizeof name - 1) != 0) return std::string("unknown");
    std::string t;
    for (const char* c = name; *c != '\0' && t.size() < 32; ++c)
      t += std::isalnum(static_cast<unsigned char>(*c)) != 0 ? *c : '_';
    return t.empty() ? std::string("unknown") : t;
  }();
  return tag;
}

// The inode of this process's pid namespace ("pid:[4026531836]"), or "0" where /proc says nothing.
const std::string& pid_namespace_tag() {
  static const std::string tag = [] {
    char link[64] = "";
    const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
    std::string t;
    for (ssize_t i = 0; i < n; ++i)
      if (link[i] >= '0' && link[i] <= '9') t += link[i];
    return t.empty() ? std::string("0") : t;
  }();
  return tag;
}

std::string random_tag() {
  static std::mutex mutex;
  static std::random_device device;
  std::lock_guard<std::mutex> lock(mutex);
  const std::uint64_t r = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(r));
  return text;
}

std::string temporary_name() {
  return std::string(kTemporaryPrefix) + std::to_string(::getpid()) + "-" + pid_namespace_tag() + "-" +
         random_tag() + "-" + host_tag() + std::string(kTemporarySuffix);
}

// The pid of a temporary this host and pid namespace made, or 0 for any other name.
pid_t own_temporary_pid(const std::string& name) {
  if (name.size() <= kTemporaryPrefix.size() + kTemporarySuffix.size() ||
      name.compare(0, kTemporaryPrefix.size(), kTemporaryPrefix) != 0 ||
      name.compare(name.size() - kTemporarySuffix.size(), kTemporarySuffix.size(), kTemporarySuffix) != 0)
    return 0;
  const std::string body =
      name.substr(kTemporaryPrefix.size(), name.size() - kTemporaryPrefix.size() - kTemporarySuffix.size());
  std::vector<std::string> fields;
  std::size_t from = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t dash = body.find('-', from);
    if (dash == std::string::npos) return 0;
    fields.push_back(body.substr(from, dash - from));
    from = dash + 1;
  }
  if (body.substr(from) != host_tag() || fields[1] != pid_namespace_tag() || fields[2].size() != 16) return 0;
  const std::string& digits = fields[0];
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return static_cast<pid_t>(std::stol(digits));
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
  const std::string tmp = new_temporary_path(target.folder);
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

std::string new_temporary_path(const std::string& folder) {
  return (fs::path(folder.empty() ? "." : folder) / temporary_name()).string();
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
    const pid_t pid = own_temporary_pid(name);
    if (pid <= 0 || pid == self || !process_gone(pid)) continue;
    const std::string path = (fs::path(folder.empty() ? "." : folder) / name).string();
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

namespace {

// A rank started by an MPI launcher (Open MPI, MPICH/Hydra, PMIx, Slurm's srun): the launcher
// sends SIGTERM to every rank when one fails or its user presses Ctrl-C, and says so itself; a
// line from each rank would only repeat it.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

}  // namespace

void install_interrupt_handlers() {
  g_speaker.store(launched_by_mpi() ? 0 : ::getpid());
  install_handler(SIGINT);
  install_handler(SIGTERM);
}

}  // namespace traces
}  // namespace strata
