// PlanTrainer<T>: trains with a Plan for real, whatever solver lowered it — the one interface
// of backprop runs (Trainer, on consecutive Fashion-MNIST batches), ADMM runs (AdmmPlanTrainer:
// dlADMM, pdADMM, pdADMM-G-Q sweeps on the Plan's seeded full batch) and GCN runs
// (GcnPlanTrainer: GIST rounds or backprop's full-graph steps on the kNN graph of the Plan's
// nodes).
//
// make_plan_trainer() picks the implementation from what the Plan says it is (PlanInfo::solver
// and ::graph_nodes), never from its task kinds or ids, and builds it from the Plan plus the real
// executor's settings (RealSettings: device, seed, pinning, optimizer, weight init), an executor
// factory and a transport; precision is T. Each implementation assembles its workspace, executor
// and interpreter with assemble_execution() (exec/plan_execution.hpp).
//
// Devices: backprop Plans run on what the executor factory builds (the CPU's TaskRunner or
// real_exec/cuda's CudaTaskRunner). real_exec/cuda has no admm_backward, admm_forward nor spmm
// kernel (nor GIST's slice copies), so an ADMM or GCN Plan with a device other than the CPU is
// refused in one line naming them (check_plan_device).
//
// Ownership: what make_plan_trainer returns owns its trainer, data and backend, and a
// ThreadTransport when none is given; the Plan, `train` and a transport given outlive it.
// Thread safety: one thread calls its methods; under MPI every process calls the same ones in
// the same order (run and bytes_sent are collectives).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/exec/plan_execution.hpp"

namespace strata::real {

template <typename T>
class PlanTrainer {
 public:
  virtual ~PlanTrainer() = default;
  // Runs the Plan once — backprop: one iteration on the next batch; ADMM: its sweeps; GCN: its
  // rounds — and returns every task's timing (merged over processes under MPI); the run's wall
  // time in s into `wall_s` when given.
  virtual std::vector<TaskTiming> run(double* wall_s = nullptr) = 0;
  // Payload bytes moved between workers so far, by all processes.
  virtual std::uint64_t bytes_sent() const = 0;
  // The kernels' backend ("cpu-openblas", "cuda-cublas").
  virtual std::string backend_name() const = 0;
  // Per worker, the most bytes of buffer arrays it held during the runs so far (Trainer's, for
  // the workers of this process); empty where the trainer does not measure it (ADMM, GCN).
  virtual std::vector<std::int64_t> peak_memory_per_worker() const { return {}; }
  // The Plan's buffers as they stand (weights, optimizer state, ...), brought up to date from the
  // executor's memory first (a GPU's).
  virtual Workspace<T>& workspace() = 0;
};

// How a layer's weights start (backprop Plans), from (seed, layer name):
// - he_normal: weights N(0, 2/fan_in), biases 0 (He et al. 2015; the MLP recipe);
// - fan_in_uniform: weights and biases U(−1/√fan_in, 1/√fan_in), PyTorch's default for Linear
//   and Conv2d (kaiming_uniform with a = √5). LeNet-5 reaches its reference accuracy with it.
enum class WeightInit : std::uint8_t { he_normal, fan_in_uniform };

// The real executor's settings beside the Plan (the Plan says what to train; these say how).
struct RealSettings {
  std::string device = "cpu";  // what `executor` builds on: cpu, cuda
  std::uint64_t seed = 0;      // data order and subsets, initial weights
  bool pin_workers = true;
  // Empty: each solver's own (backprop: OptimizerSettings{}; GCN: gcn.hpp's Adam, lr 0.01; ADMM
  // has none).
  std::optional<OptimizerSettings> optimizer;
  WeightInit init = WeightInit::he_normal;
  double cpu_share = 1;  // backprop Plans: each worker's share of its core (functions of < 1 vCPU)
};

// Throws InputError (one line) when `device` has no kernels for the Plan's solver: ADMM and GCN
// Plans run on the CPU only.
void check_plan_device(const Plan& plan, const std::string& device);

// REQUIRES: plan validated; `train` is the Fashion-MNIST training set (read by backprop and ADMM
// Plans). `executor` empty: TaskRunner on a CPU backend the trainer owns. `transport` null:
// the workers are threads of this process. Throws InputError for a Plan the real executor cannot
// train (check_kernels, check_plan_device).
template <typename T>
std::unique_ptr<PlanTrainer<T>> make_plan_trainer(const Plan& plan, const RealSettings& settings,
                                                  const LabelledImages& train,
                                                  const ExecutorFactory<T>& executor = {},
                                                  Transport<T>* transport = nullptr);

}  // namespace strata::real
