// The one assembly of workspace, executor and interpreter (plan_execution.hpp).
#include "strata/real/exec/plan_execution.hpp"

namespace strata::real {

template <typename T>
ExecutorFactory<T> host_executor(Backend& backend) {
  return [&backend](const Plan& plan, Workspace<T>& ws, Transport<T>& transport,
                    const OptimizerSettings& optimizer) {
    return std::unique_ptr<TaskExecutor<T>>(
        std::make_unique<TaskRunner<T>>(plan, backend, ws, transport, optimizer));
  };
}

template <typename T>
PlanExecution<T> assemble_execution(const Plan& plan, const ExecutorFactory<T>& executor,
                                    Transport<T>& transport, const OptimizerSettings& optimizer,
                                    bool pin_workers) {
  PlanExecution<T> e;
  e.workspace = std::make_unique<Workspace<T>>(plan);
  transport.set_meter(e.workspace->meter());
  e.executor = executor(plan, *e.workspace, transport, optimizer);
  e.interpreter = std::make_unique<Interpreter<T>>(plan, *e.executor, pin_workers);
  return e;
}

template ExecutorFactory<float> host_executor<float>(Backend&);
template ExecutorFactory<double> host_executor<double>(Backend&);
template PlanExecution<float> assemble_execution<float>(const Plan&, const ExecutorFactory<float>&,
                                                        Transport<float>&, const OptimizerSettings&, bool);
template PlanExecution<double> assemble_execution<double>(const Plan&, const ExecutorFactory<double>&,
                                                          Transport<double>&, const OptimizerSettings&, bool);

}  // namespace strata::real
