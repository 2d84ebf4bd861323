// Partitioned full-graph GCN training (graph_step.hpp): the steps GIST's sites and backprop on
// a split graph share, and backprop's Plan itself (lower_partitioned_gcn: `--model gcn
// --strategy dp=P`, one graph part per worker, as DistGNN or CAGNET's 1-D algorithm train a GCN
// whose graph no single device holds).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "graph_step.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace solvers {

GraphLayout gcn_layout(const Model& gcn, int parts, const SolverConfig& solver, std::int64_t seed) {
  GraphLayoutOptions options;
  options.parts = parts;
  options.method = solver.partitioner;
  options.exponent = gcn.graph_exponent;
  options.seed = static_cast<std::uint64_t>(seed);
  options.max_sample_nodes = solver.sample_nodes;
  return power_law_layout(gcn.graph_nodes, std::llround(graph_edges_of(gcn)), options);
}

TaskIndex add_gradient_allreduce(Plan& plan, const Layer& layer, std::string id,
                                 const std::vector<int>& workers, const std::vector<BufferIndex>& wgrads,
                                 const std::vector<TaskIndex>& after, const StrategyConfig& config, int r) {
  if (workers.size() < 2) return kNone;
  Task ar;
  ar.id = std::move(id);
  ar.kind = TaskKind::allreduce;
  ar.stream = Stream::comm;
  ar.group = workers;
  ar.algo = config.dp_algo;
  ar.dtype = config.dtype;
  ar.iteration = r;
  ar.priority = r;
  ar.comm_bytes = layer.params * bytes_per_element(config.dtype);
  ar.reads = ar.writes = wgrads;
  const TaskIndex reduced = plan.add_task(std::move(ar));
  for (TaskIndex t : after) plan.add_data_dep(t, reduced);
  return reduced;
}

PartitionedGcn::PartitionedGcn(const Model& gcn, const GraphLayout& layout, std::vector<int> workers,
                               std::string prefix, const StrategyConfig& config, Plan& plan)
    : gcn_(gcn),
      layout_(layout),
      workers_(std::move(workers)),
      prefix_(std::move(prefix)),
      config_(config),
      plan_(plan) {
  STRATA_ASSERT(static_cast<int>(workers_.size()) == layout_.parts && layout_.parts >= 1,
                "PartitionedGcn: one worker per part");
  parts_.resize(workers_.size());
  for (int p = 0; p < layout_.parts; ++p) add_buffers(p);
}

double PartitionedGcn::elem() const { return bytes_per_element(config_.dtype); }

TaskIndex PartitionedGcn::add(Task task, int r, int p, const std::string& id) {
  task.id = coord("it", r) + "/" + prefix_ + coord("dp", p) + "/" + id;
  task.worker = worker(p);
  task.iteration = r;
  task.priority = r;
  return plan_.add_task(std::move(task));
}

void PartitionedGcn::add_buffers(int p) {
  Part& part = parts_[static_cast<std::size_t>(p)];
  const std::string id = prefix_ + coord("dp", p) + "/";
  const int w = worker(p);
  auto buffer = [&](const std::string& name, double bytes, bool persistent) {
    return plan_.add_buffer({id + name, w, bytes, config_.dtype, persistent});
  };
  const double n = rows(p);
  const std::size_t layers = gcn_.layers.size();
  for (auto* table : {&part.weight, &part.wgrad, &part.opt, &part.act, &part.grad, &part.halo})
    table->assign(layers, 0);
  part.ready.assign(layers, kNone);
  // The features stay for the whole run (ÂX's rows); their gradient is never formed.
  part.input = buffer("act/input", gcn_.input_elems * n * elem(), true);
  part.input_grad = buffer("grad/input", 0, false);
  const double nnz = static_cast<double>(layout_.part_nnz[static_cast<std::size_t>(p)]);
  part.adjacency = buffer("adjacency", nnz * (elem() + 4), true);  // values, int32 columns
  const double state = optimizer_state_bytes_per_param(config_.optimizer, config_.dtype);
  for (std::size_t j = 0; j < layers; ++j) {
    const Layer& layer = gcn_.layers[j];
    part.act[j] = buffer("act/" + layer.name, layer.out_elems * n * elem(), false);
    part.grad[j] = buffer("grad/" + layer.name, layer.out_elems * n * elem(), false);
    if (layer.op == LayerOp::aggregate)  // the other parts' rows it reads, forward (H W) and backward (dZ)
      part.halo[j] =
          buffer("halo/" + layer.name, static_cast<double>(layout_.halo(p)) * layer.out_elems * elem(), true);
    if (layer.params <= 0) continue;
    part.weight[j] = buffer("w/" + layer.name, layer.params * elem(), true);
    part.wgrad[j] = buffer("wgrad/" + layer.name, layer.params * elem(), true);
    part.opt[j] = buffer("opt/" + layer.name, layer.params * state, true);
  }
}

// An aggregation over part p's rows: its nonzeros, not the model's mean per node.
Task PartitionedGcn::spmm(const Layer& layer, Phase phase, int p) const {
  Task t = layer_task(layer, phase, rows(p), 1, config_.dtype);
  const auto nnz = static_cast<double>(layout_.part_nnz[static_cast<std::size_t>(p)]);
  t.flops = 2 * nnz * layer.out_elems;
  set_spmm_bytes(t, rows(p), nnz, layer.out_elems, elem());
  t.attrs["nnz"] = static_cast<std::int64_t>(nnz);
  t.attrs["halo_rows"] = layout_.halo(p);
  return t;
}

std::vector<std::vector<TaskIndex>> PartitionedGcn::exchange(int r, std::size_t j, const std::string& step,
                                                             const char* phase,
                                                             const std::vector<BufferIndex>& source,
                                                             const std::vector<TaskIndex>& after,
                                                             const std::vector<TaskIndex>& not_before) {
  const Layer& layer = gcn_.layers[j];
  std::vector<std::vector<TaskIndex>> arrivals(parts_.size());
  for (int p = 0; p < layout_.parts; ++p)
    for (int q = 0; q < layout_.parts; ++q) {
      const std::int64_t rows_in = layout_.rows_from(p, q);
      if (q == p || rows_in == 0) continue;
      Task send;
      send.kind = TaskKind::send;
      send.stream = Stream::comm;
      send.peer = worker(p);
      send.dtype = config_.dtype;
      send.comm_bytes = static_cast<double>(rows_in) * layer.out_elems * elem();
      send.reads = {source[static_cast<std::size_t>(q)]};
      send.attrs["rows"] = rows_in;
      const TaskIndex s =
          add(std::move(send), r, q, step + "send/" + phase + "/" + layer.name + "/to" + std::to_string(p));
      plan_.add_data_dep(after[static_cast<std::size_t>(q)], s);
      Task recv;
      recv.kind = TaskKind::recv;
      recv.stream = Stream::comm;
      recv.peer = worker(q);
      recv.dtype = config_.dtype;
      recv.writes = {parts_[static_cast<std::size_t>(p)].halo[j]};
      const TaskIndex in =
          add(std::move(recv), r, p, step + "recv/" + phase + "/" + layer.name + "/from" + std::to_string(q));
      plan_.add_data_dep(s, in);
      if (not_before[static_cast<std::size_t>(p)] != kNone)
        plan_.add_control_dep(not_before[static_cast<std::size_t>(p)], in);
      arrivals[static_cast<std::size_t>(p)].push_back(in);
    }
  return arrivals;
}

void PartitionedGcn::forward(int r, const std::string& step) {
  const std::size_t layers = gcn_.layers.size();
  for (Part& part : parts_) part.fwd.assign(layers, kNone);
  for (std::size_t j = 0; j < layers; ++j) {
    const Layer& layer = gcn_.layers[j];
    std::vector<std::vector<TaskIndex>> arrivals(parts_.size());
    if (layer.op == LayerOp::aggregate) {
      std::vector<BufferIndex> source;
      std::vector<TaskIndex> after, not_before;
      for (const Part& part : parts_) {
        source.push_back(part.act[j - 1]);
        after.push_back(part.fwd[j - 1]);
        not_before.push_back(part.bwd.empty() ? kNone : part.bwd[j]);  // the last step's backward read
      }
      arrivals = exchange(r, j, step, "fwd", source, after, not_before);
    }
    for (int p = 0; p < layout_.parts; ++p) {
      Part& part = parts_[static_cast<std::size_t>(p)];
      Task t = layer.op == LayerOp::aggregate ? spmm(layer, Phase::forward, p)
                                              : layer_task(layer, Phase::forward, rows(p), 1, config_.dtype);
      t.reads = {j == 0 ? part.input : part.act[j - 1]};
      if (layer.params > 0) t.reads.push_back(part.weight[j]);
      if (layer.op == LayerOp::aggregate) t.reads.insert(t.reads.end(), {part.halo[j], part.adjacency});
      t.writes = {part.act[j]};
      t.mem_alloc = layer.saved_elems * rows(p) * elem();
      part.fwd[j] = add(std::move(t), r, p, step + "fwd/" + layer.name);
      if (j > 0) plan_.add_data_dep(part.fwd[j - 1], part.fwd[j]);
      if (layer.params > 0 && part.ready[j] != kNone) plan_.add_data_dep(part.ready[j], part.fwd[j]);
      for (TaskIndex in : arrivals[static_cast<std::size_t>(p)]) plan_.add_data_dep(in, part.fwd[j]);
    }
  }
}

void PartitionedGcn::backward(int r, const std::string& step, bool fresh_state) {
  const std::size_t layers = gcn_.layers.size();
  for (Part& part : parts_) part.bwd.assign(layers, kNone);
  std::vector<TaskIndex> grad_producer(parts_.size(), kNone);
  for (std::size_t j = layers; j-- > 0;) {
    const Layer& layer = gcn_.layers[j];
    std::vector<std::vector<TaskIndex>> arrivals(parts_.size());
    if (layer.op == LayerOp::aggregate) {
      std::vector<BufferIndex> source;
      std::vector<TaskIndex> not_before;
      for (const Part& part : parts_) {
        source.push_back(part.grad[j]);
        not_before.push_back(part.fwd[j]);  // the forward aggregation read the halo buffer
      }
      arrivals = exchange(r, j, step, "bwd", source, grad_producer, not_before);
    }
    std::vector<TaskIndex> bwdw(parts_.size(), kNone);
    // The first layer reads ÂX, whose gradient nothing needs: its backward is the weight gradient.
    const bool input_grad = j > 0 || layer.params <= 0;
    for (int p = 0; p < layout_.parts; ++p) {
      Part& part = parts_[static_cast<std::size_t>(p)];
      const BufferIndex in = j == 0 ? part.input : part.act[j - 1];
      TaskIndex& producer = grad_producer[static_cast<std::size_t>(p)];
      // dW from the gradient `producer` made; it frees the saved activations when no bwd does.
      auto weight_grad = [&] {
        if (layer.params <= 0 || producer == kNone) return;
        Task w = layer_task(layer, Phase::backward_weight, rows(p), 1, config_.dtype);
        w.reads = {part.grad[j], in};
        w.writes = {part.wgrad[j]};
        if (!input_grad) w.mem_free = layer.saved_elems * rows(p) * elem();
        bwdw[static_cast<std::size_t>(p)] = add(std::move(w), r, p, step + "bwdw/" + layer.name);
        plan_.add_data_dep(part.fwd[j], bwdw[static_cast<std::size_t>(p)]);
        plan_.add_data_dep(producer, bwdw[static_cast<std::size_t>(p)]);
      };
      if (!input_grad) {
        weight_grad();
        producer = kNone;
        continue;
      }
      Task b = layer.op == LayerOp::aggregate
                   ? spmm(layer, Phase::backward_data, p)
                   : layer_task(layer, Phase::backward_data, rows(p), 1, config_.dtype);
      if (layer.op != LayerOp::loss) b.reads.push_back(part.grad[j]);
      if (layer.op == LayerOp::aggregate)
        b.reads.insert(b.reads.end(), {part.halo[j], part.adjacency});  // dP = Â dZ reads Â only
      else
        b.reads.push_back(in);
      if (layer.params > 0) b.reads.push_back(part.weight[j]);
      b.writes = {j == 0 ? part.input_grad : part.grad[j - 1]};
      b.mem_free = layer.saved_elems * rows(p) * elem();
      if (layer.op == LayerOp::loss) b.attrs["mean_over"] = gcn_.graph_nodes;
      part.bwd[j] = add(std::move(b), r, p, step + "bwd/" + layer.name);
      plan_.add_data_dep(part.fwd[j], part.bwd[j]);
      if (producer != kNone) plan_.add_data_dep(producer, part.bwd[j]);
      for (TaskIndex arrival : arrivals[static_cast<std::size_t>(p)])
        plan_.add_data_dep(arrival, part.bwd[j]);
      weight_grad();
      producer = part.bwd[j];
    }
    if (bwdw.front() == kNone) continue;
    // The parts' gradients summed: every replica steps with the whole graph's gradient.
    std::vector<BufferIndex> wgrads;
    for (const Part& part : parts_) wgrads.push_back(part.wgrad[j]);
    const TaskIndex reduced =
        add_gradient_allreduce(plan_, layer, coord("it", r) + "/" + prefix_ + "ar/" + step + layer.name,
                               workers_, wgrads, bwdw, config_, r);
    for (int p = 0; p < layout_.parts; ++p) {
      Part& part = parts_[static_cast<std::size_t>(p)];
      Task u = optimizer_step_task(gcn_, layer.params, config_.optimizer, config_.dtype);
      u.reads = {part.wgrad[j], part.opt[j]};
      u.writes = {part.weight[j], part.opt[j]};
      if (fresh_state) u.attrs["fresh_state"] = std::int64_t{1};
      part.ready[j] = add(std::move(u), r, p, step + "opt/" + layer.name);
      plan_.add_data_dep(reduced != kNone ? reduced : bwdw[static_cast<std::size_t>(p)], part.ready[j]);
      if (part.bwd[j] != kNone)  // bwd reads the weights the step overwrites
        plan_.add_control_dep(part.bwd[j], part.ready[j]);
    }
  }
}

void PartitionedGcn::step(int r, const std::string& step, bool fresh_state) {
  forward(r, step);
  backward(r, step, fresh_state);
}

}  // namespace solvers

void check_partitioned_gcn(const Model& model, const StrategyConfig& config) {
  const std::string dp = "dp=" + std::to_string(config.dp);
  if (config.tp > 1 || config.pp > 1)
    throw InputError(config.to_string() + ": a GCN's graph splits over data-parallel ranks only (" + dp +
                     " parts, one per worker); give --strategy " + dp);
  if (microbatch_count(config) > 1)
    throw InputError(std::to_string(microbatch_count(config)) + " microbatches: model " + model.name +
                     " trains full-graph; each of the " + std::to_string(config.dp) +
                     " graph parts runs all its nodes at once (give --microbatches 1)");
  if (config.global_batch > 0 && config.global_batch != model.graph_nodes)
    throw InputError("global batch " + std::to_string(config.global_batch) + ": model " + model.name +
                     " trains full-graph on all " + std::to_string(model.graph_nodes) +
                     " nodes (set the graph with --set nodes=N, not --global-batch)");
  if (config.dp > model.graph_nodes)
    throw InputError(dp + ": more graph parts than the " + std::to_string(model.graph_nodes) +
                     " nodes of model " + model.name);
  if (config.compression != Compression::none || !memory_option_set(config).empty())
    throw InputError(dp + " on model " + model.name +
                     ": the partitioned full-graph Plan takes no compression or memory option");
}

Plan lower_partitioned_gcn(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int parts = config.dp;
  const GraphLayout layout = solvers::gcn_layout(model, parts, solver, config.seed);
  Plan plan(parts);
  std::vector<int> workers(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) workers[static_cast<std::size_t>(p)] = p;
  solvers::PartitionedGcn gcn(model, layout, workers, "", config, plan);
  for (int r = 0; r < config.iterations; ++r) gcn.step(r, "", false);
  solvers::finish_plan(plan, model, config,
                       "dp=" + std::to_string(parts) + ",nodes=" + std::to_string(model.graph_nodes) +
                           ",edges=" + std::to_string(layout.edges) +
                           ",partitioner=" + std::string(to_string(solver.partitioner)),
                       solver, model.graph_nodes, 1);
  set_graph_parameters(plan, model, &layout);
  return plan;
}

void set_graph_parameters(Plan& plan, const Model& gcn, const GraphLayout* layout) {
  SolverParameters& p = plan.info.parameters;
  if (layout == nullptr) {
    if (gcn.family != "gcn" || gcn.graph_edges <= 0) return;
    p.graph_edges = gcn.graph_edges;
    p.graph_exponent = gcn.graph_exponent;
    return;
  }
  p.graph_parts = layout->parts;
  p.graph_edges = layout->edges;
  p.graph_exponent = gcn.graph_exponent;
  p.partitioner = std::string(to_string(layout->method));
  p.halo_rows = layout->total_halo();
}

}  // namespace models
}  // namespace strata
