// One data-parallel training iteration on serverless functions as a placed DAG (docs/
// serverless.md), for the simulator to run on a platform's function, store and VM hosts
// (sim/workflow_run.hpp): each of n workers computes its share of the batch, then the workers
// exchange their gradients as LambdaML does (Jiang et al., "Towards Demystifying Serverless
// Machine Learning Training", SIGMOD 2021, section 3):
// - allreduce: every worker PUTs its gradient to the store; the merger (worker 0) GETs the
//   others, sums them and PUTs the sum; every other worker GETs it;
// - scatter_reduce: every worker PUTs n shards of 1/n of its gradient; worker j GETs shard j of
//   the others, sums it and PUTs it; every worker GETs the n − 1 summed shards it lacks;
// - parameter_server: every worker sends its gradient to a server on a VM, which sums them and
//   sends the sum back (no store).
// Each PUT or GET is one transfer between a worker's host and the store host (the store's
// request latency and per-connection bandwidth are the link's, platforms/README.md), and a
// worker's requests go one after another on its one connection, as LambdaML's loops of
// put_object and get_object calls make them; an object in the store is a task of no work on the
// store host, which runs any number of them at once.
// Summing k gradients of g elements is k·g flop on the summing host.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "strata/models/schedule/dag_schedule.hpp"
#include "strata/models/schedule/workflow_problem.hpp"

namespace strata {
inline namespace models {

enum class ServerlessExchange { allreduce, scatter_reduce, parameter_server };
std::string_view to_string(ServerlessExchange exchange);  // allreduce | scatter-reduce | ps

struct ServerlessIteration {
  WorkflowProblem dag;              // the tasks (work in flop), transfers (bytes); root and end
  DagSchedule schedule;             // each task's host (processor = index into the routes' hosts)
  std::vector<char> parallel_host;  // per host: runs its tasks at once (the store)
  double puts = 0, gets = 0;        // store requests of the iteration
};

// `routes`: the platform's hosts (platform_routes). `workers`: the worker hosts; `hub`: the
// store host (allreduce, scatter_reduce) or the server's (parameter_server). `compute_flops`:
// each worker's forward, backward and update, in flop at its host's speed; `gradient_elements`
// and `element_bytes`: the gradient. `server_sum_flops` > 0: the parameter server's sum as that
// much work at its host's speed (the hybrid policy gives the cost model's memory-bound time of
// the sum, as the replay prices it), instead of n·g flop.
ServerlessIteration serverless_iteration(const PlatformRoutes& routes,
                                         const std::vector<std::size_t>& workers, std::size_t hub,
                                         double compute_flops, double gradient_elements, double element_bytes,
                                         ServerlessExchange exchange, double server_sum_flops = 0);

}  // namespace models
}  // namespace strata
