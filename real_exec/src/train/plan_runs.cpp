// plan_runs(): the runner of any Plan the real executor trains (plan_runs.hpp).
#include "strata/real/train/plan_runs.hpp"

#include <memory>

#include "strata/real/train/plan_trainer.hpp"

namespace strata::real {

bool cpu_only_plan(const Plan& plan) { return is_admm(plan.info.solver) || plan.info.trains_graph(); }

PlanRuns plan_runs(const Plan& plan, const LabelledImages& train, const PlanRunSettings& s) {
  RealSettings settings;
  settings.device = s.device;
  settings.seed = s.seed;
  settings.pin_workers = s.pin_workers;
  settings.cpu_share = s.cpu_share;
  settings.optimizer = s.optimizer;
  std::shared_ptr<PlanTrainer<float>> trainer =
      make_plan_trainer<float>(plan, settings, train, s.executor, s.transport);
  return [trainer, peak = s.peak_memory] {
    std::vector<TaskTiming> timings = trainer->run();
    if (peak) *peak = trainer->peak_memory_per_worker();
    return timings;
  };
}

}  // namespace strata::real
