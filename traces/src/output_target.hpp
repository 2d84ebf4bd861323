// Where the bytes of one output go, and the temporaries on the way (outputs.hpp says the rules).
// Private to traces: OutputSet is the interface.
#pragma once

#include <string>

#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace traces {

struct OutputTarget {
  bool direct = false;    // written in place: a device, FIFO, socket or stdout
  int fd = -1;            // direct to this open descriptor (stdout); -1: open `path`
  std::string path;       // file: the final path (symlinks resolved); direct: the path to open
  std::string folder;     // file: the folder the temporary and the final file go in
  bool exists = false;    // something is at `path` now
  unsigned long dev = 0;  // its device and inode, to tell two names of one file apart
  unsigned long ino = 0;
};

// What `path` names as an output. Throws InputError "<where>: <problem>" when it cannot be one:
// a directory, a folder that does not exist or is not writable, a symlink loop.
OutputTarget resolve_output(const std::string& path, const std::string& where);

// Writes `content` to a direct target. Throws InputError naming `where`.
void write_direct(const OutputTarget& target, const std::string& content, const std::string& where);

// Writes what `write` puts in a stream to a new temporary in the target's folder (first removing the
// folder's stale temporaries), registered for removal on SIGINT/SIGTERM; returns its path. Throws
// InputError naming `where`.
std::string write_temporary(const OutputTarget& target, const OutputWriter& write, const std::string& where);

// A path for a new temporary in `folder`: `.strata-<pid>-<pid namespace>-<random>-<host>.tmp`
// (outputs.hpp says which of them remove_stale_temporaries removes).
std::string new_temporary_path(const std::string& folder);

// Registers or forgets a temporary removed on SIGINT/SIGTERM.
void register_temporary(const std::string& path);
void forget_temporary(const std::string& path);

// The text of an errno value.
std::string errno_message(int error);

}  // namespace traces
}  // namespace strata
