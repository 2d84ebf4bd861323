// lower_local(): local parallelism (Laskin et al. 2020, "Parallel training of deep networks with
// local updates") as a Plan.
//
// The model's blocks are cut into C chunks (partition_blocks); chunk c runs on worker
// floor(c * W / C). Every chunk but the last gets an auxiliary head, a linear layer from the
// chunk's output to the classes with its own softmax cross-entropy ("aux<c>/fc", "aux<c>/loss");
// the last chunk uses the model's head. Per instance k (a minibatch of B samples):
//   forward   the chunk's layers, then its head; the chunk's output goes on to chunk c+1
//   backward  from the chunk's own loss through its head and its layers only: no gradient
//             crosses a chunk boundary, so the first layer of a chunk computes no input
//             gradient (greedy: one block per chunk; chunked: any number)
//   update    each layer of the chunk steps after every instance, so chunk c+1 trains on
//             instance k while chunk c already runs instance k+1: no bubble once the pipeline
//             has filled, and no staleness inside a chunk.
// Overlapping (strata's reading of the paper's overlapping variant): chunk c+1 also computes the
// gradient of its loss with respect to its input and sends it back, one message per boundary
// and instance, and chunk c adds it to its head's gradient before its own backward, so the
// boundary layer learns from both losses.
#include <optional>
#include <string>

#include "solver_pipeline.hpp"
#include "strata/models/solvers/solver.hpp"

namespace strata {
inline namespace models {
namespace {

using solvers::coord;
using solvers::kNone;
using Backward = solvers::LayerPipeline::Backward;

struct Chunk {
  int worker = 0;
  std::size_t first = 0, last = 0;  // its model layers [first, last] in the pipeline
  std::size_t head = 0, loss = 0;   // its head's linear and loss (the model's for the last chunk)
  bool aux = false;
};

class LocalBuilder {
 public:
  LocalBuilder(const Model& model, const SolverConfig& solver, solvers::LayerPipeline& pipe, Plan& plan)
      : model_(model), solver_(solver), pipe_(pipe), plan_(plan) {}
  void build(int workers);

 private:
  void add_layers(int workers);
  void add_instance(int k);
  TaskIndex forward(int k, std::size_t i, TaskIndex producer, std::int64_t priority);
  void add_update(int k, std::size_t i, const Backward& b);
  bool overlapping() const { return solver_.local_variant == LocalVariant::overlapping; }

  const Model& model_;
  const SolverConfig& solver_;
  solvers::LayerPipeline& pipe_;
  Plan& plan_;
  std::vector<Chunk> chunks_;
  std::vector<TaskIndex> last_update_;  // per layer: its step after the previous instance
  std::vector<TaskIndex> last_reader_;  // per layer: the previous instance's bwd (reads weights)
  std::vector<TaskIndex> from_next_;    // per chunk, this instance: recv of the overlap gradient
};

void LocalBuilder::add_layers(int workers) {
  const int c_count =
      solver_.local_variant == LocalVariant::greedy ? model_.num_blocks_or_layers() : solver_.chunks;
  const std::vector<int> chunk_of = solvers::stage_of_layers(model_, c_count);
  const std::int64_t classes = static_cast<std::int64_t>(model_.layers[model_.layers.size() - 2].out_elems);
  chunks_.assign(static_cast<std::size_t>(c_count), {});
  for (std::size_t i = 0; i < model_.layers.size(); ++i) {
    Chunk& ch = chunks_[static_cast<std::size_t>(chunk_of[i])];
    ch.worker = chunk_of[i] * workers / c_count;
    const int index = pipe_.add_layer(model_.layers[i], ch.worker, static_cast<int>(i) - 1, pipe_.batch());
    if (i == 0 || chunk_of[i - 1] != chunk_of[i]) ch.first = static_cast<std::size_t>(index);
    ch.last = static_cast<std::size_t>(index);
  }
  // The model's head and loss belong to the last chunk; the others get one each.
  chunks_.back().loss = chunks_.back().last;
  chunks_.back().head = chunks_.back().last - 1;
  for (int c = 0; c + 1 < c_count; ++c) {
    Chunk& ch = chunks_[static_cast<std::size_t>(c)];
    const auto width = static_cast<std::int64_t>(model_.layers[ch.last].out_elems);
    Model head = make_mlp("aux", {width, classes});
    const std::string name = coord("aux", c);
    head.layers[0].name = name + "/fc";
    head.layers[1].name = name + "/loss";
    head.layers[1].shape["aux"] = std::int64_t{1};  // an auxiliary loss: not the model's (Trainer)
    ch.aux = true;
    ch.head = static_cast<std::size_t>(
        pipe_.add_layer(head.layers[0], ch.worker, static_cast<int>(ch.last), pipe_.batch()));
    ch.loss = static_cast<std::size_t>(
        pipe_.add_layer(head.layers[1], ch.worker, static_cast<int>(ch.head), pipe_.batch()));
  }
  pipe_.add_buffers();
}

// F(k, i), after the step of instance k-1 that wrote the weights it reads.
TaskIndex LocalBuilder::forward(int k, std::size_t i, TaskIndex producer, std::int64_t priority) {
  const TaskIndex f = pipe_.add_forward(k, i, producer, priority);
  if (last_update_[i] != kNone) plan_.add_control_dep(last_update_[i], f);
  return f;
}

void LocalBuilder::add_instance(int k) {
  const std::int64_t pf = 4LL * k + 2;
  const std::int64_t pb = 4LL * k;
  std::vector<TaskIndex> forward_end(chunks_.size(), kNone);
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    const Chunk& ch = chunks_[c];
    TaskIndex prev = c == 0 ? kNone : forward_end[c - 1];
    for (std::size_t i = ch.first; i <= ch.last; ++i) prev = forward(k, i, prev, pf);
    forward_end[c] = prev;
    if (ch.aux) forward(k, ch.loss, forward(k, ch.head, prev, pf), pf);
  }
  for (TaskIndex& t : from_next_) t = kNone;
  // Backward, last chunk first, so that an overlap gradient is sent before its reader is made.
  for (std::size_t r = 0; r < chunks_.size(); ++r) {
    const std::size_t c = chunks_.size() - 1 - r;
    const Chunk& ch = chunks_[c];
    std::vector<std::size_t> order = {ch.loss, ch.head};
    if (ch.aux) {
      for (std::size_t i = ch.last + 1; i-- > ch.first;) order.push_back(i);
    } else {
      for (std::size_t i = ch.head; i-- > ch.first;) order.push_back(i);
    }
    TaskIndex prev = kNone;
    for (std::size_t i : order) {
      const bool first = i == ch.first;
      const bool send_back = first && c > 0 && overlapping();
      if (i == ch.last && ch.aux && from_next_[c] != kNone) {
        // Chunk c+1's gradient joins the head's: dY(last) += received.
        Task acc;
        acc.kind = TaskKind::grad_accumulate;
        acc.dtype = pipe_.config().dtype;
        acc.reads = {plan_.task(from_next_[c]).writes[0], pipe_.out_grad(k, i)};
        acc.writes = {pipe_.out_grad(k, i)};
        acc.flops = pipe_.layer(i).out_bytes / bytes_per_element(acc.dtype);
        acc.bytes_read = 2 * pipe_.layer(i).out_bytes;
        acc.bytes_written = pipe_.layer(i).out_bytes;
        const TaskIndex a = pipe_.add_task(
            std::move(acc), coord("mb", k) + "/bwd/" + pipe_.layer(i).name + "/overlap", ch.worker, pb);
        plan_.add_data_dep(prev, a);
        plan_.add_data_dep(from_next_[c], a);
        prev = a;
      }
      const bool input_grad = !first || send_back || !pipe_.layer(i).has_bwdw;
      // The overlap gradient goes to a buffer of its own on the chunk before: sent there when
      // that chunk runs on another worker, written there directly when it runs on this one.
      std::optional<BufferIndex> overlap;
      if (send_back) {
        const solvers::PipeLayer& from = pipe_.layer(static_cast<std::size_t>(pipe_.layer(i).input));
        overlap = pipe_.instance_buffer(k, from.stage, "grad/" + from.name + "/overlap", from.out_bytes);
      }
      const bool local_overlap = send_back && !pipe_.crosses(i);
      const Backward b = pipe_.add_backward(k, i, pipe_.layer(i).is_loss ? kNone : prev, pb, input_grad,
                                            local_overlap ? overlap : std::nullopt);
      add_update(k, i, b);
      prev = b.bwd != kNone ? b.bwd : b.bwdw;
      if (send_back)
        from_next_[c - 1] = local_overlap ? b.bwd : pipe_.add_grad_transfer(k, i, b.bwd, pb, *overlap);
    }
  }
}

// The layer's step after instance k. The step after instance k-1 must have run before this
// instance's gradient accumulates: it zeroed the gradient and wrote the weights read here.
void LocalBuilder::add_update(int k, std::size_t i, const Backward& b) {
  if (!pipe_.layer(i).has_params) return;
  last_update_[i] = pipe_.add_step(k, i, b, last_update_[i], 4LL * k + 1);
}

void LocalBuilder::build(int workers) {
  add_layers(workers);
  last_update_.assign(pipe_.size(), kNone);
  from_next_.assign(chunks_.size(), kNone);
  for (int k = 0; k < solver_.instances; ++k) add_instance(k);
}

}  // namespace

Plan lower_local(const Model& model, const StrategyConfig& config, const SolverConfig& solver) {
  const int workers = solver_stages(config);
  Plan plan(workers);
  solvers::LayerPipeline pipe(model, config, solvers::instance_batch(model, config), solver.instances, plan);
  LocalBuilder builder(model, solver, pipe, plan);
  builder.build(workers);
  solvers::finish_plan(plan, model, config,
                       "workers=" + std::to_string(workers) + ",chunks=" + std::to_string(solver.chunks) +
                           ",variant=" + std::string(to_string(solver.local_variant)) +
                           ",instances=" + std::to_string(solver.instances),
                       solver, pipe.batch() * solver.instances, solver.instances);
  return plan;
}

}  // namespace models
}  // namespace strata
