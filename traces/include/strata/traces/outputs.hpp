// outputs: how strata writes the files a command produces, so that it never destroys what is not
// its own and never leaves half a result.
//
// An OutputSet holds the output paths of one command (with the flag that named each) and its
// input paths. check() validates them all before any work starts: the folder of every output
// exists and is writable, no output is a directory, no output is one of the inputs, no two
// outputs are the same file. Contents are then staged and committed together at the end: if any
// output fails, no final file is written (all or none).
//
// Where an output goes depends on what is at its path:
// - a regular file, or nothing yet: replaced atomically (`<path>.tmp.<pid>` written beside it,
//   then renamed over it), so a reader never sees half a file;
// - a symlink: resolved (a dangling link's target is created) and its target replaced atomically
//   beside the target, so the link stays a link;
// - a device, FIFO or socket, `-` (stdout), /dev/stdout, /dev/stderr or /dev/fd/N: written
//   directly, with no temporary, rename or unlink.
//
// Temporaries are registered while they exist: SIGINT and SIGTERM remove them (async-signal-safe
// unlinks) before the signal takes its default course, and a `<name>.tmp.<pid>` whose process is
// gone (a killed run) is removed by the next write to the same folder.
//
// Not thread-safe: one OutputSet per command, used by the thread that runs it.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace strata {
inline namespace traces {

// Writes one output's bytes into a stream (a streaming writer: no copy of the whole file in memory
// for a file target).
using OutputWriter = std::function<void(std::ostream&)>;

class OutputSet {
 public:
  OutputSet();
  ~OutputSet();  // removes the temporaries of what was staged and not committed
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Registers an output named by `flag` ("--trace"); an empty path is ignored. A `deferred`
  // output is staged and written at commit(); one that is not (a log rewritten as a run goes)
  // is only checked, and write_file_atomically() writes it at once.
  void add_output(const std::string& flag, const std::string& path, bool deferred = true);
  // Registers an input; an empty path or `-` is ignored.
  void add_input(const std::string& flag, const std::string& path);

  // Validates every registered output against the rules above. Throws InputError, one line
  // naming the flag(s) and path(s): "--trace out/t.json: folder 'out' does not exist",
  // "-o plan.json: same file as --plan plan.json (an output never overwrites an input)".
  void check();

  // Whether write_file_atomically(path, ...) stages into this set (a deferred output).
  bool defers(const std::string& path) const;

  // Stages `content` for `path`: a file target's temporary is written now; a direct target's
  // bytes are kept until commit(). Staging a path twice keeps the last content. Throws InputError.
  void stage(const std::string& path, const std::string& content);
  // The same with the bytes written by `write` (straight into the temporary for a file target).
  // An exception `write` throws removes the temporary and goes on.
  void stage_with(const std::string& path, const OutputWriter& write);

  // Writes everything staged: direct targets first, then the renames, all last. If a rename fails
  // midway, the outputs already renamed are put back (previous contents restored, new files
  // removed) where possible, and the error says which could not be. Throws InputError.
  void commit();

  // Whether an output checked so far goes to stdout (`-`, /dev/stdout). A command whose output
  // is stdout moves its own messages to stderr: it then gives the descriptor that still reaches
  // the original stdout, and outputs to stdout are written there.
  bool writes_stdout() const;
  void set_stdout_descriptor(int fd) { stdout_fd_ = fd; }

  struct Output;  // one staged or registered output (outputs.cpp)

 private:
  std::vector<std::unique_ptr<Output>> outputs_;
  std::vector<std::pair<std::string, std::string>> inputs_;  // flag, path
  int stdout_fd_ = 1;

  Output* find(const std::string& path) const;
};

// While a StagingScope lives, write_file_atomically() (and every writer built on it:
// write_plan, write_trace, write_chrome_trace, the SVG writers) stages the deferred outputs of
// `set` into it instead of writing them; other paths are written at once. Scopes do not nest.
class StagingScope {
 public:
  explicit StagingScope(OutputSet& set);
  ~StagingScope();
  StagingScope(const StagingScope&) = delete;
  StagingScope& operator=(const StagingScope&) = delete;
};

// write_file_atomically (json_io.hpp) for a streaming writer: staged into the live StagingScope's
// set when it defers `path`, written now otherwise.
void write_file_with(const std::string& path, const OutputWriter& write);

// The OutputSet of the live StagingScope, or null.
OutputSet* staging_output_set();

// The regular files named `<anything>.tmp.<pid>` in `folder` whose process no longer exists
// (left by a killed run): removes them and returns how many. Symlinks and other files are kept.
int remove_stale_temporaries(const std::string& folder);

}  // namespace traces
}  // namespace strata
