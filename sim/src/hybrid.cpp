// The hybrid policy's candidates, simulated (hybrid.hpp).
#include "strata/sim/hybrid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "strata/models/cost/memory_model.hpp"
#include "strata/models/cost/serverless.hpp"
#include "strata/models/schedule/serverless_iteration.hpp"
#include "strata/sim/explore.hpp"
#include "strata/sim/platform.hpp"
#include "strata/sim/workflow_run.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace sim {
namespace {

// Memory sizes tried: one vCPU-equivalent and its multiples (AWS: 1,769 MB each), Lambda's
// former 3,008 MB cap and its 10,240 MB maximum; those the pool offers.
constexpr double kMemorySizes[] = {1769, 3008, 3538, 5307, 7076, 10240};

// EC2 bills Linux instances per second with a minimum of 60 seconds ("Amazon EC2 On-Demand
// Pricing", per-second billing).
constexpr double kVmMinimumBilledS = 60;

constexpr int kMostScatterReduce = 64;

double compute_time(const Plan& plan, const HostSpec& host, const CostModel& cost) {
  double t = 0;
  for (const Task& task : plan.tasks())
    if (!is_communication(task.kind)) t += cost.compute_time(task, host);
  return t;
}

double replay_iteration(const Experiment& e, const std::string& platform, const NetworkOptions& network,
                        const Calibration& calibration) {
  ReplayOptions options;
  options.network = network;
  options.calibration = calibration;
  options.collectives = CollectiveMode::aggregated;
  return replay_report_apart(lower(e), platform, options).iteration_time_s;
}

std::size_t index_of(const PlatformRoutes& routes, const std::string& host, const std::string& platform) {
  const auto it = std::find(routes.hosts.begin(), routes.hosts.end(), host);
  if (it == routes.hosts.end()) throw InputError(input_error_message(platform, "", "no host '" + host + "'"));
  return static_cast<std::size_t>(it - routes.hosts.begin());
}

}  // namespace

std::string HybridPlan::label() const {
  if (kind == "vm") return std::to_string(vms) + " VM" + (vms == 1 ? "" : "s");
  return std::to_string(functions) + " x " + format_number(memory_mb) + " MB, " + exchange +
         (kind == "hybrid" ? " on 1 VM" : "");
}

std::vector<HybridPlan> hybrid_plans(const HybridJob& job, const std::string& platform,
                                     const NetworkOptions& network, const Calibration& calibration) {
  const ServerlessResources res = serverless_resources(platform);
  const PlatformSummary vms = load_platform_summary_apart(platform, network);
  if (!res.pool)
    throw InputError(input_error_message(platform, "", "no function pool (a host with function_memory_mb)"));
  if (!res.store)
    throw InputError(
        input_error_message(platform, "", "no object store (a host with storage_connection_bw)"));
  if (vms.hosts.empty())
    throw InputError(input_error_message(platform, "", "no VM (a host with worker slots)"));
  const FunctionPool& pool = *res.pool;
  const ObjectStore& store = *res.store;
  const PlatformRoutes routes = platform_routes(platform);
  const CostModel cost(calibration);

  const Experiment& e = job.experiment;
  const Plan whole = lower(e);
  const Model model = model_of(e);
  double params = 0;
  for (const Layer& l : model.layers) params += l.params;
  const double element = bytes_per_element(whole.info.dtype);
  const double state_bytes = params * bytes_per_param(e.optimizer, whole.info.dtype).total();
  const double batch = static_cast<double>(whole.info.global_batch);
  const double iterations = e.epochs * std::ceil(job.samples / batch);
  const double sample_bytes = static_cast<double>(whole.info.input_elements) * 4;  // fp32 inputs

  // A function's host: the pool's instance, read as a function of the smallest size offered and
  // brought back to one vCPU, scaled to each size (function_host_spec), as the replay does.
  HostSpec instance = load_platform_summary_apart(platform, network, pool.memory_mb.front()).hosts.front();
  const double smallest = vcpus(pool, pool.memory_mb.front());
  for (double* f : {&instance.flops_fp32, &instance.flops_bf16, &instance.flops_fp16, &instance.flops_fp64,
                    &instance.mem_bw})
    *f /= smallest;

  std::vector<double> sizes;  // the function sizes tried
  if (job.memory_mb > 0) {
    check_memory_offered(pool, job.memory_mb, "--memory");
    sizes.push_back(job.memory_mb);
  } else {
    for (double memory : kMemorySizes)
      if (memory_offered(pool, memory)) sizes.push_back(memory);
  }

  std::vector<HybridPlan> plans;
  // All VMs: the Plan replayed with one worker per slot of the first k VMs.
  const int slots = vms.hosts.front().slots;
  for (std::size_t k = 1; k <= vms.hosts.size(); ++k) {
    Experiment v = e;
    v.dp = static_cast<int>(k) * slots, v.tp = 1, v.pp = 1;
    v.global_batch = whole.info.global_batch, v.microbatches = 0;
    HybridPlan p;
    p.kind = "vm", p.vms = static_cast<int>(k), p.exchange = "ring";
    try {
      p.iteration_s = replay_iteration(v, platform, network, calibration);
    } catch (const InputError&) {
      continue;  // the batch does not split over this many workers
    }
    p.total_s = iterations * p.iteration_s;
    p.vm_usd = static_cast<double>(k) * vms.hosts.front().price_per_hour *
               std::max(p.total_s, kVmMinimumBilledS) / 3600;
    p.cost_usd = p.vm_usd;
    plans.push_back(p);
  }

  // Functions, alone, through the cache VM, or with a parameter server on the first VM.
  std::vector<std::size_t> fn;
  for (const std::string& h : res.function_hosts) fn.push_back(index_of(routes, h, platform));
  const std::size_t store_host = index_of(routes, res.store_host, platform);
  const std::size_t cache_host = res.cache ? index_of(routes, res.cache_host, platform) : store_host;
  const std::size_t server = index_of(routes, vms.hosts.front().name, platform);
  const int most = std::min({res.instances, pool.concurrency, static_cast<int>(batch)});
  std::uint64_t draws = 0;
  for (int n = 1; n <= most; n *= 2) {
    const std::vector<std::size_t> workers(fn.begin(), fn.begin() + n);
    // The exchange alone (no compute), simulated once per (n, exchange).
    struct Exchange {
      std::string name;
      bool server = false, cache = false;
      double seconds = 0, puts = 0, gets = 0;  // per iteration (the store's or the cache's)
    };
    std::vector<Exchange> exchanges;
    // Through the store, to the server, and (when the platform has one) through the cache.
    struct Channel {
      ServerlessExchange x;
      bool cache;
    };
    std::vector<Channel> channels = {{ServerlessExchange::allreduce, false},
                                     {ServerlessExchange::scatter_reduce, false},
                                     {ServerlessExchange::parameter_server, false}};
    if (res.cache) {
      channels.push_back({ServerlessExchange::allreduce, true});
      channels.push_back({ServerlessExchange::scatter_reduce, true});
    }
    for (const Channel& c : channels) {
      if (n == 1 && (c.x != ServerlessExchange::allreduce || c.cache)) continue;
      // Scatter-reduce makes n (n - 1) PUTs and twice as many GETs an iteration; past 64
      // functions SimGrid 3.32's per-completion scan of its activity list makes the run
      // quadratic in them (docs/simulator.md), so larger pools exchange by allreduce and PS.
      if (c.x == ServerlessExchange::scatter_reduce && n > kMostScatterReduce) continue;
      const bool to_server = c.x == ServerlessExchange::parameter_server;
      const std::size_t hub = to_server ? server : c.cache ? cache_host : store_host;
      // The server's sum as the replay prices it: n - 1 additions of the gradient, an
      // element-wise kernel on the VM (collectives.cpp), as work at its speed.
      Task sum;
      sum.kind = TaskKind::elementwise;
      sum.dtype = whole.info.dtype;
      sum.bytes_read = 2 * params * element * (n - 1);
      sum.bytes_written = params * element * (n - 1);
      const double server_sum = cost.compute_time(sum, vms.hosts.front()) * routes.speed[server];
      const ServerlessIteration it =
          serverless_iteration(routes, workers, hub, 0, params, element, c.x, to_server ? server_sum : 0);
      Exchange ex{(c.cache ? "cache-" : "") + std::string(to_string(c.x)),
                  to_server,
                  c.cache,
                  0,
                  n > 1 ? it.puts : 0,
                  n > 1 ? it.gets : 0};
      if (n > 1)
        ex.seconds =
            run_workflow_schedule(it.dag, it.schedule, platform, network, it.parallel_host).makespan_s;
      exchanges.push_back(ex);
    }
    Experiment f = e;
    f.dp = 1, f.tp = 1, f.pp = 1;
    f.global_batch = static_cast<std::int64_t>(std::ceil(batch / n));
    f.microbatches = 0;
    const Plan share = lower(f);
    for (double memory : sizes) {
      const HostSpec host = function_host_spec(instance, pool, memory);
      const double compute = compute_time(share, host, cost);
      for (const Exchange& x : exchanges) {
        HybridPlan p;
        p.kind = x.server || x.cache ? "hybrid" : "functions";
        p.gradient_mb = static_cast<std::int64_t>(std::ceil(params * element / 1e6));
        p.vms = x.server || x.cache ? 1 : 0;
        p.functions = n, p.memory_mb = memory, p.exchange = x.name;
        p.iteration_s = compute + x.seconds;
        const double load = storage_transfer_s(store, job.samples / n * sample_bytes, 1, 1);
        const double work = load + iterations * p.iteration_s;
        const double state = storage_transfer_s(store, state_bytes, 1, 1);
        const Invocations inv = split_into_invocations(pool, work, state, state);
        p.invocations = inv.invocations, p.checkpoints = inv.checkpoints;
        // Each re-invocation is issued as the previous one returns (gap 0): warm within the
        // pool's keep-alive, so only the first waits a cold start unless keep_alive_s is 0.
        for (int k = 0; k < cold_invocations(pool, inv.invocations, 0); ++k)
          p.cold_start_s += cold_start_s(pool, static_cast<std::uint64_t>(e.seed), draws++);
        p.total_s = inv.billed_s + p.cold_start_s;
        for (double d : inv.durations_s) p.gb_s += gb_seconds(pool, n, memory, d);
        p.function_usd = p.gb_s * pool.price_per_gb_s;
        p.request_usd = static_cast<double>(n) * inv.invocations * pool.price_per_request;
        // The exchange's requests go to the store (priced per request) or to the cache (rented
        // by the hour); data, checkpoints and restores always to the store.
        const double puts = (x.cache ? 0 : iterations * x.puts) + n * inv.checkpoints;
        const double gets = (x.cache ? 0 : iterations * x.gets) + n * (1 + inv.checkpoints);
        p.storage_usd = puts * store.price_per_put + gets * store.price_per_get;
        if (p.vms > 0)
          p.vm_usd = vms.hosts.front().price_per_hour * std::max(p.total_s, kVmMinimumBilledS) / 3600;
        if (x.cache) p.vm_usd = res.cache->price_per_hour * std::ceil(p.total_s / 3600 - 1e-12);
        p.cost_usd = p.function_usd + p.request_usd + p.storage_usd + p.vm_usd;
        plans.push_back(p);
      }
    }
  }
  std::sort(plans.begin(), plans.end(), [](const HybridPlan& a, const HybridPlan& b) {
    return std::tie(a.total_s, a.cost_usd) < std::tie(b.total_s, b.cost_usd) ||
           (a.total_s == b.total_s && a.cost_usd == b.cost_usd && a.label() < b.label());
  });
  double cheapest = std::numeric_limits<double>::infinity();
  for (HybridPlan& p : plans)
    if (p.cost_usd < cheapest) p.pareto = true, cheapest = p.cost_usd;
  return plans;
}

}  // namespace sim
}  // namespace strata
