// lower_gist(): GIST, independent subnetwork training of a GCN (Wolfe et al. 2021), as a Plan of
// rounds; strata::real's gcn.hpp holds the numerics this Plan describes.
//
// m sites, site i on worker i; worker 0 is also the coordinator that holds the global GCN. Each
// hidden layer's units are dealt round-robin to the sites (a random permutation in the numerics;
// only the counts matter here), so site i owns floor(h/m) + (i < h mod m ? 1 : 0) of a hidden
// layer of h units, and its sub-GCN is the GCN of sizes {features, shares..., classes}: input
// features and classes belong to every site. Round r (Plan iteration r, ids it<r>/site<i>/...):
//   extract          worker 0, elementwise: copies site i's slices out of the global weights
//                    (the output layer's times m, gcn.hpp)
//   send|recv/scatter/<layer>   worker 0 -> i, one per layer with weights: its slice, in_i x out_i
//                    weights and out_i biases (site 0 shares worker 0: no transfer)
//   step<s>/fwd|bwd|bwdw|opt/<layer>   worker i, s < zeta: one full-graph step of the sub-GCN,
//                    the zoo's layer tasks (zoo_gcn.cpp) for all N nodes at the site's widths,
//                    and an optimizer step per layer; nothing crosses the network. Step 0's
//                    optimizer tasks carry fresh_state = 1: a site starts each round with a new
//                    Adam state, as GIST's code builds a new optimizer at each dispatch (gcn.hpp)
//   send|recv/gather/<layer>    worker i -> 0: the trained slices
//   write_back       worker 0, elementwise: the slices into the global weights (output layer / m)
//   it<r>/average    worker 0, elementwise: the output bias shared by all sites := their mean
// The three copies carry attribute copy = extract | write_back | average: what the real
// executor runs (task_runner.hpp gist_copy_name), without reading it back from the id.
// The next round's extracts wait for the average. A sub-GCN's hidden-to-hidden GEMMs cost 1/m^2
// of the full model's, its first and last GEMMs and its hidden layers' aggregations 1/m; the
// output layer's aggregation is as wide as the classes on every site.
// Determinism: nothing is drawn; which units a site owns changes no cost, only how many, so the
// same flags give the same Plan whatever --seed. Ownership: GistBuilder borrows the model, the
// configurations and the Plan for build() only; the Plan owns every task and buffer it adds.
#include <algorithm>
#include <memory>
#include <string>

#include "graph_step.hpp"
#include "solver_pipeline.hpp"
#include "strata/models/lowering/layer_tasks.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

using solvers::coord;
using solvers::kNone;

// The units of a hidden layer of `width` that `site` of `sites` owns when they are dealt round-robin.
std::int64_t share(std::int64_t width, int sites, int site) {
  return width / sites + (site < width % sites ? 1 : 0);
}

Model sub_gcn(const Model& model, int sites, int site) {
  GcnConfig config;
  config.sizes = gcn_sizes(model);
  for (std::size_t l = 1; l + 1 < config.sizes.size(); ++l)
    config.sizes[l] = share(config.sizes[l], sites, site);
  config.nodes = model.graph_nodes;
  config.avg_degree = model.graph_avg_degree;
  return make_gcn(model.name + "/site" + std::to_string(site), config);
}

// The output layer: the last with weights (the last fc; its aggregation and the loss follow).
std::size_t output_layer(const Model& gcn) {
  std::size_t j = gcn.layers.size();
  while (gcn.layers[--j].params <= 0) {
  }
  return j;
}

class GistBuilder {
 public:
  GistBuilder(const Model& model, const StrategyConfig& config, const SolverConfig& solver, Plan& plan)
      : model_(model), config_(config), solver_(solver), plan_(plan), classes_(gcn_sizes(model).back()) {}
  void build();
  const GraphLayout& layout() const { return layout_; }

 private:
  struct Site {
    Model sub;
    // Per layer of the sub-GCN: weights, their gradient and optimizer state (layers with
    // parameters), its output and the gradient with respect to it; the coordinator's copies of
    // the slices on their way out and back (sites > 0).
    std::vector<BufferIndex> weight, wgrad, opt, act, grad, outbox, inbox;
    BufferIndex input = 0, input_grad = 0, adjacency = 0;
    std::vector<TaskIndex> ready;  // per layer: the task after which its weights may be read
    // With graph parts (--set parts=P > 1): the site's sub-GCN over P workers, i P .. i P + P - 1,
    // which holds its own buffers; outbox and inbox above stay the coordinator's.
    std::unique_ptr<solvers::PartitionedGcn> split;
  };
  int parts() const { return solver_.graph_parts; }
  // The worker of site i's part p: site i itself without parts.
  int worker(int i, int p) const { return i * parts() + p; }

  double elem() const { return bytes_per_element(config_.dtype); }
  double nodes() const { return static_cast<double>(model_.graph_nodes); }
  BufferIndex buffer(int worker, const std::string& id, double bytes, bool persistent);
  void add_buffers(int i);
  TaskIndex add(Task task, int r, const std::string& id, int worker);
  Task copy_task(const Site& site) const;
  TaskIndex transfer(int r, int i, const std::string& id, int from, int to, double bytes, BufferIndex src,
                     BufferIndex dst, TaskIndex after);
  BufferIndex site_weight(int i, std::size_t j) const;  // the weights gather reads (part 0's)
  void scatter_split(int r, int i, TaskIndex extract);
  void scatter(int r, int i, TaskIndex extract);
  std::vector<TaskIndex> forward(int r, int i, const std::string& prefix);
  void backward(int r, int i, const std::string& prefix, const std::vector<TaskIndex>& fwd, bool first_step);
  TaskIndex gather(int r, int i);
  void round(int r);

  const Model& model_;
  const StrategyConfig& config_;
  const SolverConfig& solver_;
  Plan& plan_;
  std::vector<BufferIndex> global_;  // per layer with weights of the full model, on worker 0
  std::int64_t classes_;
  std::vector<Site> sites_;
  TaskIndex last_average_ = kNone;
  GraphLayout layout_;  // with graph parts: the graph each sub-GCN splits
};

BufferIndex GistBuilder::buffer(int worker, const std::string& id, double bytes, bool persistent) {
  return plan_.add_buffer({id, worker, bytes, config_.dtype, persistent});
}

void GistBuilder::add_buffers(int i) {
  Site& site = sites_[static_cast<std::size_t>(i)];
  const std::string prefix = coord("site", i) + "/";
  const double state = optimizer_state_bytes_per_param(config_.optimizer, config_.dtype);
  const std::size_t n = site.sub.layers.size();
  for (auto* table : {&site.weight, &site.wgrad, &site.opt, &site.act, &site.grad, &site.outbox, &site.inbox})
    table->assign(n, 0);
  if (site.split) {  // the parts hold the rest
    if (i == 0) return;
    for (std::size_t j = 0; j < n; ++j) {
      const Layer& layer = site.sub.layers[j];
      if (layer.params <= 0) continue;
      site.outbox[j] = buffer(0, prefix + "outbox/" + layer.name, layer.params * elem(), false);
      site.inbox[j] = buffer(0, prefix + "inbox/" + layer.name, layer.params * elem(), false);
    }
    return;
  }
  site.input = buffer(i, prefix + "act/input", model_.input_elems * nodes() * elem(), false);
  site.input_grad = buffer(i, prefix + "grad/input", model_.input_elems * nodes() * elem(), false);
  const double nnz = nodes() * (model_.graph_avg_degree + 1);
  site.adjacency = buffer(i, prefix + "adjacency", nnz * (elem() + 4), true);  // values, int32 columns
  for (std::size_t j = 0; j < n; ++j) {
    const Layer& layer = site.sub.layers[j];
    site.act[j] = buffer(i, prefix + "act/" + layer.name, layer.out_elems * nodes() * elem(), false);
    site.grad[j] = buffer(i, prefix + "grad/" + layer.name, layer.out_elems * nodes() * elem(), false);
    if (layer.params <= 0) continue;
    const double bytes = layer.params * elem();
    site.weight[j] = buffer(i, prefix + "w/" + layer.name, bytes, true);
    site.wgrad[j] = buffer(i, prefix + "wgrad/" + layer.name, bytes, true);
    site.opt[j] = buffer(i, prefix + "opt/" + layer.name, layer.params * state, true);
    if (i == 0) continue;
    site.outbox[j] = buffer(0, prefix + "outbox/" + layer.name, bytes, false);
    site.inbox[j] = buffer(0, prefix + "inbox/" + layer.name, bytes, false);
  }
}

TaskIndex GistBuilder::add(Task task, int r, const std::string& id, int worker) {
  task.id = coord("it", r) + "/" + id;
  task.worker = worker;
  task.iteration = r;
  task.priority = r;
  return plan_.add_task(std::move(task));
}

// A copy of a site's slices on worker 0, out of or into the global weights; it scales the output
// layer's weights (by m on the way out, 1/m on the way back: one FLOP each).
Task GistBuilder::copy_task(const Site& site) const {
  const Layer& output = site.sub.layers[output_layer(site.sub)];
  Task t;
  t.kind = TaskKind::elementwise;
  t.dtype = config_.dtype;
  t.flops = output.params - static_cast<double>(classes_);
  t.bytes_read = t.bytes_written = site.sub.params() * elem();
  t.attrs["params"] = static_cast<std::int64_t>(site.sub.params());
  t.attrs["sites"] = static_cast<std::int64_t>(solver_.subnets);
  return t;
}

// A send on `from` reading `src` after `after`, and its recv on `to` writing `dst`; returns the recv.
TaskIndex GistBuilder::transfer(int r, int i, const std::string& id, int from, int to, double bytes,
                                BufferIndex src, BufferIndex dst, TaskIndex after) {
  Task send;
  send.kind = TaskKind::send;
  send.stream = Stream::comm;
  send.peer = to;
  send.dtype = config_.dtype;
  send.comm_bytes = bytes;
  send.reads = {src};
  const TaskIndex s = add(std::move(send), r, coord("site", i) + "/send/" + id, from);
  plan_.add_data_dep(after, s);
  Task recv;
  recv.kind = TaskKind::recv;
  recv.stream = Stream::comm;
  recv.peer = from;
  recv.dtype = config_.dtype;
  recv.writes = {dst};
  const TaskIndex arrival = add(std::move(recv), r, coord("site", i) + "/recv/" + id, to);
  plan_.add_data_dep(s, arrival);
  return arrival;
}

// Site i's slices to worker i, one message per layer with weights; site 0's stay on worker 0.
void GistBuilder::scatter(int r, int i, TaskIndex extract) {
  Site& site = sites_[static_cast<std::size_t>(i)];
  for (std::size_t j = 0; j < site.sub.layers.size(); ++j) {
    const Layer& layer = site.sub.layers[j];
    if (layer.params <= 0) continue;
    site.ready[j] = i == 0 ? extract  // extract wrote the weights themselves
                           : transfer(r, i, "scatter/" + layer.name, 0, i, layer.params * elem(),
                                      site.outbox[j], site.weight[j], extract);
  }
}

BufferIndex GistBuilder::site_weight(int i, std::size_t j) const {
  const Site& site = sites_[static_cast<std::size_t>(i)];
  return site.split ? site.split->weight(0, j) : site.weight[j];
}

// With graph parts: the slices to every part of site i, from worker 0 (site 0's part 0 is worker
// 0 itself, whose replica extract wrote); a part's replica is overwritten only after its last
// optimizer step of the round before.
void GistBuilder::scatter_split(int r, int i, TaskIndex extract) {
  Site& site = sites_[static_cast<std::size_t>(i)];
  solvers::PartitionedGcn& split = *site.split;
  for (std::size_t j = 0; j < site.sub.layers.size(); ++j) {
    const Layer& layer = site.sub.layers[j];
    if (layer.params <= 0) continue;
    const BufferIndex source = i == 0 ? split.weight(0, j) : site.outbox[j];
    for (int p = 0; p < parts(); ++p) {
      TaskIndex& ready = split.ready(p, j);
      const TaskIndex last_step = ready;
      if (split.worker(p) == 0) {
        ready = extract;
      } else {
        ready = transfer(r, i, coord("dp", p) + "/scatter/" + layer.name, 0, split.worker(p),
                         layer.params * elem(), source, split.weight(p, j), extract);
      }
      if (last_step != kNone) plan_.add_control_dep(last_step, ready);
    }
  }
}

// Forward through every layer of site i's sub-GCN in step s; returns each layer's task. A layer
// with weights waits for them: the scatter in step 0, its previous optimizer step after.
std::vector<TaskIndex> GistBuilder::forward(int r, int i, const std::string& prefix) {
  Site& site = sites_[static_cast<std::size_t>(i)];
  std::vector<TaskIndex> fwd(site.sub.layers.size());
  for (std::size_t j = 0; j < fwd.size(); ++j) {
    const Layer& layer = site.sub.layers[j];
    Task t = layer_task(layer, Phase::forward, nodes(), 1, config_.dtype);
    t.reads = {j == 0 ? site.input : site.act[j - 1]};
    if (layer.params > 0) t.reads.push_back(site.weight[j]);
    if (layer.op == LayerOp::aggregate) t.reads.push_back(site.adjacency);
    t.writes = {site.act[j]};
    t.mem_alloc = layer.saved_elems * nodes() * elem();
    fwd[j] = add(std::move(t), r, prefix + "fwd/" + layer.name, i);
    if (j > 0) plan_.add_data_dep(fwd[j - 1], fwd[j]);
    if (layer.params > 0) plan_.add_data_dep(site.ready[j], fwd[j]);
  }
  return fwd;
}

// Backward in reverse layer order; a layer with weights also gets dW and its optimizer step,
// which becomes what the next forward through it waits for; the round's first step resets the
// optimizer state (fresh_state).
void GistBuilder::backward(int r, int i, const std::string& prefix, const std::vector<TaskIndex>& fwd,
                           bool first_step) {
  Site& site = sites_[static_cast<std::size_t>(i)];
  TaskIndex grad_producer = kNone;
  for (std::size_t j = fwd.size(); j-- > 0;) {
    const Layer& layer = site.sub.layers[j];
    const BufferIndex in = j == 0 ? site.input : site.act[j - 1];
    Task b = layer_task(layer, Phase::backward_data, nodes(), 1, config_.dtype);
    if (layer.op != LayerOp::loss) b.reads.push_back(site.grad[j]);
    b.reads.push_back(layer.op == LayerOp::aggregate ? site.adjacency : in);  // dP = Â dZ reads Â only
    if (layer.params > 0) b.reads.push_back(site.weight[j]);
    b.writes = {j == 0 ? site.input_grad : site.grad[j - 1]};
    b.mem_free = layer.saved_elems * nodes() * elem();
    if (layer.op == LayerOp::loss) b.attrs["mean_over"] = model_.graph_nodes;
    const TaskIndex bwd = add(std::move(b), r, prefix + "bwd/" + layer.name, i);
    plan_.add_data_dep(fwd[j], bwd);
    if (grad_producer != kNone) plan_.add_data_dep(grad_producer, bwd);
    if (layer.params > 0 && grad_producer != kNone) {
      Task w = layer_task(layer, Phase::backward_weight, nodes(), 1, config_.dtype);
      w.reads = {site.grad[j], in};
      w.writes = {site.wgrad[j]};
      const TaskIndex bwdw = add(std::move(w), r, prefix + "bwdw/" + layer.name, i);
      plan_.add_data_dep(fwd[j], bwdw);
      plan_.add_data_dep(grad_producer, bwdw);
      Task u = optimizer_step_task(site.sub, layer.params, config_.optimizer, config_.dtype);
      u.reads = {site.wgrad[j], site.opt[j]};
      u.writes = {site.weight[j], site.opt[j]};
      if (first_step) u.attrs["fresh_state"] = std::int64_t{1};
      site.ready[j] = add(std::move(u), r, prefix + "opt/" + layer.name, i);
      plan_.add_data_dep(bwdw, site.ready[j]);
      plan_.add_control_dep(bwd, site.ready[j]);  // bwd reads the weights the step overwrites
    }
    grad_producer = bwd;
  }
}

// The trained slices back to worker 0 and into the global weights; returns the write-back.
TaskIndex GistBuilder::gather(int r, int i) {
  Site& site = sites_[static_cast<std::size_t>(i)];
  Task wb = copy_task(site);
  std::vector<TaskIndex> arrivals;
  for (std::size_t j = 0; j < site.sub.layers.size(); ++j) {
    const Layer& layer = site.sub.layers[j];
    if (layer.params <= 0) continue;
    const TaskIndex ready = site.split ? site.split->ready(0, j) : site.ready[j];
    if (i == 0) {
      wb.reads.push_back(site_weight(i, j));
      arrivals.push_back(ready);
      continue;
    }
    arrivals.push_back(transfer(r, i, "gather/" + layer.name, worker(i, 0), 0, layer.params * elem(),
                                site_weight(i, j), site.inbox[j], ready));
    wb.reads.push_back(site.inbox[j]);
  }
  wb.writes = global_;
  wb.attrs["copy"] = std::string("write_back");
  const TaskIndex write_back = add(std::move(wb), r, coord("site", i) + "/write_back", 0);
  for (TaskIndex a : arrivals) plan_.add_data_dep(a, write_back);
  return write_back;
}

void GistBuilder::round(int r) {
  const int m = solver_.subnets;
  // Remote sites first: their slices still have the network to cross.
  std::vector<TaskIndex> extract(static_cast<std::size_t>(m));
  for (int k = 1; k <= m; ++k) {
    const int i = k % m;
    Site& site = sites_[static_cast<std::size_t>(i)];
    Task t = copy_task(site);
    t.reads = global_;
    for (std::size_t j = 0; j < site.sub.layers.size(); ++j)
      if (site.sub.layers[j].params > 0) t.writes.push_back(i == 0 ? site_weight(i, j) : site.outbox[j]);
    t.attrs["copy"] = std::string("extract");
    extract[static_cast<std::size_t>(i)] = add(std::move(t), r, coord("site", i) + "/extract", 0);
    if (last_average_ != kNone) plan_.add_data_dep(last_average_, extract[static_cast<std::size_t>(i)]);
  }
  std::vector<TaskIndex> write_backs;
  for (int i = 0; i < m; ++i) {
    if (sites_[static_cast<std::size_t>(i)].split) {
      scatter_split(r, i, extract[static_cast<std::size_t>(i)]);
      for (int s = 0; s < solver_.local_steps; ++s)
        sites_[static_cast<std::size_t>(i)].split->step(r, coord("step", s) + "/", s == 0);
      write_backs.push_back(gather(r, i));
      continue;
    }
    scatter(r, i, extract[static_cast<std::size_t>(i)]);
    for (int s = 0; s < solver_.local_steps; ++s) {
      const std::string prefix = coord("site", i) + "/" + coord("step", s) + "/";
      backward(r, i, prefix, forward(r, i, prefix), s == 0);
    }
    write_backs.push_back(gather(r, i));
  }
  // The output bias every site trained: the mean of theirs (m values per class).
  const auto classes = static_cast<double>(classes_);
  Task avg;
  avg.kind = TaskKind::elementwise;
  avg.dtype = config_.dtype;
  avg.flops = classes * m;
  avg.bytes_read = classes * m * elem();
  avg.bytes_written = classes * elem();
  for (const Site& site : sites_) {
    const std::size_t output = output_layer(site.sub);
    avg.reads.push_back(&site == &sites_.front() ? site_weight(0, output) : site.inbox[output]);
  }
  avg.writes = {global_.back()};
  avg.attrs["copy"] = std::string("average");
  last_average_ = add(std::move(avg), r, "average", 0);
  for (TaskIndex wb : write_backs) plan_.add_data_dep(wb, last_average_);
}

void GistBuilder::build() {
  for (const Layer& layer : model_.layers)
    if (layer.params > 0) global_.push_back(buffer(0, "global/w/" + layer.name, layer.params * elem(), true));
  if (parts() > 1) layout_ = solvers::gcn_layout(model_, parts(), solver_, config_.seed);
  sites_.resize(static_cast<std::size_t>(solver_.subnets));  // not resized again: the parts hold sub
  for (int i = 0; i < solver_.subnets; ++i) {
    Site& site = sites_[static_cast<std::size_t>(i)];
    site.sub = sub_gcn(model_, solver_.subnets, i);
    site.ready.assign(site.sub.layers.size(), kNone);
    if (parts() > 1) {
      std::vector<int> workers;
      for (int p = 0; p < parts(); ++p) workers.push_back(worker(i, p));
      site.split = std::make_unique<solvers::PartitionedGcn>(site.sub, layout_, std::move(workers),
                                                             coord("site", i) + "/", config_, plan_);
    }
    add_buffers(i);
  }
  for (int r = 0; r < config_.iterations; ++r) round(r);
}

}  // namespace

std::vector<std::int64_t> gcn_sizes(const Model& model) {
  if (model.family != "gcn")
    throw InputError("--solver gist: model " + model.name +
                     " is not a GCN; GIST trains sub-GCNs of a graph convolutional network (--model gcn)");
  std::vector<std::int64_t> sizes;
  for (const Layer& layer : model.layers) {
    if (layer.op != LayerOp::linear) continue;
    if (sizes.empty()) sizes.push_back(std::get<std::int64_t>(layer.shape.at("k")));
    sizes.push_back(std::get<std::int64_t>(layer.shape.at("n")));
  }
  return sizes;
}

void check_gist(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const std::vector<std::int64_t> sizes = gcn_sizes(model);
  if (sizes.size() < 3)
    throw InputError(
        "--solver gist: model " + model.name +
        " has no hidden layer to split (give --set sizes=F,H,...,C with at least one hidden width)");
  const std::int64_t narrowest = *std::min_element(sizes.begin() + 1, sizes.end() - 1);
  const std::string m = std::to_string(solver.subnets);
  if (solver.subnets > narrowest)
    throw InputError("--set m: " + m + " sub-GCNs but the narrowest hidden layer of model " + model.name +
                     " has " + std::to_string(narrowest) + " units (each sub-GCN needs at least one)");
  const int workers = solver.subnets * solver.graph_parts;
  if (workers != solver_stages(config)) {
    if (solver.graph_parts == 1)
      throw InputError("--set m: " + m + " sub-GCNs but " + std::to_string(solver_stages(config)) +
                       " workers; GIST trains one sub-GCN per worker (give --workers " + m + ")");
    throw InputError("--set parts=" + std::to_string(solver.graph_parts) + ": " + m + " sub-GCNs of " +
                     std::to_string(solver.graph_parts) + " graph parts each need " +
                     std::to_string(workers) + " workers, not " + std::to_string(solver_stages(config)) +
                     " (give --workers " + std::to_string(workers) + ")");
  }
  if (solver.graph_parts > model.graph_nodes)
    throw InputError("--set parts=" + std::to_string(solver.graph_parts) + ": more graph parts than the " +
                     std::to_string(model.graph_nodes) + " nodes of model " + model.name);
  if (config.global_batch > 0 && config.global_batch != model.graph_nodes)
    throw InputError("--global-batch " + std::to_string(config.global_batch) +
                     ": GIST trains full-graph on the " + std::to_string(model.graph_nodes) +
                     " nodes of model " + model.name + " (set the graph with --set nodes=N)");
}

Plan lower_gist(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int parts = solver.graph_parts;
  Plan plan(solver.subnets * parts);
  GistBuilder builder(model, config, solver, plan);
  builder.build();
  const std::int64_t steps = solver.local_steps;
  const std::int64_t nodes = model.graph_nodes;
  const std::string graph =
      parts > 1 ? ",parts=" + std::to_string(parts) + ",nodes=" + std::to_string(nodes) +
                      ",edges=" + std::to_string(builder.layout().edges)
                : ",nodes=" + std::to_string(nodes) + ",avg_degree=" + std::to_string(model.graph_avg_degree);
  solvers::finish_plan(plan, model, config,
                       "workers=" + std::to_string(solver.subnets * parts) +
                           ",m=" + std::to_string(solver.subnets) + ",zeta=" + std::to_string(steps) + graph,
                       solver, nodes * steps, steps);
  set_graph_parameters(plan, model, parts > 1 ? &builder.layout() : nullptr);
  // What the sites compute, not the full model's work: zeta full-graph steps of every sub-GCN.
  double flops = 0;
  for (int i = 0; i < solver.subnets; ++i)
    flops += sub_gcn(model, solver.subnets, i).train_flops_per_sample();
  plan.info.model_flops_per_iteration = flops * static_cast<double>(nodes * steps);
  return plan;
}

}  // namespace models
}  // namespace strata
