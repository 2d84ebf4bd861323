// make_plan_trainer(): the PlanTrainer a Plan's solver needs (plan_trainer.hpp).
#include "strata/real/train/plan_trainer.hpp"

#include <chrono>

#include "strata/real/train/admm_plan.hpp"
#include "strata/real/train/gcn_plan.hpp"
#include "strata/real/train/trainer.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// What every implementation below owns besides its trainer: a CPU backend, and the transport
// when none is given. Declared first, so it outlives the trainer that borrows it.
template <typename T>
struct Owned {
  explicit Owned(Transport<T>* given) {
    if (given == nullptr) own = std::make_unique<ThreadTransport<T>>();
    transport = given != nullptr ? given : own.get();
  }
  CpuBackend backend;
  std::unique_ptr<ThreadTransport<T>> own;
  Transport<T>* transport = nullptr;
};

// A backprop Plan: one iteration per run, on consecutive batches of the training set.
template <typename T>
class BackpropRun final : public PlanTrainer<T> {
 public:
  BackpropRun(const Plan& plan, const RealSettings& s, const LabelledImages& train,
              const ExecutorFactory<T>& executor, Transport<T>* transport)
      : owned_(transport),
        train_(train),
        trainer_(plan, executor ? executor : host_executor<T>(owned_.backend), config(s), *owned_.transport) {
  }

  std::vector<TaskTiming> run(double* wall_s) override {
    const std::int64_t batch = trainer_.global_batch();
    std::vector<std::int64_t> indices(static_cast<std::size_t>(batch));
    for (std::int64_t k = 0; k < batch; ++k)
      indices[static_cast<std::size_t>(k)] = (next_ * batch + k) % train_.count;
    ++next_;
    std::vector<TaskTiming> timings;
    const auto start = std::chrono::steady_clock::now();
    trainer_.train_batch(train_, indices, &timings);
    if (wall_s != nullptr)
      *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return timings;
  }
  std::uint64_t bytes_sent() const override { return trainer_.bytes_sent(); }
  std::vector<std::int64_t> peak_memory_per_worker() const override {
    return trainer_.peak_memory_per_worker();
  }
  std::string backend_name() const override { return trainer_.backend_name(); }
  Workspace<T>& workspace() override { return trainer_.workspace(); }

 private:
  static TrainConfig config(const RealSettings& s) {
    TrainConfig c;
    c.seed = s.seed;
    c.optimizer = s.optimizer.value_or(OptimizerSettings{});
    c.pin_workers = s.pin_workers;
    c.init = s.init;
    c.cpu_share = s.cpu_share;
    return c;
  }

  Owned<T> owned_;
  const LabelledImages& train_;
  Trainer<T> trainer_;
  std::int64_t next_ = 0;  // the next batch
};

// An ADMM Plan: its sweeps per run, on the Plan's seeded training columns.
template <typename T>
class AdmmRun final : public PlanTrainer<T> {
 public:
  AdmmRun(const Plan& plan, const RealSettings& s, const LabelledImages& train, Transport<T>* transport)
      : owned_(transport),
        data_(admm_columns<T>(train, admm_plan_shape(plan).samples, s.seed)),
        trainer_(plan, data_, s.seed, owned_.backend, *owned_.transport, s.pin_workers) {}

  std::vector<TaskTiming> run(double* wall_s) override { return trainer_.run(wall_s); }
  std::uint64_t bytes_sent() const override { return trainer_.bytes_sent(); }
  std::string backend_name() const override { return trainer_.backend_name(); }
  Workspace<T>& workspace() override { return trainer_.workspace(); }

 private:
  Owned<T> owned_;
  AdmmData<T> data_;
  AdmmPlanTrainer<T> trainer_;
};

// A GCN Plan (GIST, or backprop on a GCN): its rounds per run, on its graph (gcn_plan_graph).
template <typename T>
class GcnRun final : public PlanTrainer<T> {
 public:
  GcnRun(const Plan& plan, const RealSettings& s, Transport<T>* transport)
      : owned_(transport),
        graph_(gcn_plan_graph<T>(owned_.backend, plan, s.seed)),
        trainer_(plan, graph_.data, s.seed, owned_.backend, *owned_.transport, optimizer(s), s.pin_workers,
                 graph_.partition) {}

  std::vector<TaskTiming> run(double* wall_s) override { return trainer_.run(wall_s); }
  std::uint64_t bytes_sent() const override { return trainer_.bytes_sent(); }
  std::string backend_name() const override { return trainer_.backend_name(); }
  Workspace<T>& workspace() override { return trainer_.workspace(); }

 private:
  static OptimizerSettings optimizer(const RealSettings& s) {
    if (s.optimizer) return *s.optimizer;
    OptimizerSettings adam;
    adam.learning_rate = 0.01;  // gcn.hpp's Adam step
    return adam;
  }

  Owned<T> owned_;
  GcnPlanGraph<T> graph_;
  GcnPlanTrainer<T> trainer_;
};

}  // namespace

void check_plan_device(const Plan& plan, const std::string& device) {
  if (device == "cpu") return;
  if (is_admm(plan.info.solver))
    throw InputError(
        "--device " + device + ": the " + std::string(to_string(plan.info.solver)) +
        " Plan needs the admm_backward and admm_forward kernels, which only the CPU executor has");
  if (plan.info.trains_graph())
    throw InputError(
        "--device " + device +
        ": a GCN Plan needs the spmm kernel and GIST's slice copies, which only the CPU executor has");
  for (const Task& t : plan.tasks()) {
    if (t.kind == TaskKind::norm_fwd || (t.kind == TaskKind::elementwise && t.attr_int("span")))
      throw InputError(
          "--device " + device + ": the " + plan.info.model +
          " Plan needs the batch-norm and residual-add kernels, which only the CPU executor has");
    if (t.kind == TaskKind::elementwise && t.attr_string("block_admm"))
      throw InputError("--device " + device + ": the " + std::string(to_string(plan.info.solver)) +
                       " Plan needs the auxiliary-variable kernels (" + *t.attr_string("block_admm") +
                       ", ...), which only the CPU executor has");
  }
}

template <typename T>
std::unique_ptr<PlanTrainer<T>> make_plan_trainer(const Plan& plan, const RealSettings& settings,
                                                  const LabelledImages& train,
                                                  const ExecutorFactory<T>& executor,
                                                  Transport<T>* transport) {
  check_plan_device(plan, settings.device);
  if (is_admm(plan.info.solver)) return std::make_unique<AdmmRun<T>>(plan, settings, train, transport);
  if (plan.info.trains_graph()) return std::make_unique<GcnRun<T>>(plan, settings, transport);
  return std::make_unique<BackpropRun<T>>(plan, settings, train, executor, transport);
}

template std::unique_ptr<PlanTrainer<float>> make_plan_trainer<float>(const Plan&, const RealSettings&,
                                                                      const LabelledImages&,
                                                                      const ExecutorFactory<float>&,
                                                                      Transport<float>*);
template std::unique_ptr<PlanTrainer<double>> make_plan_trainer<double>(const Plan&, const RealSettings&,
                                                                        const LabelledImages&,
                                                                        const ExecutorFactory<double>&,
                                                                        Transport<double>*);

}  // namespace strata::real
