// Piper's input format as partition problems (piper_input.hpp).
#include "strata/models/schedule/piper_input.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <queue>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

struct Tmpc {
  double time = 0, a = 0, b = 0;
};
struct Node {
  std::int64_t id = 0;
  std::string name;
  std::map<int, Tmpc> fastest;  // per degree
};

int degree_of(const JsonNode& list, const std::string& key) {
  int degree = 0;
  const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), degree);
  if (error != std::errc() || end != key.data() + key.size() || degree < 1 || degree > (1 << 20))
    list.fail("a tensor-parallel degree must be a positive integer");
  return degree;
}

Node read_node(const JsonNode& n) {
  Node node;
  node.id = n.at("id").as_int();
  if (const auto name = n.find("name")) node.name = name->as_string();
  const JsonNode tmpcs = n.at("TMPCs");
  for (const std::string& key : tmpcs.keys()) {
    const JsonNode list = tmpcs.at(key);
    const int degree = degree_of(list, key);
    if (list.size() == 0) list.fail("no TMPC for this degree");
    Tmpc best;
    for (std::size_t k = 0; k < list.size(); ++k) {
      const JsonNode x = list.at(k);
      const Tmpc t{x.at("timePerSample").as_size(), x.at("memoryUsageA").as_size(),
                   x.at("memoryUsageB").as_size()};
      if (k == 0 || t.time < best.time) best = t;
    }
    node.fastest[degree] = best;
  }
  if (node.fastest.empty()) tmpcs.fail("no tensor-parallel degree");
  return node;
}

// Kahn's algorithm, the smallest id first among the ready nodes: node indices in order.
std::vector<std::size_t> topological_order(const std::vector<Node>& nodes,
                                           const std::vector<std::vector<std::size_t>>& out,
                                           const JsonNode& edges) {
  std::vector<int> indegree(nodes.size(), 0);
  for (const auto& next : out)
    for (std::size_t v : next) ++indegree[v];
  using Ready = std::pair<std::int64_t, std::size_t>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (std::size_t v = 0; v < nodes.size(); ++v)
    if (indegree[v] == 0) ready.emplace(nodes[v].id, v);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (std::size_t v : out[u])
      if (--indegree[v] == 0) ready.emplace(nodes[v].id, v);
  }
  if (order.size() != nodes.size()) {
    const auto stuck = std::find_if(indegree.begin(), indegree.end(), [](int d) { return d > 0; });
    edges.fail("the edges make a cycle (through node " +
               std::to_string(nodes[static_cast<std::size_t>(stuck - indegree.begin())].id) + ")");
  }
  return order;
}

}  // namespace

PiperInput read_piper_input(const std::string& path, int stages) {
  const nlohmann::json doc = read_json_file(path);
  const JsonNode root(doc, path);
  PiperInput in;
  in.max_devices = static_cast<int>(root.at("maxDevices").as_int(1, 1 << 30));
  in.memory_per_device = root.at("maxMemoryPerDevice").as_size();
  in.bandwidth = root.at("bandwidth").as_size();
  if (in.bandwidth <= 0) root.at("bandwidth").fail("the bandwidth must be positive");
  const JsonNode list = root.at("nodes");
  std::vector<Node> nodes;
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t k = 0; k < list.size(); ++k) {
    nodes.push_back(read_node(list.at(k)));
    if (!index.emplace(nodes.back().id, k).second)
      list.at(k).at("id").fail("node id " + std::to_string(nodes.back().id) + " given twice");
  }
  if (stages < 1 || static_cast<std::size_t>(stages) > nodes.size())
    list.fail(std::to_string(nodes.size()) + " nodes cannot make " + std::to_string(stages) + " stages");
  const JsonNode edges = root.at("edges");
  std::vector<std::vector<std::size_t>> out(nodes.size());
  struct Edge {
    std::size_t from, to;
    double bytes;
  };
  std::vector<Edge> all;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const JsonNode e = edges.at(k);
    auto node_at = [&](const char* key) {
      const JsonNode id = e.at(key);
      const auto found = index.find(id.as_int());
      if (found == index.end()) id.fail("no node with id " + std::to_string(id.as_int()));
      return found->second;
    };
    all.push_back({node_at("sourceId"), node_at("destId"), e.at("communicationCost").as_size()});
    out[all.back().from].push_back(all.back().to);
  }
  const std::vector<std::size_t> order = topological_order(nodes, out, edges);
  std::vector<std::size_t> position(nodes.size());
  for (std::size_t p = 0; p < order.size(); ++p) position[order[p]] = p;
  // Bytes crossing the cut after each position: an edge from position p to q crosses p..q-1.
  std::vector<double> crossing(nodes.size() + 1, 0);
  for (const Edge& e : all) {
    crossing[position[e.from]] += e.bytes;
    crossing[position[e.to]] -= e.bytes;
  }
  for (std::size_t p = 1; p < crossing.size(); ++p) crossing[p] += crossing[p - 1];
  for (const auto& [degree, tmpc] : nodes[0].fastest)
    if (std::all_of(nodes.begin(), nodes.end(),
                    [d = degree](const Node& n) { return n.fastest.count(d) > 0; }))
      in.degrees.push_back(degree);
  if (in.degrees.empty()) list.fail("no tensor-parallel degree is offered by every node");
  for (int degree : in.degrees) {
    PartitionProblem problem;
    for (std::size_t p = 0; p < order.size(); ++p) {
      const Tmpc& t = nodes[order[p]].fastest.at(degree);
      problem.layers.push_back({t.time, crossing[p] / in.bandwidth, t.b, t.a});
    }
    for (int s = 0; s < stages; ++s) {
      PartitionStage stage;
      stage.memory_bytes = in.memory_per_device;
      stage.in_flight = stages - s;
      problem.stages.push_back(stage);
    }
    in.problems.push_back(std::move(problem));
  }
  for (std::size_t v : order) {
    in.node_ids.push_back(nodes[v].id);
    in.names.push_back(nodes[v].name);
  }
  return in;
}

}  // namespace models
}  // namespace strata
