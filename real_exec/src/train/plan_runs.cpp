// plan_runs(): the runner of any Plan the real executor trains (plan_runs.hpp).
#include "strata/real/train/plan_runs.hpp"

#include <memory>

#include "strata/real/train/admm_plan.hpp"
#include "strata/real/train/gcn_plan.hpp"
#include "strata/real/transport/thread_transport.hpp"

namespace strata::real {
namespace {

// The transport to place the workers with: the one given, or threads of this process, owned.
Transport<float>& placed(const PlanRunSettings& s, std::shared_ptr<Transport<float>>& own) {
  if (s.transport != nullptr) return *s.transport;
  own = std::make_shared<ThreadTransport<float>>();
  return *own;
}

PlanRuns admm_runs(const Plan& plan, const LabelledImages& train, const PlanRunSettings& s) {
  auto data =
      std::make_shared<AdmmData<float>>(admm_columns<float>(train, admm_plan_shape(plan).samples, s.seed));
  auto backend = std::make_shared<CpuBackend>();
  std::shared_ptr<Transport<float>> own;
  auto trainer =
      std::make_shared<AdmmPlanTrainer<float>>(plan, *data, s.seed, *backend, placed(s, own), s.pin_workers);
  return [trainer, data, backend, own] { return trainer->run(); };
}

PlanRuns gcn_runs(const Plan& plan, const PlanRunSettings& s) {
  auto backend = std::make_shared<CpuBackend>();
  auto data =
      std::make_shared<GcnData<float>>(gcn_plan_data<float>(*backend, gcn_plan_shape(plan).nodes, s.seed));
  std::shared_ptr<Transport<float>> own;
  OptimizerSettings optimizer;
  optimizer.learning_rate = 0.01;
  auto trainer = std::make_shared<GcnPlanTrainer<float>>(plan, *data, s.seed, *backend, placed(s, own),
                                                         optimizer, s.pin_workers);
  return [trainer, data, backend, own] { return trainer->run(); };
}

}  // namespace

bool cpu_only_plan(const Plan& plan) { return is_admm_plan(plan) || is_gcn_plan(plan); }

PlanRuns plan_runs(const Plan& plan, const LabelledImages& train, const PlanRunSettings& s) {
  if (is_admm_plan(plan)) return admm_runs(plan, train, s);
  if (is_gcn_plan(plan)) return gcn_runs(plan, s);
  auto backend = std::make_shared<CpuBackend>();
  TrainConfig config;
  config.seed = s.seed;
  config.pin_workers = s.pin_workers;
  const ExecutorFactory<float> executor = s.executor ? s.executor : host_executor<float>(*backend);
  std::shared_ptr<Trainer<float>> trainer =
      s.transport == nullptr ? std::make_shared<Trainer<float>>(plan, executor, config)
                             : std::make_shared<Trainer<float>>(plan, executor, config, *s.transport);
  auto next = std::make_shared<std::int64_t>(0);  // the next batch
  return [trainer, &train, backend, next] {
    const std::int64_t batch = trainer->global_batch();
    std::vector<std::int64_t> indices(static_cast<std::size_t>(batch));
    for (std::int64_t k = 0; k < batch; ++k)
      indices[static_cast<std::size_t>(k)] = (*next * batch + k) % train.count;
    ++*next;
    std::vector<TaskTiming> timings;
    trainer->train_batch(train, indices, &timings);
    return timings;
  };
}

}  // namespace strata::real
