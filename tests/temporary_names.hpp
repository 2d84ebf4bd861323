// The name strata gives a temporary of process `pid` (strata/traces/outputs.hpp):
// `.strata-<pid>-<pid namespace>-<random>-<host>.tmp`, derived here independently of the library,
// for tests that leave a dead process's temporary in a folder.
#pragma once

#include <unistd.h>

#include <cctype>
#include <string>

namespace strata_test {

// The host name reduced to letters, digits and '_' (at most 32), as strata writes it.
inline std::string this_host() {
  char name[256] = "";
  ::gethostname(name, sizeof name - 1);
  std::string t;
  for (const char* c = name; *c != '\0' && t.size() < 32; ++c)
    t += std::isalnum(static_cast<unsigned char>(*c)) != 0 ? *c : '_';
  return t.empty() ? "unknown" : t;
}

// The digits of this process's pid namespace (/proc/self/ns/pid), "0" where unknown.
inline std::string this_pid_namespace() {
  char link[64] = "";
  const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
  std::string t;
  for (ssize_t i = 0; i < n; ++i)
    if (std::isdigit(static_cast<unsigned char>(link[i])) != 0) t += link[i];
  return t.empty() ? "0" : t;
}

inline std::string temporary_of(pid_t pid, const std::string& host = this_host(),
                                const std::string& pid_namespace = this_pid_namespace()) {
  return ".strata-" + std::to_string(pid) + "-" + pid_namespace + "-0123456789abcdef-" + host + ".tmp";
}

}  // namespace strata_test
