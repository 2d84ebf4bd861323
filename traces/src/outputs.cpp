#include "strata/traces/outputs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <system_error>

#include "output_target.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace traces {

struct OutputSet::Output {
  std::string flag;
  std::string path;  // as given
  bool deferred = true;
  OutputTarget target;
  bool staged = false;
  std::string tmp;     // a file target's staged temporary
  std::string direct;  // a direct target's staged bytes

  // "--trace t.json", or the path alone when no flag named it.
  std::string where() const { return flag.empty() ? path : flag + " " + path; }
};

namespace {

namespace fs = std::filesystem;

OutputSet* g_staging = nullptr;

std::string canonical_text(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

bool same_file(const OutputTarget& out, const std::string& path) {
  if (out.fd >= 0) return false;
  struct stat st {};
  if (out.exists && ::stat(path.c_str(), &st) == 0) return st.st_dev == out.dev && st.st_ino == out.ino;
  return canonical_text(out.path) == canonical_text(path);
}

bool same_output(const OutputTarget& a, const OutputTarget& b) {
  if (a.fd >= 0 || b.fd >= 0) return a.fd == STDOUT_FILENO && b.fd == STDOUT_FILENO;
  // Two outputs into one device (/dev/null twice) harm nothing.
  if (a.direct || b.direct) return false;
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return canonical_text(a.path) == canonical_text(b.path);
}

void discard(const std::string& tmp) {
  if (tmp.empty()) return;
  ::unlink(tmp.c_str());
  forget_temporary(tmp);
}

}  // namespace

struct OutputSet::ReadInputs {
  mutable std::mutex mutex;
  std::vector<std::string> paths;
  std::vector<std::string> written;  // files the command wrote itself (canonical): never its inputs
};

OutputSet::OutputSet() : read_(std::make_unique<ReadInputs>()) {}

OutputSet::~OutputSet() {
  for (const auto& out : outputs_) discard(out->tmp);
}

void OutputSet::add_output(const std::string& flag, const std::string& path, bool deferred) {
  if (path.empty()) return;
  auto out = std::make_unique<Output>();
  out->flag = flag, out->path = path, out->deferred = deferred;
  outputs_.push_back(std::move(out));
}

void OutputSet::add_input(const std::string& flag, const std::string& path) {
  if (path.empty() || path == "-") return;
  inputs_.emplace_back(flag, path);
}

void OutputSet::check() {
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    Output& out = *outputs_[i];
    out.target = resolve_output(out.path, out.where());
    for (const auto& [flag, path] : inputs_)
      if (same_file(out.target, path))
        throw InputError(out.where() + ": same file as " + flag + " " + path +
                         " (an output never overwrites an input)");
    for (std::size_t j = 0; j < i; ++j)
      if (same_output(outputs_[j]->target, out.target))
        throw InputError(out.where() + ": same file as " + outputs_[j]->where() +
                         " (two outputs cannot share a file)");
  }
}

void OutputSet::note_read_input(const std::string& path) {
  if (path.empty() || path == "-") return;
  const std::string canonical = canonical_text(path);
  std::lock_guard<std::mutex> lock(read_->mutex);
  for (const std::string& w : read_->written)
    if (w == canonical) return;  // a file of its own (a generated platform read back)
  for (const std::string& p : read_->paths)
    if (p == path) return;
  read_->paths.push_back(path);
}

void OutputSet::note_written(const std::string& path) {
  std::lock_guard<std::mutex> lock(read_->mutex);
  read_->written.push_back(canonical_text(path));
}

void OutputSet::refuse_read_input(const std::string& target_path, const std::string& where) const {
  OutputTarget target;
  target.path = target_path;
  struct stat st {};
  if (::stat(target_path.c_str(), &st) == 0)
    target.exists = true, target.dev = st.st_dev, target.ino = st.st_ino;
  std::lock_guard<std::mutex> lock(read_->mutex);
  for (const std::string& path : read_->paths)
    if (same_file(target, path))
      throw InputError(where + ": same file as the input " + path + " (an output never overwrites an input)");
}

OutputSet::Output* OutputSet::find(const std::string& path) const {
  for (const auto& out : outputs_)
    if (out->path == path) return out.get();
  return nullptr;
}

bool OutputSet::writes_stdout() const {
  for (const auto& out : outputs_)
    if (out->target.fd == STDOUT_FILENO) return true;
  return false;
}

bool OutputSet::defers(const std::string& path) const {
  const Output* out = find(path);
  return out != nullptr && out->deferred;
}

void OutputSet::stage(const std::string& path, const std::string& content) {
  stage_with(path, [&content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

void OutputSet::stage_with(const std::string& path, const OutputWriter& write) {
  Output* out = find(path);
  if (out == nullptr) {
    add_output("", path);
    out = outputs_.back().get();
  }
  // Resolved again: the file system may have changed since check().
  out->target = resolve_output(out->path, out->where());
  if (out->target.fd == STDOUT_FILENO) out->target.fd = stdout_fd_;
  if (!out->target.direct) refuse_read_input(out->target.path, out->where());
  if (OutputSet* live = staging_output_set(); live != nullptr && live != this && !out->target.direct)
    live->refuse_read_input(out->target.path, out->where());
  discard(out->tmp);
  out->tmp.clear();
  if (out->target.direct) {
    std::ostringstream bytes;
    write(bytes);
    out->direct = std::move(bytes).str();
  } else {
    out->tmp = write_temporary(out->target, write, out->where());
  }
  out->staged = true;
}

void write_file_with(const std::string& path, const OutputWriter& write) {
  if (OutputSet* set = staging_output_set(); set != nullptr && set->defers(path)) {
    set->stage_with(path, write);
    return;
  }
  OutputSet one;
  one.add_output("", path);
  one.check();
  one.stage_with(path, write);
  one.commit();
  if (OutputSet* set = staging_output_set()) set->note_written(path);
}

namespace {

// One output's rename, with what is needed to undo it.
struct Rename {
  OutputSet::Output* out;
  std::string backup;  // a hard link to the previous file, when there was one
  bool existed;
};

// Puts back the first `done` renames; returns the outputs that could not be restored.
std::string roll_back(std::vector<Rename>& renames, std::size_t done) {
  std::string lost;
  for (std::size_t i = 0; i < done; ++i) {
    const Rename& r = renames[i];
    const std::string& final_path = r.out->target.path;
    const bool ok = r.existed ? (!r.backup.empty() && ::rename(r.backup.c_str(), final_path.c_str()) == 0)
                              : ::unlink(final_path.c_str()) == 0;
    if (!ok) lost += (lost.empty() ? "" : ", ") + r.out->where();
  }
  return lost;
}

}  // namespace

void OutputSet::commit() {
  for (const auto& out : outputs_)
    if (out->staged && out->target.direct) {
      write_direct(out->target, out->direct, out->where());
      out->staged = false;
    }
  std::vector<Rename> renames;
  for (const auto& out : outputs_) {
    if (!out->staged) continue;
    Rename r{out.get(), "", ::access(out->target.path.c_str(), F_OK) == 0};
    if (r.existed) {
      r.backup = new_temporary_path(out->target.folder);
      if (::link(out->target.path.c_str(), r.backup.c_str()) == 0)
        register_temporary(r.backup);
      else
        r.backup.clear();
    }
    renames.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < renames.size(); ++i) {
    Output& out = *renames[i].out;
    if (::rename(out.tmp.c_str(), out.target.path.c_str()) == 0) {
      forget_temporary(out.tmp);
      out.tmp.clear();
      out.staged = false;
      continue;
    }
    const int error = errno;
    const std::string lost = roll_back(renames, i);
    for (const Rename& r : renames) discard(r.backup);
    for (const auto& staged : outputs_) {
      discard(staged->tmp);
      staged->tmp.clear();
    }
    throw InputError(out.where() + ": cannot replace: " + errno_message(error) +
                     (i == 0         ? "; nothing written"
                      : lost.empty() ? "; the outputs already written were put back"
                                     : "; could not put back " + lost));
  }
  for (const Rename& r : renames) discard(r.backup);
}

StagingScope::StagingScope(OutputSet& set) {
  STRATA_ASSERT(g_staging == nullptr, "staging scopes do not nest");
  g_staging = &set;
}

StagingScope::~StagingScope() { g_staging = nullptr; }

OutputSet* staging_output_set() { return g_staging; }

void note_input(const std::string& path) {
  if (OutputSet* set = staging_output_set()) set->note_read_input(path);
}

}  // namespace traces
}  // namespace strata
