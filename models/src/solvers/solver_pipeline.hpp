// Internal to the layer-group solvers (solver_ampnet.cpp, solver_local.cpp): a model's layers
// placed on workers ("stages"), K instances (minibatches of B samples) of each, and the buffers
// and tasks they share. Ids follow lowering.cpp: it0/dp0/pp<s>/tp0/mb<k>/{fwd,bwd,bwdw}/<layer>,
// .../mb<k>/{send,recv}/{fwd,bwd}; buffers dp0/pp<s>/tp0/{w,wgrad,opt}/<layer> and
// dp0/pp<s>/tp0/mb<k>/{act,grad}/<layer> (the output of a layer, or the gradient with respect to
// it; "input" for the model's input). A layer whose input lives on another stage reads a copy
// of it on its own stage, named after the producing layer, which a recv writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/solvers/solver.hpp"

namespace strata {
inline namespace models {
namespace solvers {

inline constexpr TaskIndex kNone = static_cast<TaskIndex>(-1);
inline constexpr int kModelInput = -1;

std::string coord(const char* name, std::int64_t value);

struct PipeLayer {
  std::string name;
  bool is_loss = false;
  int stage = 0;
  int input = kModelInput;  // index of the layer whose output it reads
  Task fwd, bwd, bwdw;      // templates from layer_task() for B samples
  bool has_bwdw = false;
  bool has_params = false;
  double params = 0;
  double out_bytes = 0;
  BufferIndex weight = 0, wgrad = 0, opt = 0;  // when has_params
  // A residual add (layer_tasks.hpp, residual_span): the first layer of its block, whose input it
  // adds; and on that layer, the add.
  int skip = -1;
  int residual_add = -1;
};

class LayerPipeline {
 public:
  // REQUIRES: batch > 0, instances > 0, plan outlives this.
  LayerPipeline(const Model& model, const StrategyConfig& config, std::int64_t batch, int instances,
                Plan& plan);

  // Appends `layer` on `stage`, reading the output of layer `input` (kModelInput: the model's
  // input); returns its index. Its loss, if it is one, averages over `mean_over` samples. With
  // `own_weight_grad`, a layer with parameters whose op has no backward-weight kind still gets a
  // bwdw task (split_backward_task): its bwd then writes dX only.
  int add_layer(const Layer& layer, int stage, int input, std::int64_t mean_over,
                bool own_weight_grad = false);
  // Every layer added: creates the weight, gradient and optimizer-state buffers of each layer
  // with parameters, and per instance its output and gradient buffers and the copies of inputs
  // that cross stages.
  void add_buffers();

  const PipeLayer& layer(std::size_t i) const { return layers_[i]; }
  std::size_t size() const { return layers_.size(); }
  bool crosses(std::size_t i) const;  // its input lives on another stage
  BufferIndex out_act(int k, std::size_t i) const { return act_[idx(k, i)]; }
  BufferIndex out_grad(int k, std::size_t i) const { return grad_[idx(k, i)]; }
  BufferIndex in_act(int k, std::size_t i) const;   // what layer i reads, on its stage
  BufferIndex in_grad(int k, std::size_t i) const;  // gradient with respect to that

  // A task of instance k from a template: id it0/dp0/pp<s>/tp0/<id>, on worker `stage`.
  TaskIndex add_task(Task task, const std::string& id, int stage, std::int64_t priority);
  TaskIndex add_p2p(TaskKind kind, const std::string& id, int stage, int peer, std::int64_t priority,
                    double bytes);
  // The forward of instance k through layer i: F reads in_act and the weights, writes out_act;
  // a send/recv pair first when the input crosses stages (data-dependent on `producer`, the
  // task that wrote the input on its stage, kNone for the model's input). Returns F.
  // `transfer` false: no send/recv even when the input crosses stages (the caller wrote the copy;
  // `producer` is then what wrote it).
  TaskIndex add_forward(int k, std::size_t i, TaskIndex producer, std::int64_t priority,
                        bool transfer = true);
  // The backward of instance k through layer i: bwd (dX, and dW for ops without a bwdw kind)
  // and bwdw, reading out_grad (unless the layer is a loss), in_act and the weights. With
  // `input_grad` false the bwd task is left out (nothing reads dX; only ops with a bwdw kind).
  struct Backward {
    TaskIndex bwd = kNone, bwdw = kNone;
    TaskIndex grad_writer() const { return bwdw != kNone ? bwdw : bwd; }
  };
  // `dx_into`, when given, receives dX instead of in_grad.
  Backward add_backward(int k, std::size_t i, TaskIndex grad_producer, std::int64_t priority, bool input_grad,
                        std::optional<BufferIndex> dx_into = std::nullopt);
  // The gradient with respect to layer i's crossing input, sent back to the producer's stage
  // (send/bwd, recv/bwd) after `producer` computed it; the recv writes out_grad of the input
  // layer. Returns the recv.
  TaskIndex add_grad_transfer(int k, std::size_t i, TaskIndex producer, std::int64_t priority);
  // Like add_grad_transfer, but the recv writes `into` (a buffer of instance_buffer()).
  TaskIndex add_grad_transfer(int k, std::size_t i, TaskIndex producer, std::int64_t priority,
                              BufferIndex into);
  // The optimizer step of layer i (with parameters) after instance k's backward `b`:
  // mb<k>/opt/<layer>, reading the weight gradient and writing the weights. It follows `previous`
  // (the layer's step before, kNone for none) and the gradient waits for that step, which read
  // it and wrote the weights this backward read; the input-gradient task, which reads the
  // weights, comes first too. Returns the step.
  TaskIndex add_step(int k, std::size_t i, const Backward& b, TaskIndex previous, std::int64_t priority);
  // A further buffer of instance k on `stage`: dp0/pp<s>/tp0/mb<k>/<name>.
  BufferIndex instance_buffer(int k, int stage, const std::string& name, double bytes);

  // Tasks made from now on get ids mb<k>/step<s>/... (s > 0; s = 0: mb<k>/...): a solver that
  // runs several steps per instance (Block-ADMM).
  void set_step(int s) { step_ = s > 0 ? coord("step", s) + "/" : std::string(); }
  const std::string& step_segment() const { return step_; }

  std::int64_t batch() const { return batch_; }
  const StrategyConfig& config() const { return config_; }

 private:
  std::size_t idx(int k, std::size_t i) const { return static_cast<std::size_t>(k) * layers_.size() + i; }
  std::string prefix(int stage) const;

  const Model& model_;
  const StrategyConfig& config_;
  std::int64_t batch_;
  int instances_;
  Plan& plan_;
  std::vector<PipeLayer> layers_;
  std::vector<TaskIndex> fwd_;                     // [k][i]: F, to make backward data-dependent on it
  std::vector<BufferIndex> act_, grad_;            // [k][i]
  std::vector<BufferIndex> act_copy_, grad_copy_;  // [k][i]: crossing inputs on the reader's stage
  std::string step_;                               // set_step
};

// A block of layer groups on one worker, joined to the next by auxiliary variables (Block-ADMM,
// the serial-parallel hybrid).
struct AuxBlock {
  int worker = 0;
  std::size_t first = 0, last = 0;  // its layers in the pipeline
};

// Per block boundary, one row per training sample: its auxiliary variable z, its dual lambda
// (none: 0) and whether it was seen, persistent buffers dp0/pp<w>/tp0/admm/b<b>/{z_store,
// lambda_store, seen} on `worker`, of `row_bytes` a sample.
struct SampleStores {
  BufferIndex z = 0, lambda = 0, seen = 0;
};
SampleStores add_sample_stores(Plan& plan, int worker, std::size_t boundary, double row_bytes, int rows,
                               DType dtype, bool with_lambda);

// The stage of each model layer when `stages` workers hold contiguous block ranges
// (partition_blocks).
std::vector<int> stage_of_layers(const Model& model, int stages);

// The per-instance batch of a layer-group solver: --global-batch, or the family's default for
// one worker.
std::int64_t instance_batch(const Model& model, const StrategyConfig& config);

// What a solver Plan records of its solver (PlanInfo::solver and ::parameters): the solver and
// the parameters it has, the others left 0.
PlanSolver plan_solver(Solver solver);
SolverParameters plan_parameters(const SolverConfig& solver);

// Fills the PlanInfo every solver Plan shares (the solver and its parameters included) and
// validates the Plan.
void finish_plan(Plan& plan, const Model& model, const StrategyConfig& config, const std::string& strategy,
                 const SolverConfig& solver, std::int64_t samples, std::int64_t instances);

}  // namespace solvers
}  // namespace models
}  // namespace strata
