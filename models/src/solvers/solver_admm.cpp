// lower_admm(): dlADMM (Wang et al. KDD 2019), pdADMM (Wang, Chai, Cheng, Zhao ICDM 2020) and
// pdADMM-G-Q as Plans of an MLP trained full batch (real_exec/include/strata/real/kernels/admm.hpp holds
// the numerics and the problem).
//
// Layer l (a linear layer with its ReLU, n_in -> n_out, N samples as columns) lives on the worker
// of its group (Placement, below). Per iteration k and layer l:
//   B(k,l)  it<k>/dp0/pp<w>/tp0/l<l>/bwd   admm_backward: p_l (l > 0), W_l, b_l, z_l; reads
//                                           q_{l-1}, u_{l-1} of iteration k-1 and its own q_l
//   F(k,l)  it<k>/dp0/pp<w>/tp0/l<l>/fwd   admm_forward: q_l, u_l (l < L-1); reads p_{l+1} of k
// Messages between workers: p_l backward after B(k,l); q_l and u_l forward after F(k,l)
// (.../l<l>/send/{p,q,u}, recv on the neighbour), n*N values each, so 3 n N per boundary and
// iteration. pdADMM-G-Q sends p as int8 codes: its p message carries n*N bytes.
// pdADMM is the Jacobi order: every B of an iteration may run at once, then every F. dlADMM runs
// the same updates (the same iterates, tests/real_exec/admm_test.cpp) in its serial sweep
// B(L-1) .. B(0), F(0) .. F(L-2), which control edges impose.
//
// FLOP per task (estimates the cost model times; calibrate measures what they achieve):
//   B: p takes two GEMMs (W^T r and W g for the closed-form backtracking), W two (r p^T and g p),
//      so 8 n_in n_out N (4 for the first layer, whose p is the input), plus ~20 n_out N
//      elementwise for b and a hidden z, or 50 FISTA steps for the output z at kFistaFlops per
//      value and step: FLOP-equivalents at the GEMM rate, not FLOPs. Each step takes a softmax
//      down the columns of a [classes, N] array (exp and log in double, a stride of N between
//      the values it reads): measured on the 2-vCPU VM, the 10 x 5,000 output z took 27.5 ms
//      while the hidden layers' GEMMs ran at 78 GFLOP/s, 850 FLOP-equivalents per value and step.
// Placement: layer l's cost is its B and F FLOPs; the layers are cut into `workers` contiguous
// groups that minimise the most expensive group (linear partition, O(L^2 W)), so a cheap output
// layer does not count as much as a wide hidden one.
//   F: ~8 n_out N elementwise.
// Bytes: every tensor the update reads and writes once (p, z, q, u, W p, the neighbour copies).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "solver_pipeline.hpp"
#include "strata/models/solvers/solver.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

using solvers::coord;
using solvers::kNone;

constexpr std::int64_t kDefaultSamples = 10000;  // the seeded Fashion-MNIST subset of the tests
constexpr double kQuantStep = 1.0 / 16;          // pdADMM-G-Q's grid (real::QuantGrid's step)
constexpr double kFistaFlops = 850;              // per output value and FISTA step (see above)

// Contiguous groups of layers for `workers` workers minimising the largest group's cost: the
// worker of each layer. REQUIRES: 1 <= workers <= cost.size().
std::vector<int> balanced_placement(const std::vector<double>& cost, int workers) {
  const std::size_t n = cost.size(), w = static_cast<std::size_t>(workers);
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the least largest group cutting the first i layers into k groups; cut[k][i]: where the last
  // starts.
  std::vector<std::vector<double>> best(w + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> cut(w + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= w; ++k)
    for (std::size_t i = k; i <= n; ++i)
      for (std::size_t j = k - 1; j < i; ++j) {
        const double worst = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (worst < best[k][i]) best[k][i] = worst, cut[k][i] = j;
      }
  std::vector<int> worker(n, 0);
  for (std::size_t k = w, i = n; k > 0; --k) {
    const std::size_t j = cut[k][i];
    for (std::size_t l = j; l < i; ++l) worker[l] = static_cast<int>(k - 1);
    i = j;
  }
  return worker;
}

struct AdmmLayerPlan {
  std::int64_t n_in = 0, n_out = 0;
  int worker = 0;
  BufferIndex p = 0, w = 0, b = 0, z = 0, q = 0, u = 0, wp = 0;
  BufferIndex q_prev = 0, u_prev = 0;  // copies of the predecessor's q, u here (crossing only)
  BufferIndex p_next = 0;              // copy of the successor's p here (crossing only)
  BufferIndex labels = 0;              // last layer
};

class AdmmBuilder {
 public:
  AdmmBuilder(const StrategyConfig& config, const SolverConfig& solver, std::vector<std::int64_t> widths,
              int workers, std::int64_t samples, Plan& plan)
      : config_(config),
        solver_(solver),
        widths_(std::move(widths)),
        workers_(workers),
        samples_(samples),
        plan_(plan) {}
  void build();

 private:
  int layers() const { return static_cast<int>(widths_.size()) - 1; }
  std::string prefix(int w) const { return "dp0/" + coord("pp", w) + "/tp0/"; }
  bool crosses(int l) const {  // layer l and l-1 on different workers
    return l > 0 &&
           layers_[static_cast<std::size_t>(l)].worker != layers_[static_cast<std::size_t>(l) - 1].worker;
  }
  double elem() const { return bytes_per_element(config_.dtype); }
  BufferIndex buffer(int l, const std::string& name, double values);
  void add_buffers();
  Task update_task(int l, bool backward) const;
  TaskIndex add(Task t, int k, int l, const std::string& what);
  struct Transfer {
    TaskIndex send = kNone, recv = kNone;
  };
  Transfer transfer(int k, int from, int to, const std::string& what, BufferIndex src, BufferIndex dst,
                    double bytes, TaskIndex after);
  void add_iteration(int k);

  const StrategyConfig& config_;
  const SolverConfig& solver_;
  std::vector<std::int64_t> widths_;
  int workers_;
  std::int64_t samples_;
  Plan& plan_;
  std::vector<AdmmLayerPlan> layers_;
  // The latest task of each kind per layer, for the next iteration's edges.
  std::vector<TaskIndex> last_b_, last_f_, last_send_p_, last_send_qu_;
  std::vector<TaskIndex> q_ready_;  // per layer: what makes q_l, u_l of the last iteration readable by l+1
};

BufferIndex AdmmBuilder::buffer(int l, const std::string& name, double values) {
  const AdmmLayerPlan& a = layers_[static_cast<std::size_t>(l)];
  return plan_.add_buffer(
      {prefix(a.worker) + coord("l", l) + "/admm/" + name, a.worker, values * elem(), config_.dtype, true});
}

void AdmmBuilder::add_buffers() {
  const auto n = static_cast<double>(samples_);
  for (int l = 0; l < layers(); ++l) {
    AdmmLayerPlan& a = layers_[static_cast<std::size_t>(l)];
    const auto in = static_cast<double>(a.n_in), out = static_cast<double>(a.n_out);
    a.p = buffer(l, l == 0 ? "input" : "p", in * n);
    a.w = buffer(l, "w", out * in);
    a.b = buffer(l, "b", out);
    a.z = buffer(l, "z", out * n);
    a.wp = buffer(l, "wp", out * n);
    if (l + 1 < layers()) {
      a.q = buffer(l, "q", out * n);
      a.u = buffer(l, "u", out * n);
    } else {
      a.labels = buffer(l, "labels", out * n);
    }
    if (crosses(l)) {
      a.q_prev = buffer(l, "q_prev", in * n);
      a.u_prev = buffer(l, "u_prev", in * n);
    }
  }
  for (int l = 0; l + 1 < layers(); ++l)
    if (crosses(l + 1))
      layers_[static_cast<std::size_t>(l)].p_next =
          buffer(l, "p_next", static_cast<double>(layers_[static_cast<std::size_t>(l)].n_out) * n);
}

Task AdmmBuilder::update_task(int l, bool backward) const {
  const AdmmLayerPlan& a = layers_[static_cast<std::size_t>(l)];
  const auto in = static_cast<double>(a.n_in), out = static_cast<double>(a.n_out),
             n = static_cast<double>(samples_);
  const bool last = l + 1 == layers();
  Task t;
  t.kind = backward ? TaskKind::admm_backward : TaskKind::admm_forward;
  t.dtype = config_.dtype;
  if (backward) {
    t.flops = (l == 0 ? 4 : 8) * in * out * n + (last ? 50 * kFistaFlops : 20) * out * n;
    t.bytes_read = (2 * in * n + 4 * out * n + 2 * out * in) * elem();
    t.bytes_written = ((l == 0 ? 0 : in * n) + 2 * out * n + out * in + out) * elem();
  } else {
    t.flops = 8 * out * n;
    t.bytes_read = 4 * out * n * elem();
    t.bytes_written = 2 * out * n * elem();
  }
  t.attrs["layer"] = static_cast<std::int64_t>(l);
  t.attrs["n_in"] = a.n_in;
  t.attrs["n_out"] = a.n_out;
  t.attrs["samples"] = samples_;
  t.attrs["solver"] = std::string(to_string(solver_.solver));
  t.attrs["rho"] = solver_.rho;
  t.attrs["nu"] = solver_.nu;
  t.attrs["quantize"] = static_cast<std::int64_t>(solver_.solver == Solver::pdadmm_g_q ? 1 : 0);
  return t;
}

TaskIndex AdmmBuilder::add(Task t, int k, int l, const std::string& what) {
  const int w = layers_[static_cast<std::size_t>(l)].worker;
  t.id = coord("it", k) + "/" + prefix(w) + coord("l", l) + "/" + what;
  t.worker = w;
  t.iteration = k;
  t.priority = k;
  return plan_.add_task(std::move(t));
}

// send on `from`'s worker (reading src) and recv on `to`'s (writing dst), after `after`.
AdmmBuilder::Transfer AdmmBuilder::transfer(int k, int from, int to, const std::string& what, BufferIndex src,
                                            BufferIndex dst, double bytes, TaskIndex after) {
  Task send;
  send.kind = TaskKind::send;
  send.stream = Stream::comm;
  send.peer = layers_[static_cast<std::size_t>(to)].worker;
  send.dtype = config_.dtype;
  send.comm_bytes = bytes;
  send.reads = {src};
  const TaskIndex s = add(std::move(send), k, from, "send/" + what);
  plan_.add_data_dep(after, s);
  Task recv;
  recv.kind = TaskKind::recv;
  recv.stream = Stream::comm;
  recv.peer = layers_[static_cast<std::size_t>(from)].worker;
  recv.dtype = config_.dtype;
  recv.writes = {dst};
  const TaskIndex r = add(std::move(recv), k, to, "recv/" + what);
  plan_.add_data_dep(s, r);
  return {s, r};
}

void AdmmBuilder::add_iteration(int k) {
  const int n_layers = layers();
  const auto values = [&](int l) {
    return static_cast<double>(layers_[static_cast<std::size_t>(l)].n_out) * static_cast<double>(samples_);
  };
  std::vector<TaskIndex> b(static_cast<std::size_t>(n_layers)), f(static_cast<std::size_t>(n_layers), kNone);
  std::vector<TaskIndex> p_ready(static_cast<std::size_t>(n_layers), kNone);
  for (int l = 0; l < n_layers; ++l) {
    const auto ls = static_cast<std::size_t>(l);
    const AdmmLayerPlan& a = layers_[ls];
    Task t = update_task(l, true);
    t.reads = {a.p, a.w, a.b, a.z, a.wp};
    if (l + 1 < n_layers)
      t.reads.insert(t.reads.end(), {a.q, a.u});
    else
      t.reads.push_back(a.labels);
    if (l > 0) {
      const AdmmLayerPlan& prev = layers_[ls - 1];
      t.reads.push_back(crosses(l) ? a.q_prev : prev.q);
      t.reads.push_back(crosses(l) ? a.u_prev : prev.u);
    }
    t.writes = {a.w, a.b, a.z, a.wp};
    if (l > 0) t.writes.insert(t.writes.begin(), a.p);
    b[ls] = add(std::move(t), k, l, "bwd");
    // Its own previous updates, the predecessor's q and u of iteration k-1, and the sends that
    // read what it overwrites or reads: the real executor lends a task its arrays whole
    // (task_runner.hpp), so no send may read one meanwhile.
    for (TaskIndex before :
         {last_b_[ls], last_f_[ls], l > 0 ? q_ready_[ls - 1] : kNone, last_send_p_[ls], last_send_qu_[ls]})
      if (before != kNone) plan_.add_control_dep(before, b[ls]);
    p_ready[ls] = b[ls];
    if (crosses(l)) {
      const double bytes = solver_.solver == Solver::pdadmm_g_q ? values(l - 1) : values(l - 1) * elem();
      const Transfer p = transfer(k, l, l - 1, "p", a.p, layers_[ls - 1].p_next, bytes, b[ls]);
      if (solver_.solver == Solver::pdadmm_g_q) {  // p lies on the grid: sent as its int8 codes
        plan_.mutable_task(p.send).attrs["encoding"] = std::string("int8");
        plan_.mutable_task(p.send).attrs["quant_step"] = kQuantStep;
      }
      p_ready[ls] = p.recv;
      last_send_p_[ls] = p.send;
    }
  }
  for (int l = 0; l + 1 < n_layers; ++l) {
    const auto ls = static_cast<std::size_t>(l);
    const AdmmLayerPlan& a = layers_[ls];
    Task t = update_task(l, false);
    t.reads = {a.z, a.q, a.u, crosses(l + 1) ? a.p_next : layers_[ls + 1].p};
    t.writes = {a.q, a.u};
    f[ls] = add(std::move(t), k, l, "fwd");
    plan_.add_data_dep(b[ls], f[ls]);
    plan_.add_data_dep(p_ready[ls + 1], f[ls]);
    if (last_send_qu_[ls] != kNone) plan_.add_control_dep(last_send_qu_[ls], f[ls]);
    q_ready_[ls] = f[ls];
    if (crosses(l + 1)) {
      const AdmmLayerPlan& next = layers_[ls + 1];
      const Transfer q = transfer(k, l, l + 1, "q", a.q, next.q_prev, values(l) * elem(), f[ls]);
      const Transfer u = transfer(k, l, l + 1, "u", a.u, next.u_prev, values(l) * elem(), f[ls]);
      // B(k+1, l+1) waits for both arrivals, and F(k+1, l) for both sends: chain each pair
      // through its later member.
      plan_.add_control_dep(q.recv, u.recv);
      plan_.add_control_dep(q.send, u.send);
      q_ready_[ls] = u.recv;
      last_send_qu_[ls] = u.send;
    }
  }
  if (solver_.solver == Solver::dladmm) {
    // The serial sweep: B(L-1) .. B(0), then F(0) .. F(L-2).
    for (int l = n_layers - 1; l > 0; --l)
      plan_.add_control_dep(b[static_cast<std::size_t>(l)], b[static_cast<std::size_t>(l) - 1]);
    if (n_layers > 1) plan_.add_control_dep(b[0], f[0]);
    for (int l = 1; l + 1 < n_layers; ++l)
      plan_.add_control_dep(f[static_cast<std::size_t>(l) - 1], f[static_cast<std::size_t>(l)]);
  }
  for (int l = 0; l < n_layers; ++l) {
    last_b_[static_cast<std::size_t>(l)] = b[static_cast<std::size_t>(l)];
    last_f_[static_cast<std::size_t>(l)] = f[static_cast<std::size_t>(l)];
  }
}

void AdmmBuilder::build() {
  const int n_layers = layers();
  layers_.resize(static_cast<std::size_t>(n_layers));
  std::vector<double> cost(static_cast<std::size_t>(n_layers));
  for (int l = 0; l < n_layers; ++l) {
    AdmmLayerPlan& a = layers_[static_cast<std::size_t>(l)];
    a.n_in = widths_[static_cast<std::size_t>(l)];
    a.n_out = widths_[static_cast<std::size_t>(l) + 1];
  }
  for (int l = 0; l < n_layers; ++l)
    cost[static_cast<std::size_t>(l)] =
        update_task(l, true).flops + (l + 1 < n_layers ? update_task(l, false).flops : 0);
  const std::vector<int> placement = balanced_placement(cost, workers_);
  for (int l = 0; l < n_layers; ++l)
    layers_[static_cast<std::size_t>(l)].worker = placement[static_cast<std::size_t>(l)];
  add_buffers();
  for (auto* v : {&last_b_, &last_f_, &last_send_p_, &last_send_qu_, &q_ready_})
    v->assign(static_cast<std::size_t>(n_layers), kNone);
  for (int k = 0; k < solver_.admm_iterations; ++k) add_iteration(k);
}

}  // namespace

std::vector<std::int64_t> admm_widths(const Model& model) {
  std::vector<std::int64_t> widths;
  for (const Layer& layer : model.layers) {
    if (layer.op == LayerOp::activation || layer.op == LayerOp::loss) continue;
    if (layer.op != LayerOp::linear)
      throw InputError("--solver: the ADMM solvers train MLPs (linear and ReLU layers); model " + model.name +
                       " has a " + std::string(to_string(layer.op)) + " layer (" + layer.name + ")");
    if (widths.empty()) widths.push_back(static_cast<std::int64_t>(model.input_elems));
    widths.push_back(static_cast<std::int64_t>(layer.out_elems));
  }
  return widths;
}

Plan lower_admm(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const std::vector<std::int64_t> widths = admm_widths(model);
  const int workers = solver_stages(config);
  const std::int64_t samples = config.global_batch > 0 ? config.global_batch : kDefaultSamples;
  Plan plan(workers);
  AdmmBuilder builder(config, solver, widths, workers, samples, plan);
  builder.build();
  std::string widths_text;
  for (std::int64_t w : widths) widths_text += (widths_text.empty() ? "" : "-") + std::to_string(w);
  solvers::finish_plan(plan, model, config,
                       "workers=" + std::to_string(workers) + ",layers=" + widths_text +
                           ",rho=" + std::to_string(solver.rho) + ",nu=" + std::to_string(solver.nu) +
                           ",iterations=" + std::to_string(solver.admm_iterations),
                       solver, samples, 1);
  return plan;
}

}  // namespace models
}  // namespace strata
