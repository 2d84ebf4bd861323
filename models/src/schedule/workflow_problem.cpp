#include "strata/models/schedule/workflow_problem.hpp"

#include <utility>

namespace strata {
inline namespace models {

WorkflowProblem workflow_problem(const Workflow& w, const PlatformRoutes& r, double flops_per_runtime_s) {
  WorkflowProblem out;
  DagProblem& p = out.problem;
  p.processors = r.hosts.size();
  p.latency = r.latency;
  p.bandwidth = r.bandwidth;
  p.speed = r.speed;
  for (const WorkflowTask& t : w.tasks)
    p.tasks.push_back({t.id + "@" + t.name, {}, t.runtime_s * flops_per_runtime_s});
  out.root = p.tasks.size();
  out.end = out.root + 1;
  p.tasks.push_back({"root", {}, 0});
  p.tasks.push_back({"end", {}, 0});
  std::vector<char> has_pred(p.tasks.size(), 0), has_succ(p.tasks.size(), 0);
  for (const WorkflowTransfer& t : simgrid_transfers(w)) {
    p.edges.push_back({t.from, t.to, t.bytes, false});
    has_succ[t.from] = has_pred[t.to] = 1;
  }
  for (std::size_t c = 0; c < w.tasks.size(); ++c)
    for (std::size_t parent : w.tasks[c].parents) {
      p.edges.push_back({parent, c, 0, true});
      has_succ[parent] = has_pred[c] = 1;
    }
  for (std::size_t t = 0; t < w.tasks.size(); ++t) {
    if (has_pred[t] == 0) p.edges.push_back({out.root, t, 0, true});
    if (has_succ[t] == 0) p.edges.push_back({t, out.end, 0, true});
  }
  return out;
}

}  // namespace models
}  // namespace strata
