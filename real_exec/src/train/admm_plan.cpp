// AdmmPlanTrainer<T>: an ADMM Plan run for real (admm_plan.hpp).
#include "strata/real/train/admm_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "strata/traces/error.hpp"

namespace strata::real {

AdmmPlanShape admm_plan_shape(const Plan& plan) {
  if (!is_admm(plan.info.solver))
    throw InputError("plan: a " + std::string(to_string(plan.info.solver)) +
                     " Plan, not an ADMM one (--solver dladmm|pdadmm|pdadmm-g-q)");
  AdmmPlanShape shape;
  std::vector<std::pair<std::int64_t, std::int64_t>> layers;  // (n_in, n_out) by layer
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::admm_backward || t.iteration != 0) continue;
    const auto l = static_cast<std::size_t>(t.attr_int("layer").value_or(-1));
    if (layers.size() <= l) layers.resize(l + 1, {0, 0});
    layers[l] = {t.attr_int("n_in").value_or(0), t.attr_int("n_out").value_or(0)};
    shape.samples = t.attr_int("samples").value_or(0);
  }
  if (layers.empty())
    throw InputError("plan: no admm_backward task: not an ADMM Plan (--solver dladmm|pdadmm|pdadmm-g-q)");
  shape.widths.push_back(layers[0].first);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    STRATA_ASSERT(layers[l].first == shape.widths.back() && layers[l].second > 0,
                  "ADMM Plan layers do not chain");
    shape.widths.push_back(layers[l].second);
  }
  return shape;
}

template <typename T>
AdmmPlanTrainer<T>::AdmmPlanTrainer(const Plan& plan, const AdmmData<T>& train, std::uint64_t seed,
                                    Backend& backend, Transport<T>& transport, bool pin_workers)
    : plan_(plan), transport_(transport), shape_(admm_plan_shape(plan)) {
  check_kernels(plan, "plan");
  STRATA_ASSERT(train.x.dim(1) == shape_.samples, "training columns differ from the Plan's sample count");
  PlanExecution<T> execution =
      assemble_execution(plan, host_executor<T>(backend), transport, OptimizerSettings{}, pin_workers);
  ws_ = std::move(execution.workspace);
  runner_ = std::move(execution.executor);
  interpreter_ = std::move(execution.interpreter);
  owner_of_layer_.assign(shape_.widths.size() - 1, 0);
  for (const Task& t : plan.tasks())
    if (t.kind == TaskKind::admm_backward && t.iteration == 0)
      owner_of_layer_[static_cast<std::size_t>(*t.attr_int("layer"))] = t.worker;
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const std::string& id = plan.buffer(b).id;
    const auto at = id.find("/admm/");
    if (at == std::string::npos) continue;
    variables_.push_back(Variable{b, plan.buffer_coords(b).layer, id.substr(at + 6)});
  }
  write_cold_start(train, seed, backend);
}

template <typename T>
AdmmPlanTrainer<T>::~AdmmPlanTrainer() = default;

template <typename T>
void AdmmPlanTrainer<T>::write_cold_start(const AdmmData<T>& train, std::uint64_t seed, Backend& backend) {
  const AdmmNetwork<T> net = cold_start(train.x, train.labels, shape_.widths, seed, backend);
  const auto layer = [&](int l) -> const AdmmLayer<T>& { return net.layers.at(static_cast<std::size_t>(l)); };
  for (const Variable& v : variables_) {
    const Tensor<T>* source = nullptr;
    if (v.name == "input" || v.name == "p")
      source = &layer(v.layer).p;
    else if (v.name == "w")
      source = &layer(v.layer).W;
    else if (v.name == "b")
      source = &layer(v.layer).b;
    else if (v.name == "z")
      source = &layer(v.layer).z;
    else if (v.name == "wp")
      source = &layer(v.layer).wp;
    else if (v.name == "q")
      source = &layer(v.layer).q;
    else if (v.name == "u")
      source = &layer(v.layer).u;
    else if (v.name == "labels")
      source = &net.labels;
    else if (v.name == "q_prev")
      source = &layer(v.layer - 1).q;
    else if (v.name == "u_prev")
      source = &layer(v.layer - 1).u;
    else if (v.name == "p_next")
      source = &layer(v.layer + 1).p;
    STRATA_ASSERT(source != nullptr, "ADMM buffer " + plan_.buffer(v.buffer).id + " names no variable");
    STRATA_ASSERT(source->size() == ws_->size(v.buffer),
                  "ADMM buffer " + plan_.buffer(v.buffer).id + " has the wrong size");
    std::copy(source->data(), source->data() + source->size(), ws_->data(v.buffer));
  }
}

template <typename T>
std::vector<TaskTiming> AdmmPlanTrainer<T>::run(double* wall_s) {
  std::vector<TaskTiming> measured = interpreter_->run(wall_s);
  merge_over_processes(transport_, measured);
  return measured;
}

template <typename T>
AdmmNetwork<T> AdmmPlanTrainer<T>::network() {
  const std::size_t layers = shape_.widths.size() - 1;
  AdmmNetwork<T> net;
  net.layers.resize(layers);
  std::vector<double> values;  // every W then b, −∞ where another process owns the layer
  for (const Variable& v : variables_) {
    if (v.name != "w" && v.name != "b") continue;
    const bool mine =
        transport_.process_of(owner_of_layer_[static_cast<std::size_t>(v.layer)]) == transport_.process();
    const T* data = ws_->data(v.buffer);
    for (std::int64_t i = 0; i < ws_->size(v.buffer); ++i)
      values.push_back(mine ? static_cast<double>(data[i]) : -std::numeric_limits<double>::infinity());
  }
  transport_.max_over_processes(values);
  std::size_t at = 0;
  for (const Variable& v : variables_) {
    if (v.name != "w" && v.name != "b") continue;
    const auto l = static_cast<std::size_t>(v.layer);
    const std::int64_t n_in = shape_.widths[l], n_out = shape_.widths[l + 1];
    std::vector<T> data(static_cast<std::size_t>(ws_->size(v.buffer)));
    for (T& x : data) x = static_cast<T>(values[at++]);
    if (v.name == "w")
      net.layers[l].W = Tensor<T>({n_out, n_in}, std::move(data));
    else
      net.layers[l].b = Tensor<T>({n_out}, std::move(data));
  }
  return net;
}

template <typename T>
std::uint64_t AdmmPlanTrainer<T>::bytes_sent() const {
  return static_cast<std::uint64_t>(
      transport_.sum_over_processes(static_cast<double>(runner_->bytes_sent())));
}

template class AdmmPlanTrainer<float>;
template class AdmmPlanTrainer<double>;

}  // namespace strata::real
