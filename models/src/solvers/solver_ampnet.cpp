// lower_ampnet(): asynchronous model parallelism (Gaunt et al. 2017, "AMPNet") as a Plan.
//
// The model's layer groups (pipeline stages, partition_blocks) are pinned to workers 0..S-1 and
// K instances (minibatches of B samples) stream through them. Per instance k and layer n:
//   F(k,n)  it0/dp0/pp<s>/tp0/mb<k>/fwd/<layer>     after F(k, pred n) (a recv across workers)
//   B(k,n)  it0/dp0/pp<s>/tp0/mb<k>/bwd/<layer>     after B(k, succ n) and F(k,n); bwdw beside it
//   U(n,j)  it0/dp0/pp<s>/tp0/opt/<layer>/u<j>      the node's own optimizer step j, after the
//                                                    min_update_frequency gradients of instances
//                                                    [j*f, (j+1)*f) have accumulated
// and instance k is injected (F(k, first layer) starts) only after B(k - mak, first layer), so
// at most max_active_keys instances are in flight.
//
// Which parameter version an instance reads. In the original, a node reads whatever version it
// holds when the message arrives: it depends on timing. A Plan must give both executors the same
// computation, so the version is fixed from the pipeline's steady state. When instance k reaches
// stage s of S, the instances ahead of it that have not come back through s are at most those on
// the S-1-s stages after it, going down and coming back up, and at most mak-1 in all; so node n on
// stage s reads version v(k, s) = floor((k - d_s) / f), clipped at 0, with
// d_s = min(mak - 1, 2 (S - 1 - s)): the newest version whose gradients come from instances
// k - d_s - 1 and older. The stage that holds the loss reads fresh weights; the first stage is the
// stalest. Control edges enforce it: F(k,n) after U(n, v - 1), and U(n, v) after the backward of
// every instance that reads version v. Each F and B task records its version in
// attrs["param_version"], so staleness, k - f*v, is visible in the trace. With mak = 1 and f = 1,
// v = k: serial backprop with per-layer steps.
//
// The input gradient of a node reads its weights at version v, so U(n, v) waits for it; the weight
// gradient of instance k accumulates into the one gradient buffer, so it waits for U(n, g(k) - 1).
// A stale stage has v < g(k) - 1, so the two must be tasks of their own: a layer whose op computes
// both in one task (layer norm, batch norm, embedding, a fixed layer) gets a bwdw task beside its bwd
// (split_backward_task). As one task it closed a cycle B(k) -> U(v) -> B(v + 1) -> ... through the
// in-flight edges, for every model with such a layer on a stale stage (every GPT and ResNet).
//
// Gradients: the loss of each instance is its mean over B samples divided by f (attr
// "mean_over" = B*f), so a step applies the mean gradient of its f instances.
#include <algorithm>
#include <string>

#include "solver_pipeline.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/models/solvers/solver.hpp"

namespace strata {
inline namespace models {
namespace {

using solvers::coord;
using solvers::kNone;

class AmpnetBuilder {
 public:
  AmpnetBuilder(const Model& model, const SolverConfig& solver, solvers::LayerPipeline& pipe)
      : model_(model), solver_(solver), pipe_(pipe) {}
  void build(int stages, Plan& plan);

 private:
  int version(int k, int stage) const {
    const int lag = std::min(solver_.max_active_keys - 1, 2 * (stages_ - 1 - stage));
    return k - lag < 0 ? 0 : (k - lag) / solver_.min_update_frequency;
  }
  int group(int k) const { return k / solver_.min_update_frequency; }
  int groups() const {
    return (solver_.instances + solver_.min_update_frequency - 1) / solver_.min_update_frequency;
  }
  void add_instance(int k);
  void add_updates();
  void add_version_edges();

  const Model& model_;
  const SolverConfig& solver_;
  solvers::LayerPipeline& pipe_;
  Plan* plan_ = nullptr;
  int stages_ = 1;
  std::vector<std::vector<TaskIndex>> fwd_;                         // [k][layer]
  std::vector<std::vector<solvers::LayerPipeline::Backward>> bwd_;  // [k][layer]
  std::vector<std::vector<TaskIndex>> upd_;                         // [layer][j]
};

// Priorities: on a worker, older instances first and, within one, backward before the node
// updates it enables before forward: B(k) 4k, U after B(k) 4k+1, F(k) 4k+2.
void AmpnetBuilder::add_instance(int k) {
  const auto ks = static_cast<std::size_t>(k);
  const std::size_t n = pipe_.size();
  fwd_[ks].assign(n, kNone);
  bwd_[ks].assign(n, {});
  TaskIndex prev = kNone;
  for (std::size_t i = 0; i < n; ++i) prev = fwd_[ks][i] = pipe_.add_forward(k, i, prev, 4LL * k + 2);
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t i = n - 1 - r;
    // The loss starts the backward; a layer's output gradient comes from the layer after it.
    const TaskIndex grad_producer = pipe_.layer(i).is_loss ? kNone : prev;
    bwd_[ks][i] = pipe_.add_backward(k, i, grad_producer, 4LL * k, true);
    prev = bwd_[ks][i].bwd;
    if (pipe_.crosses(i)) prev = pipe_.add_grad_transfer(k, i, prev, 4LL * k);
  }
}

// U(n, j) for every node with parameters: reads the gradient its group accumulated.
void AmpnetBuilder::add_updates() {
  const int f = solver_.min_update_frequency;
  const int k_count = solver_.instances;
  upd_.assign(pipe_.size(), {});
  for (std::size_t i = 0; i < pipe_.size(); ++i) {
    const solvers::PipeLayer& l = pipe_.layer(i);
    if (!l.has_params) continue;
    for (int j = 0; j < groups(); ++j) {
      // The last instance it waits for: its group's, or the last reader of version j.
      int last = std::min(k_count, (j + 1) * f) - 1;
      for (int k = last + 1; k < k_count && version(k, l.stage) <= j; ++k) last = k;
      Task u = optimizer_step_task(model_, l.params, pipe_.config().optimizer, pipe_.config().dtype);
      u.reads = {l.wgrad, l.opt};
      u.writes = {l.weight, l.opt};
      u.attrs["param_version"] = static_cast<std::int64_t>(j + 1);  // the version it writes
      const TaskIndex ut =
          pipe_.add_task(std::move(u), "opt/" + l.name + "/" + coord("u", j), l.stage, 4LL * last + 1);
      for (int k = j * f; k < std::min(k_count, (j + 1) * f); ++k)
        plan_->add_data_dep(bwd_[static_cast<std::size_t>(k)][i].grad_writer(), ut);
      upd_[i].push_back(ut);
    }
  }
}

// The edges that fix versions and the in-flight limit (see the file comment).
void AmpnetBuilder::add_version_edges() {
  for (int k = 0; k < solver_.instances; ++k) {
    const auto ks = static_cast<std::size_t>(k);
    for (std::size_t i = 0; i < pipe_.size(); ++i) {
      const solvers::PipeLayer& l = pipe_.layer(i);
      if (!l.has_params) continue;
      const auto& u = upd_[i];
      const solvers::LayerPipeline::Backward& b = bwd_[ks][i];
      const auto v = static_cast<std::int64_t>(version(k, l.stage));
      for (TaskIndex t : {fwd_[ks][i], b.bwd, b.bwdw})
        if (t != kNone) plan_->mutable_task(t).attrs["param_version"] = v;
      if (group(k) >= 1) plan_->add_control_dep(u[static_cast<std::size_t>(group(k) - 1)], b.grad_writer());
      if (v >= 1) plan_->add_control_dep(u[static_cast<std::size_t>(v - 1)], fwd_[ks][i]);
      // U(n, v) overwrites what B(k,n) reads; a bwd that writes the gradient is a data dependency already.
      if (v < groups() && (l.has_bwdw || group(k) != v))
        plan_->add_control_dep(b.bwd, u[static_cast<std::size_t>(v)]);
    }
    if (k >= solver_.max_active_keys)
      plan_->add_control_dep(bwd_[static_cast<std::size_t>(k - solver_.max_active_keys)][0].bwd, fwd_[ks][0]);
  }
}

void AmpnetBuilder::build(int stages, Plan& plan) {
  plan_ = &plan;
  stages_ = stages;
  const std::vector<int> stage = solvers::stage_of_layers(model_, stages);
  const std::int64_t mean_over = pipe_.batch() * solver_.min_update_frequency;
  for (std::size_t i = 0; i < model_.layers.size(); ++i)
    pipe_.add_layer(model_.layers[i], stage[i], static_cast<int>(i) - 1, mean_over, /*own_weight_grad=*/true);
  pipe_.add_buffers();
  const auto k_count = static_cast<std::size_t>(solver_.instances);
  fwd_.resize(k_count);
  bwd_.resize(k_count);
  for (int k = 0; k < solver_.instances; ++k) add_instance(k);
  add_updates();
  add_version_edges();
}

}  // namespace

Plan lower_ampnet(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int stages = solver_stages(config);
  Plan plan(stages);
  solvers::LayerPipeline pipe(model, config, solvers::instance_batch(model, config), solver.instances, plan);
  AmpnetBuilder builder(model, solver, pipe);
  builder.build(stages, plan);
  solvers::finish_plan(plan, model, config,
                       "pp=" + std::to_string(stages) +
                           ",max_active_keys=" + std::to_string(solver.max_active_keys) +
                           ",min_update_frequency=" + std::to_string(solver.min_update_frequency) +
                           ",instances=" + std::to_string(solver.instances),
                       solver, pipe.batch() * solver.instances, solver.instances);
  return plan;
}

}  // namespace models
}  // namespace strata
