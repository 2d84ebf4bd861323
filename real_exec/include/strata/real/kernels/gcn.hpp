// Graph convolutional networks (Kipf & Welling 2017) trained full-batch, and GIST, graph
// independent subnetwork training (Wolfe et al. 2021, "GIST: Distributed training for
// large-scale graph convolutional networks").
//
// GCN: layer l computes Z_l = Â H_l W_l + b_l (Kipf & Welling, eq. 2), H_0 = X, H_{l+1} =
// ReLU(Z_l) (ReLU(LayerNorm(Z_l)) with layer_norm) for every layer but the last, whose Z is the
// logits; the loss is the mean softmax cross-entropy over the training nodes. Â is
// gcn_normalized_adjacency (knn_graph.hpp). Forward and backward are one GEMM (Backend) and one
// SpMM per layer and direction: P = H W, Z = Â P + b; dP = Â dZ (Â is symmetric), dW = H^T dP,
// db = colsum dZ, dH = dP W^T. Layer 0 uses ÂX, computed once, so it needs no SpMM at all.
//
// GIST, one round (the paper's Algorithm 1, with its subGCNs / subTrain / subAgg steps):
// 1. the units of every hidden layer are split uniformly at random into m disjoint sets of
//    near-equal size (a seeded permutation dealt round-robin, as in the authors' code);
// 2. sub-GCN i keeps the rows and columns of set i in each weight (W_0[:, S_0^i],
//    W_l[S_{l-1}^i, S_l^i], W_L[S_{L-1}^i, :]) and set i of each hidden bias; input features and
//    output classes belong to every sub-GCN, so the output bias is shared by all of them;
// 3. each site trains its sub-GCN for ζ local Adam steps on the whole graph, with no
//    communication and a fresh optimizer state (the authors' code builds a new Adam at each
//    dispatch);
// 4. the server writes each site's slices back into the global model (they are disjoint) and
//    sets the shared output bias to the sites' mean.
// Weights joining units of different sets are left unchanged in that round. A sub-GCN's
// hidden-to-hidden GEMMs cost 1/m^2 of the full model's; its first and last layers 1/m.
// A sub-GCN sees 1/m of each hidden layer, so its pre-activations are partial sums of the
// global model's: the "distributional shift" that IST (Yuan et al. 2019) corrects with batch
// norm and GIST's code with layer norm. Here layer_norm (below) removes it in hidden layers,
// and the output layer's weights travel multiplied by m (divided by m on return, exact for m a
// power of two), the inverted-dropout correction (Srivastava et al. 2014): a sub-GCN's logits
// then estimate the global model's, whose logits are the mean of the sites'. Measured on the
// 10,000-node Fashion-MNIST kNN graph (784-256-256-10, raw pixels, 100 steps each), GIST with
// m = 4 ended 14 points below full training without either correction and 9 below with layer
// norm only; with both and standardised features, see gist_convergence_test.cpp.
// The per-site steps are separate functions (extract_subgcn, write_back_subgcn, average_shared)
// so that each is a Plan task on its own worker; what crosses the network each way is the
// sub-GCN's parameters, GcnParameters::bytes(). The training loops (train_gcn, gist_local_train,
// gist_round, gist_train), the test oracles of the Plan runs, are in
// strata/real/reference/gcn_train.hpp.
//
// Invariants: GcnParameters has one weight [widths[l], widths[l+1]] and one bias
// [widths[l+1]] per layer; every function keeps shapes consistent with the widths it is given.
// Determinism: initialisation and partitions draw raw mt19937_64 outputs from explicit seeds;
// sites running on std::threads give results identical to sites run in sequence.
// Errors: bad hyperparameters (m < 1, m larger than a hidden width, ζ < 1, rounds or steps < 0,
// widths < 1) throw InputError with one line; shape mismatches are bugs (STRATA_ASSERT).
// Ownership: GcnData and GcnParameters own their tensors; functions borrow for the call only.
// Thread safety: functions are reentrant; concurrent calls may share a GcnData and a Backend
// that allows it (CpuBackend does).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "strata/real/core/backend.hpp"
#include "strata/real/core/tensor.hpp"
#include "strata/real/data/knn_graph.hpp"
#include "strata/real/kernels/kernels.hpp"

namespace strata::real {

template <typename T>
struct GcnParameters {
  // Architecture: normalise each hidden layer's output per node before its ReLU (non-affine
  // LayerNorm, Ba et al. 2016), as GIST's code does in its sub-GCN layers (see GIST above).
  bool layer_norm = false;
  std::vector<Tensor<T>> weights;  // layer l: [widths[l], widths[l + 1]]
  std::vector<Tensor<T>> biases;   // layer l: [widths[l + 1]]

  std::int64_t layers() const { return static_cast<std::int64_t>(weights.size()); }
  // {input features, hidden widths..., classes}
  std::vector<std::int64_t> widths() const;
  std::int64_t parameter_count() const;
  std::int64_t bytes() const { return parameter_count() * static_cast<std::int64_t>(sizeof(T)); }
};

// He-normal weights (fan-in, kernels.hpp), zero biases. widths = {features, hidden..., classes}.
// Throws InputError unless there are >= 2 widths, all >= 1.
template <typename T>
GcnParameters<T> init_gcn(const std::vector<std::int64_t>& widths, std::uint64_t seed,
                          bool layer_norm = false);

// What a GCN trains on: the normalised adjacency, features in T, labels and the node split.
template <typename T>
struct GcnData {
  CsrMatrix<T> adjacency;  // Â, [n, n]
  // ÂX [n, feature_dim]: layer 0's aggregation done once, since the features never change.
  Tensor<T> propagated_features;
  std::vector<std::int32_t> labels;
  std::int64_t classes = 0;
  NodeSplit split;

  std::int64_t node_count() const { return adjacency.rows; }
};

// Â and ÂX in T. Standardise the features first (standardize_features, knn_graph.hpp) unless they
// are already centred and scaled.
template <typename T>
GcnData<T> make_gcn_data(const NodeDataset& dataset);

// The logits [n, classes] of every node.
template <typename T>
Tensor<T> gcn_logits(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params);

// The share of `nodes` whose largest logit (first on ties) is their label; 0 for no nodes.
template <typename T>
double gcn_accuracy(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params,
                    std::span<const std::int64_t> nodes);

// The mean cross-entropy over data.split.train, and its gradient with respect to every
// parameter in `gradients` (overwritten; reshaped to params' shapes if they differ).
// REQUIRES: a non-empty training set; params' widths match the features and classes.
template <typename T>
T gcn_loss_and_gradients(Backend& backend, const GcnData<T>& data, const GcnParameters<T>& params,
                         GcnParameters<T>& gradients);

// Adam moments for every parameter; zero (and shaped) on the first update.
template <typename T>
struct GcnAdamState {
  GcnParameters<T> m;
  GcnParameters<T> v;
  std::int64_t step = 0;  // updates taken so far
};

template <typename T>
void adam_update(const AdamConfig& config, const GcnParameters<T>& gradients, GcnAdamState<T>& state,
                 GcnParameters<T>& params);

// ---- GIST ----

// units[l][i]: the units of hidden layer l (the output of GCN layer l) that site i owns, sorted.
struct HiddenPartition {
  std::int64_t sites = 1;
  std::vector<std::vector<std::vector<std::int64_t>>> units;
};

// Per hidden layer a uniform permutation of its units dealt round-robin to `sites` sets, so set
// sizes differ by at most one. Throws InputError unless 1 <= sites <= every hidden width.
HiddenPartition random_hidden_partition(std::span<const std::int64_t> hidden_widths, std::int64_t sites,
                                        std::uint64_t seed);

// Site i's sub-GCN: a copy of its slices (what the server sends it), output weights times m.
// REQUIRES: partition drawn for global's hidden widths; 0 <= site < partition.sites.
template <typename T>
GcnParameters<T> extract_subgcn(const GcnParameters<T>& global, const HiddenPartition& partition,
                                std::int64_t site);

// Writes site i's trained slices into the global model (output weights divided by m); sites
// touch disjoint entries, so they may be written in any order. The shared output bias is left
// to average_shared.
template <typename T>
void write_back_subgcn(GcnParameters<T>& global, const HiddenPartition& partition, std::int64_t site,
                       const GcnParameters<T>& sub);

// Sets the shared output bias to the mean of the sites' (sum / m, so m = 1 copies it exactly).
template <typename T>
void average_shared(GcnParameters<T>& global, std::span<const GcnParameters<T>> subs);

// ---- A graph split over workers ----

// Part p of a graph split in parts, as the worker that holds it sees it (a partitioned GCN Plan,
// models/ graph_step.hpp): its rows of Â with their columns renumbered into [its own rows, in node
// order; its halo rows], the halo ordered by source part, then by node. Row by row the nonzeros
// keep Â's order, so spmm_halo over [own; halo] sums exactly as spmm over the whole graph does.
template <typename T>
struct GraphPart {
  std::vector<std::int64_t> nodes;       // its rows' node ids, ascending
  CsrMatrix<T> adjacency;                // [rows, rows + halo rows]
  std::vector<std::int64_t> halo_start;  // parts + 1 entries: where the rows from part q begin
  // Per part q: the local rows of this part that q's halo holds, in q's halo order.
  std::vector<std::vector<std::int64_t>> sends;
  std::vector<std::int64_t> train;  // its training nodes (data.split.train's order), as local rows

  std::int64_t rows() const { return static_cast<std::int64_t>(nodes.size()); }
  std::int64_t halo_rows() const { return halo_start.back(); }
  std::int64_t halo_from(std::int64_t q) const {
    return halo_start[static_cast<std::size_t>(q) + 1] - halo_start[static_cast<std::size_t>(q)];
  }
};

// Splits data's Â and training nodes by `partition` (one part in [0, parts) per node).
// O(n + nnz + n log n) time, O(n) besides the parts. Throws InputError when partition's size is
// not the node count or a part is outside [0, parts).
template <typename T>
std::vector<GraphPart<T>> split_graph(const GcnData<T>& data, std::span<const std::int32_t> partition,
                                      int parts);

// What a GCN Plan's kernels read besides the Workspace (TaskRunner::set_graph; GcnPlanTrainer
// fills it, train/gcn_plan.hpp).
template <typename T>
struct GraphOperands {
  const GcnData<T>* data = nullptr;         // Â, labels, training nodes
  std::vector<std::int64_t> widths;         // {features, hidden..., classes} of the global GCN
  std::vector<HiddenPartition> partitions;  // GIST: per Plan iteration, the round's partition
  // A split graph: part p for the tasks of data-parallel rank p (dp<p>); empty for a whole graph.
  std::vector<GraphPart<T>> parts;
};

}  // namespace strata::real
