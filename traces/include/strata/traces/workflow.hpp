// Workflow DAGs from outside strata, so that the schedulers (models/schedule) are checked on
// published instances and not only on training Plans: Pegasus DAX XML (versions 2.1 to 3.x, the
// format SimGrid's dag-scheduling example reads) and WfCommons WfFormat JSON (schema 1.4 and
// 1.5, with `specification` and `execution`; and the older single `tasks` list with files).
//
// A Workflow is its tasks in file order, each with its runtime (s, as measured where the
// instance was recorded), the files it reads and writes with their sizes (B), and its parents
// (indices). DAX: a job's `runtime`, its `uses` (`file` or `name`, `link` input/output, `size`),
// and the `child`/`parent` elements; WfFormat: `runtimeInSeconds` (or `runtime`), `parents` by
// id (or by name in the older schema), `inputFiles`/`outputFiles` with the `files` list's
// `sizeInBytes`. What a child receives from a parent is transfer_bytes(): the files it reads
// that the parent writes, by name, at the size the child declares.
//
// Errors: one InputError line naming the file and the place: XML or JSON syntax (with the line),
// a missing or negative runtime or size, a duplicate task id, a parent that does not exist, a
// dependency cycle ("task 'ID00003' is on a dependency cycle"), no task at all.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace strata {
inline namespace traces {

struct WorkflowFile {
  std::string name;
  double bytes = 0;
};
struct WorkflowTask {
  std::string id;
  std::string name;  // the program (DAX `name`, WfFormat `name`)
  double runtime_s = 0;
  std::vector<WorkflowFile> inputs;
  std::vector<WorkflowFile> outputs;
  std::vector<std::size_t> parents;  // indices into Workflow::tasks, in the file's order
};
struct Workflow {
  std::string name;
  std::string format;  // "dax" or "wfformat"
  std::vector<WorkflowTask> tasks;
};

// Reads a DAX or WfFormat file (told apart by the first character that is not white space:
// '<' or '{').
Workflow read_workflow(const std::string& path);
Workflow parse_dax(const std::string& text, const std::string& source);
Workflow parse_wfformat(const std::string& text, const std::string& source);

// The transfers SimGrid's DAX loader makes of a workflow (src/dag/loaders.cpp, SimGrid 3.32 and
// later), so that a schedule can be compared with SimGrid's own examples: one file per name, its
// size the first one declared (in task order); every task that writes a name sends it to every
// task that reads it, whether or not the DAX relates them; a file no task writes comes from a
// root task, one no task reads goes to an end task. Tasks are indices; root is tasks.size(),
// end tasks.size() + 1. Sorted by file name, then sender, then receiver.
struct WorkflowTransfer {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string file;
  double bytes = 0;
};
std::vector<WorkflowTransfer> simgrid_transfers(const Workflow& workflow);

// B that `child` reads of what `parent` writes: the sizes (as the child declares them) of the
// child's input files whose names are among the parent's outputs.
double transfer_bytes(const Workflow& workflow, std::size_t parent, std::size_t child);

}  // namespace traces
}  // namespace strata
