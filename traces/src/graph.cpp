// topological_order (declared in plan.hpp): the dependency graph as a Boost.Graph adjacency list,
// cycle detection by Boost's depth-first search, order by Kahn's algorithm.
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {
namespace {

// Edges run from a dependency to its dependent (producer -> consumer), data and control alike.
using DependencyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<DependencyGraph>::vertex_descriptor;
using Edge = boost::graph_traits<DependencyGraph>::edge_descriptor;

// At most this many ids are printed for a cycle: the message stays one readable line.
constexpr std::size_t kMaxCycleIdsShown = 8;

DependencyGraph build_graph(const Plan& plan) {
  DependencyGraph graph(plan.size());
  for (TaskIndex t = 0; t < plan.size(); ++t) {
    const Task& task = plan.task(t);
    for (const auto* deps : {&task.data_deps, &task.control_deps}) {
      for (TaskIndex dep : *deps) {
        STRATA_ASSERT(dep < plan.size(), "dependency index out of range");
        boost::add_edge(dep, t, graph);
      }
    }
  }
  return graph;
}

// Records the depth-first tree and stops at the first back edge, which closes a cycle.
class CycleFinder : public boost::default_dfs_visitor {
 public:
  struct Found {
    Vertex from;  // the back edge from -> to; `to` is an ancestor of `from` in the DFS tree
    Vertex to;
  };

  CycleFinder(std::vector<Vertex>& parent, std::optional<Found>& found) : parent_(&parent), found_(&found) {}

  void tree_edge(Edge e, const DependencyGraph& g) const {
    (*parent_)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(Edge e, const DependencyGraph& g) const {
    if (!*found_) *found_ = Found{boost::source(e, g), boost::target(e, g)};
  }

 private:
  // Pointers: Boost copies visitors by value.
  std::vector<Vertex>* parent_;
  std::optional<Found>* found_;
};

// The tasks of one cycle in dependency order, starting at its smallest index (so the report does
// not depend on where the search happened to enter the cycle). Empty if the graph is acyclic.
std::vector<TaskIndex> find_cycle(const DependencyGraph& graph) {
  std::vector<Vertex> parent(boost::num_vertices(graph));
  std::optional<CycleFinder::Found> found;
  boost::depth_first_search(graph, boost::visitor(CycleFinder(parent, found)));
  if (!found) return {};
  std::vector<TaskIndex> cycle;
  for (Vertex v = found->from; v != found->to; v = parent[v]) cycle.push_back(static_cast<TaskIndex>(v));
  cycle.push_back(static_cast<TaskIndex>(found->to));
  std::reverse(cycle.begin(), cycle.end());  // to -> ... -> from, and from -> to closes it
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

[[noreturn]] void report_cycle(const Plan& plan, const std::vector<TaskIndex>& cycle,
                               const std::string& source) {
  std::string path;
  for (std::size_t i = 0; i <= cycle.size(); ++i) {
    if (i == kMaxCycleIdsShown && cycle.size() > kMaxCycleIdsShown) {
      path += " -> ... (" + std::to_string(cycle.size()) + " tasks)";
      break;
    }
    if (i > 0) path += " -> ";
    path += quote_for_message(plan.task(cycle[i % cycle.size()]).id);
  }
  throw InvalidPlanError(input_error_message(source, "/tasks/" + std::to_string(cycle.front()),
                                             "dependency cycle through " + path));
}

}  // namespace

std::vector<TaskIndex> topological_order(const Plan& plan, const std::string& source) {
  const DependencyGraph graph = build_graph(plan);
  const std::size_t n = boost::num_vertices(graph);

  std::vector<std::uint32_t> pending(n, 0);  // unprocessed predecessors, counted per edge
  for (auto [e, end] = boost::edges(graph); e != end; ++e) ++pending[boost::target(*e, graph)];

  // Kahn's algorithm, smallest ready index first: the order is a function of the Plan alone.
  std::priority_queue<TaskIndex, std::vector<TaskIndex>, std::greater<>> ready;
  for (TaskIndex t = 0; t < n; ++t)
    if (pending[t] == 0) ready.push(t);
  std::vector<TaskIndex> order;
  order.reserve(n);
  while (!ready.empty()) {
    TaskIndex t = ready.top();
    ready.pop();
    order.push_back(t);
    for (auto [e, end] = boost::out_edges(t, graph); e != end; ++e) {
      auto next = static_cast<TaskIndex>(boost::target(*e, graph));
      if (--pending[next] == 0) ready.push(next);
    }
  }
  // Kahn stops short exactly when there is a cycle; only then pay for the search that names it.
  if (order.size() < n) {
    std::vector<TaskIndex> cycle = find_cycle(graph);
    STRATA_ASSERT(!cycle.empty(), "Kahn's algorithm stopped early on an acyclic graph");
    report_cycle(plan, cycle, source);
  }
  return order;
}

}  // namespace traces
}  // namespace strata
