// lower_serial_parallel(): the serial-parallel hybrid (SPH) layer-parallel training of ResNets of
// Sun, Dong, Chen et al. ("A Practical Layer-Parallel Training Algorithm for Residual Networks",
// arXiv:2009.01462; "Layer-Parallel Training of Residual Networks with Auxiliary Variables",
// arXiv:2112.05387), as a Plan.
//
// From the optimal-control view a ResNet is a discretised ODE; its layer groups are cut into one
// block per worker (stage_of_layers, by FLOPs), and the state between block b and b+1 becomes an
// auxiliary variable z_b of each training sample, kept in stores on block b's worker (rows of
// train_samples, a seen flag; the duals lambda_b too for al). Block b's sub-problem is
//   min over its weights  1/m sum_samples [ <lambda_b, z_b - f_b(z_{b-1})> + rho/2 ||z_b - f_b(z_{b-1})||^2 ]
// (the last block: its loss on f_{B-1}(z_{B-2})); the penalty method keeps lambda = 0, the
// augmented-Lagrangian (al) method updates it. Minibatch k of a Plan is
//   parallel (the parallel phase), unless (k + 1) is a multiple of correction_period:
//     fetch(b)   on block b's worker, the minibatch's rows of z_b from the store (0 for a sample
//                not seen yet), sent to block b+1's worker: pooled over d x d windows first
//                (pool, send, recv, unpool: what crosses is 1/d^2 of the state), d = downsample
//     F(b)       every block's forward from its input (the image for block 0, the received z_{b-1}
//                otherwise), at the same time on every worker: the forward pass is unlocked
//     P(b)       b < B-1: the gradient of block b's term with respect to its output a_b, from the
//                stored z_b, lambda_b (Block-ADMM's penalty with from_store: z = a, lambda = 0 for
//                a sample not seen yet)
//     B(b), U(b) the block's backward (the last block: from its loss) and one optimizer step per
//                layer; for b > 0 the gradient g_{b-1} of its term with respect to its input is
//                sent back to block b-1's worker (pooled as z was)
//     Z(b)       b < B-1: Block-ADMM's linearised proximal z step from g_b, the dual ascent of
//                lambda_b for al, and the rows back into the stores (update with to_store)
//   serial (the correction): the model's forward pass through every worker, the minibatch's rows
//     of each store refreshed to the forward pass (refresh: z_b = a_b, lambda kept), and the full
//     backward pass with every gradient crossing back: backprop with a per-layer step.
// With correction_period 1 every minibatch is serial and the Plan trains as minibatch SGD;
// downsampling acts on the parallel phase only. The pooled state is unpooled by repetition, whose
// adjoint composed with the pooling's gives the average pool of the gradient: the g that crosses
// back is the exact gradient with respect to the stored (full-resolution) z of the term block
// b+1 saw. A sample's first visit has no state yet: fetch gives 0, and the last block's loss
// gradient of such a sample is masked to 0 (mask: the rows whose input is all zeros), so that the
// parallel phase learns nothing from it; the middle blocks' penalty is 0 for it already (z = a),
// and the z update stores the forward pass of the block before. So the parallel phase's first
// epoch trains block 0 only on the correction's samples and the later blocks not at all on unseen
// ones; from the second epoch the states are there. Data augmentation (strata run --augment) applies to every
// minibatch: the stored z of a sample stands for every view of it, which is what the serial corrections keep
// near the network.
//
// Ids: it0/dp0/pp<w>/tp0/mb<k>/{fwd,bwd,bwdw,opt}/<layer>, .../mb<k>/{fetch,penalty,z_update,
// refresh}/b<b>, the crossing state and gradient .../mb<k>/{pool,send,recv,unpool}/{z,g}/b<b>, the
// serial pass's transfers as a pipeline's (.../{send,recv}/{fwd,bwd}/<layer>). A parallel
// minibatch's loss has attribute forward_unlocked = 1: its forward is no pass of the model, so
// evaluation reads the serial minibatches' forward passes.
#include <string>
#include <vector>

#include "solver_pipeline.hpp"
#include "strata/models/solvers/solver.hpp"

namespace strata {
inline namespace models {
namespace {

using solvers::coord;
using solvers::kNone;

using Block = solvers::AuxBlock;
using Store = solvers::SampleStores;

class HybridBuilder {
 public:
  HybridBuilder(const Model& model, const SolverConfig& solver, solvers::LayerPipeline& pipe, Plan& plan)
      : model_(model), solver_(solver), pipe_(pipe), plan_(plan) {}
  void build(int workers);

 private:
  void add_layers(int workers);
  void add_serial(int k);
  void add_parallel(int k);
  // An elementwise task of boundary b (attribute block_admm = op) on `worker`.
  TaskIndex admm_task(int k, std::size_t b, const std::string& op, int worker, std::vector<BufferIndex> reads,
                      std::vector<BufferIndex> writes, double value_passes);
  // `src` (boundary b's size, on `from`) into `dst` on `to`, pooled in between when d > 1, after
  // `producer`; returns what wrote dst.
  TaskIndex cross(int k, const std::string& what, std::size_t b, int from, int to, BufferIndex src,
                  TaskIndex producer, BufferIndex dst);
  // The last block's loss gradient `g` (written by `producer`) zeroed for the samples whose state
  // is all zeros: not seen yet, so the block's input carries nothing to learn from.
  TaskIndex mask(int k, std::size_t b, TaskIndex producer, BufferIndex g);
  TaskIndex filter(int k, const std::string& what, std::size_t b, bool pool, int worker, BufferIndex src,
                   BufferIndex dst, TaskIndex producer);
  void after(TaskIndex before, TaskIndex task) {
    if (before != kNone && task != kNone) plan_.add_control_dep(before, task);
  }
  double boundary_bytes(std::size_t b) const { return pipe_.layer(blocks_[b].last).out_bytes; }
  // What a penalty reads: the block's output, then the z store, the lambda store (al only) and seen.
  std::vector<BufferIndex> stores(BufferIndex output, const Store& st) const {
    if (solver_.augmented_lagrangian) return {output, st.z, st.lambda, st.seen};
    return {output, st.z, st.seen};
  }
  std::int64_t priority(int k, int offset) const { return 4LL * k + offset; }
  std::string id(int k, const std::string& what) const { return coord("mb", k) + "/" + what; }

  const Model& model_;
  const SolverConfig& solver_;
  solvers::LayerPipeline& pipe_;
  Plan& plan_;
  std::vector<Block> blocks_;
  std::vector<FeatureMap> maps_;        // [b]: block b's output per sample
  std::vector<Store> stores_;           // [b]
  std::vector<TaskIndex> last_update_;  // per layer: its latest optimizer step
  std::vector<TaskIndex> last_store_;   // per boundary: the latest task that wrote its stores
  std::vector<TaskIndex> last_fetch_;   // per boundary: the latest task that read them
};

void HybridBuilder::add_layers(int workers) {
  const std::vector<int> block_of = solvers::stage_of_layers(model_, workers);
  blocks_.assign(static_cast<std::size_t>(workers), {});
  for (std::size_t i = 0; i < model_.layers.size(); ++i) {
    Block& b = blocks_[static_cast<std::size_t>(block_of[i])];
    b.worker = block_of[i];
    const int index = pipe_.add_layer(model_.layers[i], b.worker, static_cast<int>(i) - 1, pipe_.batch());
    if (i == 0 || block_of[i - 1] != block_of[i]) b.first = static_cast<std::size_t>(index);
    b.last = static_cast<std::size_t>(index);
  }
  for (const Block& b : blocks_) maps_.push_back(feature_map(model_, b.last));
  pipe_.add_buffers();
}

TaskIndex HybridBuilder::admm_task(int k, std::size_t b, const std::string& op, int worker,
                                   std::vector<BufferIndex> reads, std::vector<BufferIndex> writes,
                                   double value_passes) {
  const double bytes = boundary_bytes(b);
  Task t;
  t.kind = TaskKind::elementwise;
  t.dtype = pipe_.config().dtype;
  t.attrs["block_admm"] = op;
  t.attrs["rho"] = solver_.block_rho;
  t.attrs["z_lr"] = solver_.z_lr;
  t.attrs["mean_over"] = pipe_.batch();
  t.attrs["block"] = static_cast<std::int64_t>(b);
  t.attrs["from_store"] = static_cast<std::int64_t>(op == "penalty" ? 1 : 0);
  t.attrs["to_store"] = static_cast<std::int64_t>(op == "update" ? 1 : 0);
  t.attrs["init"] = std::int64_t{0};
  if (op == "update" || op == "penalty")
    t.attrs["dual"] = static_cast<std::int64_t>(solver_.augmented_lagrangian ? 1 : 0);
  // Minibatch-sized arrays read and written (a store row counts as one such array), and a few
  // FLOP per value.
  t.flops = value_passes * bytes / bytes_per_element(pipe_.config().dtype);
  t.bytes_read = static_cast<double>(reads.size()) * bytes;
  t.bytes_written = static_cast<double>(writes.size()) * bytes;
  t.reads = std::move(reads);
  t.writes = std::move(writes);
  const std::string name = op == "update" ? "z_update" : op;
  return pipe_.add_task(std::move(t), id(k, name + "/" + coord("b", static_cast<std::int64_t>(b))), worker,
                        priority(k, 1));
}

TaskIndex HybridBuilder::filter(int k, const std::string& what, std::size_t b, bool pool, int worker,
                                BufferIndex src, BufferIndex dst, TaskIndex producer) {
  const FeatureMap& map = maps_[b];
  const double full = boundary_bytes(b);
  const auto d = static_cast<double>(solver_.downsample);
  Task t;
  t.kind = TaskKind::elementwise;
  t.dtype = pipe_.config().dtype;
  t.attrs["block_admm"] = std::string(pool ? "pool" : "unpool");
  t.attrs["factor"] = static_cast<std::int64_t>(solver_.downsample);
  t.attrs["channels"] = map.channels;
  t.attrs["height"] = map.height;
  t.attrs["width"] = map.width;
  t.flops = full / bytes_per_element(pipe_.config().dtype);  // one add or copy per full-size value
  t.bytes_read = pool ? full : full / (d * d);
  t.bytes_written = pool ? full / (d * d) : full;
  t.reads = {src};
  t.writes = {dst};
  const TaskIndex task = pipe_.add_task(
      std::move(t),
      id(k, std::string(pool ? "pool/" : "unpool/") + what + "/" + coord("b", static_cast<std::int64_t>(b))),
      worker, priority(k, 2));
  if (producer != kNone) plan_.add_data_dep(producer, task);
  return task;
}

TaskIndex HybridBuilder::mask(int k, std::size_t b, TaskIndex producer, BufferIndex g) {
  const Block& block = blocks_[b];
  const double input = pipe_.layer(block.first - 1).out_bytes, grad = plan_.buffer(g).bytes;
  Task t;
  t.kind = TaskKind::elementwise;
  t.dtype = pipe_.config().dtype;
  t.attrs["block_admm"] = std::string("mask");
  t.attrs["mean_over"] = pipe_.batch();
  t.flops = (input + grad) / bytes_per_element(pipe_.config().dtype);
  t.bytes_read = input + grad;
  t.bytes_written = grad;
  t.reads = {pipe_.in_act(k, block.first), g};
  t.writes = {g};
  const TaskIndex task = pipe_.add_task(
      std::move(t), id(k, "mask/" + coord("b", static_cast<std::int64_t>(b))), block.worker, priority(k, 0));
  plan_.add_data_dep(producer, task);
  return task;
}

TaskIndex HybridBuilder::cross(int k, const std::string& what, std::size_t b, int from, int to,
                               BufferIndex src, TaskIndex producer, BufferIndex dst) {
  const int d = solver_.downsample;
  const double bytes = boundary_bytes(b) / (static_cast<double>(d) * d);
  const std::string at = coord("b", static_cast<std::int64_t>(b));
  BufferIndex payload = src;
  if (d > 1) {
    payload = pipe_.instance_buffer(k, from, "admm/" + at + "/" + what + "_pooled", bytes);
    producer = filter(k, what, b, true, from, src, payload, producer);
  }
  const TaskIndex send =
      pipe_.add_p2p(TaskKind::send, id(k, "send/" + what + "/" + at), from, to, priority(k, 2), bytes);
  plan_.mutable_task(send).reads = {payload};
  if (producer != kNone) plan_.add_data_dep(producer, send);
  const BufferIndex landing =
      d > 1 ? pipe_.instance_buffer(k, to, "admm/" + at + "/" + what + "_pooled", bytes) : dst;
  const TaskIndex recv =
      pipe_.add_p2p(TaskKind::recv, id(k, "recv/" + what + "/" + at), to, from, priority(k, 2), 0);
  plan_.mutable_task(recv).writes = {landing};
  plan_.add_data_dep(send, recv);
  return d > 1 ? filter(k, what, b, false, to, landing, dst, recv) : recv;
}

void HybridBuilder::add_serial(int k) {
  TaskIndex producer = kNone;
  std::size_t b = 0;
  for (std::size_t i = 0; i < pipe_.size(); ++i) {
    const TaskIndex f = pipe_.add_forward(k, i, producer, priority(k, 2));
    after(last_update_[i], f);
    producer = f;
    if (b + 1 < blocks_.size() && i == blocks_[b].last) {
      const Store& st = stores_[b];
      const TaskIndex refresh = admm_task(k, b, "refresh", blocks_[b].worker,
                                          {pipe_.out_act(k, i), st.z, st.seen}, {st.z, st.seen}, 1);
      plan_.add_data_dep(f, refresh);
      after(last_store_[b], refresh);
      after(last_fetch_[b], refresh);
      last_store_[b] = refresh;
    }
    if (i == blocks_[b].last) ++b;
  }
  TaskIndex grad = kNone;
  for (std::size_t i = pipe_.size(); i-- > 0;) {
    const solvers::PipeLayer& l = pipe_.layer(i);
    const solvers::LayerPipeline::Backward bw =
        pipe_.add_backward(k, i, l.is_loss ? kNone : grad, priority(k, 0), i > 0 || !l.has_bwdw);
    if (l.has_params) last_update_[i] = pipe_.add_step(k, i, bw, last_update_[i], priority(k, 1));
    grad = bw.bwd != kNone ? bw.bwd : bw.bwdw;
    if (i > 0 && pipe_.crosses(i)) grad = pipe_.add_grad_transfer(k, i, bw.bwd, priority(k, 0));
  }
}

void HybridBuilder::add_parallel(int k) {
  const std::size_t n_blocks = blocks_.size();
  std::vector<BufferIndex> z(n_blocks), lambda(n_blocks), g(n_blocks);
  for (std::size_t b = 0; b + 1 < n_blocks; ++b) {
    const std::string at = "admm/" + coord("b", static_cast<std::int64_t>(b)) + "/";
    const int w = blocks_[b].worker;
    z[b] = pipe_.instance_buffer(k, w, at + "z", boundary_bytes(b));
    lambda[b] = pipe_.instance_buffer(k, w, at + "lambda", boundary_bytes(b));
    g[b] = pipe_.instance_buffer(k, w, at + "g", boundary_bytes(b));
  }
  // Forward: every block from its input at once.
  std::vector<TaskIndex> output(n_blocks, kNone);
  for (std::size_t b = 0; b < n_blocks; ++b) {
    const Block& block = blocks_[b];
    TaskIndex producer = kNone;
    if (b > 0) {
      const Block& before = blocks_[b - 1];
      const Store& st = stores_[b - 1];
      const BufferIndex z_in = pipe_.instance_buffer(
          k, before.worker, "admm/" + coord("b", static_cast<std::int64_t>(b - 1)) + "/z_in",
          boundary_bytes(b - 1));
      const TaskIndex fetch = admm_task(k, b - 1, "fetch", before.worker, {st.z, st.seen}, {z_in}, 0);
      after(last_store_[b - 1], fetch);
      last_fetch_[b - 1] = fetch;
      producer = cross(k, "z", b - 1, before.worker, block.worker, z_in, fetch, pipe_.in_act(k, block.first));
    }
    for (std::size_t i = block.first; i <= block.last; ++i) {
      const TaskIndex f = pipe_.add_forward(k, i, producer, priority(k, 2), i != block.first);
      after(last_update_[i], f);
      if (pipe_.layer(i).is_loss) plan_.mutable_task(f).attrs["forward_unlocked"] = std::int64_t{1};
      producer = f;
    }
    output[b] = producer;
  }
  // Penalties, backward, steps; the gradients of the states back to the block before.
  std::vector<TaskIndex> penalty(n_blocks, kNone), g_ready(n_blocks, kNone);
  for (std::size_t b = 0; b < n_blocks; ++b) {
    const Block& block = blocks_[b];
    TaskIndex grad = kNone;
    if (b + 1 < n_blocks) {
      const Store& st = stores_[b];
      grad = admm_task(k, b, "penalty", block.worker, stores(pipe_.out_act(k, block.last), st),
                       {pipe_.out_grad(k, block.last), z[b], lambda[b]}, 4);
      plan_.add_data_dep(output[b], grad);
      after(last_store_[b], grad);
      penalty[b] = grad;
    }
    for (std::size_t i = block.last + 1; i-- > block.first;) {
      const solvers::PipeLayer& l = pipe_.layer(i);
      const bool first = i == block.first;
      const solvers::LayerPipeline::Backward bw =
          pipe_.add_backward(k, i, l.is_loss ? kNone : grad, priority(k, 0), !first || b > 0 || !l.has_bwdw);
      if (l.has_params) last_update_[i] = pipe_.add_step(k, i, bw, last_update_[i], priority(k, 1));
      grad = bw.bwd != kNone ? bw.bwd : bw.bwdw;
      if (l.is_loss && b > 0 && i > block.first) grad = mask(k, b, grad, pipe_.in_grad(k, i));
      if (first && b > 0)
        g_ready[b - 1] =
            cross(k, "g", b - 1, block.worker, blocks_[b - 1].worker, pipe_.in_grad(k, i), bw.bwd, g[b - 1]);
    }
  }
  // The states and duals, back into the stores.
  for (std::size_t b = 0; b + 1 < n_blocks; ++b) {
    const Store& st = stores_[b];
    std::vector<BufferIndex> reads = {pipe_.out_act(k, blocks_[b].last), z[b], lambda[b], g[b], st.z};
    std::vector<BufferIndex> writes = {z[b], lambda[b], st.z};
    if (solver_.augmented_lagrangian) reads.push_back(st.lambda), writes.push_back(st.lambda);
    reads.push_back(st.seen);
    writes.push_back(st.seen);
    const TaskIndex update =
        admm_task(k, b, "update", blocks_[b].worker, std::move(reads), std::move(writes), 9);
    plan_.add_data_dep(g_ready[b], update);
    after(penalty[b], update);
    after(last_fetch_[b], update);
    last_store_[b] = update;
  }
}

void HybridBuilder::build(int workers) {
  add_layers(workers);
  last_update_.assign(pipe_.size(), kNone);
  last_store_.assign(blocks_.size(), kNone);
  last_fetch_.assign(blocks_.size(), kNone);
  for (std::size_t b = 0; b + 1 < blocks_.size(); ++b)  // the penalty method keeps no duals
    stores_.push_back(solvers::add_sample_stores(
        plan_, blocks_[b].worker, b, boundary_bytes(b) / static_cast<double>(pipe_.batch()),
        solver_.train_samples, pipe_.config().dtype, solver_.augmented_lagrangian));
  for (int k = 0; k < solver_.instances; ++k) {
    if ((k + 1) % solver_.correction_period == 0)
      add_serial(k);
    else
      add_parallel(k);
  }
}

}  // namespace

Plan lower_serial_parallel(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int workers = solver_stages(config);
  Plan plan(workers);
  solvers::LayerPipeline pipe(model, config, solvers::instance_batch(model, config), solver.instances, plan);
  HybridBuilder builder(model, solver, pipe, plan);
  builder.build(workers);
  solvers::finish_plan(
      plan, model, config,
      "workers=" + std::to_string(workers) + ",method=" + (solver.augmented_lagrangian ? "al" : "penalty") +
          ",correction_period=" + std::to_string(solver.correction_period) + ",downsample=" +
          std::to_string(solver.downsample) + ",instances=" + std::to_string(solver.instances),
      solver, pipe.batch() * solver.instances, solver.instances);
  return plan;
}

}  // namespace models
}  // namespace strata
