// Seeded synthetic graphs: see synthetic_graph.hpp.
#include "strata/models/graph/synthetic_graph.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <sstream>
#include <string>

#include "strata/traces/error.hpp"
#include "strata/traces/random_draws.hpp"

namespace strata {
inline namespace models {
namespace {

using Edge = std::pair<std::int32_t, std::int32_t>;

// Draws a power-law graph may spend per edge asked for before it gives up.
constexpr std::int64_t kDrawsPerEdge = 64;
// Draws between two checks of their yield of new edges.
constexpr std::int64_t kDrawWindow = std::int64_t{1} << 16;
// Draws made before their edges are looked up (a divisor of kDrawWindow).
constexpr std::size_t kDrawBatch = 32;

std::string number(double x) {
  std::ostringstream out;
  out.precision(10);
  out << x;
  return out.str();
}

[[noreturn]] void bad_graph(const std::string& problem) { throw InputError("graph: " + problem); }

// An edge u < v as one integer, so that sorting edges sorts by u, then v.
std::uint64_t key(const Edge& e) {
  return (static_cast<std::uint64_t>(e.first) << 32) | static_cast<std::uint32_t>(e.second);
}
struct KeyLess {
  bool operator()(const Edge& a, const Edge& b) const { return key(a) < key(b); }
};

// Walker's alias table by Vose's construction: O(n) to build, O(1) per draw.
class AliasTable {
 public:
  explicit AliasTable(const std::vector<double>& weights) : prob_(weights.size()), alias_(weights.size()) {
    const auto n = static_cast<std::int64_t>(weights.size());
    double total = 0;
    for (double w : weights) total += w;
    std::vector<std::int32_t> small, large;
    for (std::int64_t i = 0; i < n; ++i) {
      prob_[i] = weights[i] * static_cast<double>(n) / total;
      alias_[i] = static_cast<std::int32_t>(i);
      (prob_[i] < 1.0 ? small : large).push_back(static_cast<std::int32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
      const std::int32_t s = small.back();
      small.pop_back();
      const std::int32_t l = large.back();
      alias_[s] = l;
      prob_[l] = (prob_[l] + prob_[s]) - 1.0;
      if (prob_[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    // What is left is 1 up to rounding.
    for (std::int32_t i : small) prob_[i] = 1.0;
    for (std::int32_t i : large) prob_[i] = 1.0;
  }

  std::int32_t draw(std::mt19937_64& rng) const {
    const auto i = static_cast<std::size_t>(uniform_below(prob_.size(), rng));
    return unit_draw(rng) < prob_[i] ? static_cast<std::int32_t>(i) : alias_[i];
  }

 private:
  std::vector<double> prob_;
  std::vector<std::int32_t> alias_;
};

// Σ_{i=0}^{n-1} (i0 / (i + i0))^a, a in (0, 1): the first 1,024 terms exactly, the rest by
// Euler–Maclaurin (the integral, half the end terms and the first-derivative term). Against the
// plain sum in long double: relative error below 1e-14 for n up to 10^7, a from 0.1 to 1 - 1e-7
// and i0 from 1e-6 to 1e12.
double weight_sum(std::int64_t nodes, double i0, double a) {
  const std::int64_t exact = std::min<std::int64_t>(nodes, 1024);
  double sum = 0;
  for (std::int64_t i = 0; i < exact; ++i) sum += std::pow(i0 / (static_cast<double>(i) + i0), a);
  if (exact == nodes) return sum;
  const double lo = static_cast<double>(exact) + i0, hi = static_cast<double>(nodes) + i0;
  // ∫ (t + i0)^-a dt from `exact` to n, as lo^(1-a) expm1((1-a) ln(hi/lo)) / (1-a): no
  // cancellation when a is near 1 (exponents near 2) nor when i0 dwarfs n.
  const double log_ratio = std::log1p(static_cast<double>(nodes - exact) / lo);
  const double integral = std::pow(lo, 1 - a) * std::expm1((1 - a) * log_ratio) / (1 - a);
  const double f_lo = std::pow(lo, -a), f_hi = std::pow(hi, -a);
  const double tail = integral + 0.5 * (f_lo - f_hi) + a * (f_lo / lo - f_hi / hi) / 12;
  return sum + std::pow(i0, a) * tail;
}

// The power-law expected degrees (synthetic_graph.hpp): i0 by bisection on its logarithm, so that
// k_max Σ (i0 / (i + i0))^a = 2 edges; the sum rises with i0 from 1 (i0 -> 0) to n (i0 -> ∞), and
// 2 edges / k_max lies between since d <= k_max <= 2 edges.
std::vector<double> expected_degrees(std::int64_t nodes, std::int64_t edges, double exponent) {
  const auto n = static_cast<double>(nodes);
  const double twice_edges = 2.0 * static_cast<double>(edges);
  const double k_max = std::min(std::sqrt(twice_edges), n - 1);
  const double a = 1.0 / (exponent - 1.0);
  const double target = twice_edges / k_max;
  double lo = -700, hi = 700;  // ln i0
  for (int step = 0; step < 200 && hi - lo > 1e-12; ++step) {
    const double mid = 0.5 * (lo + hi);
    (weight_sum(nodes, std::exp(mid), a) < target ? lo : hi) = mid;
  }
  const double i0 = std::exp(0.5 * (lo + hi));
  std::vector<double> w(static_cast<std::size_t>(nodes));
  for (std::int64_t i = 0; i < nodes; ++i) w[i] = k_max * std::pow(i0 / (static_cast<double>(i) + i0), a);
  return w;
}

void check_power_law(std::int64_t nodes, std::int64_t edges, double exponent) {
  if (nodes < 2 || nodes > CsrGraph::kMaxNodes)
    bad_graph("nodes=" + std::to_string(nodes) + " must be in [2, " + std::to_string(CsrGraph::kMaxNodes) +
              "]");
  const std::int64_t pairs = nodes * (nodes - 1) / 2;  // < 2^61
  const std::int64_t most = std::min(pairs, CsrGraph::kMaxEdges);
  if (edges < 1 || edges > most)
    bad_graph("edges=" + std::to_string(edges) + " must be in [1, " + std::to_string(most) +
              "] for nodes=" + std::to_string(nodes) + (most == pairs ? " (the complete graph)" : ""));
  if (!std::isfinite(exponent) || !(exponent > 2))
    bad_graph("exponent=" + number(exponent) + " must be a finite number > 2 (a finite mean degree)");
}

// The edges held so far, for membership: open addressing with linear probing in a power-of-two
// table at most 3/4 full (Fibonacci hashing of the key). O(1) expected per insert, 8 bytes per slot.
class EdgeSet {
 public:
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};  // the key of no edge: u < v < 2^31

  explicit EdgeSet(std::int64_t most) {
    int bits = 4;
    while ((std::int64_t{1} << bits) * 3 < most * 4) ++bits;
    slots_.assign(std::size_t{1} << bits, kNone);
    shift_ = 64 - bits;
  }
  void prefetch(std::uint64_t k) const { __builtin_prefetch(&slots_[slot(k)]); }
  // Whether edge `k` (a key) was not held before; it is now.
  bool insert(std::uint64_t k) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = slot(k);; i = (i + 1) & mask) {
      if (slots_[i] == k) return false;
      if (slots_[i] == kNone) {
        slots_[i] = k;
        return true;
      }
    }
  }

 private:
  std::size_t slot(std::uint64_t k) const { return (k * 0x9E3779B97F4A7C15ULL) >> shift_; }

  std::vector<std::uint64_t> slots_;
  int shift_ = 0;
};

struct DrawnEdges {
  std::vector<Edge> held;  // distinct, in draw order
  std::int64_t draws = 0;
};

// Draws endpoint pairs until `edges` distinct edges are held, or stops short when the weights
// repeat their pairs too often (synthetic_graph.hpp: kDrawsPerEdge, checked every kDrawWindow).
DrawnEdges draw_edges(const AliasTable& table, std::int64_t edges, std::mt19937_64& rng) {
  DrawnEdges out;
  out.held.reserve(static_cast<std::size_t>(edges));
  EdgeSet seen(edges);
  const std::int64_t budget = kDrawsPerEdge * edges;
  std::size_t held_before = 0;  // at the start of the current window
  std::array<std::uint64_t, kDrawBatch> batch{};
  for (;;) {
    // A batch of draws first, prefetching the slot each will probe: from ~10^6 edges the table
    // outgrows the caches, and the loads then overlap instead of waiting one by one. Draws after
    // the last edge needed are dropped, so the edges are those of drawing one pair at a time.
    for (std::uint64_t& k : batch) {
      const std::int32_t u = table.draw(rng);
      const std::int32_t v = table.draw(rng);
      k = u == v ? EdgeSet::kNone : key({std::min(u, v), std::max(u, v)});
      seen.prefetch(k);
    }
    for (const std::uint64_t k : batch) {
      ++out.draws;
      if (k != EdgeSet::kNone && seen.insert(k)) {
        out.held.emplace_back(static_cast<std::int32_t>(k >> 32), static_cast<std::int32_t>(k & 0xffffffffU));
        if (static_cast<std::int64_t>(out.held.size()) == edges) return out;
      }
      if (out.draws % kDrawWindow != 0 && out.draws < budget) continue;
      // The share of draws that give a new edge only falls as edges are held: at the last window's
      // share, the rest needs at least missing / share draws.
      const auto missing = static_cast<double>(edges - static_cast<std::int64_t>(out.held.size()));
      const auto gained = static_cast<double>(std::max<std::size_t>(out.held.size() - held_before, 1));
      held_before = out.held.size();
      if (out.draws >= budget ||
          static_cast<double>(out.draws) + missing * static_cast<double>(kDrawWindow) / gained >
              4.0 * static_cast<double>(budget))
        return out;
    }
  }
}

// Rows 0..rows-1, row u's candidate columns [first(u), first(u) + length(u)): the edges among
// them, each candidate with probability p, by geometric gaps over the rows' concatenation
// (Batagelj & Brandes 2005). O(rows + edges drawn).
template <typename First, typename Length>
void geometric_walk(std::int64_t rows, First first, Length length, double p, std::mt19937_64& rng,
                    std::vector<Edge>& out) {
  if (p <= 0) return;
  // The non-edges before the next edge: floor(log(1 - U) / log(1 - p)), kept below 2^62 (beyond
  // any candidate count) before its conversion.
  constexpr double kFar = 4611686018427387904.0;
  const double log_q = std::log1p(-p);
  std::int64_t u = 0, pos = -1;
  for (;;) {
    const double gap = p >= 1 ? 0.0 : std::floor(std::log1p(-unit_draw(rng)) / log_q);
    pos += 1 + static_cast<std::int64_t>(std::min(gap, kFar));
    while (u < rows && pos >= length(u)) {
      pos -= length(u);
      ++u;
    }
    if (u == rows) return;
    out.emplace_back(static_cast<std::int32_t>(u), static_cast<std::int32_t>(first(u) + pos));
  }
}

void check_sbm(int communities, std::int64_t size, double degree_in, double degree_out) {
  if (communities < 1) bad_graph("communities=" + std::to_string(communities) + " must be >= 1");
  if (size < 2) bad_graph("nodes_per_community=" + std::to_string(size) + " must be >= 2");
  if (size > CsrGraph::kMaxNodes / communities)
    bad_graph("communities=" + std::to_string(communities) + " x nodes_per_community=" +
              std::to_string(size) + " must be <= " + std::to_string(CsrGraph::kMaxNodes) + " nodes");
  const auto s = static_cast<double>(size);
  if (!(degree_in >= 0 && degree_in <= s - 1))
    bad_graph("mean_degree_in=" + number(degree_in) + " must be in [0, " + number(s - 1) +
              "] (nodes_per_community - 1)");
  const double most_out = s * (communities - 1);
  if (!(degree_out >= 0 && degree_out <= most_out))
    bad_graph("mean_degree_out=" + number(degree_out) + " must be in [0, " + number(most_out) +
              "] (nodes_per_community x (communities - 1))");
  const double expected = 0.5 * s * communities * (degree_in + degree_out);
  if (expected > static_cast<double>(CsrGraph::kMaxEdges))
    bad_graph("mean_degree_in + mean_degree_out=" + number(degree_in + degree_out) + " gives " +
              number(expected) + " edges, more than " + std::to_string(CsrGraph::kMaxEdges));
}

}  // namespace

std::span<const std::int32_t> CsrGraph::neighbours(std::int32_t node) const {
  STRATA_ASSERT(node >= 0 && node < nodes(), "node " + std::to_string(node));
  return std::span<const std::int32_t>(adjacency_)
      .subspan(static_cast<std::size_t>(offsets_[node]), static_cast<std::size_t>(degree(node)));
}

CsrGraph CsrGraph::from_edges(std::int64_t nodes, std::vector<Edge> edges) {
  if (nodes < 0 || nodes > kMaxNodes)
    bad_graph("nodes=" + std::to_string(nodes) + " must be in [0, " + std::to_string(kMaxNodes) + "]");
  if (static_cast<std::int64_t>(edges.size()) > kMaxEdges)
    bad_graph(std::to_string(edges.size()) + " edges, more than " + std::to_string(kMaxEdges));
  for (std::size_t i = 0; i < edges.size(); ++i) {
    auto& [u, v] = edges[i];
    if (u < 0 || u >= nodes || v < 0 || v >= nodes || u == v)
      bad_graph("edge " + std::to_string(i) + " (" + std::to_string(u) + ", " + std::to_string(v) +
                (u == v ? ") is a self loop" : ") has an end outside [0, " + std::to_string(nodes) + ")"));
    if (u > v) std::swap(u, v);
  }
  if (!std::is_sorted(edges.begin(), edges.end(), KeyLess{}))
    std::sort(edges.begin(), edges.end(), KeyLess{});
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());

  CsrGraph g;
  g.offsets_.assign(static_cast<std::size_t>(nodes) + 1, 0);
  for (const auto& [u, v] : edges) {
    ++g.offsets_[u + 1];
    ++g.offsets_[v + 1];
  }
  for (std::int64_t i = 0; i < nodes; ++i) g.offsets_[i + 1] += g.offsets_[i];
  g.adjacency_.resize(2 * edges.size());
  std::vector<std::int64_t> next(g.offsets_.begin(), g.offsets_.end() - 1);
  // In (u, v) order node x first receives its u < x in ascending order, then its v > x: every
  // list comes out sorted.
  for (const auto& [u, v] : edges) {
    g.adjacency_[next[u]++] = v;
    g.adjacency_[next[v]++] = u;
  }
  return g;
}

CsrGraph power_law_graph(std::int64_t nodes, std::int64_t edges, double exponent, std::uint64_t seed) {
  check_power_law(nodes, edges, exponent);
  std::mt19937_64 rng(seed);
  DrawnEdges drawn = draw_edges(AliasTable(expected_degrees(nodes, edges, exponent)), edges, rng);
  if (static_cast<std::int64_t>(drawn.held.size()) < edges)
    bad_graph("edges=" + std::to_string(edges) + " not reachable with nodes=" + std::to_string(nodes) +
              " and exponent=" + number(exponent) + ": " + std::to_string(drawn.held.size()) +
              " distinct after " + std::to_string(drawn.draws) +
              " draws, the heavy nodes repeat their pairs (ask fewer edges or more nodes)");
  return CsrGraph::from_edges(nodes, std::move(drawn.held));
}

std::vector<double> power_law_degrees(std::int64_t nodes, std::int64_t edges, double exponent) {
  check_power_law(nodes, edges, exponent);
  return expected_degrees(nodes, edges, exponent);
}

PlantedGraph sbm_graph(int communities, std::int64_t nodes_per_community, double mean_degree_in,
                       double mean_degree_out, std::uint64_t seed) {
  check_sbm(communities, nodes_per_community, mean_degree_in, mean_degree_out);
  const std::int64_t s = nodes_per_community;
  const std::int64_t n = s * communities;
  auto block_end = [s](std::int64_t u) { return (u / s + 1) * s; };
  std::mt19937_64 rng(seed);
  std::vector<Edge> edges;
  edges.reserve(
      static_cast<std::size_t>(0.5 * static_cast<double>(n) * (mean_degree_in + mean_degree_out) * 1.01));
  // Inside a community: u's candidates are (u, end of its community); across: [end of its, n).
  geometric_walk(
      n, [](std::int64_t u) { return u + 1; }, [&](std::int64_t u) { return block_end(u) - u - 1; },
      mean_degree_in / static_cast<double>(s - 1), rng, edges);
  const std::size_t inside = edges.size();
  if (communities > 1)
    geometric_walk(
        n, block_end, [&](std::int64_t u) { return n - block_end(u); },
        mean_degree_out / static_cast<double>(s * (communities - 1)), rng, edges);

  // A uniform relabelling (Fisher–Yates on raw draws).
  std::vector<std::int32_t> label(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) label[i] = static_cast<std::int32_t>(i);
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(label[i], label[uniform_below(static_cast<std::uint64_t>(i) + 1, rng)]);
  PlantedGraph out;
  out.community.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out.community[label[i]] = static_cast<std::int32_t>(i / s);
  for (auto& [u, v] : edges) {
    u = label[u];
    v = label[v];
  }
  out.planted_cut = static_cast<std::int64_t>(edges.size() - inside);
  out.graph = CsrGraph::from_edges(n, std::move(edges));
  return out;
}

}  // namespace models
}  // namespace strata
