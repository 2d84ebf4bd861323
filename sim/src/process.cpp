#include "strata/sim/process.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace sim {
namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
  int output = -1;  // a temporary file holding the child's stdout and stderr, or -1
};

void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// A temporary file, already unlinked, for a child's output: a file rather than a pipe, so that
// a child writing much while the parent waits for its result cannot block.
int output_file() {
  char path[] = "/tmp/strata-child-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) throw InputError(std::string("cannot create a temporary file: ") + std::strerror(errno));
  ::unlink(path);
  return fd;
}

Child spawn(const std::function<std::string()>& work, bool capture_output = false) {
  int fds[2];
  if (::pipe(fds) != 0) throw InputError(std::string("cannot create pipe: ") + std::strerror(errno));
  const int output = capture_output ? output_file() : -1;
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw InputError(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    // A child dies with its parent (SIGKILL when the parent ends, however it ends): a killed
    // explore leaves no replay running. The parent may have ended before this line.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(fds[0]);
    if (output >= 0) {
      ::dup2(output, STDOUT_FILENO);
      ::dup2(output, STDERR_FILENO);
    }
    std::string out;
    int status = 0;
    try {
      out = "ok\n" + work();
    } catch (const std::bad_alloc&) {
      out = "error\nout of memory in a simulation process; try a smaller model, strategy or Plan";
      status = 1;
    } catch (const std::exception& e) {
      out = std::string("error\n") + e.what();
      status = 1;
    }
    write_all(fds[1], out);
    ::close(fds[1]);
    ::_exit(status);  // skip destructors of the parent's state, including SimGrid's
  }
  ::close(fds[1]);
  return Child{pid, fds[0], output};
}

// The first line of what a child printed that says something: SimGrid's "[0.000000]
// [ker_lmm/CRITICAL]" prefixes and source locations are dropped, the backtrace that follows
// is not read.
std::string first_useful_line(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    for (const char* level : {"CRITICAL] ", "ERROR] ", "WARNING] ", "INFO] "}) {
      const std::size_t at = line.find(level);
      if (at != std::string::npos) {
        line.erase(0, at + std::strlen(level));
        break;
      }
    }
    while (!line.empty() && line.front() == '[' && line.find("] ") != std::string::npos)
      line.erase(0, line.find("] ") + 2);
    const std::size_t b = line.find_first_not_of(" \t\r");
    const std::size_t e = line.find_last_not_of(" \t\r");
    if (b != std::string::npos) return line.substr(b, e - b + 1);
  }
  return "";
}

std::string collect(Child child, const std::string& context = "") {
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(child.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string said;
  if (child.output >= 0) {
    said = first_useful_line(child.output);
    ::close(child.output);
  }
  const std::string prefix = context.empty() ? "" : context + ": ";
  // SimGrid's own signal handler says "Segmentation fault." again: not repeated.
  const bool repeats = WIFSIGNALED(status) && said.rfind(strsignal(WTERMSIG(status)), 0) == 0;
  const std::string because = said.empty() || repeats ? "" : ": " + said;
  if (WIFSIGNALED(status))
    throw InputError(prefix + "simulation process killed by signal " + strsignal(WTERMSIG(status)) + because);
  if (data.rfind("ok\n", 0) == 0) return data.substr(3);
  if (data.rfind("error\n", 0) == 0) throw InputError(data.substr(6));
  throw InputError(prefix + "simulation process ended without a result (exit status " +
                   std::to_string(WEXITSTATUS(status)) + ")" + because);
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& work) { return collect(spawn(work)); }

std::string run_in_quiet_child(const std::function<std::string()>& work, const std::string& context) {
  return collect(spawn(work, true), context);
}

std::vector<std::string> run_in_children(
    const std::vector<std::function<std::string()>>& jobs, int parallel,
    const std::function<void(std::size_t, const std::string&)>& on_done) {
  std::vector<std::string> results(jobs.size());
  std::size_t next = 0;
  while (next < jobs.size()) {
    std::vector<std::pair<std::size_t, Child>> batch;
    for (int p = 0; p < std::max(1, parallel) && next < jobs.size(); ++p, ++next)
      batch.emplace_back(next, spawn(jobs[next]));
    for (auto& [index, child] : batch) {
      results[index] = collect(child);
      if (on_done) on_done(index, results[index]);
    }
  }
  return results;
}

std::vector<ChildResult> run_in_children_each(const std::vector<std::function<std::string()>>& jobs,
                                              int parallel) {
  std::vector<ChildResult> results(jobs.size());
  std::size_t next = 0;
  while (next < jobs.size()) {
    std::vector<std::pair<std::size_t, Child>> batch;
    for (int p = 0; p < std::max(1, parallel) && next < jobs.size(); ++p, ++next)
      batch.emplace_back(next, spawn(jobs[next]));
    for (auto& [index, child] : batch) {  // every child of the batch is collected, failed or not
      try {
        results[index] = {true, collect(child)};
      } catch (const InputError& e) {
        results[index] = {false, e.what()};
      }
    }
  }
  return results;
}

}  // namespace sim
}  // namespace strata
