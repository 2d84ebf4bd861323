// The hybrid policy (docs/serverless.md): for a data-parallel training job, which plans on VMs,
// on serverless functions, or on functions with a parameter server on a VM meet a deadline at
// the least cost or a budget in the least time, every candidate simulated on SimGrid.
//
// Candidates on a platform with VMs (worker slots), a function pool and an object store
// (platforms/hybrid-serverless.xml):
// - vm: k VMs (1 to all), one worker per slot; the iteration is the replay of the job's Plan
//   with dp = k · slots, the same global batch.
// - functions: n functions (powers of two up to the pool's instances and concurrency) of m MB,
//   exchanging gradients through the store by LambdaML's allreduce or scatter-reduce; hybrid:
//   the same functions with a parameter server on the first VM, or exchanging through the
//   platform's cache VM (storage_kind=cache) by allreduce or scatter-reduce, rented by the
//   started hour (ElastiCache bills each partial node-hour as a full one). An iteration is each function's
//   compute (the cost model on a host of the function's vCPU share) plus the exchange, run on
//   SimGrid as a placed DAG (models/schedule/serverless_iteration.hpp) over the platform's
//   links: the store's link carries its request latency, a function's its per-connection
//   bandwidth. The compute of every function being equal and before the exchange, the exchange
//   is simulated once per (n, exchange) and the compute added per memory size.
// The job's time: its iterations (epochs × ⌈samples / global batch⌉), for functions also each
// one reading its share of the data from the store, cold starts (seeded draws from the pool's
// distribution: the first invocation's, and a re-invocation's only when the pool keeps no
// instance warm, keep_alive_s = 0, since each is issued as the previous one returns) and, past the pool's
// duration cap, checkpoints of the model and its optimizer state to the store and restores. Money: VM-hours
// at the hosts' price; GB-seconds and requests of the functions (billing of serverless.hpp); PUT and GET
// requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/models/cost/cost_model.hpp"
#include "strata/models/experiment.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
inline namespace sim {

struct HybridJob {
  Experiment experiment;   // model, global batch, epochs, dtype, optimizer, seed
  double samples = 60000;  // training samples per epoch (Fashion-MNIST's 60,000)
  double memory_mb = 0;    // functions of this size only (checked against the pool); 0: a range of sizes
};

struct HybridPlan {
  std::string kind;  // vm | functions | hybrid (functions with a server or cache VM)
  int vms = 0;       // VMs rented (hybrid: the server's)
  int functions = 0;
  double memory_mb = 0;  // per function
  // ring (VMs' replay) | allreduce | scatter-reduce | ps | cache-allreduce | cache-scatter-reduce
  std::string exchange;
  double iteration_s = 0;
  double total_s = 0;  // the whole job, wall-clock
  double cost_usd = 0;
  double vm_usd = 0, gb_s = 0, function_usd = 0, request_usd = 0, storage_usd = 0;
  int invocations = 0;           // per function
  int checkpoints = 0;           // per function
  double cold_start_s = 0;       // waited in all (the first invocation's; re-invocations' when not kept warm)
  bool pareto = false;           // on the time-money front
  std::int64_t gradient_mb = 0;  // the gradient in MB (10^6 B), rounded up: one bucket holds it
  std::string label() const;
};

// Every candidate, sorted by total time (ties: cost, then label). Throws InputError naming the
// platform when it has no VM, no function pool or no store, when the job does not lower, and
// ("--memory: 100 MB is not offered (...)") for a function size the pool does not offer.
std::vector<HybridPlan> hybrid_plans(const HybridJob& job, const std::string& platform,
                                     const NetworkOptions& network, const Calibration& calibration);

}  // namespace sim
}  // namespace strata
