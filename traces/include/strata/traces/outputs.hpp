// outputs: how strata writes the files a command produces, so that it never destroys what is not
// its own and never leaves half a result.
//
// An OutputSet holds the output paths of one command (with the flag that named each) and its
// input paths. check() validates them all before any work starts: the folder of every output
// exists and is writable, no output is a directory, no output is one of the inputs, no two
// outputs are the same file. Contents are then staged and committed together at the end: if any
// output fails, no final file is written (all or none).
//
// Inputs are the files a command reads: those its flags name (add_input, checked up front) and
// every file a reader opens while the command runs, paths named inside other inputs included (a
// search spec's platform): readers call note_input(), and an output staged to one of them is
// refused at stage(), before anything is written.
//
// Where an output goes depends on what is at its path:
// - a regular file, or nothing yet: replaced atomically (a temporary written beside it, then
//   renamed over it), so a reader never sees half a file;
// - a symlink: resolved (a dangling link's target is created) and its target replaced atomically
//   beside the target, so the link stays a link;
// - a device, FIFO or socket, `-` (stdout), /dev/stdout, /dev/stderr or /dev/fd/N: written
//   directly, with no temporary, rename or unlink.
//
// Temporaries are named `.strata-<pid>-<pid namespace>-<random>-<host>.tmp`, a name no user
// chooses, and registered while they exist: SIGINT and SIGTERM remove them (async-signal-safe
// unlinks) before the signal takes its course. A temporary left by a killed run is removed by the
// next write to the same folder only when it is certainly dead: made on this host, in this pid
// namespace, by a process that no longer exists. Nothing else in a folder is ever removed.
//
// Not thread-safe, but for note_input(): one OutputSet per command, used by the thread that runs it.
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

  // Records a file read while the command runs (note_input() reaches here through the live
  // StagingScope). Thread-safe.
  void note_read_input(const std::string& path);
  // Records a file the command wrote itself, at once (a generated platform): reading it back
  // later makes it no input. Thread-safe.
  void note_written(const std::string& path);
  // Throws InputError when `target_path` (an output, named by `where`) is one of the files read so
  // far. Thread-safe.
  void refuse_read_input(const std::string& target_path, const std::string& where) const;

  // Whether an output checked so far goes to stdout (`-`, /dev/stdout). A command whose output
  // is stdout moves its own messages to stderr: it then gives the descriptor that still reaches
  // the original stdout, and outputs to stdout are written there.
  bool writes_stdout() const;
  void set_stdout_descriptor(int fd) { stdout_fd_ = fd; }

  struct Output;  // one staged or registered output (outputs.cpp)

 private:
  std::vector<std::unique_ptr<Output>> outputs_;
  std::vector<std::pair<std::string, std::string>> inputs_;  // flag, path
  struct ReadInputs;                                         // files read while the command runs
  std::unique_ptr<ReadInputs> read_;
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

// Records that the command now running reads `path` (every reader of a user's file calls it; a
// no-op outside a StagingScope): no output of the command may be that file.
void note_input(const std::string& path);

// The regular files of `folder` that are temporaries of a dead strata process of this host and
// pid namespace (left by a killed run): removes them and returns how many. Everything else is
// kept: other names, symlinks, another host's or container's temporaries, a live process's.
int remove_stale_temporaries(const std::string& folder);

// SIGINT and SIGTERM, process-wide: this process's temporaries removed, one line on stderr
// ("strata: interrupted (SIGINT)") from the calling process only (forked children die quietly,
// and so does an MPI rank: its launcher reports how the job ended), then the signal's default
// action (exit status 130 or 143 in a shell; no core). Call at the start of main(); an ignored
// signal stays ignored. Async-signal-safe throughout.
void install_interrupt_handlers();

}  // namespace traces
}  // namespace strata
