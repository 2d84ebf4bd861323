// AdmmPlanTrainer<T>: trains an MLP with an ADMM Plan (models/ lower_admm: dlADMM, pdADMM,
// pdADMM-G-Q) by running the Plan for real through the Interpreter, as Trainer does for
// backprop Plans.
//
// The Plan names each layer's variables as buffers ".../l<l>/admm/<name>" (input, p, w, b, z, wp,
// q, u, labels, and the copies of a neighbour's q_prev, u_prev, p_next where layers sit on
// different workers). The trainer cold-starts the network from the seed on the Plan's own
// training columns (admm.hpp cold_start on admm_columns(train, samples, seed)), writes every
// variable into its buffer, then each run() executes the Plan's sweeps (admm_iterations of them):
// the admm_backward / admm_forward tasks update the buffers in place (task_runner.hpp), the sends
// and receives move p, q and u between workers over the transport (p as int8 codes for
// pdADMM-G-Q). Under MPI every process builds the same trainer and calls the same methods in the
// same order; network() gathers each layer's W and b from the process that owns it (an
// element-wise maximum in which the others contribute −∞).
//
// Ownership: the trainer owns its Workspace, runner and interpreter; the Plan, backend and
// transport outlive it. Thread safety: one thread calls its methods.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "strata/real/kernels/admm.hpp"
#include "strata/real/train/plan_trainer.hpp"

namespace strata::real {

// Each layer's shape from an ADMM Plan's iteration-0 backward tasks: {n_0, ..., n_L}, and its
// sample count. Throws InputError naming the Plan when its solver (PlanInfo) is not an ADMM one.
struct AdmmPlanShape {
  std::vector<std::int64_t> widths;
  std::int64_t samples = 0;
};
AdmmPlanShape admm_plan_shape(const Plan& plan);

template <typename T>
class AdmmPlanTrainer final : public PlanTrainer<T> {
 public:
  // REQUIRES: `plan` validated, check_kernels passed, train.x has the Plan's sample count of
  // columns. Everything passed outlives the trainer.
  AdmmPlanTrainer(const Plan& plan, const AdmmData<T>& train, std::uint64_t seed, Backend& backend,
                  Transport<T>& transport, bool pin_workers);
  ~AdmmPlanTrainer() override;

  // Runs the Plan once; timings per task (merged over processes under MPI), wall time in s.
  std::vector<TaskTiming> run(double* wall_s = nullptr) override;
  // The network's W and b as they stand (p, z, q, u are left empty): what accuracy() needs.
  AdmmNetwork<T> network();
  // Payload bytes moved between workers so far, by all processes.
  std::uint64_t bytes_sent() const override;
  std::string backend_name() const override { return runner_->backend_name(); }
  Workspace<T>& workspace() override { return *ws_; }  // on the host: nothing to download
  const AdmmPlanShape& shape() const { return shape_; }

 private:
  struct Variable {  // a buffer and the network tensor it holds
    BufferIndex buffer = 0;
    int layer = 0;
    std::string name;
  };
  void write_cold_start(const AdmmData<T>& train, std::uint64_t seed, Backend& backend);

  const Plan& plan_;
  Transport<T>& transport_;
  AdmmPlanShape shape_;
  std::vector<Variable> variables_;
  std::unique_ptr<Workspace<T>> ws_;
  std::unique_ptr<TaskExecutor<T>> runner_;
  std::unique_ptr<Interpreter<T>> interpreter_;
  std::vector<int> owner_of_layer_;  // the worker of each layer's backward task
};

extern template class AdmmPlanTrainer<float>;
extern template class AdmmPlanTrainer<double>;

}  // namespace strata::real
