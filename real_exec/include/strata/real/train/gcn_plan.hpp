// GcnPlanTrainer<T>: trains a GCN with its Plan, GIST's (models/ lower_gist: m sites, rounds of
// extract / scatter / ζ local steps / gather / write_back / average) or backprop's (one
// full-graph step per iteration), by running the Plan for real through the Interpreter, as
// AdmmPlanTrainer does for ADMM Plans.
//
// The data (gcn_plan_graph): the kNN graph (k = 10, cosine) of a seeded subset of Fashion-MNIST
// with the Plan's node count, features = standardised pixels, labels, a seeded 60/10/30 % split
// (knn_graph.hpp's knn_image_dataset, as gcn.hpp's tests use); the Plan's avg_degree sizes its Â
// buffers for the simulator only: the kernels read the real graph (GraphOperands), whatever its
// degree. A Plan of a power-law graph (split over workers, or given its edges) trains on that
// graph instead, the one its layout was counted on.
// The model: gcn.hpp's GCN without layer norm (the Plan has none), initialised by init_gcn from
// the seed into the Plan's model weights (GIST: global/w/gc<l>/fc; backprop: …/w/gc<l>/fc, on a
// split graph every part's replica dp<p>/w/gc<l>/fc), each buffer the layer's [n_l, n_{l+1}]
// weights then its bias. ÂX goes into every …/act/input: on a split graph, part p's rows of it.
// A split graph (backprop on dp=P, GIST with parts): part p (split_graph, gcn.hpp) on the worker
// of rank dp<p>; the halo exchange, part spmm and loss are the TaskRunner's. Its weights after a
// step are the whole graph's to rounding (the parts' gradients are summed: gcn_plan_test.cpp).
// GIST round g (over all runs) partitions the hidden units with random_hidden_partition(hidden,
// m, mix_seed(seed, g)), gist.cpp's draw, so a Plan of R rounds run k times equals gist_train
// for k R rounds with GistConfig::seed = seed (float64: to rounding, gcn_plan_test.cpp).
//
// Ownership: the trainer owns its Workspace, runner, interpreter and GraphOperands; the Plan,
// data, backend and transport outlive it. Thread safety: one thread calls its methods.
// Errors: a Plan that is not a GCN's, or whose sizes differ from the data's, throws InputError.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strata/real/kernels/gcn.hpp"
#include "strata/real/train/plan_trainer.hpp"

namespace strata::real {

// A GCN Plan's shape: the global widths, nodes, m (0 for backprop), rounds per Plan run and the
// parts its graph is split in (0: whole).
struct GcnPlanShape {
  std::vector<std::int64_t> widths;
  std::int64_t nodes = 0;
  std::int64_t sites = 0;
  int rounds = 1;
  std::int64_t parts = 0;
};

// Throws InputError naming the Plan when it is not a GCN's (PlanInfo::trains_graph).
GcnPlanShape gcn_plan_shape(const Plan& plan);

// The kNN graph data set above for `nodes` nodes, drawn with `seed`.
template <typename T>
GcnData<T> gcn_plan_data(Backend& backend, std::int64_t nodes, std::uint64_t seed);

// The graph a GCN Plan trains on, and its split:
// - a Plan of a power-law graph (parameters.graph_edges > 0: any split graph, and a whole one
//   given its edges): the graph its layout was counted on, drawn whole (models/
//   graph_layout.hpp's power_law_partitioned with the Plan's nodes, edges, exponent, partitioner
//   and seed), with teacher_node_dataset's features and labels (knn_graph.hpp; `seed`) for its
//   widths. Throws InputError when that graph's layout is not the Plan's (the Plan was laid out
//   on a sample: lower it with --set sample_nodes >= its nodes);
// - any other: gcn_plan_data's kNN image graph, whole.
template <typename T>
struct GcnPlanGraph {
  GcnData<T> data;
  std::vector<std::int32_t> partition;  // per node its part; empty for a whole graph
  std::string description;              // the graph in a phrase, for a run's header line
};
template <typename T>
GcnPlanGraph<T> gcn_plan_graph(Backend& backend, const Plan& plan, std::uint64_t seed);

// Mean softmax cross-entropy of `params` over the training nodes.
template <typename T>
double gcn_training_loss(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params);

template <typename T>
class GcnPlanTrainer final : public PlanTrainer<T> {
 public:
  // REQUIRES: `plan` validated; `data` has the Plan's nodes and widths, and a split Plan's
  // `partition` (one part per node) gives the parts its buffers hold (both checked: InputError).
  GcnPlanTrainer(const Plan& plan, const GcnData<T>& data, std::uint64_t seed, Backend& backend,
                 Transport<T>& transport, const OptimizerSettings& optimizer, bool pin_workers,
                 std::span<const std::int32_t> partition = {});
  ~GcnPlanTrainer() override;

  // Runs the Plan once (its rounds); timings per task (merged over processes under MPI: each
  // process times its own tasks), wall time in s.
  std::vector<TaskTiming> run(double* wall_s = nullptr) override;
  // The global model as it stands.
  GcnParameters<T> parameters() const;
  // Payload bytes moved between workers so far, by all processes (a collective under MPI).
  std::string backend_name() const override { return runner_->backend_name(); }
  Workspace<T>& workspace() override { return *ws_; }  // on the host: nothing to download
  std::uint64_t bytes_sent() const override {
    return static_cast<std::uint64_t>(
        transport_.sum_over_processes(static_cast<double>(runner_->bytes_sent())));
  }
  const GcnPlanShape& shape() const { return shape_; }
  std::int64_t rounds_done() const { return rounds_done_; }

 private:
  void write_initial_state(std::uint64_t seed);
  void draw_partitions();

  const Plan& plan_;
  Transport<T>& transport_;
  GcnPlanShape shape_;
  std::uint64_t seed_;
  std::int64_t rounds_done_ = 0;
  GraphOperands<T> operands_;
  void check_split_buffers() const;

  // Per layer: the global model's weight buffers (one; a split graph's: every part's replica).
  std::vector<std::vector<BufferIndex>> weights_;
  std::unique_ptr<Workspace<T>> ws_;
  std::unique_ptr<TaskExecutor<T>> runner_;
  std::unique_ptr<Interpreter<T>> interpreter_;
};

extern template class GcnPlanTrainer<float>;
extern template class GcnPlanTrainer<double>;

}  // namespace strata::real
