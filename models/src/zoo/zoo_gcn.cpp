// The GCN preset: a graph convolutional network (Kipf & Welling 2017) trained full-graph, the
// model GIST splits (solver_gist.cpp) and its backprop baseline.
//
// Graph convolution l maps H_l [N, n_l] to Z_l = Â H_l W_l (+ b_l), then H_{l+1} = ReLU(Z_l) for
// every layer but the last, whose Z is the logits. As strata::real does (real_exec's gcn.hpp),
// layer l > 0 multiplies first and aggregates second, P = H W then Z = Â P, so its aggregation
// is n_{l+1} wide; layer 0 reads ÂX, aggregated once before training because the features never
// change, so a step aggregates L - 1 times forward and L - 1 times backward (dP = Â dZ: Â is
// symmetric).
//
// A sample is a node; per-node figures, with D the mean degree of the graph:
//   gc<l>/fc    linear n_l -> n_{l+1}: 2 n_l n_{l+1} FLOP forward, the same for dX and for dW
//   gc<l>/agg   aggregate (l > 0): a row of Â has D + 1 nonzeros (the self loop of Â = D^-1/2
//               (A + I) D^-1/2), so 2 (D + 1) n_{l+1} FLOP forward and the same backward;
//               nothing saved (its backward reads only dZ and Â)
//   gc<l>/relu  as the MLP's ReLU (l < L - 1)
//   loss        softmax cross-entropy over the classes, as the MLP's
// The graph: the stochastic block model a real run would draw (knn_graph.hpp's
// stochastic_block_model with p_in, p_out from expected degrees) has N D / 2 edges in
// expectation whatever its seed, so Â has N (D + 1) nonzeros in expectation; the model uses that
// expectation, so its costs do not depend on --seed and no graph is drawn.
#include "strata/models/zoo/zoo.hpp"

#include <cmath>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

// As zoo_vision.cpp: rough FLOPs of the memory-bound layers.
constexpr double kReluFlopsPerElem = 1;
constexpr double kSoftmaxFlopsPerLogit = 3;

// nnz_per_node: the mean nonzeros of a row of Â, an integer when the mean degree is one (then
// stored as one, as Plans have always carried it).
Layer aggregate(std::string name, std::int32_t block, std::int64_t width, double nnz_per_node) {
  Layer layer;
  layer.name = std::move(name);
  layer.op = LayerOp::aggregate;
  layer.block = block;
  layer.fwd_flops = 2.0 * nnz_per_node * static_cast<double>(width);
  layer.bwd_data_flops = layer.fwd_flops;
  layer.out_elems = static_cast<double>(width);
  const bool whole = nnz_per_node == std::floor(nnz_per_node);
  layer.shape = {
      {"width", width},
      {"nnz_per_node", whole ? AttrValue(static_cast<std::int64_t>(nnz_per_node)) : AttrValue(nnz_per_node)}};
  return layer;
}

}  // namespace

Model make_gcn(const std::string& name, const GcnConfig& config) {
  const std::vector<std::int64_t>& sizes = config.sizes;
  STRATA_ASSERT(sizes.size() >= 2 && config.nodes > 0 && config.avg_degree > 0,
                "a GCN needs two sizes and a graph");
  Model model;
  model.name = name;
  model.family = "gcn";
  model.seq = 1;
  model.input_elems = static_cast<double>(sizes.front());
  model.graph_nodes = config.nodes;
  model.graph_avg_degree = config.avg_degree;
  model.graph_edges = config.edges;
  model.graph_exponent = config.exponent;
  const double nnz_per_node =
      config.edges > 0 ? 2.0 * static_cast<double>(config.edges) / static_cast<double>(config.nodes) + 1
                       : static_cast<double>(config.avg_degree) + 1;
  const auto layers = static_cast<std::int32_t>(sizes.size()) - 1;
  for (std::int32_t l = 0; l < layers; ++l) {
    const std::string prefix = "gc" + std::to_string(l) + "/";
    const std::int64_t width = sizes[static_cast<std::size_t>(l) + 1];
    model.layers.push_back(make_linear(prefix + "fc", l, 1, sizes[static_cast<std::size_t>(l)], width));
    if (l > 0) model.layers.push_back(aggregate(prefix + "agg", l, width, nnz_per_node));
    if (l + 1 == layers) break;
    Layer relu = make_pointwise(prefix + "relu", LayerOp::activation, l, static_cast<double>(width),
                                kReluFlopsPerElem);
    relu.saved_elems = relu.out_elems;
    relu.shape["fn"] = std::string("relu");
    model.layers.push_back(std::move(relu));
  }
  const double classes = static_cast<double>(sizes.back());
  Layer loss = make_pointwise("loss", LayerOp::loss, layers - 1, classes, kSoftmaxFlopsPerLogit);
  loss.saved_elems = classes;  // softmax probabilities
  loss.out_elems = 1;          // one loss value per node
  loss.shape["classes"] = sizes.back();
  model.layers.push_back(std::move(loss));
  return model;
}

double graph_edges_of(const Model& model) {
  return model.graph_edges > 0
             ? static_cast<double>(model.graph_edges)
             : static_cast<double>(model.graph_nodes) * static_cast<double>(model.graph_avg_degree) / 2;
}

}  // namespace models
}  // namespace strata
