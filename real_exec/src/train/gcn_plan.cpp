// GcnPlanTrainer<T>: a GCN Plan (GIST or backprop) run for real (gcn_plan.hpp).
#include "strata/real/train/gcn_plan.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "strata/models/graph/graph_layout.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// The layer of a model weight buffer (GIST: global/w/gc<l>/fc; backprop: …/w/gc<l>/fc), or -1
// for every other buffer (a site's slices, gradients, optimizer state, activations).
std::int64_t model_weight_layer(const Plan& plan, BufferIndex b) {
  const std::string& id = plan.buffer(b).id;
  if (plan.buffer_coords(b).site >= 0 || !ends_with(id, "/fc")) return -1;
  if (id.rfind("w/gc", 0) != 0 && id.find("/w/gc") == std::string::npos) return -1;
  return plan.buffer_coords(b).layer;
}

}  // namespace

GcnPlanShape gcn_plan_shape(const Plan& plan) {
  if (!plan.info.trains_graph())
    throw InputError("plan: the Plan (" + plan.info.model + ", " + std::string(to_string(plan.info.solver)) +
                     ") trains no graph: not a GCN Plan (--model gcn)");
  if (plan.info.solver != PlanSolver::backprop && plan.info.solver != PlanSolver::gist)
    throw InputError("plan: a " + std::string(to_string(plan.info.solver)) +
                     " Plan of a GCN has no real trainer (backprop and gist have); simulate it instead");
  // Per layer, per site (-1: backprop's one model): the iteration-0 step-0 linear's (k, n).
  std::map<std::int64_t, std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>>> layers;
  GcnPlanShape shape;
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::linear_fwd || t.iteration != 0 || t.coords.step > 0) continue;
    const std::int64_t l = t.coords.layer;
    if (l < 0) throw InputError("plan: linear task " + t.id + " names no GCN layer gc<l>");
    layers[l][t.coords.site] = {t.attr_int("k").value_or(0), t.attr_int("n").value_or(0)};
  }
  shape.nodes = plan.info.graph_nodes;
  if (plan.info.parameters.graph_parts > 1) shape.parts = plan.info.parameters.graph_parts;
  STRATA_ASSERT(!layers.empty() && layers.begin()->first == 0 &&
                    layers.rbegin()->first + 1 == static_cast<std::int64_t>(layers.size()),
                "GCN Plan layers are not gc0..gc<L-1>");
  shape.widths.push_back(layers.begin()->second.begin()->second.first);
  for (const auto& [l, sites] : layers) {
    const bool last = l + 1 == static_cast<std::int64_t>(layers.size());
    std::int64_t width = 0;
    for (const auto& [site, kn] : sites) width = last ? kn.second : width + kn.second;
    shape.widths.push_back(width);
    if (sites.begin()->first >= 0) shape.sites = static_cast<std::int64_t>(sites.size());
  }
  shape.rounds = std::max(1, plan.num_iterations());
  return shape;
}

template <typename T>
GcnData<T> gcn_plan_data(Backend& backend, std::int64_t nodes, std::uint64_t seed) {
  KnnDatasetConfig config;
  config.subset_size = nodes;
  config.seed = seed;
  config.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  NodeDataset dataset = knn_image_dataset(backend, load_fashion_mnist_all(), config);
  standardize_features(dataset);
  return make_gcn_data<T>(dataset);
}

template <typename T>
GcnPlanGraph<T> gcn_plan_graph(Backend& backend, const Plan& plan, std::uint64_t seed) {
  const GcnPlanShape shape = gcn_plan_shape(plan);
  const SolverParameters& p = plan.info.parameters;
  GcnPlanGraph<T> out;
  if (p.graph_edges <= 0) {
    out.data = gcn_plan_data<T>(backend, shape.nodes, seed);
    out.description = "kNN graph of " + std::to_string(shape.nodes) +
                      " Fashion-MNIST images (k = 10; the Plan's avg_degree sizes the simulation only)";
    return out;
  }
  GraphLayoutOptions options;
  options.parts = static_cast<int>(std::max<std::int64_t>(1, shape.parts));
  if (!p.partitioner.empty()) options.method = *parse_partition_method(p.partitioner);
  if (p.graph_exponent > 0) options.exponent = p.graph_exponent;
  options.seed = static_cast<std::uint64_t>(plan.info.seed);
  options.max_sample_nodes = shape.nodes;
  PartitionedGraph graph = power_law_partitioned(shape.nodes, p.graph_edges, options);
  const GraphLayout& layout = graph.layout;
  if (shape.parts > 1 && (layout.edges != p.graph_edges || layout.total_halo() != p.halo_rows))
    throw InputError("plan: its layout (" + std::to_string(p.graph_edges) + " edges, " +
                     std::to_string(p.halo_rows) +
                     " halo rows in all) is not that of the power-law graph it names (" +
                     std::to_string(layout.edges) + " edges, " + std::to_string(layout.total_halo()) +
                     " halo rows): it was laid out on a sample; lower it with --set sample_nodes=" +
                     std::to_string(shape.nodes) + " (the graph's nodes) to run it");
  UndirectedGraph g;
  g.node_count = shape.nodes;
  g.row_offsets = graph.graph.offsets();
  g.neighbours.assign(graph.graph.adjacency().begin(), graph.graph.adjacency().end());
  graph.graph = CsrGraph();
  NodeDataset dataset = teacher_node_dataset(std::move(g), shape.widths.front(), shape.widths.back(), seed);
  out.data = make_gcn_data<T>(dataset);
  if (shape.parts > 1) out.partition = std::move(graph.parts);
  std::array<char, 64> shape_text{};
  std::snprintf(shape_text.data(), shape_text.size(), "mean degree %.2f, exponent %.2f",
                2.0 * static_cast<double>(layout.edges) / static_cast<double>(shape.nodes), options.exponent);
  out.description =
      "power-law graph of " + std::to_string(shape.nodes) + " nodes and " + std::to_string(layout.edges) +
      " edges (" + shape_text.data() + ", seed " + std::to_string(plan.info.seed) +
      (shape.parts > 1
           ? ", " + std::to_string(shape.parts) + " parts by " + std::string(to_string(options.method)) +
                 ", " + std::to_string(layout.total_halo()) + " halo rows in all"
           : "") +
      "), Gaussian features, labels of a linear teacher";
  return out;
}

template <typename T>
double gcn_training_loss(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params) {
  const Tensor<T> logits = gcn_logits(backend, data, params);
  const std::int64_t classes = logits.dim(1);
  const std::vector<std::int64_t>& train = data.split.train;
  std::vector<T> rows(train.size() * static_cast<std::size_t>(classes)), probs(rows.size());
  std::vector<std::int32_t> labels(train.size());
  for (std::size_t r = 0; r < train.size(); ++r) {
    std::copy_n(logits.data() + train[r] * classes, classes,
                rows.data() + static_cast<std::int64_t>(r) * classes);
    labels[r] = data.labels[static_cast<std::size_t>(train[r])];
  }
  return static_cast<double>(softmax_cross_entropy_forward(static_cast<std::int64_t>(train.size()), classes,
                                                           rows.data(), labels.data(), probs.data()));
}

template <typename T>
GcnPlanTrainer<T>::GcnPlanTrainer(const Plan& plan, const GcnData<T>& data, std::uint64_t seed,
                                  Backend& backend, Transport<T>& transport,
                                  const OptimizerSettings& optimizer, bool pin_workers,
                                  std::span<const std::int32_t> partition)
    : plan_(plan), transport_(transport), shape_(gcn_plan_shape(plan)), seed_(seed) {
  check_kernels(plan, "plan");
  const std::int64_t features = data.propagated_features.dim(1);
  if (data.node_count() != shape_.nodes || features != shape_.widths.front() ||
      data.classes != shape_.widths.back())
    throw InputError("plan: a GCN of " + std::to_string(shape_.nodes) + " nodes, " +
                     std::to_string(shape_.widths.front()) + " features and " +
                     std::to_string(shape_.widths.back()) + " classes, but the graph has " +
                     std::to_string(data.node_count()) + " nodes, " + std::to_string(features) +
                     " features and " + std::to_string(data.classes) + " classes");
  operands_.data = &data;
  operands_.widths = shape_.widths;
  if (shape_.parts > 1) {
    if (partition.empty())
      throw InputError("plan: its graph is split in " + std::to_string(shape_.parts) +
                       " parts, and no partition of the graph was given (gcn_plan_graph draws it)");
    operands_.parts = split_graph(data, partition, static_cast<int>(shape_.parts));
  }
  weights_.assign(shape_.widths.size() - 1, {});
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const std::int64_t l = model_weight_layer(plan, b);
    if (l >= 0 && l < static_cast<std::int64_t>(weights_.size()))
      weights_[static_cast<std::size_t>(l)].push_back(b);
  }
  const std::size_t replicas =
      shape_.parts > 1 && shape_.sites == 0 ? static_cast<std::size_t>(shape_.parts) : 1;
  for (std::size_t l = 0; l < weights_.size(); ++l)
    if (weights_[l].size() != replicas)
      throw InputError("plan: " + std::to_string(weights_[l].size()) +
                       " model weight buffers for GCN layer gc" + std::to_string(l) + " (" +
                       std::to_string(replicas) +
                       " expected: global/w/gc<l>/fc, …/w/gc<l>/fc on one data-parallel rank, or one per "
                       "graph part)");
  // The host TaskRunner, reading the graph's operands besides the Workspace (the GPU executor has no
  // spmm kernel: make_plan_trainer refuses a GCN Plan on it).
  const ExecutorFactory<T> with_graph = [&backend, this](const Plan& p, Workspace<T>& ws, Transport<T>& tr,
                                                         const OptimizerSettings& o) {
    auto runner = std::make_unique<TaskRunner<T>>(p, backend, ws, tr, o);
    runner->set_graph(&operands_);
    return std::unique_ptr<TaskExecutor<T>>(std::move(runner));
  };
  PlanExecution<T> execution = assemble_execution(plan, with_graph, transport, optimizer, pin_workers);
  ws_ = std::move(execution.workspace);
  runner_ = std::move(execution.executor);
  interpreter_ = std::move(execution.interpreter);
  write_initial_state(seed);
}

template <typename T>
GcnPlanTrainer<T>::~GcnPlanTrainer() = default;

template <typename T>
void GcnPlanTrainer<T>::write_initial_state(std::uint64_t seed) {
  const GcnParameters<T> params = init_gcn<T>(shape_.widths, seed, false);
  for (std::size_t l = 0; l < weights_.size(); ++l)
    for (const BufferIndex buffer : weights_[l]) {
      const Tensor<T>& w = params.weights[l];
      const Tensor<T>& b = params.biases[l];
      STRATA_ASSERT(ws_->size(buffer) == w.size() + b.size(),
                    "GCN weight buffer " + plan_.buffer(buffer).id + " has the wrong size");
      std::copy_n(w.data(), w.size(), ws_->data(buffer));
      std::copy_n(b.data(), b.size(), ws_->data(buffer) + w.size());
    }
  const Tensor<T>& x = operands_.data->propagated_features;
  const std::int64_t features = x.dim(1);
  for (BufferIndex b = 0; b < plan_.buffers().size(); ++b) {
    if (!ends_with(plan_.buffer(b).id, "/act/input")) continue;
    if (operands_.parts.empty()) {
      STRATA_ASSERT(ws_->size(b) == x.size(),
                    "GCN input buffer " + plan_.buffer(b).id + " is not [nodes, features]");
      std::copy_n(x.data(), x.size(), ws_->data(b));
      continue;
    }
    const std::int32_t p = plan_.buffer_coords(b).dp;
    const GraphPart<T>& part = operands_.parts[static_cast<std::size_t>(std::max(0, p))];
    if (p < 0 || p >= static_cast<std::int32_t>(operands_.parts.size()) ||
        ws_->size(b) != part.rows() * features)
      throw InputError("plan: input buffer " + plan_.buffer(b).id + " holds " + std::to_string(ws_->size(b)) +
                       " values, and its graph part " + std::to_string(p) + " has " +
                       std::to_string(part.rows()) + " rows of " + std::to_string(features) + " features");
    for (std::int64_t i = 0; i < part.rows(); ++i)
      std::copy_n(x.data() + part.nodes[i] * features, features, ws_->data(b) + i * features);
  }
  check_split_buffers();
}

// Each part's halo buffers against the partition's halo rows: [halo rows, a layer's width].
template <typename T>
void GcnPlanTrainer<T>::check_split_buffers() const {
  for (BufferIndex b = 0; b < plan_.buffers().size() && !operands_.parts.empty(); ++b) {
    if (plan_.buffer(b).id.find("/halo/") == std::string::npos) continue;
    const std::int32_t p = plan_.buffer_coords(b).dp;
    const std::int64_t rows = p >= 0 && p < static_cast<std::int32_t>(operands_.parts.size())
                                  ? operands_.parts[static_cast<std::size_t>(p)].halo_rows()
                                  : -1;
    const std::int64_t size = ws_->size(b);
    const bool fits = rows == 0
                          ? size == 0
                          : rows > 0 && size % rows == 0 &&
                                std::count(shape_.widths.begin(), shape_.widths.end(), size / rows) != 0;
    if (!fits)
      throw InputError("plan: halo buffer " + plan_.buffer(b).id + " holds " + std::to_string(size) +
                       " values, not a layer's width times the " + std::to_string(rows) +
                       " halo rows of its graph part");
  }
}

template <typename T>
void GcnPlanTrainer<T>::draw_partitions() {
  operands_.partitions.clear();
  if (shape_.sites == 0) return;
  const std::vector<std::int64_t> hidden(shape_.widths.begin() + 1, shape_.widths.end() - 1);
  for (int r = 0; r < shape_.rounds; ++r)
    operands_.partitions.push_back(random_hidden_partition(
        hidden, shape_.sites, mix_seed(seed_, static_cast<std::uint64_t>(rounds_done_ + r))));
}

template <typename T>
std::vector<TaskTiming> GcnPlanTrainer<T>::run(double* wall_s) {
  draw_partitions();
  std::vector<TaskTiming> timings = interpreter_->run(wall_s);
  rounds_done_ += shape_.rounds;
  merge_over_processes(transport_, timings);
  return timings;
}

template <typename T>
GcnParameters<T> GcnPlanTrainer<T>::parameters() const {
  GcnParameters<T> params;
  for (std::size_t l = 0; l < weights_.size(); ++l) {
    const std::int64_t k = shape_.widths[l], n = shape_.widths[l + 1];
    const T* at = ws_->data(weights_[l].front());
    params.weights.emplace_back(Shape{k, n}, std::vector<T>(at, at + k * n));
    params.biases.emplace_back(Shape{n}, std::vector<T>(at + k * n, at + k * n + n));
  }
  return params;
}

template class GcnPlanTrainer<float>;
template class GcnPlanTrainer<double>;
template GcnData<float> gcn_plan_data<float>(Backend&, std::int64_t, std::uint64_t);
template GcnData<double> gcn_plan_data<double>(Backend&, std::int64_t, std::uint64_t);
template GcnPlanGraph<float> gcn_plan_graph<float>(Backend&, const Plan&, std::uint64_t);
template GcnPlanGraph<double> gcn_plan_graph<double>(Backend&, const Plan&, std::uint64_t);
template double gcn_training_loss<float>(Backend&, const GcnData<float>&, const GcnParameters<float>&);
template double gcn_training_loss<double>(Backend&, const GcnData<double>&, const GcnParameters<double>&);

}  // namespace strata::real
