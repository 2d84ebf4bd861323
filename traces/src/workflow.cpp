// The DAX and WfFormat readers of workflow.hpp.
#include "strata/traces/workflow.hpp"

#include <expat.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace traces {
namespace {

constexpr long long kMaxWorkflowBytes = 1LL << 30;  // 1 GiB: the largest WfCommons instances are ~100 MB

[[noreturn]] void fail(const std::string& source, const std::string& place, const std::string& problem) {
  throw InputError(input_error_message(source, place, problem));
}

std::string read_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(path, "", std::string("cannot open file: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "", "not a regular file");
  if (st.st_size > kMaxWorkflowBytes)
    fail(path, "", std::to_string(st.st_size) + " B is larger than the 1 GiB strata reads as a workflow");
  note_input(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "", std::string("cannot open file: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A number ≥ 0 from an attribute's text; nullopt-like failure through `problem`.
bool parse_size(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(out) && out >= 0;
}

// Parents by id, then the cycle check, shared by both formats.
void check_acyclic(const Workflow& w, const std::string& source) {
  std::vector<std::size_t> waiting(w.tasks.size(), 0), ready;
  std::vector<std::vector<std::size_t>> children(w.tasks.size());
  for (std::size_t t = 0; t < w.tasks.size(); ++t)
    for (std::size_t p : w.tasks[t].parents) children[p].push_back(t), ++waiting[t];
  for (std::size_t t = 0; t < w.tasks.size(); ++t)
    if (waiting[t] == 0) ready.push_back(t);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t t = ready.back();
    ready.pop_back();
    ++done;
    for (std::size_t c : children[t])
      if (--waiting[c] == 0) ready.push_back(c);
  }
  if (done == w.tasks.size()) return;
  for (std::size_t t = 0; t < w.tasks.size(); ++t)
    if (waiting[t] > 0)
      fail(source, "", "task " + quote_for_message(w.tasks[t].id) + " is on a dependency cycle");
}

// One SAX pass over a DAX file; the first problem stops it (expat is C: nothing is thrown
// through it).
class DaxReader {
 public:
  explicit DaxReader(const std::string& source) : source_(source) { w_.format = "dax"; }

  Workflow run(const std::string& text) {
    std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate("UTF-8"),
                                                                        &XML_ParserFree);
    parser_ = parser.get();
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &DaxReader::on_start, &DaxReader::on_end);
    if (text.size() > static_cast<std::size_t>(kMaxWorkflowBytes)) fail(source_, "", "larger than 1 GiB");
    const auto status = XML_Parse(parser_, text.data(), static_cast<int>(text.size()), XML_TRUE);
    if (!error_.empty()) fail(source_ + ":" + std::to_string(error_line_), "", error_);
    if (status != XML_STATUS_OK)
      fail(source_ + ":" + std::to_string(XML_GetCurrentLineNumber(parser_)), "",
           std::string("XML: ") + XML_ErrorString(XML_GetErrorCode(parser_)));
    if (w_.tasks.empty()) fail(source_, "", "no job: a DAX workflow needs at least one");
    for (const Relation& r : relations_) {
      const auto child = ids_.find(r.child);
      if (child == ids_.end())
        fail(source_ + ":" + std::to_string(r.line), "",
             "child " + quote_for_message(r.child) + " is not a job");
      for (const std::string& parent : r.parents) {
        const auto p = ids_.find(parent);
        if (p == ids_.end())
          fail(source_ + ":" + std::to_string(r.line), "",
               "parent " + quote_for_message(parent) + " is not a job");
        w_.tasks[child->second].parents.push_back(p->second);
      }
    }
    check_acyclic(w_, source_);
    return std::move(w_);
  }

 private:
  struct Relation {
    std::string child;
    std::vector<std::string> parents;
    std::size_t line = 0;
  };

  static void XMLCALL on_start(void* self, const XML_Char* name, const XML_Char** attrs) {
    auto* r = static_cast<DaxReader*>(self);
    if (!r->error_.empty()) return;
    std::map<std::string, std::string> a;
    for (int i = 0; attrs[i] != nullptr; i += 2) a[attrs[i]] = attrs[i + 1];
    r->start(name, a);
  }
  static void XMLCALL on_end(void* self, const XML_Char* name) {
    auto* r = static_cast<DaxReader*>(self);
    const std::string tag = name;
    if (tag == "job") r->in_job_ = false;
    if (tag == "child") r->in_child_ = false;
  }

  void stop(const std::string& problem) {
    error_ = problem;
    error_line_ = XML_GetCurrentLineNumber(parser_);
    XML_StopParser(parser_, XML_FALSE);
  }

  void start(const std::string& tag, const std::map<std::string, std::string>& a) {
    auto get = [&](const char* key) {
      const auto it = a.find(key);
      return it == a.end() ? std::string() : it->second;
    };
    if (tag == "adag") {
      w_.name = get("name");
    } else if (tag == "job") {
      WorkflowTask t;
      t.id = get("id");
      t.name = get("name");
      if (t.id.empty()) return stop("job without an id");
      if (!ids_.emplace(t.id, w_.tasks.size()).second)
        return stop("job " + quote_for_message(t.id) + " twice");
      if (a.count("runtime") == 0) return stop("job " + quote_for_message(t.id) + " has no runtime");
      if (!parse_size(get("runtime"), t.runtime_s))
        return stop("job " + quote_for_message(t.id) + ": runtime " + quote_for_message(get("runtime")) +
                    " is not a number of seconds >= 0");
      w_.tasks.push_back(std::move(t));
      in_job_ = true;
    } else if (tag == "uses" && in_job_) {
      WorkflowFile f;
      f.name = a.count("file") != 0 ? get("file") : get("name");
      const std::string size = a.count("size") != 0 ? get("size") : "0";
      if (!parse_size(size, f.bytes))
        return stop("file " + quote_for_message(f.name) + ": size " + quote_for_message(size) +
                    " is not a number of bytes >= 0");
      const std::string link = get("link");
      WorkflowTask& job = w_.tasks.back();
      if (link == "input" || link == "inout") job.inputs.push_back(f);
      if (link == "output" || link == "inout") job.outputs.push_back(f);
    } else if (tag == "child") {
      relations_.push_back({get("ref"), {}, static_cast<std::size_t>(XML_GetCurrentLineNumber(parser_))});
      in_child_ = true;
    } else if (tag == "parent" && in_child_) {
      relations_.back().parents.push_back(get("ref"));
    }
  }

  const std::string& source_;
  XML_Parser parser_ = nullptr;
  Workflow w_;
  std::map<std::string, std::size_t> ids_;
  std::vector<Relation> relations_;
  bool in_job_ = false, in_child_ = false;
  std::string error_;
  XML_Size error_line_ = 0;
};

std::vector<WorkflowFile> files_of(const JsonNode& list, const std::map<std::string, double>& sizes) {
  std::vector<WorkflowFile> files;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonNode f = list.at(i);
    const std::string id = f.as_string();
    const auto it = sizes.find(id);
    if (it == sizes.end())
      f.fail("file " + quote_for_message(id) + " is not in /workflow/specification/files");
    files.push_back({id, it->second});
  }
  return files;
}

}  // namespace

Workflow parse_dax(const std::string& text, const std::string& source) { return DaxReader(source).run(text); }

Workflow parse_wfformat(const std::string& text, const std::string& source) {
  const nlohmann::json doc = parse_json_text(text, source);
  const JsonNode root(doc, source);
  Workflow w;
  w.format = "wfformat";
  if (const auto name = root.find("name")) w.name = name->as_string();
  const JsonNode wf = root.at("workflow");
  std::map<std::string, std::size_t> ids, names;
  std::vector<std::vector<std::pair<std::string, JsonNode>>> parents;  // by id or name, with the place
  // Registers a task read at node `t`, its parents resolved once every task is known.
  auto add = [&](WorkflowTask task, const JsonNode& t) {
    if (!ids.emplace(task.id, w.tasks.size()).second) t.fail("task " + quote_for_message(task.id) + " twice");
    names.emplace(task.name, w.tasks.size());
    parents.emplace_back();
    if (const auto list = t.find("parents"))
      for (std::size_t k = 0; k < list->size(); ++k)
        parents.back().emplace_back(list->at(k).as_string(), list->at(k));
    w.tasks.push_back(std::move(task));
  };
  if (const auto spec = wf.find("specification")) {  // schema 1.4 and 1.5
    std::map<std::string, double> sizes, runtimes;
    if (const auto files = spec->find("files"))
      for (std::size_t i = 0; i < files->size(); ++i)
        sizes[files->at(i).at("id").as_string()] = files->at(i).at("sizeInBytes").as_size();
    if (const auto execution = wf.find("execution"))
      if (const auto tasks = execution->find("tasks"))
        for (std::size_t i = 0; i < tasks->size(); ++i)
          runtimes[tasks->at(i).at("id").as_string()] = tasks->at(i).at("runtimeInSeconds").as_size();
    const JsonNode tasks = spec->at("tasks");
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const JsonNode t = tasks.at(i);
      WorkflowTask task;
      task.id = t.at("id").as_string();
      task.name = t.find("name") ? t.at("name").as_string() : task.id;
      const auto runtime = runtimes.find(task.id);
      if (runtime == runtimes.end())
        t.fail("task " + quote_for_message(task.id) +
               " has no runtimeInSeconds in /workflow/execution/tasks");
      task.runtime_s = runtime->second;
      if (const auto in = t.find("inputFiles")) task.inputs = files_of(*in, sizes);
      if (const auto out = t.find("outputFiles")) task.outputs = files_of(*out, sizes);
      add(std::move(task), t);
    }
  } else {  // schema 1.3 and before: one task list, files inline, parents by name
    const JsonNode tasks = wf.at("tasks");
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const JsonNode t = tasks.at(i);
      WorkflowTask task;
      task.name = t.at("name").as_string();
      task.id = t.find("id") ? t.at("id").as_string() : task.name;
      const auto runtime = t.find("runtimeInSeconds") ? t.find("runtimeInSeconds") : t.find("runtime");
      if (!runtime) t.fail("task " + quote_for_message(task.id) + " has no runtimeInSeconds");
      task.runtime_s = runtime->as_size();
      if (const auto files = t.find("files"))
        for (std::size_t k = 0; k < files->size(); ++k) {
          const JsonNode f = files->at(k);
          const auto size = f.find("sizeInBytes") ? f.find("sizeInBytes") : f.find("size");
          WorkflowFile file{f.find("name") ? f.at("name").as_string() : f.at("id").as_string(),
                            size ? size->as_size() : 0};
          const std::string link = f.at("link").as_string();
          if (link == "input")
            task.inputs.push_back(file);
          else if (link == "output")
            task.outputs.push_back(file);
          else
            f.at("link").fail("link " + quote_for_message(link) + " is neither input nor output");
        }
      add(std::move(task), t);
    }
  }
  if (w.tasks.empty()) fail(source, "/workflow", "no task: a workflow needs at least one");
  for (std::size_t t = 0; t < w.tasks.size(); ++t)
    for (const auto& [ref, node] : parents[t]) {
      auto by_id = ids.find(ref);
      auto by_name = names.find(ref);
      if (by_id == ids.end() && by_name == names.end())
        node.fail("parent " + quote_for_message(ref) + " is not a task");
      w.tasks[t].parents.push_back(by_id != ids.end() ? by_id->second : by_name->second);
    }
  check_acyclic(w, source);
  return w;
}

Workflow read_workflow(const std::string& path) {
  const std::string text = read_text(path);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '<') return parse_dax(text, path);
  if (first != std::string::npos && text[first] == '{') return parse_wfformat(text, path);
  fail(path, "", "neither a DAX (XML) nor a WfFormat (JSON) workflow");
}

std::vector<WorkflowTransfer> simgrid_transfers(const Workflow& w) {
  struct File {
    double bytes = 0;
    std::set<std::size_t> writers, readers;
  };
  std::map<std::string, File> files;
  auto declare = [&](const WorkflowFile& f) -> File& {
    auto [it, fresh] = files.try_emplace(f.name);
    if (fresh) it->second.bytes = f.bytes;  // the first size declared stands
    return it->second;
  };
  for (std::size_t t = 0; t < w.tasks.size(); ++t) {
    for (const WorkflowFile& f : w.tasks[t].inputs) declare(f).readers.insert(t);
    for (const WorkflowFile& f : w.tasks[t].outputs) declare(f).writers.insert(t);
  }
  const std::size_t root = w.tasks.size(), end = w.tasks.size() + 1;
  std::vector<WorkflowTransfer> out;
  for (const auto& [name, f] : files) {
    const std::set<std::size_t> from = f.writers.empty() ? std::set<std::size_t>{root} : f.writers;
    const std::set<std::size_t> to = f.readers.empty() ? std::set<std::size_t>{end} : f.readers;
    for (std::size_t a : from)
      for (std::size_t b : to) out.push_back({a, b, name, f.bytes});
  }
  return out;
}

double transfer_bytes(const Workflow& w, std::size_t parent, std::size_t child) {
  std::set<std::string> written;
  for (const WorkflowFile& f : w.tasks[parent].outputs) written.insert(f.name);
  double bytes = 0;
  for (const WorkflowFile& f : w.tasks[child].inputs)
    if (written.count(f.name) != 0) bytes += f.bytes;
  return bytes;
}

}  // namespace traces
}  // namespace strata
