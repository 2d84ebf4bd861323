// PlanExecution<T>: what runs a Plan for real, assembled in one place: the Workspace (its
// buffers), the executor of its tasks (TaskRunner on the CPU, or what an ExecutorFactory builds,
// e.g. real_exec/cuda's CudaTaskRunner) and the Interpreter that dispatches them.
//
// Every trainer (train/plan_trainer.hpp) and the calibration's task timing build their
// execution with assemble_execution(), so the order of construction (the workspace first, then the
// executor over it, then the interpreter over the executor) and the ownership are written once.
//
// Ownership: a PlanExecution owns all three; the Plan, the transport and whatever the factory
// captured (a Backend) outlive it. Destruction runs in reverse order (interpreter first).
#pragma once

#include <functional>
#include <memory>

#include "strata/real/exec/interpreter.hpp"

namespace strata::real {

// Builds the executor that runs a Plan's tasks (TaskRunner on the host; CudaTaskRunner on a GPU)
// over a Workspace and transport.
template <typename T>
using ExecutorFactory = std::function<std::unique_ptr<TaskExecutor<T>>(
    const Plan& plan, Workspace<T>& ws, Transport<T>& transport, const OptimizerSettings& optimizer)>;

// The host executor: TaskRunner on `backend`, which must outlive what the factory builds.
template <typename T>
ExecutorFactory<T> host_executor(Backend& backend);

template <typename T>
struct PlanExecution {
  std::unique_ptr<Workspace<T>> workspace;
  std::unique_ptr<TaskExecutor<T>> executor;
  std::unique_ptr<Interpreter<T>> interpreter;
};

// REQUIRES: `plan` validated and check_kernels passed (the caller checks, naming its source).
template <typename T>
PlanExecution<T> assemble_execution(const Plan& plan, const ExecutorFactory<T>& executor,
                                    Transport<T>& transport, const OptimizerSettings& optimizer,
                                    bool pin_workers);

}  // namespace strata::real
