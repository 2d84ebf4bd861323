// One data-parallel iteration on serverless functions as a placed DAG (serverless_iteration.hpp).
#include "strata/models/schedule/serverless_iteration.hpp"

#include <utility>

namespace strata {
inline namespace models {

std::string_view to_string(ServerlessExchange exchange) {
  switch (exchange) {
    case ServerlessExchange::allreduce:
      return "allreduce";
    case ServerlessExchange::scatter_reduce:
      return "scatter-reduce";
    case ServerlessExchange::parameter_server:
      return "ps";
  }
  return "?";
}

ServerlessIteration serverless_iteration(const PlatformRoutes& routes,
                                         const std::vector<std::size_t>& workers, std::size_t hub,
                                         double compute_flops, double gradient_elements, double element_bytes,
                                         ServerlessExchange exchange, double server_sum_flops) {
  ServerlessIteration out;
  DagProblem& p = out.dag.problem;
  p.processors = routes.hosts.size();
  p.latency = routes.latency;
  p.bandwidth = routes.bandwidth;
  p.speed = routes.speed;
  out.parallel_host.assign(routes.hosts.size(), 0);
  out.parallel_host[hub] = exchange != ServerlessExchange::parameter_server ? 1 : 0;
  std::vector<std::size_t> host;  // per task
  auto task = [&](const std::string& id, double work, std::size_t on) {
    p.tasks.push_back({id, {}, work});
    host.push_back(on);
    return p.tasks.size() - 1;
  };
  auto edge = [&](std::size_t from, std::size_t to, double bytes) {
    p.edges.push_back({from, to, bytes, false});
  };
  const std::size_t n = workers.size();
  const double gradient = gradient_elements * element_bytes;
  std::vector<std::size_t> compute(n), done(n);
  out.dag.root = task("root", 0, workers[0]);
  for (std::size_t i = 0; i < n; ++i) {
    compute[i] = task("w" + std::to_string(i) + "/compute", compute_flops, workers[i]);
    p.edges.push_back({out.dag.root, compute[i], 0, true});
  }
  // A worker's requests go one after another on its one connection, as LambdaML's loops of
  // put_object and get_object calls do: each waits for the worker's previous one to complete.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> previous(n, kNone);  // per worker: the task marking its last request's end
  auto after_previous = [&](std::size_t i, std::size_t t) {
    if (previous[i] != kNone) p.edges.push_back({previous[i], t, 0, true});
  };
  // Worker i PUTs `bytes` once `ready` (a task of worker i) is done: the object, on the store.
  auto put = [&](std::size_t i, std::size_t ready, double bytes, const std::string& name) {
    const std::size_t issue = task("w" + std::to_string(i) + "/put/" + name, 0, workers[i]);
    p.edges.push_back({ready, issue, 0, true});
    after_previous(i, issue);
    const std::size_t object = task("store/" + name, 0, hub);
    edge(issue, object, bytes);
    previous[i] = object;
    out.puts += 1;
    return object;
  };
  // Worker i GETs `object` (`bytes`) once it exists: the task on worker i that has it.
  auto get = [&](std::size_t i, std::size_t object, double bytes, const std::string& name) {
    const std::size_t serve = task("store/serve/" + name + "/w" + std::to_string(i), 0, hub);
    p.edges.push_back({object, serve, 0, true});
    after_previous(i, serve);
    const std::size_t got = task("w" + std::to_string(i) + "/get/" + name, 0, workers[i]);
    edge(serve, got, bytes);
    previous[i] = got;
    out.gets += 1;
    return got;
  };
  if (exchange == ServerlessExchange::allreduce) {
    // PUT every gradient; the merger GETs the others, sums, PUTs; the others GET the sum.
    std::vector<std::size_t> object(n);
    for (std::size_t i = 0; i < n; ++i) object[i] = put(i, compute[i], gradient, "g" + std::to_string(i));
    const std::size_t sum = task("w0/sum", static_cast<double>(n) * gradient_elements, workers[0]);
    p.edges.push_back({compute[0], sum, 0, true});
    for (std::size_t i = 1; i < n; ++i)
      p.edges.push_back({get(0, object[i], gradient, "g" + std::to_string(i)), sum, 0, true});
    const std::size_t merged = put(0, sum, gradient, "sum");
    done[0] = merged;
    for (std::size_t i = 1; i < n; ++i) done[i] = get(i, merged, gradient, "sum");
  } else if (exchange == ServerlessExchange::scatter_reduce) {
    const double shard = gradient / static_cast<double>(n);
    // piece[i][j]: worker i's shard j in the store.
    std::vector<std::vector<std::size_t>> piece(n, std::vector<std::size_t>(n, kNone));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j)
          piece[i][j] = put(i, compute[i], shard, "g" + std::to_string(i) + "/s" + std::to_string(j));
    std::vector<std::size_t> summed(n);
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t sum = task("w" + std::to_string(j) + "/sum", gradient_elements, workers[j]);
      p.edges.push_back({compute[j], sum, 0, true});
      for (std::size_t i = 0; i < n; ++i)
        if (i != j)
          p.edges.push_back(
              {get(j, piece[i][j], shard, "g" + std::to_string(i) + "/s" + std::to_string(j)), sum, 0, true});
      summed[j] = put(j, sum, shard, "s" + std::to_string(j));
    }
    for (std::size_t i = 0; i < n; ++i) {
      done[i] = summed[i];
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) done[i] = get(i, summed[j], shard, "s" + std::to_string(j));
    }
  } else {
    const std::size_t sum = task(
        "ps/sum", server_sum_flops > 0 ? server_sum_flops : static_cast<double>(n) * gradient_elements, hub);
    for (std::size_t i = 0; i < n; ++i) edge(compute[i], sum, gradient);
    for (std::size_t i = 0; i < n; ++i) {
      done[i] = task("w" + std::to_string(i) + "/pull", 0, workers[i]);
      edge(sum, done[i], gradient);
    }
  }
  out.dag.end = task("end", 0, workers[0]);
  for (std::size_t i = 0; i < n; ++i) p.edges.push_back({done[i], out.dag.end, 0, true});
  // The schedule: every task on its host, in the order built (a topological one).
  out.schedule.policy = SchedulePolicy::strategy;
  for (std::size_t t = 0; t < p.tasks.size(); ++t) {
    out.schedule.slots.push_back({host[t], static_cast<double>(t), static_cast<double>(t)});
    out.schedule.order.push_back(t);
  }
  return out;
}

}  // namespace models
}  // namespace strata
