// Internal to the GCN Plans (solver_graph.cpp, solver_gist.cpp): full-graph steps of a GCN whose
// graph is split over workers, part p of a GraphLayout (graph_layout.hpp) on one worker each.
//
// Part p holds its rows: their input features (ÂX's rows: layer 0 aggregates once, before
// training, as zoo_gcn.cpp), its rows of Â (an int32 column and a value per nonzero), a replica of
// every weight, and one halo buffer per aggregation (the rows of other parts it reads). A step,
// ids it<r>/<prefix>dp<p>/<step>...:
//   fwd/<layer>                   part p's rows through each layer (a linear layer: n_p rows; an
//                                 aggregation: spmm over the part's nnz_p nonzeros)
//   send|recv/fwd/<agg>/to<p>|from<q>   before each aggregation, the rows of H W part p needs
//                                 from part q (layout.rows_from(p, q) of them), q -> p
//   bwd/<layer>, bwdw/<layer>     backward in reverse (the first layer's bwdw alone: nothing
//                                 reads the gradient of ÂX); the aggregation's backward (dP = Â dZ, Â
//   send|recv/bwd/<agg>/...       symmetric) first receives the halo rows of dZ the same way
//   <prefix>ar/<step><layer>      the weight gradient summed over the parts (ring allreduce)
//   opt/<layer>                   the optimizer step, on every part's replica
// Determinism: the layout fixes every count; nothing is drawn here. Ownership: borrows the
// model, the layout and the Plan for its lifetime.
#pragma once

#include <string>
#include <vector>

#include "solver_pipeline.hpp"
#include "strata/models/graph/graph_layout.hpp"
#include "strata/models/lowering/layer_tasks.hpp"

namespace strata {
inline namespace models {
namespace solvers {

// The layout of `gcn`'s graph split in `parts` parts: its nodes, edges and degree exponent
// (zoo_gcn.cpp), the solver's partitioner and sample size, the experiment's seed.
GraphLayout gcn_layout(const Model& gcn, int parts, const SolverConfig& solver, std::int64_t seed);

// The weight gradients of `layer` summed over `workers` (a ring allreduce with config's dp_algo,
// id `id`), each worker's gradient buffer in `wgrads`, after its task in `after`; kNone for one
// worker, which has nothing to sum.
TaskIndex add_gradient_allreduce(Plan& plan, const Layer& layer, std::string id,
                                 const std::vector<int>& workers, const std::vector<BufferIndex>& wgrads,
                                 const std::vector<TaskIndex>& after, const StrategyConfig& config, int r);

class PartitionedGcn {
 public:
  // REQUIRES: workers.size() == layout.parts >= 1; gcn a GCN (make_gcn).
  PartitionedGcn(const Model& gcn, const GraphLayout& layout, std::vector<int> workers, std::string prefix,
                 const StrategyConfig& config, Plan& plan);

  // One full-graph step in iteration r; `step` prefixes the phase segments ("" or "step<s>/").
  // fresh_state: the optimizer tasks carry fresh_state = 1 (GIST's first local step of a round).
  void step(int r, const std::string& step, bool fresh_state);

  const Model& gcn() const { return gcn_; }
  int parts() const { return layout_.parts; }
  int worker(int p) const { return workers_[static_cast<std::size_t>(p)]; }
  BufferIndex weight(int p, std::size_t layer) const {
    return parts_[static_cast<std::size_t>(p)].weight[layer];
  }
  // What the next read of part p's weights of `layer` waits for (kNone: nothing); a caller that
  // writes the weights (GIST's scatter) sets it.
  TaskIndex& ready(int p, std::size_t layer) { return parts_[static_cast<std::size_t>(p)].ready[layer]; }

 private:
  struct Part {
    std::vector<BufferIndex> weight, wgrad, opt, act, grad, halo;
    BufferIndex input = 0, input_grad = 0, adjacency = 0;
    std::vector<TaskIndex> ready, fwd, bwd;
  };

  double elem() const;
  double rows(int p) const { return static_cast<double>(layout_.part_nodes[static_cast<std::size_t>(p)]); }
  TaskIndex add(Task task, int r, int p, const std::string& id);
  void add_buffers(int p);
  Task spmm(const Layer& layer, Phase phase, int p) const;
  // The halo rows of aggregation j: part q sends from source[q] once after[q] has run, part p
  // receives into its halo buffer of j (not before not_before[p], the last read of it); returns,
  // per part, its receives.
  std::vector<std::vector<TaskIndex>> exchange(int r, std::size_t j, const std::string& step,
                                               const char* phase, const std::vector<BufferIndex>& source,
                                               const std::vector<TaskIndex>& after,
                                               const std::vector<TaskIndex>& not_before);
  void forward(int r, const std::string& step);
  void backward(int r, const std::string& step, bool fresh_state);

  const Model& gcn_;
  const GraphLayout& layout_;
  std::vector<int> workers_;
  std::string prefix_;
  const StrategyConfig& config_;
  Plan& plan_;
  std::vector<Part> parts_;
};

}  // namespace solvers
}  // namespace models
}  // namespace strata
