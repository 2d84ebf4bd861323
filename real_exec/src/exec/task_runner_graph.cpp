// TaskRunner<T>'s kernels for GCN Plans (task_runner.hpp): spmm with Â, the bias placement of
// gcn.hpp's Z = Â (H W) + b, the loss over the training nodes, and GIST's extract, write_back
// and average, all reading the GraphOperands that GcnPlanTrainer sets (gcn_plan.hpp).
//
// The arithmetic is gcn.cpp's and gist.cpp's, operation for operation (the same kernels, the same
// summation order for db and the shared bias, the output weights times m then times 1/m), so a
// Plan run gives gist_train's weights to rounding (gcn_plan_test.cpp).
//
// Bias placement is found once from the buffers (set_graph): an spmm whose input a linear_fwd
// writes is a forward aggregation of that linear's output; an spmm whose output a
// linear_bwd_weight reads as dY gives that task dP = Â dZ, and its dZ is the spmm's input.
// A pipeline cut between a layer's fc and its aggregation (a send in between) hides the pair:
// the bias is then added before Â, as the Plan's tasks literally say.
#include <algorithm>
#include <numeric>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "strata/real/exec/task_runner.hpp"
#include "strata/real/kernels/gcn.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

std::vector<std::int64_t> all_units(std::int64_t n) {
  std::vector<std::int64_t> units(static_cast<std::size_t>(n));
  std::iota(units.begin(), units.end(), std::int64_t{0});
  return units;
}

// The rows (inputs) and columns (outputs) of layer l that `site` owns (gist.cpp's site_slices).
struct Slices {
  std::vector<std::int64_t> rows, cols;
};
Slices site_slices(const std::vector<std::int64_t>& widths, const HiddenPartition& p, std::int64_t site,
                   std::size_t l) {
  const bool first = l == 0, last = l + 2 == widths.size();
  return {first ? all_units(widths[0]) : p.units[l - 1][static_cast<std::size_t>(site)],
          last ? all_units(widths.back()) : p.units[l][static_cast<std::size_t>(site)]};
}

}  // namespace

template <typename T>
void TaskRunner<T>::set_graph(const GraphOperands<T>* graph) {
  graph_ = graph;
  bias_routes_.clear();
  halo_peers_.clear();
  if (graph == nullptr) return;
  if (!graph->parts.empty()) {  // a split graph: each worker holds one part, its rank's
    std::unordered_map<WorkerId, int> part_of_worker;
    for (const Task& t : plan_.tasks())  // an aggregation runs on its part's worker (a scatter may not)
      if (t.kind == TaskKind::spmm && t.coords.dp >= 0) part_of_worker[t.worker] = t.coords.dp;
    auto peer_part = [&](const Task& t) {
      const auto it = part_of_worker.find(t.peer);
      STRATA_ASSERT(it != part_of_worker.end(), "task " + t.id + ": its peer holds no graph part");
      return it->second;
    };
    auto halo_send = [&](TaskIndex i) {
      return plan_.task(i).kind == TaskKind::send && plan_.task(i).attr_int("rows").has_value();
    };
    for (TaskIndex i = 0; i < plan_.size(); ++i) {
      const Task& t = plan_.task(i);
      if (halo_send(i)) halo_peers_[i] = peer_part(t);
      if (t.kind == TaskKind::recv && std::any_of(t.data_deps.begin(), t.data_deps.end(), halo_send))
        halo_peers_[i] = peer_part(t);
    }
  }
  std::unordered_map<BufferIndex, BufferIndex> weights_of_output;  // linear_fwd: Y -> W
  for (const Task& t : plan_.tasks())
    if (t.kind == TaskKind::linear_fwd) weights_of_output[t.writes[0]] = t.reads[1];
  std::unordered_set<BufferIndex> aggregated;             // linear outputs an spmm reads
  std::unordered_map<BufferIndex, BufferIndex> dz_of_dp;  // backward spmm: dP -> dZ
  for (TaskIndex i = 0; i < plan_.size(); ++i) {
    const Task& t = plan_.task(i);
    if (t.kind != TaskKind::spmm) continue;
    const auto w = weights_of_output.find(t.reads[0]);
    if (w != weights_of_output.end()) {
      bias_routes_[i] = w->second;
      aggregated.insert(t.reads[0]);
    } else {
      dz_of_dp[t.writes[0]] = t.reads[0];
    }
  }
  for (TaskIndex i = 0; i < plan_.size(); ++i) {
    const Task& t = plan_.task(i);
    if (t.kind == TaskKind::linear_fwd && aggregated.count(t.writes[0]) != 0) bias_routes_[i] = t.reads[1];
    if (t.kind != TaskKind::linear_bwd_weight) continue;
    const auto dz = dz_of_dp.find(t.reads[0]);
    if (dz != dz_of_dp.end()) bias_routes_[i] = dz->second;
  }
}

template <typename T>
const BufferIndex* TaskRunner<T>::bias_route(TaskIndex index) const {
  const auto it = bias_routes_.find(index);
  return it == bias_routes_.end() ? nullptr : &it->second;
}

template <typename T>
const GraphPart<T>* TaskRunner<T>::part_of(const Task& t) const {
  if (graph_ == nullptr || graph_->parts.empty()) return nullptr;
  STRATA_ASSERT(t.coords.dp >= 0 && static_cast<std::size_t>(t.coords.dp) < graph_->parts.size(),
                "task " + t.id + ": no graph part for its rank");
  return &graph_->parts[static_cast<std::size_t>(t.coords.dp)];
}

// The rows of the read buffer that the peer's halo takes, gathered into one message.
template <typename T>
void TaskRunner<T>::run_halo_send(TaskIndex index) {
  const Task& t = plan_.task(index);
  const GraphPart<T>& part = *part_of(t);
  const std::vector<std::int64_t>& rows = part.sends[static_cast<std::size_t>(halo_peers_.at(index))];
  const std::int64_t width = elems(t.reads[0]) / part.rows();
  STRATA_ASSERT(width * part.rows() == elems(t.reads[0]) &&
                    *t.attr_int("rows") == static_cast<std::int64_t>(rows.size()),
                "task " + t.id + ": its buffer is not [part rows, width] or its rows are not the halo's");
  std::vector<T> message(rows.size() * static_cast<std::size_t>(width));
  const Held held = Held::here(allocated_bytes(message));
  const T* x = buf(t.reads[0]);
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy_n(x + rows[i] * width, width, message.data() + static_cast<std::int64_t>(i) * width);
  transport_.send_values(plan_, index, std::move(message), ws_);
}

// Into the sender's slice of the halo buffer.
template <typename T>
void TaskRunner<T>::run_halo_recv(TaskIndex index) {
  const Task& t = plan_.task(index);
  const GraphPart<T>& part = *part_of(t);
  const auto from = static_cast<std::size_t>(halo_peers_.at(index));
  const std::int64_t width = elems(t.writes[0]) / std::max<std::int64_t>(1, part.halo_rows());
  STRATA_ASSERT(width * part.halo_rows() == elems(t.writes[0]),
                "task " + t.id + ": its buffer is not [halo rows, width]");
  T* into = buf(t.writes[0]) + part.halo_start[from] * width;
  transport_.recv_values(plan_, index,
                         std::span<T>(into, static_cast<std::size_t>(part.halo_from(from) * width)), ws_);
}

template <typename T>
void TaskRunner<T>::run_spmm(TaskIndex index) {
  const Task& t = plan_.task(index);
  STRATA_ASSERT(graph_ != nullptr, "task " + t.id + ": spmm needs the graph (GcnPlanTrainer sets it)");
  const GraphPart<T>* part = part_of(t);
  const CsrMatrix<T>& a = part != nullptr ? part->adjacency : graph_->data->adjacency;
  const std::int64_t width = elems(t.reads[0]) / a.rows;
  STRATA_ASSERT(width * a.rows == elems(t.reads[0]) && elems(t.writes[0]) == elems(t.reads[0]),
                "task " + t.id + ": operands are not [" + std::to_string(a.rows) + " nodes, width]");
  T* y = buf(t.writes[0]);
  if (part == nullptr) {
    spmm(a, width, buf(t.reads[0]), y);
  } else {
    STRATA_ASSERT(t.reads.size() >= 2 && elems(t.reads[1]) == part->halo_rows() * width,
                  "task " + t.id + ": its second read is not the part's halo [halo rows, width]");
    spmm_halo(a, width, a.rows, buf(t.reads[0]), buf(t.reads[1]), y);
  }
  const BufferIndex* weights = bias_route(index);
  if (weights == nullptr) return;
  const T* bias = buf(*weights) + elems(*weights) - width;  // after the [k, width] weights
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int64_t j = 0; j < width; ++j) y[i * width + j] += bias[j];
}

// gcn.cpp's loss_gradient: the training rows gathered, softmax cross-entropy, scattered back.
// A split graph's part: over its own training rows, divided by all the graph's training nodes.
template <typename T>
void TaskRunner<T>::run_graph_loss(const Task& t) {
  const GraphPart<T>* part = part_of(t);
  const std::vector<std::int64_t>& train = part != nullptr ? part->train : graph_->data->split.train;
  const std::vector<std::int32_t>& all_labels = graph_->data->labels;
  const std::int64_t classes = *t.attr_int("classes");
  const auto rows = static_cast<std::int64_t>(train.size());
  const auto all = static_cast<std::int64_t>(graph_->data->split.train.size());
  const std::int64_t nodes = part != nullptr ? part->rows() : graph_->data->node_count();
  STRATA_ASSERT(all > 0 && elems(t.reads[0]) == nodes * classes,
                "task " + t.id + ": logits are not [nodes, classes] or no training nodes");
  std::vector<T> gathered(static_cast<std::size_t>(rows * classes)), probs(gathered.size());
  std::vector<std::int32_t> labels(train.size());
  const Held held = Held::here(allocated_bytes(gathered) + allocated_bytes(probs) + allocated_bytes(labels));
  const T* logits = buf(t.reads[0]);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy_n(logits + train[r] * classes, classes, gathered.data() + r * classes);
    labels[r] = all_labels[part != nullptr ? part->nodes[train[r]] : train[r]];
  }
  T loss = rows == 0
               ? T{0}
               : softmax_cross_entropy_forward(rows, classes, gathered.data(), labels.data(), probs.data());
  if (rows < all) loss = loss * static_cast<T>(rows) / static_cast<T>(all);
  if (t.kind == TaskKind::loss_fwd) {
    buf(t.writes[0])[0] = loss;
    return;
  }
  const T inv = T{1} / static_cast<T>(all);  // softmax_cross_entropy_backward's, over all training nodes
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < classes; ++j) gathered[r * classes + j] = probs[r * classes + j] * inv;
    gathered[r * classes + labels[r]] -= inv;
  }
  T* dlogits = buf(t.writes[0]);
  std::fill(dlogits, dlogits + elems(t.writes[0]), T{0});
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(gathered.data() + r * classes, classes, dlogits + train[r] * classes);
}

// extract: global -> site slices (output weights times m); write_back: the inverse (times 1/m,
// hidden biases too, the shared output bias left to average); average: the output bias := the
// sites' mean. Each buffer holds a layer's weights [rows, cols] then its bias [cols].
template <typename T>
void TaskRunner<T>::run_gist_copy(const Task& t) {
  STRATA_ASSERT(graph_ != nullptr,
                "task " + t.id + ": GIST's copies need the graph operands (GcnPlanTrainer)");
  const std::vector<std::int64_t>& widths = graph_->widths;
  const std::string name = gist_copy_name(t);
  if (name == "average") {
    const std::int64_t classes = widths.back();
    T* bias = buf(t.writes[0]) + elems(t.writes[0]) - classes;
    std::fill(bias, bias + classes, T{0});
    for (BufferIndex site : t.reads) {
      const T* theirs = buf(site) + elems(site) - classes;
      for (std::int64_t j = 0; j < classes; ++j) bias[j] += theirs[j];
    }
    const auto m = static_cast<T>(t.reads.size());
    for (std::int64_t j = 0; j < classes; ++j) bias[j] /= m;
    return;
  }
  const std::size_t layers = widths.size() - 1;
  STRATA_ASSERT(t.reads.size() == layers && t.writes.size() == layers && t.iteration >= 0 &&
                    static_cast<std::size_t>(t.iteration) < graph_->partitions.size(),
                "task " + t.id + ": one buffer per layer, and a partition for its round");
  const HiddenPartition& p = graph_->partitions[static_cast<std::size_t>(t.iteration)];
  const std::int64_t site = t.coords.site;
  const bool extract = name == "extract";
  for (std::size_t l = 0; l < layers; ++l) {
    const Slices s = site_slices(widths, p, site, l);
    const auto r = static_cast<std::int64_t>(s.rows.size()), c = static_cast<std::int64_t>(s.cols.size());
    const std::int64_t width = widths[l + 1], bias_at = widths[l] * width;
    const BufferIndex global = extract ? t.reads[l] : t.writes[l];
    const BufferIndex local = extract ? t.writes[l] : t.reads[l];
    STRATA_ASSERT(elems(local) == r * c + c && elems(global) == bias_at + width,
                  "task " + t.id + ": layer " + std::to_string(l) + " does not match the partition");
    const bool last = l + 1 == layers;
    const T factor = !last ? T{1} : extract ? static_cast<T>(p.sites) : T{1} / static_cast<T>(p.sites);
    T* g = buf(global);
    T* x = buf(local);
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < c; ++j) {
        T& at = g[s.rows[i] * width + s.cols[j]];
        if (extract)
          x[i * c + j] = at * factor;
        else
          at = x[i * c + j] * factor;
      }
    for (std::int64_t j = 0; j < c; ++j) {
      if (extract)
        x[r * c + j] = g[bias_at + s.cols[j]];
      else if (!last)
        g[bias_at + s.cols[j]] = x[r * c + j];
    }
  }
}

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type
#define STRATA_INSTANTIATE(T)                                             \
  template void TaskRunner<T>::set_graph(const GraphOperands<T>*);        \
  template const BufferIndex* TaskRunner<T>::bias_route(TaskIndex) const; \
  template void TaskRunner<T>::run_spmm(TaskIndex);                       \
  template const GraphPart<T>* TaskRunner<T>::part_of(const Task&) const; \
  template void TaskRunner<T>::run_halo_send(TaskIndex);                  \
  template void TaskRunner<T>::run_halo_recv(TaskIndex);                  \
  template void TaskRunner<T>::run_graph_loss(const Task&);               \
  template void TaskRunner<T>::run_gist_copy(const Task&);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
