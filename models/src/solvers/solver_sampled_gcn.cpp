// Minibatch GCN training on sampled neighbourhoods (GraphSAGE, Hamilton et al., "Inductive
// Representation Learning on Large Graphs", NeurIPS 2017, Algorithm 2): `--model gcn --set
// fanout=25,10`. Each iteration every data-parallel rank takes B target nodes (the global batch
// over dp; GraphSAGE's 512 per rank by default), samples at most fanout[0] neighbours of each
// (hop 1), at most fanout[1] of each node so reached (hop 2), and so on, one hop per aggregation
// of the model, then runs the GCN over that block: the layers before the first aggregation on
// every node of the outermost frontier, each aggregation from a frontier to the next, the loss on
// the B targets. The weight gradients are summed over the ranks (ring allreduce) and every
// replica steps.
//
// Frontier sizes (expected values, nothing drawn): a node of expected degree w keeps min(w, f)
// sampled neighbours (the expected degrees of the model's power-law graph, power_law_degrees, on
// a sample of at most sample_nodes nodes with the same mean degree), so hop h draws
// k = N_h · c_h endpoints, c_h the mean of min(w, f_h). Taken as uniform over the n nodes, the
// nodes the hop reaches, itself included, are n − (n − N_h) e^{−k/n} (each other node is missed by
// all k draws with probability (1 − 1/n)^k ≈ e^{−k/n}). Sampling by degree reaches hubs more
// often, so the uniform draw is the upper end: it overstates the frontier a little when k is
// near n. An aggregation over N_out destination rows has N_out (c + 1) nonzeros (the self loop).
//
// What a rank holds: its block's activations and gradients and a replica of the weights; the
// graph and the features stay in host memory (as DGL and PyG keep them), and a gather task
// (embedding_fwd, ids it<r>/dp<w>/load) reads the input rows of the outermost frontier. Not
// modelled: the sampler's own CPU time (loaders overlap it with the previous step), and a
// gather over the host link (UVA) rather than at device memory speed.
//
// Ids: it<r>/dp<w>/{load,fwd,bwd,bwdw,opt}/<layer>, it<r>/ar/<layer>. An iteration is one
// minibatch step; an epoch is ceil(nodes / global batch) of them (Report::iterations_per_epoch).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "graph_step.hpp"
#include "solver_pipeline.hpp"
#include "strata/models/graph/synthetic_graph.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

// GraphSAGE's minibatch size per rank (Hamilton et al. 2017, Appendix B: 512).
constexpr std::int64_t kTargetsPerRank = 512;

std::vector<std::size_t> aggregations(const Model& gcn) {
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < gcn.layers.size(); ++j)
    if (gcn.layers[j].op == LayerOp::aggregate) out.push_back(j);
  return out;
}

std::string fanout_text(const std::vector<std::int64_t>& fanout) {
  std::string text;
  for (std::int64_t f : fanout) text += (text.empty() ? "" : ",") + std::to_string(f);
  return text;
}

// The mean of min(w, f) over the expected degrees of the model's power-law graph, drawn on at
// most `sample_nodes` nodes with the same mean degree.
double sampled_neighbours(const Model& gcn, std::int64_t f, std::int64_t sample_nodes) {
  const std::int64_t n = std::min(gcn.graph_nodes, sample_nodes);
  const double edges = graph_edges_of(gcn) * static_cast<double>(n) / static_cast<double>(gcn.graph_nodes);
  const auto m = std::clamp<std::int64_t>(std::llround(edges), 1, n * (n - 1) / 2);
  const std::vector<double> w = power_law_degrees(n, m, gcn.graph_exponent);
  double sum = 0;
  for (double d : w) sum += std::min(d, static_cast<double>(f));
  return sum / static_cast<double>(w.size());
}

}  // namespace

SampledFrontiers sampled_frontiers(const Model& gcn, const std::vector<std::int64_t>& fanout,
                                   std::int64_t targets, std::int64_t sample_nodes) {
  const std::size_t hops = aggregations(gcn).size();
  STRATA_ASSERT(fanout.size() == hops && targets >= 1, "sampled_frontiers: one fan-out per aggregation");
  SampledFrontiers s;
  s.rows.assign(hops + 1, 0);
  s.neighbours.assign(hops, 0);
  const auto n = static_cast<double>(gcn.graph_nodes);
  s.rows[hops] = std::min<double>(static_cast<double>(targets), n);
  for (std::size_t h = hops; h-- > 0;) {          // aggregation h maps frontier h to frontier h + 1
    const std::int64_t f = fanout[hops - 1 - h];  // fanout[0]: hop 1, the last aggregation's
    s.neighbours[h] = sampled_neighbours(gcn, f, sample_nodes);
    const double draws = s.rows[h + 1] * s.neighbours[h];
    s.rows[h] = n - (n - s.rows[h + 1]) * std::exp(-draws / n);
  }
  return s;
}

void check_sampled_gcn(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const std::string key = "--set fanout=" + fanout_text(solver.fanout);
  const std::size_t hops = aggregations(model).size();
  if (solver.fanout.size() != hops)
    throw InputError(key + ": " + std::to_string(solver.fanout.size()) + " fan-out(s) for the " +
                     std::to_string(hops) + " aggregations of model " + model.name + " (one per hop)");
  if (config.tp > 1 || config.pp > 1)
    throw InputError(key + ": sampled minibatches split over data-parallel ranks only; give --strategy dp=" +
                     std::to_string(config.dp));
  if (config.global_batch > 0 && config.global_batch % config.dp != 0)
    throw InputError(key + ": global batch " + std::to_string(config.global_batch) +
                     " target nodes does not divide over dp=" + std::to_string(config.dp));
  if (config.global_batch > model.graph_nodes)
    throw InputError(key + ": global batch " + std::to_string(config.global_batch) +
                     " target nodes but model " + model.name + " has " + std::to_string(model.graph_nodes) +
                     " nodes");
  if (microbatch_count(config) > 1 || config.compression != Compression::none ||
      !memory_option_set(config).empty())
    throw InputError(key + ": the sampled GCN Plan takes no microbatches, compression or memory option");
}

Plan lower_sampled_gcn(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int ranks = config.dp;
  const std::int64_t batch =
      config.global_batch > 0 ? config.global_batch : std::min(model.graph_nodes, kTargetsPerRank * ranks);
  const std::int64_t targets = std::max<std::int64_t>(1, batch / ranks);
  const SampledFrontiers frontier = sampled_frontiers(model, solver.fanout, targets, solver.sample_nodes);
  const std::vector<std::size_t> aggs = aggregations(model);
  const double elem = bytes_per_element(config.dtype);
  const std::size_t layers = model.layers.size();
  // Output rows of layer j: the frontier after the aggregations at or before it.
  std::vector<double> rows(layers);
  for (std::size_t j = 0, hop = 0; j < layers; ++j) {
    if (hop < aggs.size() && aggs[hop] == j) ++hop;
    rows[j] = std::max(1.0, std::round(frontier.rows[hop]));
  }
  const double input_rows = std::max(1.0, std::round(frontier.rows[0]));
  // Nonzeros of each aggregation (0 for other layers): its destination rows, their sampled
  // neighbours and self loops.
  std::vector<double> nnz(layers, 0);
  for (std::size_t hop = 0; hop < aggs.size(); ++hop)
    nnz[aggs[hop]] = rows[aggs[hop]] * (frontier.neighbours[hop] + 1);

  Plan plan(ranks);
  struct Rank {
    std::vector<BufferIndex> weight, wgrad, opt, act, grad;
    BufferIndex input = 0;
    std::vector<TaskIndex> ready, bwd;  // per layer: its weights' last step, its input-gradient task
  };
  std::vector<Rank> rank(static_cast<std::size_t>(ranks));
  const double state = optimizer_state_bytes_per_param(config.optimizer, config.dtype);
  for (int w = 0; w < ranks; ++w) {
    Rank& k = rank[static_cast<std::size_t>(w)];
    const std::string id = solvers::coord("dp", w) + "/";
    auto buffer = [&](const std::string& name, double bytes, bool persistent) {
      return plan.add_buffer({id + name, w, bytes, config.dtype, persistent});
    };
    k.input = buffer("act/input", model.input_elems * input_rows * elem, false);
    for (auto* table : {&k.weight, &k.wgrad, &k.opt, &k.act, &k.grad}) table->assign(layers, 0);
    k.ready.assign(layers, solvers::kNone);
    k.bwd.assign(layers, solvers::kNone);
    for (std::size_t j = 0; j < layers; ++j) {
      const Layer& layer = model.layers[j];
      k.act[j] = buffer("act/" + layer.name, layer.out_elems * rows[j] * elem, false);
      k.grad[j] = buffer("grad/" + layer.name, layer.out_elems * rows[j] * elem, false);
      if (layer.params <= 0) continue;
      k.weight[j] = buffer("w/" + layer.name, layer.params * elem, true);
      k.wgrad[j] = buffer("wgrad/" + layer.name, layer.params * elem, true);
      k.opt[j] = buffer("opt/" + layer.name, layer.params * state, true);
    }
  }
  auto add = [&](Task t, int r, int w, const std::string& name) {
    t.id = solvers::coord("it", r) + "/" + solvers::coord("dp", w) + "/" + name;
    t.worker = w;
    t.iteration = r;
    t.priority = r;
    return plan.add_task(std::move(t));
  };
  auto input_rows_of = [&](std::size_t j) { return j == 0 ? input_rows : rows[j - 1]; };
  for (int r = 0; r < config.iterations; ++r) {
    std::vector<std::vector<TaskIndex>> fwd(static_cast<std::size_t>(ranks)), bwdw(fwd.size());
    for (int w = 0; w < ranks; ++w) {
      Rank& k = rank[static_cast<std::size_t>(w)];
      std::vector<TaskIndex>& f = fwd[static_cast<std::size_t>(w)];
      f.assign(layers, solvers::kNone);
      bwdw[static_cast<std::size_t>(w)].assign(layers, solvers::kNone);
      Task load;  // the outermost frontier's input rows, gathered from the host's feature table
      load.kind = TaskKind::embedding_fwd;
      load.dtype = config.dtype;
      load.bytes_read = input_rows * (model.input_elems * elem + 8);  // a row and its int64 node id
      load.bytes_written = input_rows * model.input_elems * elem;
      load.writes = {k.input};
      load.attrs["rows"] = static_cast<std::int64_t>(input_rows);
      const TaskIndex loaded = add(std::move(load), r, w, "load");
      for (std::size_t j = 0; j < layers; ++j) {
        const Layer& layer = model.layers[j];
        Task t = layer_task(layer, Phase::forward, rows[j], 1, config.dtype);
        if (layer.op == LayerOp::aggregate) {
          t.flops = 2 * nnz[j] * layer.out_elems;
          set_spmm_bytes(t, rows[j], nnz[j], layer.out_elems, elem);
          t.attrs["nnz"] = static_cast<std::int64_t>(std::llround(nnz[j]));
          t.attrs["nodes"] = static_cast<std::int64_t>(rows[j]);
          t.attrs["source_rows"] = static_cast<std::int64_t>(input_rows_of(j));
        }
        t.reads = {j == 0 ? k.input : k.act[j - 1]};
        if (layer.params > 0) t.reads.push_back(k.weight[j]);
        t.writes = {k.act[j]};
        t.mem_alloc = layer.saved_elems * rows[j] * elem;
        f[j] = add(std::move(t), r, w, "fwd/" + layer.name);
        plan.add_data_dep(j == 0 ? loaded : f[j - 1], f[j]);
        if (layer.params > 0 && k.ready[j] != solvers::kNone) plan.add_data_dep(k.ready[j], f[j]);
      }
      TaskIndex producer = solvers::kNone;
      for (std::size_t j = layers; j-- > 0;) {
        const Layer& layer = model.layers[j];
        const BufferIndex in = j == 0 ? k.input : k.act[j - 1];
        if (layer.params > 0 && producer != solvers::kNone) {
          Task g = layer_task(layer, Phase::backward_weight, rows[j], 1, config.dtype);
          g.reads = {k.grad[j], in};
          g.writes = {k.wgrad[j]};
          if (j == 0) g.mem_free = layer.saved_elems * rows[j] * elem;
          bwdw[static_cast<std::size_t>(w)][j] = add(std::move(g), r, w, "bwdw/" + layer.name);
          plan.add_data_dep(f[j], bwdw[static_cast<std::size_t>(w)][j]);
          plan.add_data_dep(producer, bwdw[static_cast<std::size_t>(w)][j]);
        }
        if (j == 0) break;  // nothing reads the gradient of the input rows
        Task b = layer_task(layer, Phase::backward_data, rows[j], 1, config.dtype);
        if (layer.op == LayerOp::aggregate) {  // the transpose of the block's sampled rows
          b.flops = 2 * nnz[j] * layer.out_elems;
          set_spmm_bytes(b, input_rows_of(j), nnz[j], layer.out_elems, elem);
        }
        if (layer.op != LayerOp::loss) b.reads.push_back(k.grad[j]);
        b.reads.push_back(in);
        if (layer.params > 0) b.reads.push_back(k.weight[j]);
        b.writes = {k.grad[j - 1]};
        b.mem_free = layer.saved_elems * rows[j] * elem;
        if (layer.op == LayerOp::loss) b.attrs["mean_over"] = targets * ranks;
        const TaskIndex back = add(std::move(b), r, w, "bwd/" + layer.name);
        k.bwd[j] = back;
        plan.add_data_dep(f[j], back);
        if (producer != solvers::kNone) plan.add_data_dep(producer, back);
        producer = back;
      }
    }
    for (std::size_t j = 0; j < layers; ++j) {
      const Layer& layer = model.layers[j];
      if (layer.params <= 0) continue;
      std::vector<int> workers;
      std::vector<BufferIndex> wgrads;
      std::vector<TaskIndex> after;
      for (int w = 0; w < ranks; ++w) {
        workers.push_back(w);
        wgrads.push_back(rank[static_cast<std::size_t>(w)].wgrad[j]);
        after.push_back(bwdw[static_cast<std::size_t>(w)][j]);
      }
      const TaskIndex reduced = solvers::add_gradient_allreduce(
          plan, layer, solvers::coord("it", r) + "/ar/" + layer.name, workers, wgrads, after, config, r);
      for (int w = 0; w < ranks; ++w) {
        Rank& k = rank[static_cast<std::size_t>(w)];
        Task u = optimizer_step_task(model, layer.params, config.optimizer, config.dtype);
        u.reads = {k.wgrad[j], k.opt[j]};
        u.writes = {k.weight[j], k.opt[j]};
        const TaskIndex step = add(std::move(u), r, w, "opt/" + layer.name);
        plan.add_data_dep(reduced != solvers::kNone ? reduced : bwdw[static_cast<std::size_t>(w)][j], step);
        if (k.bwd[j] != solvers::kNone)
          plan.add_control_dep(k.bwd[j], step);  // it reads the weights the step writes
        k.ready[j] = step;
      }
    }
  }
  std::ostringstream label;
  label << "dp=" << ranks << ",fanout=" << fanout_text(solver.fanout) << ",batch=" << targets * ranks
        << ",nodes=" << model.graph_nodes;
  solvers::finish_plan(plan, model, config, label.str(), solver, targets * ranks, 1);
  set_graph_parameters(plan, model, nullptr);
  plan.info.parameters.fanout = fanout_text(solver.fanout);
  return plan;
}

}  // namespace models
}  // namespace strata
