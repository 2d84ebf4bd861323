// Solvers: the training algorithm a Plan carries out (docs/solvers.md).
//
// strata lowers backprop under DP/TP/PP (strategy.hpp) and the solvers that break backprop's
// layer-to-layer dependency, each to a Plan that both executors run:
//   backprop    lower() of strategy.hpp
//   ampnet      asynchronous model parallelism (Gaunt et al. 2017): layer groups pinned to
//               workers, per-layer optimizer steps, at most max_active_keys instances in flight
//   local       local parallelism (Laskin et al. 2020): chunks with auxiliary heads and local
//               losses; no gradient crosses a chunk boundary (greedy, chunked) or one does
//               (overlapping)
//   dladmm      ADMM without gradients through layers (Wang et al. KDD 2019), serial sweeps
//   pdadmm      its layer-parallel form (Wang, Chai, Cheng, Zhao ICDM 2020)
//   pdadmm-g-q  pdADMM with p quantized to int8 and an adaptive rho
//   gist        independent subnetwork training of GCNs (Wolfe et al. 2021): m sub-GCNs, one per
//               worker, each trained zeta full-graph steps per round between a scatter of their
//               weight slices from worker 0 and a gather back
//   block-admm  Stochastic Block-ADMM (Khorram, Fu, Danesh, Qi, Li 2021): the network cut into
//               blocks joined by auxiliary variables z_b and duals lambda_b; per minibatch every
//               block takes inner_steps SGD steps on its augmented-Lagrangian term, in parallel,
//               and each z_b, lambda_b is updated between them (solver_block_admm.cpp)
//   serial-parallel  the serial-parallel hybrid of Sun, Dong, Chen et al. (arXiv:2009.01462,
//               2112.05387): one block per worker, each trained in parallel on its penalty or
//               augmented-Lagrangian sub-problem from stored auxiliary states (pooled by a
//               downsampling filter where they cross workers), and every correction_period-th
//               minibatch a full serial forward-backward pass (solver_serial_parallel.cpp)
//
// A solver's hyperparameters come from `--set key=value`; parse_solver_config() takes the keys
// it knows out of the map, so what is left are model hyperparameters.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/models/graph/graph_layout.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/plan.hpp"

namespace strata {
inline namespace models {

enum class Solver : std::uint8_t {
  backprop,
  ampnet,
  local,
  dladmm,
  pdadmm,
  pdadmm_g_q,
  gist,
  block_admm,
  serial_parallel
};
std::string_view to_string(Solver solver);
std::optional<Solver> parse_solver(std::string_view name);
const std::vector<std::string>& solver_names();  // in enum order

// Local parallelism's variants (Laskin et al. 2020, section 3): greedy trains chunk c on the
// loss of its own head, each chunk one worker; chunked is the same with any number of layers
// per chunk; overlapping also sends the gradient of chunk c's first layer back to chunk c-1.
enum class LocalVariant : std::uint8_t { greedy, chunked, overlapping };
std::string_view to_string(LocalVariant variant);

struct SolverConfig {
  Solver solver = Solver::backprop;
  // AMPNet. An instance is one minibatch of the global batch; `instances` of them make one
  // Plan (one run of the interpreter); the pipeline drains at its end.
  int max_active_keys = 4;       // instances in flight; 1 is synchronous
  int min_update_frequency = 1;  // gradients a node accumulates before its optimizer step
  int instances = 16;            // per Plan
  // Local parallelism (instances as for AMPNet).
  int chunks = 2;
  LocalVariant local_variant = LocalVariant::chunked;
  // The ADMM family (penalties of the augmented Lagrangian: nu on the layer equations,
  // rho on the coupling p_{l+1} = q_l).
  double rho = 1e-4;
  double nu = 1e-4;
  int admm_iterations = 1;  // ADMM sweeps per Plan
  int quant_bits = 8;       // pdadmm-g-q: bits of the grid p is sent on
  // GIST. One Plan iteration is one round; --iterations gives rounds.
  int subnets = 2;       // m: sub-GCNs per round, one per worker
  int local_steps = 10;  // zeta: full-graph local steps per round
  // Stochastic Block-ADMM (online setting: z initialised by the minibatch's forward pass, lambda
  // by 0). rho is the penalty of the per-sample term rho/2 ||z_b - f_b(z_{b-1})||^2 and `--set
  // rho` sets block_rho for this solver (the ADMM family's rho is 1e-4 per value of a full batch).
  int blocks = 0;        // 0: one block per worker
  int inner_steps = 0;   // ADMM steps per minibatch; 0: as many as blocks, so that the loss
                         // reaches the first block within each minibatch
  double block_rho = 1;  // per-sample penalty
  double z_lr = 0.5;     // step size of the linearised proximal update of z_b
  // The paper's batch setting: z_b and lambda_b kept per training sample across epochs (stores
  // of train_samples rows per boundary), so one step per minibatch suffices (inner_steps'
  // default becomes 1). Online (false): started afresh for every minibatch.
  bool batch_setting = false;
  int train_samples = 60000;  // rows of the stores: Fashion-MNIST's training set
  // Serial-parallel hybrid (block_rho, z_lr, train_samples and instances as Block-ADMM's batch
  // setting; one block per worker). al: the duals lambda_b are updated (augmented Lagrangian);
  // penalty: they stay 0. Every correction_period-th minibatch of a Plan is a serial
  // forward-backward pass (1: all, which is backprop); downsample d: the auxiliary states and
  // their gradients cross workers average-pooled over d x d windows (bytes / d^2).
  bool augmented_lagrangian = false;
  int correction_period = 4;
  int downsample = 1;
  // The first warmup_epochs epochs of a real run (strata run) are serial: every minibatch a
  // correction (the same model and stores lowered with correction_period 1), which trains every
  // sample and fills every stored state before the parallel phase starts. 0: none.
  int warmup_epochs = 0;
  // A GCN's graph split over workers (graph_layout.hpp): backprop on --strategy dp=P splits it in
  // P parts; GIST's every sub-GCN in graph_parts parts (workers = m x graph_parts). The layout
  // comes from the power-law graph of the model's nodes, edges and exponent, partitioned by
  // `partitioner`, counted whole up to sample_nodes nodes and scaled from a sample of that many
  // above.
  int graph_parts = 1;
  PartitionMethod partitioner = PartitionMethod::streaming;
  std::int64_t sample_nodes = std::int64_t{1} << 17;
  // GraphSAGE-style minibatches of a GCN (backprop): per hop from the batch's target nodes, the
  // neighbours sampled of each node (solver_sampled_gcn.cpp); empty: full-graph training.
  std::vector<std::int64_t> fanout;

  bool operator==(const SolverConfig&) const = default;
};

// Reads the keys of `solver` from `sets` and erases them from it; the defaults above stand for
// the keys not given. Keys: ampnet max_active_keys, min_update_frequency, instances; local
// chunks, variant, instances; dladmm/pdadmm/pdadmm-g-q rho, nu, admm_iterations (and quant_bits for
// pdadmm-g-q); gist m, zeta; block-admm blocks, rho, inner_steps, z_lr. Throws InputError with one line
// ("--set rho: must be > 0, got -1") for a value that does not parse or is out of range.
SolverConfig parse_solver_config(Solver solver, std::map<std::string, std::string>& sets);

// Whether `key` is a --set key of some solver / of `solver`.
bool is_solver_key(const std::string& key);
bool is_solver_key(const std::string& key, Solver solver);

// Checks the solver against the model and the workers (chunks <= blocks, m <= hidden width,
// one worker per stage, ...). Throws InputError.
void check_solver(const Model& model, const StrategyConfig& config, const SolverConfig& solver);

// Lowers the model under the solver to a validated Plan (lower() for backprop).
Plan lower_solver(const Model& model, const StrategyConfig& config, const SolverConfig& solver);

// Per solver (solver_*.cpp). REQUIRES: check_solver passed.
Plan lower_ampnet(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
Plan lower_local(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
Plan lower_admm(const Model& model, const StrategyConfig& config, const SolverConfig& solver);  // all three
Plan lower_gist(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
Plan lower_block_admm(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
// Block-ADMM's blocks and inner steps once the defaults (0) are resolved against the workers.
int block_admm_blocks(const StrategyConfig& config, const SolverConfig& solver);
int block_admm_inner_steps(const StrategyConfig& config, const SolverConfig& solver);
Plan lower_serial_parallel(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
// The shape (channels, height, width) of layer i's output per sample: the last conv or pool at
// or before it sets it; {elements, 1, 1} after a linear layer (a vector, not a feature map).
struct FeatureMap {
  std::int64_t channels = 0, height = 1, width = 1;
};
FeatureMap feature_map(const Model& model, std::size_t i);
// Backprop on a GCN over --strategy dp=P > 1: the graph split in P parts, one per worker, each
// full-graph step exchanging the parts' halo rows at every aggregation (graph_step.hpp).
// check_partitioned_gcn throws InputError with one line for tp or pp, microbatches, a global
// batch other than the nodes, more parts than nodes, compression or a memory option.
void check_partitioned_gcn(const Model& model, const StrategyConfig& config);
Plan lower_partitioned_gcn(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
// Minibatch training on sampled neighbourhoods (`--set fanout=`, solver_sampled_gcn.cpp): the
// expected frontier of each hop for `targets` target nodes. rows[h] is the frontier an
// aggregation h reads (rows[0]: the input rows gathered; rows.back(): the targets) and
// neighbours[h] the mean sampled neighbours per destination row of aggregation h.
struct SampledFrontiers {
  std::vector<double> rows;
  std::vector<double> neighbours;
};
SampledFrontiers sampled_frontiers(const Model& gcn, const std::vector<std::int64_t>& fanout,
                                   std::int64_t targets, std::int64_t sample_nodes);
// One line each: a fan-out count other than the model's aggregations, tp or pp, a global batch
// that does not divide over dp or exceeds the nodes, microbatches, compression, memory options.
void check_sampled_gcn(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
Plan lower_sampled_gcn(const Model& model, const StrategyConfig& config, const SolverConfig& solver);
// Records the Plan's graph in its parameters: a split graph's layout (parts, edges, partitioner,
// halo rows) and exponent; a whole graph given by its edges (model key edges), the power-law
// graph's edges and exponent; nothing for the kNN image graph (the real trainer's default).
void set_graph_parameters(Plan& plan, const Model& gcn, const GraphLayout* layout);
// GIST's checks: a GCN with a hidden layer, 1 <= m <= its narrowest hidden width, m sub-GCNs on m
// workers (m x graph_parts), full graph. Throws InputError with one line.
void check_gist(const Model& model, const StrategyConfig& config, const SolverConfig& solver);

// The sizes {features, hidden..., classes} of a GCN (zoo_gcn.cpp); throws InputError naming the
// model when it is not one (GIST needs a GCN).
std::vector<std::int64_t> gcn_sizes(const Model& model);

// The widths {n_0, ..., n_L} of an MLP's linear layers, input first; throws InputError naming the
// first layer that is neither linear, ReLU nor the loss.
std::vector<std::int64_t> admm_widths(const Model& model);

// Workers a layer-group solver (AMPNet, local) spreads the model over: pp when a pipeline was
// given, else all workers (dp of `--workers N`).
int solver_stages(const StrategyConfig& config);

}  // namespace models
}  // namespace strata
