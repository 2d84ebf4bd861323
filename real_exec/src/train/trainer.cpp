#include "strata/real/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <unordered_map>

#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// FNV-1a: a fixed, portable hash, so a layer's initial weights depend only on (seed, name).
std::uint64_t fnv1a(const std::string& text, std::uint64_t seed) {
  std::uint64_t h = 1469598103934665603ULL ^ seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

bool is_forward(const Task& t) {
  switch (t.kind) {
    case TaskKind::linear_fwd:
    case TaskKind::conv_fwd:
    case TaskKind::activation_fwd:
    case TaskKind::pool_fwd:
    case TaskKind::norm_fwd:
      return true;
    case TaskKind::elementwise:  // a residual add's forward (layer_tasks.hpp); other elementwise
                                 // tasks are a solver's, not the model's
      return t.attr_int("skip").value_or(0) != 0;
    case TaskKind::send:
    case TaskKind::recv:
      return t.coords.phase == TaskPhase::fwd;
    case TaskKind::allgather:  // ZeRO-3's gathers of the weights a forward reads
      return per_buffer(t) && t.coords.phase == TaskPhase::fwd;
    default:
      return false;
  }
}

// ZeRO-3: the shard each gathered (unsharded) weight buffer is filled from, with the rank's
// position in the gather's group and the group's size.
struct ShardSource {
  BufferIndex shard = 0;
  std::size_t position = 0, members = 0;
};
std::unordered_map<BufferIndex, ShardSource> shard_sources(const Plan& plan) {
  std::unordered_map<BufferIndex, ShardSource> out;
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::allgather || !per_buffer(t)) continue;
    const std::vector<std::vector<BufferPair>> pairs = buffer_pairs_by_rank(plan, t);
    for (std::size_t r = 0; r < pairs.size(); ++r)
      for (const BufferPair& pair : pairs[r])
        if (pair.read != pair.write) out[pair.write] = ShardSource{pair.read, r, t.group.size()};
  }
  return out;
}

// Samples in one microbatch's input buffer of `input_size` elements: the Plan's input width says
// how many elements one sample has; a Plan that does not record it (schema version 1) has its
// global batch split evenly over its `slots` (dp rank, microbatch) pairs.
std::int64_t samples_per_microbatch(const Plan& plan, std::int64_t input_size, std::int64_t slots) {
  if (plan.info.input_elements > 0) return input_size / plan.info.input_elements;
  if (plan.info.global_batch > 0) return plan.info.global_batch / slots;
  throw InputError("plan: info records neither input_elements nor global_batch: cannot size a microbatch");
}

}  // namespace

template <typename T>
Trainer<T>::Trainer(const Plan& plan, Backend& backend, const TrainConfig& config)
    : Trainer(plan, host_executor<T>(backend), config) {}

template <typename T>
Trainer<T>::Trainer(const Plan& plan, const ExecutorFactory<T>& executor, const TrainConfig& config)
    : plan_(plan), config_(config), own_transport_(std::make_unique<ThreadTransport<T>>()) {
  transport_ = own_transport_.get();
  set_up(executor);
}

template <typename T>
Trainer<T>::Trainer(const Plan& plan, Backend& backend, const TrainConfig& config, Transport<T>& transport)
    : Trainer(plan, host_executor<T>(backend), config, transport) {}

template <typename T>
Trainer<T>::Trainer(const Plan& plan, const ExecutorFactory<T>& executor, const TrainConfig& config,
                    Transport<T>& transport)
    : plan_(plan), config_(config), transport_(&transport) {
  set_up(executor);
}

template <typename T>
void Trainer<T>::set_up(const ExecutorFactory<T>& executor) {
  const Plan& plan = plan_;
  check_kernels(plan, "plan");
  if (plan.info.trains_graph() || plan.info.solver == PlanSolver::gist || is_admm(plan.info.solver))
    throw InputError("plan: a " + std::string(to_string(plan.info.solver)) + " Plan of " + plan.info.model +
                     " trains with make_plan_trainer's " +
                     (is_admm(plan.info.solver) ? "AdmmPlanTrainer" : "GcnPlanTrainer") + ", not Trainer");
  STRATA_ASSERT(plan.num_iterations() == 1, "the trainer runs one-iteration Plans");
  PlanExecution<T> execution =
      assemble_execution(plan, executor, *transport_, config_.optimizer, config_.pin_workers);
  ws_ = std::move(execution.workspace);
  runner_ = std::move(execution.executor);
  interpreter_ = std::move(execution.interpreter);
  interpreter_->set_cpu_share(config_.cpu_share);
  const ProcessShare& share = interpreter_->share();
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const Task& t = plan.task(i);
    // An auxiliary loss (local parallelism's heads) reads the labels of its microbatch too, but
    // the model's loss is the one that binds them and reports the training loss.
    // Block-ADMM's later steps (coordinate step > 0) run the loss again on the same minibatch.
    if (t.kind != TaskKind::loss_fwd || t.attr_int("aux").value_or(0) != 0 || t.coords.step > 0) continue;
    Slot s;
    s.dp = std::max<std::int64_t>(0, t.coords.dp);
    s.mb = std::max<std::int64_t>(0, t.coords.mb);
    s.logits = t.reads[0];
    s.loss = t.writes[0];
    s.local = share.runs(i);
    s.evaluates = t.attr_int("forward_unlocked").value_or(0) == 0;
    slots_.push_back(s);
  }
  if (slots_.empty())
    throw InputError(
        "plan: no loss task (loss_fwd): strata run and validate train a model, and this Plan "
        "has none to train (simulate it instead)");
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const std::string& id = plan.buffer(b).id;
    if (id.size() < 10 || id.compare(id.size() - 10, 10, "/act/input") != 0) continue;
    const TaskCoords& at = plan.buffer_coords(b);
    for (Slot& s : slots_)
      if (s.dp == std::max<std::int64_t>(0, at.dp) && s.mb == std::max<std::int64_t>(0, at.mb)) s.input = b;
  }
  for (const Slot& s : slots_) dp_ = std::max(dp_, s.dp + 1);
  micro_ = samples_per_microbatch(plan, ws_->size(slots_[0].input), static_cast<std::int64_t>(slots_.size()));
  global_batch_ = micro_ * static_cast<std::int64_t>(slots_.size());
  STRATA_ASSERT(plan.info.global_batch == 0 || plan.info.global_batch == global_batch_,
                "input buffers do not add up to the Plan's global batch");
  if (std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.evaluates; }))
    throw InputError(
        "plan: every minibatch's forward is forward-unlocked (serial-parallel with no serial "
        "correction): nothing evaluates the model");
  // Evaluation runs the forward passes of the minibatches that make one.
  const auto evaluates = [this](const TaskCoords& at) {
    for (const Slot& s : slots_)
      if (s.dp == std::max<std::int64_t>(0, at.dp) && s.mb == std::max<std::int64_t>(0, at.mb))
        return s.evaluates;
    return true;
  };
  for (TaskIndex t : topological_order(plan))
    if (is_forward(plan.task(t)) && plan.task(t).coords.step <= 0 && share.runs(t) &&
        evaluates(plan.task(t).coords))
      forward_order_.push_back(t);
  initialise_weights(config_.seed);
  augment_rng_.seed(config_.seed ^ 0x61756d656e74ULL);  // its own stream, apart from the weights'
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) runner_->upload(b);
  // Activations live from first touch to last use (release mode): the loss and the logits,
  // which the host reads after a run, stay.
  if (config_.release_buffers) {
    std::vector<BufferIndex> kept;
    for (const Slot& s : slots_) kept.push_back(s.loss), kept.push_back(s.logits);
    ws_->set_releasing(kept);
    lifetimes_ =
        std::make_unique<BufferLifetimes<T>>(plan, *ws_, [&share](TaskIndex t) { return share.runs(t); });
    interpreter_->set_after_task([this](TaskIndex t) { lifetimes_->task_done(t); });
  }
  peaks_.assign(static_cast<std::size_t>(plan.num_workers()), 0);
}

template <typename T>
std::vector<std::int64_t> Trainer<T>::peak_memory_per_worker() const {
  std::vector<double> peaks(peaks_.begin(), peaks_.end());
  transport_->max_over_processes(peaks);
  return {peaks.begin(), peaks.end()};
}

template <typename T>
Workspace<T>& Trainer<T>::workspace() {
  for (BufferIndex b = 0; b < plan_.buffers().size(); ++b) runner_->download(b);
  return *ws_;
}

template <typename T>
void Trainer<T>::continue_from(Trainer& from) {
  std::unordered_map<std::string, BufferIndex> by_id;
  const auto& theirs = from.plan_.buffers();
  for (BufferIndex b = 0; b < theirs.size(); ++b)
    if (theirs[b].persistent) by_id.emplace(theirs[b].id, b);
  Workspace<T>& source = from.workspace();
  Workspace<T>& target = workspace();
  for (BufferIndex b = 0; b < plan_.buffers().size(); ++b) {
    const Buffer& buffer = plan_.buffer(b);
    if (!buffer.persistent) continue;
    const auto it = by_id.find(buffer.id);
    if (it == by_id.end() || source.size(it->second) != target.size(b))
      throw InputError("Plan " + plan_.info.model + " " + plan_.info.strategy + ": persistent buffer " +
                       buffer.id +
                       (it == by_id.end() ? " is not in the Plan it continues from"
                                          : " has another size in the Plan it continues from"));
    std::copy_n(source.data(it->second), target.size(b), target.data(b));
    target.optimizer_steps(b) = source.optimizer_steps(it->second);
  }
}

template <typename T>
Trainer<T>::~Trainer() = default;

template <typename T>
void Trainer<T>::initialise_weights(std::uint64_t seed) {
  const std::unordered_map<BufferIndex, ShardSource> sources = shard_sources(plan_);
  for (TaskIndex i = 0; i < plan_.size(); ++i) {
    const Task& t = plan_.task(i);
    std::int64_t fan_in = 0;
    std::int64_t weights = 0;
    if (t.kind == TaskKind::linear_fwd) {
      fan_in = *t.attr_int("k");
      weights = fan_in * *t.attr_int("n");
    } else if (t.kind == TaskKind::conv_fwd) {
      fan_in = *t.attr_int("c_in") * *t.attr_int("kh") * *t.attr_int("kw");
      weights = fan_in * *t.attr_int("c_out");
    } else if (t.kind == TaskKind::norm_fwd && t.reads.size() > 1) {
      // Batch norm starts as the identity: gamma 1, beta 0 (Ioffe and Szegedy 2015).
      const BufferIndex w = t.reads[1];
      T* values = ws_->data(w);
      const std::int64_t channels = ws_->size(w) / 2;
      std::fill(values, values + channels, T{1});
      std::fill(values + channels, values + 2 * channels, T{0});
      continue;
    } else {
      continue;
    }
    const BufferIndex w = t.reads[1];
    // ZeRO-3: the forward reads a gathered copy; the rank keeps its chunk in the shard, named
    // as plain data parallelism's weights are.
    const auto source = sources.find(w);
    const std::string& id = plan_.buffer(source == sources.end() ? w : source->second.shard).id;
    const std::string layer = id.substr(std::min(id.size(), id.find("/w/")));  // same on every rank
    std::mt19937_64 rng(fnv1a(layer, seed));
    std::vector<T> values(static_cast<std::size_t>(ws_->size(w)), T{0});
    if (config_.init == WeightInit::he_normal) {
      he_normal_init(rng, fan_in, weights, values.data());
    } else {
      // Uniform from the top 53 bits of raw mt19937_64 outputs (fixed by the standard), so every
      // standard library draws the same weights.
      const double bound = 1 / std::sqrt(static_cast<double>(fan_in));
      for (T& v : values) v = static_cast<T>((static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2 - 1) * bound);
    }
    if (source == sources.end()) {
      std::copy(values.begin(), values.end(), ws_->data(w));
      continue;
    }
    const RingChunk c = shard_chunk(source->second.position, values.size(), source->second.members);
    std::copy(values.begin() + static_cast<std::ptrdiff_t>(c.begin),
              values.begin() + static_cast<std::ptrdiff_t>(c.end), ws_->data(source->second.shard));
  }
}

template <typename T>
void Trainer<T>::bind(const LabelledImages& data, const std::vector<std::int64_t>& indices, bool train) {
  STRATA_ASSERT(static_cast<std::int64_t>(indices.size()) == global_batch_,
                "a batch binds exactly B samples");
  const std::int64_t pixels = data.rows * data.cols;
  const std::int64_t per_sample = ws_->size(slots_[0].input) / std::max<std::int64_t>(1, micro_);
  // A larger square input takes the image padded to it (centred, an even margin).
  std::int64_t side = data.rows;
  while (side * side < per_sample) ++side;
  const bool pad =
      side * side == per_sample && data.rows == data.cols && side > data.rows && (side - data.rows) % 2 == 0;
  if (pixels * micro_ != ws_->size(slots_[0].input) && !pad)
    throw InputError("data: samples of " + std::to_string(pixels) + " pixels, but the Plan's input is " +
                     std::to_string(per_sample) + " elements per sample");
  const bool augment = train && config_.augment == Augment::crop_flip && data.rows == data.cols;
  std::vector<float> padded(static_cast<std::size_t>(pad ? per_sample : 0));
  std::vector<float> moved(static_cast<std::size_t>(augment ? per_sample : 0));
  const std::int64_t square = pad ? side : data.rows;
  const std::int64_t per_rank = global_batch_ / dp_;
  for (const Slot& s : slots_) {
    const std::int64_t first = s.dp * per_rank + s.mb * micro_;
    T* samples = ws_->data(s.input);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(micro_));
    std::vector<std::int64_t> ids(static_cast<std::size_t>(micro_));
    for (std::int64_t i = 0; i < micro_; ++i) {
      const std::int64_t sample = indices[static_cast<std::size_t>(first + i)];
      ids[static_cast<std::size_t>(i)] = sample;
      const float* src = data.images.data() + sample * pixels;
      if (pad) {
        pad_image(src, data.rows, side, padded.data());
        src = padded.data();
      }
      if (augment) {
        crop_flip(src, square, draw_crop_flip(augment_rng_), moved.data());
        src = moved.data();
      }
      std::copy(src, src + per_sample, samples + i * per_sample);
      labels[static_cast<std::size_t>(i)] = data.labels[static_cast<std::size_t>(sample)];
    }
    ws_->set_labels(s.dp, s.mb, std::move(labels));
    ws_->set_sample_ids(s.dp, s.mb, std::move(ids));
    if (s.local) runner_->upload(s.input);
  }
  runner_->upload_labels();
}

template <typename T>
double Trainer<T>::train_batch(const LabelledImages& data, const std::vector<std::int64_t>& indices,
                               std::vector<TaskTiming>* timings) {
  ws_->reset_peaks();
  bind(data, indices, true);
  if (lifetimes_) lifetimes_->begin_run();
  std::vector<TaskTiming> measured = interpreter_->run();
  for (WorkerId w = 0; w < plan_.num_workers(); ++w)
    if (transport_->process_of(w) == transport_->process())
      peaks_[static_cast<std::size_t>(w)] = std::max(peaks_[static_cast<std::size_t>(w)], ws_->peak_bytes(w));
  if (timings != nullptr) {
    merge_over_processes(*transport_, measured);
    *timings = std::move(measured);
  }
  double loss = 0;
  for (const Slot& s : slots_) {
    if (!s.local) continue;
    runner_->download(s.loss);
    loss += static_cast<double>(ws_->data(s.loss)[0]);
  }
  return transport_->sum_over_processes(loss) / static_cast<double>(slots_.size());
}

template <typename T>
std::uint64_t Trainer<T>::bytes_sent() const {
  // A double holds integers exactly up to 2^53 B: far beyond any run.
  return static_cast<std::uint64_t>(
      transport_->sum_over_processes(static_cast<double>(runner_->bytes_sent())));
}

template <typename T>
EpochResult Trainer<T>::train_epoch(std::int64_t epoch, const LabelledImages& train,
                                    const LabelledImages& test,
                                    const std::function<void(std::int64_t, std::int64_t)>& progress) {
  EpochBatches batches(train.count, global_batch_, config_.seed);
  batches.start_epoch(epoch - 1);
  const std::int64_t full = train.count / global_batch_;
  EpochResult r;
  r.epoch = epoch;
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t b = 0; b < full; ++b) {
    auto span = batches.batch(b);
    r.train_loss += train_batch(train, std::vector<std::int64_t>(span.begin(), span.end()));
    if (progress) progress(b + 1, full);
  }
  r.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.train_loss /= static_cast<double>(std::max<std::int64_t>(1, full));
  r.samples_per_second = static_cast<double>(full * global_batch_) / std::max(1e-9, r.train_seconds);
  r.test_accuracy = test_accuracy(test);
  return r;
}

template <typename T>
double Trainer<T>::test_accuracy(const LabelledImages& test) {
  std::int64_t correct = 0;
  const std::int64_t per_rank = global_batch_ / dp_;
  // The batch positions of the minibatches that evaluate, in order: test sample first + j * micro_ + i
  // goes to position order[j] + i (all minibatches evaluate but a serial-parallel Plan's parallel ones).
  std::vector<std::int64_t> order;
  for (const Slot& s : slots_)
    if (s.evaluates) order.push_back(s.dp * per_rank + s.mb * micro_);
  std::sort(order.begin(), order.end());
  const auto eval_batch = static_cast<std::int64_t>(order.size()) * micro_;
  for (std::int64_t first = 0; first < test.count; first += eval_batch) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(global_batch_), first);
    for (std::size_t j = 0; j < order.size(); ++j)
      for (std::int64_t i = 0; i < micro_; ++i) {
        const std::int64_t sample = first + static_cast<std::int64_t>(j) * micro_ + i;
        indices[static_cast<std::size_t>(order[j] + i)] = sample < test.count ? sample : first;
      }
    bind(test, indices, false);
    for (TaskIndex t : forward_order_) runner_->run(t);
    runner_->discard_saved();
    for (const Slot& s : slots_) {
      if (!s.local || !s.evaluates) continue;
      const std::int64_t at = s.dp * per_rank + s.mb * micro_;
      const auto j = std::lower_bound(order.begin(), order.end(), at) - order.begin();
      runner_->download(s.logits);
      const T* logits = ws_->data(s.logits);
      const std::int64_t classes = ws_->size(s.logits) / micro_;
      for (std::int64_t i = 0; i < micro_; ++i) {
        const std::int64_t sample = first + j * micro_ + i;
        if (sample >= test.count) continue;
        const T* row = logits + i * classes;
        const auto predicted = std::max_element(row, row + classes) - row;
        correct += predicted == test.labels[static_cast<std::size_t>(sample)] ? 1 : 0;
      }
    }
  }
  ws_->release_all();  // the forward passes' activations, held since their first touch
  return transport_->sum_over_processes(static_cast<double>(correct)) / static_cast<double>(test.count);
}

template class Trainer<float>;
template class Trainer<double>;

}  // namespace strata::real
