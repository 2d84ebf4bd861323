#include "strata/sim/collectives.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <variant>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace sim {
namespace {

// Accumulates flows, remembering each rank's last sent and received flow so that the next
// transfer of a rank waits for both (a rank forwards what it has received, one send at a time).
class FlowBuilder {
 public:
  void add(WorkerId src, WorkerId dst, double bytes, int extra_latencies) {
    Flow f{src, dst, bytes, extra_latencies, {}};
    for (const auto* last : {&last_send_, &last_recv_}) {
      auto it = last->find(src);
      if (it != last->end() && std::find(f.deps.begin(), f.deps.end(), it->second) == f.deps.end())
        f.deps.push_back(it->second);
    }
    const auto index = static_cast<std::uint32_t>(flows_.size());
    pending_send_.emplace_back(src, index);
    pending_recv_.emplace_back(dst, index);
    flows_.push_back(std::move(f));
  }
  // Ends a step: flows added since the last commit become the ranks' "last" flows. Flows within
  // one step are concurrent and do not depend on each other.
  void commit_step() {
    for (auto [w, i] : pending_send_) last_send_[w] = i;
    for (auto [w, i] : pending_recv_) last_recv_[w] = i;
    pending_send_.clear();
    pending_recv_.clear();
  }
  std::vector<Flow> take() { return std::move(flows_); }

 private:
  std::vector<Flow> flows_;
  std::unordered_map<WorkerId, std::uint32_t> last_send_;
  std::unordered_map<WorkerId, std::uint32_t> last_recv_;
  std::vector<std::pair<WorkerId, std::uint32_t>> pending_send_;
  std::vector<std::pair<WorkerId, std::uint32_t>> pending_recv_;
};

// `steps` ring steps of `chunk` bytes over `ring`, step by step or as one aggregated flow per rank.
void ring_phase(FlowBuilder& b, const std::vector<WorkerId>& ring, int steps, double chunk,
                CollectiveFidelity fidelity) {
  const std::size_t n = ring.size();
  if (n < 2 || steps <= 0) return;
  if (fidelity == CollectiveFidelity::aggregated) {
    for (std::size_t i = 0; i < n; ++i) b.add(ring[i], ring[(i + 1) % n], chunk * steps, steps - 1);
    b.commit_step();
    return;
  }
  for (int k = 0; k < steps; ++k) {
    for (std::size_t i = 0; i < n; ++i) b.add(ring[i], ring[(i + 1) % n], chunk, 0);
    b.commit_step();
  }
}

int ring_steps(TaskKind kind, std::size_t n) {
  const int m = static_cast<int>(n) - 1;
  return kind == TaskKind::allreduce ? 2 * m : m;
}

// Members grouped by host, each host's members in group order; empty when hosts hold unequal
// numbers of members (hierarchical needs a rectangle).
std::vector<std::vector<WorkerId>> by_host(const std::vector<WorkerId>& group,
                                           const std::vector<int>& host_of) {
  std::map<int, std::vector<WorkerId>> hosts;
  std::vector<int> order;
  for (WorkerId w : group) {
    int h = host_of[static_cast<std::size_t>(w)];
    if (hosts.find(h) == hosts.end()) order.push_back(h);
    hosts[h].push_back(w);
  }
  std::vector<std::vector<WorkerId>> out;
  for (int h : order) {
    if (!out.empty() && hosts[h].size() != out.front().size()) return {};
    out.push_back(hosts[h]);
  }
  return out;
}

// `whole_hosts`: the hosts of the whole group (more than `hosts` in a symmetry reduction).
void hierarchical_allreduce(FlowBuilder& b, const std::vector<std::vector<WorkerId>>& hosts, double bytes,
                            std::size_t whole_hosts, CollectiveFidelity fidelity) {
  const std::size_t local = hosts.front().size();
  const std::size_t num_hosts = hosts.size();
  const double intra_chunk = bytes / static_cast<double>(local);
  auto intra_phase = [&]() {
    // All hosts run their intra ring at once: interleave their steps.
    if (fidelity == CollectiveFidelity::aggregated) {
      for (const auto& h : hosts)
        for (std::size_t i = 0; i < local; ++i)
          b.add(h[i], h[(i + 1) % local], intra_chunk * static_cast<double>(local - 1),
                static_cast<int>(local) - 2);
      b.commit_step();
      return;
    }
    for (std::size_t k = 0; k + 1 < local; ++k) {
      for (const auto& h : hosts)
        for (std::size_t i = 0; i < local; ++i) b.add(h[i], h[(i + 1) % local], intra_chunk, 0);
      b.commit_step();
    }
  };
  if (local > 1) intra_phase();
  if (num_hosts > 1) {
    const int steps = 2 * (static_cast<int>(whole_hosts) - 1);
    const double chunk = intra_chunk / static_cast<double>(whole_hosts);
    const int rounds = fidelity == CollectiveFidelity::aggregated ? 1 : steps;
    for (int k = 0; k < rounds; ++k) {
      for (std::size_t j = 0; j < local; ++j)
        for (std::size_t h = 0; h < num_hosts; ++h) {
          WorkerId src = hosts[h][j];
          WorkerId dst = hosts[(h + 1) % num_hosts][j];
          if (fidelity == CollectiveFidelity::aggregated)
            b.add(src, dst, chunk * steps, steps - 1);
          else
            b.add(src, dst, chunk, 0);
        }
      b.commit_step();
    }
  }
  if (local > 1) intra_phase();
}

void halving_doubling(FlowBuilder& b, const std::vector<WorkerId>& g, double bytes) {
  const std::size_t n = g.size();
  std::vector<std::size_t> distances;
  for (std::size_t d = n / 2; d >= 1; d /= 2) distances.push_back(d);
  double chunk = bytes;
  for (std::size_t d : distances) {  // recursive halving reduce-scatter
    chunk /= 2;
    for (std::size_t i = 0; i < n; ++i) b.add(g[i], g[i ^ d], chunk, 0);
    b.commit_step();
  }
  for (auto it = distances.rbegin(); it != distances.rend(); ++it) {  // recursive doubling allgather
    for (std::size_t i = 0; i < n; ++i) b.add(g[i], g[i ^ *it], chunk, 0);
    b.commit_step();
    chunk *= 2;
  }
}

// Binary tree over group positions: reduce towards position 0 level by level, then broadcast.
void tree_allreduce(FlowBuilder& b, const std::vector<WorkerId>& g, double bytes) {
  const std::size_t n = g.size();
  std::size_t depth = 0;
  while ((std::size_t{1} << (depth + 1)) - 1 < n) ++depth;
  for (std::size_t level = depth; level >= 1; --level) {  // children at `level` send up
    for (std::size_t i = (std::size_t{1} << level) - 1; i < std::min(n, (std::size_t{1} << (level + 1)) - 1);
         ++i)
      b.add(g[i], g[(i - 1) / 2], bytes, 0);
    b.commit_step();
  }
  for (std::size_t level = 1; level <= depth; ++level) {
    for (std::size_t i = (std::size_t{1} << level) - 1; i < std::min(n, (std::size_t{1} << (level + 1)) - 1);
         ++i)
      b.add(g[(i - 1) / 2], g[i], bytes, 0);
    b.commit_step();
  }
}

// Binomial-tree broadcast from position 0: log2(n) rounds of the whole buffer.
void binomial_broadcast(FlowBuilder& b, const std::vector<WorkerId>& g, double bytes) {
  const std::size_t n = g.size();
  for (std::size_t span = 1; span < n; span *= 2) {
    for (std::size_t i = 0; i < span && i + span < n; ++i) b.add(g[i], g[i + span], bytes, 0);
    b.commit_step();
  }
}

bool is_power_of_two(std::size_t n) { return n > 0 && (n & (n - 1)) == 0; }

// LambdaML's exchanges through an object store (docs/serverless.md): every PUT is a flow from a
// rank to `store`, every GET one from `store` to a rank. A rank's requests go one after another
// (its loop of put_object and get_object calls); a GET waits for the PUT of its object.
class StoreRequests {
 public:
  StoreRequests(const std::vector<WorkerId>& group, WorkerId store) : store_(store) {
    for (WorkerId w : group) last_[w] = kNone;
  }
  // Rank w PUTs `bytes` once `after` (flows) have ended; returns the PUT's flow (the object).
  std::uint32_t put(WorkerId w, double bytes, const std::vector<std::uint32_t>& after = {},
                    double merge = 0) {
    const std::uint32_t f = request(w, store_, w, bytes, after);
    flows_[f].merge_bytes = merge;
    return f;
  }
  std::uint32_t get(WorkerId w, double bytes, std::uint32_t object) {
    return request(store_, w, w, bytes, {object});
  }
  std::vector<Flow> take() { return std::move(flows_); }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  std::uint32_t request(WorkerId src, WorkerId dst, WorkerId rank, double bytes,
                        const std::vector<std::uint32_t>& after) {
    Flow f{src, dst, bytes, 0, after};
    std::uint32_t& last = last_[rank];
    if (last != kNone && std::find(f.deps.begin(), f.deps.end(), last) == f.deps.end())
      f.deps.push_back(last);
    last = static_cast<std::uint32_t>(flows_.size());
    flows_.push_back(std::move(f));
    return last;
  }

  WorkerId store_;
  std::vector<Flow> flows_;
  std::unordered_map<WorkerId, std::uint32_t> last_;
};

// Every rank PUTs its buffer; the first rank GETs the others', sums and PUTs the sum; the other
// ranks GET it.
std::vector<Flow> storage_allreduce(const std::vector<WorkerId>& g, double bytes, WorkerId store) {
  StoreRequests r(g, store);
  std::vector<std::uint32_t> object(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) object[i] = r.put(g[i], bytes);
  std::vector<std::uint32_t> got;
  for (std::size_t i = 1; i < g.size(); ++i) got.push_back(r.get(g[0], bytes, object[i]));
  const std::uint32_t sum = r.put(g[0], bytes, got, 3 * bytes * static_cast<double>(g.size() - 1));
  for (std::size_t i = 1; i < g.size(); ++i) r.get(g[i], bytes, sum);
  return r.take();
}

// Rank i PUTs shard j of its buffer for every j != i; rank j GETs shard j of the others, sums
// and PUTs it; every rank GETs the n - 1 summed shards it lacks.
std::vector<Flow> storage_scatter_reduce(const std::vector<WorkerId>& g, double bytes, WorkerId store) {
  const std::size_t n = g.size();
  const double shard = bytes / static_cast<double>(n);
  StoreRequests r(g, store);
  std::vector<std::vector<std::uint32_t>> piece(n, std::vector<std::uint32_t>(n, 0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) piece[i][j] = r.put(g[i], shard);
  std::vector<std::uint32_t> summed(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<std::uint32_t> got;
    for (std::size_t i = 0; i < n; ++i)
      if (i != j) got.push_back(r.get(g[j], shard, piece[i][j]));
    summed[j] = r.put(g[j], shard, got, 3 * shard * static_cast<double>(n - 1));
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) r.get(g[i], shard, summed[j]);
  return r.take();
}

// LambdaML's hybrid parameter server: every rank sends its buffer to the server at once; once
// all have arrived the server sums them (n - 1 additions on its host) and sends the sum to every
// rank at once. Each pull carries the sum's merge: they all wait it out from the same instant,
// as one merge followed by the pulls.
std::vector<Flow> parameter_server(const std::vector<WorkerId>& g, double bytes, WorkerId server) {
  std::vector<Flow> flows;
  std::vector<std::uint32_t> pushed;
  for (WorkerId w : g) {
    pushed.push_back(static_cast<std::uint32_t>(flows.size()));
    flows.push_back({w, server, bytes, 0, {}, 0});
  }
  const double merge = 3 * bytes * static_cast<double>(g.size() - 1);
  for (WorkerId w : g) flows.push_back({server, w, bytes, 0, pushed, merge});
  return flows;
}

}  // namespace

std::vector<Flow> expand_collective(const Task& task, CollectiveFidelity fidelity,
                                    const std::vector<int>& host_of_worker, WorkerId store) {
  STRATA_ASSERT(is_collective(task.kind) && !task.group.empty(), "not a collective: " + task.id);
  FlowBuilder b;
  const auto& g = task.group;
  const std::size_t n = g.size();
  if (n < 2) return {};
  const double s = task.comm_bytes;
  // A symmetry reduction's collective runs over representatives of a larger group: chunks and
  // ring steps are the whole group's (symmetry.hpp), the flows the representatives'.
  const std::size_t whole = group_size(task);
  STRATA_ASSERT(whole == n || task.algo == CollectiveAlgo::ring || task.algo == CollectiveAlgo::hierarchical,
                "a reduced group needs a ring or hierarchical algorithm: " + task.id);
  if (is_hub_algo(task.algo)) {
    STRATA_ASSERT(task.kind == TaskKind::allreduce && store >= 0,
                  "store, cache or server collective without its host: " + task.id);
    if (task.algo == CollectiveAlgo::parameter_server) return parameter_server(g, s, store);
    const bool whole =
        task.algo == CollectiveAlgo::storage_allreduce || task.algo == CollectiveAlgo::cache_allreduce;
    return whole ? storage_allreduce(g, s, store) : storage_scatter_reduce(g, s, store);
  }
  if (task.kind == TaskKind::broadcast) {
    binomial_broadcast(b, g, s);
    return b.take();
  }
  if (task.kind == TaskKind::allreduce) {
    if (task.algo == CollectiveAlgo::hierarchical) {
      auto hosts = by_host(g, host_of_worker);
      if (!hosts.empty()) {
        const std::size_t local = hosts.front().size();
        STRATA_ASSERT(whole % local == 0, "reduced group of " + task.id + " is not whole hosts");
        hierarchical_allreduce(b, hosts, s, whole / local, fidelity);
        return b.take();
      }
    } else if (task.algo == CollectiveAlgo::halving_doubling && is_power_of_two(n)) {
      halving_doubling(b, g, s);
      return b.take();
    } else if (task.algo == CollectiveAlgo::tree) {
      tree_allreduce(b, g, s);
      return b.take();
    }
  }
  ring_phase(b, g, ring_steps(task.kind, whole), s / static_cast<double>(whole), fidelity);
  return b.take();
}

std::size_t group_size(const Task& task) {
  const auto whole = task.attrs.find("group_size");
  if (whole == task.attrs.end()) return task.group.size();
  const auto* value = std::get_if<std::int64_t>(&whole->second);
  STRATA_ASSERT(value != nullptr && *value >= static_cast<std::int64_t>(task.group.size()),
                "group_size of " + task.id + " is below its group's");
  return static_cast<std::size_t>(*value);
}

std::size_t step_flow_count(const Task& task, const std::vector<int>& host_of_worker) {
  const std::size_t n = task.group.size();
  if (n < 2) return 0;
  if (task.algo == CollectiveAlgo::storage_allreduce || task.algo == CollectiveAlgo::cache_allreduce)
    return 2 * n;
  if (task.algo == CollectiveAlgo::storage_scatter_reduce ||
      task.algo == CollectiveAlgo::cache_scatter_reduce)
    return 3 * n * (n - 1) + n;
  if (task.algo == CollectiveAlgo::parameter_server) return 2 * n;
  if (task.kind == TaskKind::allreduce && task.algo == CollectiveAlgo::hierarchical) {
    auto hosts = by_host(task.group, host_of_worker);
    if (!hosts.empty()) {
      const std::size_t local = hosts.front().size();
      const std::size_t h = group_size(task) / local;
      return 2 * (local - 1) * n + 2 * (h - 1) * n;
    }
  }
  return static_cast<std::size_t>(ring_steps(task.kind, group_size(task))) * n;
}

}  // namespace sim
}  // namespace strata
