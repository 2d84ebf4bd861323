// lower_block_admm(): Stochastic Block-ADMM (Khorram, Fu, Danesh, Qi, Li, "Stochastic Block-ADMM
// for Training Deep Networks", 2021, arXiv:2105.00339), online and batch settings, as a Plan.
//
// The model's layer groups are cut into B contiguous blocks f_0 .. f_{B-1} (partition_blocks);
// block b runs on worker floor(b W / B). Blocks are joined by auxiliary variables z_b (the output
// block b should give, one per sample) and duals lambda_b, and the minibatch's problem is
//   min  l(f_{B-1}(z_{B-2}), y)
//        + sum_{b<B-1} 1/m sum_samples [ <lambda_b, z_b - f_b(z_{b-1})> + rho/2 ||z_b - f_b(z_{b-1})||^2 ]
// with z_{-1} the input and m the minibatch. Per minibatch (an instance k of m samples), z_b starts
// as the forward pass's output and lambda_b as 0 (online: nothing is kept between minibatches;
// the batch setting, below, starts from each sample's stored z and lambda), then `inner_steps`
// ADMM steps run. Step s:
//   F(s,b)   every block's forward from its input: the model input for block 0, else z_{b-1}
//            (at s = 0 the forward pass itself, each block's output going on to the next)
//   P(s,b)   b < B-1: the gradient of block b's term with respect to its output a_b,
//            (rho (a_b - z_b) - lambda_b) / m; at s = 0 it first sets z_b = a_b, lambda_b = 0
//            (elementwise, attrs block_admm=penalty, init)
//   B(s,b)   the block's backward from that gradient (the last block: from its loss), its weight
//            gradients, and for b > 0 the gradient g_{b-1} of its term with respect to its input
//            z_{b-1}, sent back to block b-1's worker
//   U(s,b)   one optimizer step of each layer of the block (SGD or Adam, as configured)
//   Z(s,b)   s < S-1, b < B-1: z_b and lambda_b from g_b (elementwise, block_admm=update):
//              z_b <- argmin_z <lambda_b, z - a_b> + rho/2 ||z - a_b||^2 + <m g_b, z> + 1/(2 eta) ||z -
//              z_b||^2
//                   = (rho a_b - lambda_b - m g_b + z_b / eta) / (rho + 1 / eta)
//              lambda_b <- lambda_b + rho (z_b - a_b)
//            per sample (g_b is the minibatch mean's gradient, so m g_b is the sample's), then z_b
//            is sent to block b+1's worker for F(s+1, b+1).
// Every block's forward, backward and step of one ADMM step run at the same time on their
// workers: the only messages are z_b forward and g_b back, one activation-sized message each per
// boundary and step, as a pipeline's. The z update is the linearised proximal step of the
// augmented Lagrangian (a gradient step on z whose penalty part is taken exactly), so it stays
// stable for any rho; with rho large z_b - a_b = O(1/rho) and the blocks match the forward pass.
// strata's reading where the paper's text was not at hand: the online initialisation (forward
// pass, zero duals), this z step and the Jacobi order (every block from the previous step's z).
// With one block there is no z: each step is one SGD step of the whole network on the minibatch.
// In the online setting a block's term is 0 until the z above it moved, so the loss reaches block
// b after B-1-b steps: the default inner_steps is B.
//
// Batch setting: z_b and lambda_b of every training sample persist in stores (persistent buffers
// dp0/pp<w>/tp0/admm/b<b>/{z_store,lambda_store,seen}); step 0's penalty takes the minibatch's
// rows (from_store: z = a, lambda = 0 for a sample not seen yet), every step updates z, and the
// last step's update puts the rows back (to_store).
//
// Ids: it0/dp0/pp<w>/tp0/mb<k>/step<s>/{fwd,bwd,bwdw,opt}/<layer>, .../step<s>/{penalty,z_update}/b<b>,
// .../step<s>/send/z/b<b>, the gradient's .../step<s>/{send,recv}/bwd/<layer>; step 0 has no
// step segment, so its forward pass is mb<k>/fwd/<layer> as every layer-group solver's and
// evaluation and the Trainer find the model's loss in it.
#include <optional>
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
struct Boundary {  // between block b and b+1, on block b's worker, per instance
  BufferIndex z = 0, lambda = 0, g = 0;
};

using Store = solvers::SampleStores;

class BlockAdmmBuilder {
 public:
  BlockAdmmBuilder(const Model& model, const SolverConfig& solver, int blocks, int steps,
                   solvers::LayerPipeline& pipe, Plan& plan)
      : model_(model), solver_(solver), blocks_count_(blocks), steps_(steps), pipe_(pipe), plan_(plan) {}
  void build(int workers);

 private:
  void add_layers(int workers);
  void add_instance(int k);
  std::string step_id(int k, const std::string& what) const {
    return coord("mb", k) + "/" + pipe_.step_segment() + what;
  }
  TaskIndex elementwise(int k, int s, std::size_t b, bool update, bool first_step, bool last_step);
  bool batch() const { return solver_.batch_setting; }
  TaskIndex add_forward(int k, int s, std::size_t i, TaskIndex producer, bool transfer);
  void after(TaskIndex before, TaskIndex task) {
    if (before != kNone && task != kNone) plan_.add_control_dep(before, task);
  }
  // A block's first layer on the worker of the block before reads z_{b-1} where the pipeline
  // gave it that block's output (in_act).
  void read_z(TaskIndex task, BufferIndex in_act, BufferIndex z) {
    if (task == kNone) return;
    for (BufferIndex& r : plan_.mutable_task(task).reads)
      if (r == in_act) r = z;
  }
  std::int64_t priority(int k, int s, int offset) const { return 4LL * (k * steps_ + s) + offset; }

  const Model& model_;
  const SolverConfig& solver_;
  int blocks_count_, steps_;
  solvers::LayerPipeline& pipe_;
  Plan& plan_;
  std::vector<Block> blocks_;
  std::vector<std::vector<Boundary>> boundary_;  // [k][b]
  std::vector<Store> stores_;                    // [b], batch setting only
  std::vector<TaskIndex> last_update_;           // per layer: its latest optimizer step
  static constexpr BufferIndex kNoBuffer = static_cast<BufferIndex>(-1);
  BufferIndex step_loss_ = kNoBuffer;  // this instance's loss of steps > 0
};

void BlockAdmmBuilder::add_layers(int workers) {
  const std::vector<int> block_of = solvers::stage_of_layers(model_, blocks_count_);
  blocks_.assign(static_cast<std::size_t>(blocks_count_), {});
  for (std::size_t i = 0; i < model_.layers.size(); ++i) {
    Block& b = blocks_[static_cast<std::size_t>(block_of[i])];
    b.worker = block_of[i] * workers / blocks_count_;
    const int index = pipe_.add_layer(model_.layers[i], b.worker, static_cast<int>(i) - 1, pipe_.batch());
    if (i == 0 || block_of[i - 1] != block_of[i]) b.first = static_cast<std::size_t>(index);
    b.last = static_cast<std::size_t>(index);
  }
  pipe_.add_buffers();
}

TaskIndex BlockAdmmBuilder::elementwise(int k, int s, std::size_t b, bool update, bool first_step,
                                        bool last_step) {
  const Block& block = blocks_[b];
  const Boundary& z = boundary_[static_cast<std::size_t>(k)][b];
  const double bytes = pipe_.layer(block.last).out_bytes;
  const double values = bytes / bytes_per_element(pipe_.config().dtype);
  const BufferIndex a = pipe_.out_act(k, block.last);
  Task t;
  t.kind = TaskKind::elementwise;
  t.dtype = pipe_.config().dtype;
  t.attrs["block_admm"] = std::string(update ? "update" : "penalty");
  const bool init = !update && first_step && !batch();
  const bool from_store = !update && first_step && batch();
  const bool to_store = update && last_step && batch();
  t.attrs["init"] = static_cast<std::int64_t>(init ? 1 : 0);
  t.attrs["from_store"] = static_cast<std::int64_t>(from_store ? 1 : 0);
  t.attrs["to_store"] = static_cast<std::int64_t>(to_store ? 1 : 0);
  t.attrs["rho"] = solver_.block_rho;
  t.attrs["z_lr"] = solver_.z_lr;
  t.attrs["mean_over"] = pipe_.batch();
  t.attrs["block"] = static_cast<std::int64_t>(b);
  const double seen_bytes = static_cast<double>(pipe_.batch()) * bytes_per_element(pipe_.config().dtype);
  if (update) {  // reads a, z, lambda, g; writes z, lambda (and the minibatch's rows of the stores)
    t.reads = {a, z.z, z.lambda, z.g};
    t.writes = {z.z, z.lambda};
    t.flops = 9 * values;
    t.bytes_read = 4 * bytes;
    t.bytes_written = 2 * bytes;
    if (to_store) {
      const Store& st = stores_[b];
      t.reads.insert(t.reads.end(), {st.z, st.lambda, st.seen});
      t.writes.insert(t.writes.end(), {st.z, st.lambda, st.seen});
      t.bytes_written += 2 * bytes + seen_bytes;
    }
  } else if (from_store) {  // the minibatch's rows of the stores (z = a, lambda = 0 where unseen)
    const Store& st = stores_[b];
    t.reads = {a, st.z, st.lambda, st.seen};
    t.writes = {pipe_.out_grad(k, block.last), z.z, z.lambda};
    t.flops = 4 * values;
    t.bytes_read = 3 * bytes + seen_bytes;
    t.bytes_written = 3 * bytes;
  } else {  // reads a, z, lambda; writes the gradient of a (and z, lambda at init)
    t.reads = {a, z.z, z.lambda};
    t.writes = {pipe_.out_grad(k, block.last)};
    if (init) t.writes.insert(t.writes.end(), {z.z, z.lambda}), t.reads = {a};
    t.flops = 4 * values;
    t.bytes_read = (init ? 1 : 3) * bytes;
    t.bytes_written = (init ? 3 : 1) * bytes;
  }
  return pipe_.add_task(
      std::move(t),
      step_id(k, std::string(update ? "z_update/" : "penalty/") + coord("b", static_cast<std::int64_t>(b))),
      block.worker, priority(k, s, 1));
}

// The forward of layer i at step s. `transfer`: the pipeline's own send/recv of a crossing input
// (the forward pass of step 0); later steps bring z themselves.
TaskIndex BlockAdmmBuilder::add_forward(int k, int s, std::size_t i, TaskIndex producer, bool transfer) {
  const TaskIndex f = pipe_.add_forward(k, i, producer, priority(k, s, 2), transfer);
  after(last_update_[i], f);
  if (s > 0 && pipe_.layer(i).is_loss) {
    // The loss of later steps (on z, not on the forward pass) goes to a buffer of its own: the
    // minibatch's loss is the forward pass's, as backprop reports it.
    if (step_loss_ == kNoBuffer)
      step_loss_ = pipe_.instance_buffer(k, pipe_.layer(i).stage, "admm/step_loss", pipe_.layer(i).out_bytes);
    plan_.mutable_task(f).writes = {step_loss_};
  }
  return f;
}

void BlockAdmmBuilder::add_instance(int k) {
  const std::size_t n_blocks = blocks_.size();
  std::vector<Boundary>& zs = boundary_[static_cast<std::size_t>(k)];
  // Per block: what step s-1 left that step s must follow (its tasks read the buffers step s
  // overwrites), and per boundary the z update of step s-1.
  std::vector<std::vector<TaskIndex>> done(n_blocks);
  std::vector<TaskIndex> z_update(n_blocks, kNone);
  step_loss_ = kNoBuffer;
  for (int s = 0; s < steps_; ++s) {
    pipe_.set_step(s);
    std::vector<std::vector<TaskIndex>> now(n_blocks);
    std::vector<TaskIndex> g_ready(n_blocks, kNone);    // per boundary b: g_b written on b's worker
    std::vector<TaskIndex> g_readers(n_blocks, kNone);  // per boundary b: block b+1's tasks reading z_b
    std::vector<TaskIndex> penalty(n_blocks, kNone);
    // Forward.
    TaskIndex prev = kNone;
    for (std::size_t b = 0; b < n_blocks; ++b) {
      const Block& block = blocks_[b];
      for (std::size_t i = block.first; i <= block.last; ++i) {
        TaskIndex producer = prev;
        bool transfer = true;
        if (s > 0 && i == block.first) {
          transfer = false;
          producer = kNone;
          if (b > 0) {
            const Boundary& in = zs[b - 1];
            if (pipe_.crosses(i)) {  // z_{b-1} to this worker, into the layer's input copy
              const int from = blocks_[b - 1].worker;
              const TaskIndex send = pipe_.add_p2p(
                  TaskKind::send, step_id(k, "send/z/" + coord("b", static_cast<std::int64_t>(b - 1))), from,
                  block.worker, priority(k, s, 2), pipe_.layer(blocks_[b - 1].last).out_bytes);
              plan_.mutable_task(send).reads = {in.z};
              plan_.add_data_dep(z_update[b - 1], send);
              const TaskIndex recv = pipe_.add_p2p(
                  TaskKind::recv, step_id(k, "recv/z/" + coord("b", static_cast<std::int64_t>(b - 1))),
                  block.worker, from, priority(k, s, 2), 0);
              plan_.mutable_task(recv).writes = {pipe_.in_act(k, i)};
              plan_.add_data_dep(send, recv);
              for (TaskIndex d : done[b]) after(d, recv);  // step s-1's backward read the copy
              producer = recv;
            } else {
              producer = z_update[b - 1];
            }
          }
        }
        const TaskIndex f = add_forward(k, s, i, producer, transfer);
        if (s > 0 && i == block.first && b > 0 && !pipe_.crosses(i))
          read_z(f, pipe_.in_act(k, i), zs[b - 1].z);
        if (i == block.first)
          for (TaskIndex d : done[b]) after(d, f);
        now[b].push_back(f);
        prev = f;
      }
    }
    // Penalties, backward, steps.
    for (std::size_t r = 0; r < n_blocks; ++r) {
      const std::size_t b = n_blocks - 1 - r;
      const Block& block = blocks_[b];
      const bool last_block = b + 1 == n_blocks;
      TaskIndex grad = kNone;
      if (!last_block) {
        grad = elementwise(k, s, b, false, s == 0, s + 1 == steps_);
        penalty[b] = grad;
        plan_.add_data_dep(now[b].back(), grad);
        if (s > 0) plan_.add_data_dep(z_update[b], grad);
        now[b].push_back(grad);
      }
      for (std::size_t i = block.last + 1; i-- > block.first;) {
        const solvers::PipeLayer& l = pipe_.layer(i);
        const bool first = i == block.first;
        // g_{b-1} for the z update (the online setting's last step updates no z)
        const bool into_z = first && b > 0 && (batch() || s + 1 < steps_);
        const bool reads_z = first && b > 0 && s > 0 && !pipe_.crosses(i);
        const bool input_grad = !first || into_z || !l.has_bwdw;
        const bool local_g = into_z && !pipe_.crosses(i);
        const solvers::LayerPipeline::Backward bw =
            pipe_.add_backward(k, i, l.is_loss ? kNone : grad, priority(k, s, 0), input_grad,
                               local_g ? std::optional<BufferIndex>(zs[b - 1].g) : std::nullopt);
        for (TaskIndex t : {bw.bwd, bw.bwdw})
          if (t != kNone) now[b].push_back(t);
        if (reads_z) {  // they read z_{b-1} as the layer's input
          for (TaskIndex t : {bw.bwd, bw.bwdw}) read_z(t, pipe_.in_act(k, i), zs[b - 1].z);
          g_readers[b - 1] = bw.bwdw;
        }
        if (l.has_params) {
          last_update_[i] = pipe_.add_step(k, i, bw, last_update_[i], priority(k, s, 1));
          now[b].push_back(last_update_[i]);
        }
        grad = bw.bwd != kNone ? bw.bwd : bw.bwdw;
        if (into_z) {
          if (pipe_.crosses(i)) {
            const TaskIndex recv = pipe_.add_grad_transfer(k, i, bw.bwd, priority(k, s, 0), zs[b - 1].g);
            now[b].push_back(plan_.task(recv).data_deps.front());  // the send reads the layer's dX
            g_ready[b - 1] = recv;
          } else {
            g_ready[b - 1] = bw.bwd;
          }
        }
      }
    }
    // The auxiliary variables and duals for the next step.
    for (std::size_t b = 0; b + 1 < n_blocks; ++b) {
      if (s + 1 == steps_ && !batch()) break;
      const TaskIndex z = elementwise(k, s, b, true, s == 0, s + 1 == steps_);
      plan_.add_data_dep(g_ready[b], z);
      after(penalty[b], z);  // it read z_b and lambda_b
      after(g_readers[b], z);
      z_update[b] = z;
      now[b].push_back(z);
    }
    done = std::move(now);
  }
}

void BlockAdmmBuilder::build(int workers) {
  add_layers(workers);
  last_update_.assign(pipe_.size(), kNone);
  boundary_.assign(static_cast<std::size_t>(solver_.instances), std::vector<Boundary>(blocks_.size()));
  if (batch())
    for (std::size_t b = 0; b + 1 < blocks_.size(); ++b) {
      const double row = pipe_.layer(blocks_[b].last).out_bytes / static_cast<double>(pipe_.batch());
      stores_.push_back(solvers::add_sample_stores(plan_, blocks_[b].worker, b, row, solver_.train_samples,
                                                   pipe_.config().dtype, true));
    }
  for (int k = 0; k < solver_.instances; ++k)
    for (std::size_t b = 0; b + 1 < blocks_.size(); ++b) {
      const double bytes = pipe_.layer(blocks_[b].last).out_bytes;
      const int w = blocks_[b].worker;
      const std::string at = "admm/" + coord("b", static_cast<std::int64_t>(b)) + "/";
      Boundary& z = boundary_[static_cast<std::size_t>(k)][b];
      z.z = pipe_.instance_buffer(k, w, at + "z", bytes);
      z.lambda = pipe_.instance_buffer(k, w, at + "lambda", bytes);
      z.g = pipe_.instance_buffer(k, w, at + "g", bytes);
    }
  for (int k = 0; k < solver_.instances; ++k) add_instance(k);
  pipe_.set_step(0);
}

}  // namespace

int block_admm_blocks(const StrategyConfig& config, const SolverConfig& solver) {
  return solver.blocks > 0 ? solver.blocks : solver_stages(config);
}

int block_admm_inner_steps(const StrategyConfig& config, const SolverConfig& solver) {
  if (solver.inner_steps > 0) return solver.inner_steps;
  return solver.batch_setting ? 1 : block_admm_blocks(config, solver);
}

Plan lower_block_admm(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int workers = solver_stages(config);
  const int blocks = block_admm_blocks(config, solver);
  const int steps = block_admm_inner_steps(config, solver);
  SolverConfig resolved = solver;
  resolved.blocks = blocks;
  resolved.inner_steps = steps;
  Plan plan(workers);
  solvers::LayerPipeline pipe(model, config, solvers::instance_batch(model, config), solver.instances, plan);
  BlockAdmmBuilder builder(model, resolved, blocks, steps, pipe, plan);
  builder.build(workers);
  solvers::finish_plan(
      plan, model, config,
      "workers=" + std::to_string(workers) + ",blocks=" + std::to_string(blocks) +
          ",inner_steps=" + std::to_string(steps) + ",rho=" + std::to_string(solver.block_rho) + ",setting=" +
          (solver.batch_setting ? "batch" : "online") + ",instances=" + std::to_string(solver.instances),
      resolved, pipe.batch() * solver.instances, solver.instances);
  return plan;
}

}  // namespace models
}  // namespace strata
