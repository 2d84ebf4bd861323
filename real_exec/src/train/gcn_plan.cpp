// GcnPlanTrainer<T>: a GCN Plan (GIST or backprop) run for real (gcn_plan.hpp).
#include "strata/real/train/gcn_plan.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <thread>

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
  if (plan.info.parameters.graph_parts > 1)
    throw InputError(
        "plan: its GCN's graph is split in " + std::to_string(plan.info.parameters.graph_parts) +
        " parts (halo exchange per aggregation); the real trainer runs whole-graph GCN Plans only "
        "(simulate it, or drop dp / --set parts)");
  // Per layer, per site (-1: backprop's one model): the iteration-0 step-0 linear's (k, n).
  std::map<std::int64_t, std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>>> layers;
  GcnPlanShape shape;
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::linear_fwd || t.iteration != 0 || t.coords.step > 0) continue;
    const std::int64_t l = t.coords.layer;
    if (l < 0) throw InputError("plan: linear task " + t.id + " names no GCN layer gc<l>");
    layers[l][t.coords.site] = {t.attr_int("k").value_or(0), t.attr_int("n").value_or(0)};
    shape.nodes = t.attr_int("m").value_or(0);
  }
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
                                  const OptimizerSettings& optimizer, bool pin_workers)
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
  weights_.assign(shape_.widths.size() - 1, 0);
  std::vector<int> found(weights_.size(), 0);
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const std::int64_t l = model_weight_layer(plan, b);
    if (l < 0 || l >= static_cast<std::int64_t>(weights_.size())) continue;
    weights_[static_cast<std::size_t>(l)] = b;
    ++found[static_cast<std::size_t>(l)];
  }
  for (std::size_t l = 0; l < found.size(); ++l)
    if (found[l] != 1)
      throw InputError("plan: " + std::to_string(found[l]) + " model weight buffers for GCN layer gc" +
                       std::to_string(l) +
                       " (one expected: global/w/gc<l>/fc or …/w/gc<l>/fc on one data-parallel rank)");
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
  for (std::size_t l = 0; l < weights_.size(); ++l) {
    const Tensor<T>& w = params.weights[l];
    const Tensor<T>& b = params.biases[l];
    STRATA_ASSERT(ws_->size(weights_[l]) == w.size() + b.size(),
                  "GCN weight buffer " + plan_.buffer(weights_[l]).id + " has the wrong size");
    std::copy_n(w.data(), w.size(), ws_->data(weights_[l]));
    std::copy_n(b.data(), b.size(), ws_->data(weights_[l]) + w.size());
  }
  const Tensor<T>& x = operands_.data->propagated_features;
  for (BufferIndex b = 0; b < plan_.buffers().size(); ++b) {
    if (!ends_with(plan_.buffer(b).id, "/act/input")) continue;
    STRATA_ASSERT(ws_->size(b) == x.size(),
                  "GCN input buffer " + plan_.buffer(b).id + " is not [nodes, features]");
    std::copy_n(x.data(), x.size(), ws_->data(b));
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
    const T* at = ws_->data(weights_[l]);
    params.weights.emplace_back(Shape{k, n}, std::vector<T>(at, at + k * n));
    params.biases.emplace_back(Shape{n}, std::vector<T>(at + k * n, at + k * n + n));
  }
  return params;
}

template class GcnPlanTrainer<float>;
template class GcnPlanTrainer<double>;
template GcnData<float> gcn_plan_data<float>(Backend&, std::int64_t, std::uint64_t);
template GcnData<double> gcn_plan_data<double>(Backend&, std::int64_t, std::uint64_t);
template double gcn_training_loss<float>(Backend&, const GcnData<float>&, const GcnParameters<float>&);
template double gcn_training_loss<double>(Backend&, const GcnData<double>&, const GcnParameters<double>&);

}  // namespace strata::real
