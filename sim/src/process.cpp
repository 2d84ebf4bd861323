#include "strata/sim/process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace sim {
namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
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

Child spawn(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw InputError(std::string("cannot create pipe: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) throw InputError(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    int status = 0;
    try {
      out = "ok\n" + work();
    } catch (const std::exception& e) {
      out = std::string("error\n") + e.what();
      status = 1;
    }
    write_all(fds[1], out);
    ::close(fds[1]);
    ::_exit(status);  // skip destructors of the parent's state, including SimGrid's
  }
  ::close(fds[1]);
  return Child{pid, fds[0]};
}

std::string collect(Child child) {
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
  if (WIFSIGNALED(status))
    throw InputError(std::string("simulation process killed by signal ") + strsignal(WTERMSIG(status)));
  if (data.rfind("ok\n", 0) == 0) return data.substr(3);
  if (data.rfind("error\n", 0) == 0) throw InputError(data.substr(6));
  throw InputError("simulation process ended without a result (exit status " +
                   std::to_string(WEXITSTATUS(status)) + ")");
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& work) { return collect(spawn(work)); }

std::vector<std::string> run_in_children(const std::vector<std::function<std::string()>>& jobs, int parallel,
                                         const std::function<void(std::size_t)>& on_done) {
  std::vector<std::string> results(jobs.size());
  std::size_t next = 0;
  while (next < jobs.size()) {
    std::vector<std::pair<std::size_t, Child>> batch;
    for (int p = 0; p < std::max(1, parallel) && next < jobs.size(); ++p, ++next)
      batch.emplace_back(next, spawn(jobs[next]));
    for (auto& [index, child] : batch) {
      results[index] = collect(child);
      if (on_done) on_done(index + 1);
    }
  }
  return results;
}

}  // namespace sim
}  // namespace strata
