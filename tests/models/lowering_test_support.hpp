// Fixtures of the lowering tests: small models, configurations, id lookups and a run of a Plan
// through the Dispatcher on a virtual clock (a fake executor with unit durations).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace lowering_test {

// "l" + "7" by append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
inline std::string cat(const char* text, int value) {
  return std::string(text).append(std::to_string(value));
}

// `layers` fixed layers, one per block, 1000 parameters each, 100 output and `saved` saved
// elements per sample.
inline Model fixed_model(int layers, double params = 1000, double saved = 100) {
  Model model;
  model.name = cat("fixed", layers);
  model.family = "synthetic";
  model.input_elems = 100;
  for (int i = 0; i < layers; ++i) {
    Layer layer;
    layer.name = cat("l", i);
    layer.op = LayerOp::fixed;
    layer.block = i;
    layer.params = params;
    layer.fixed_fwd_s = 1e-3;
    layer.fixed_bwd_s = 2e-3;
    layer.out_elems = 100;
    layer.saved_elems = saved;
    model.layers.push_back(layer);
  }
  return model;
}

// `layers` 64x64 linear layers, one per block (they have backward-weight tasks).
inline Model linear_model(int layers) {
  Model model;
  model.name = cat("linear", layers);
  model.family = "mlp";
  model.input_elems = 64;
  for (int i = 0; i < layers; ++i) model.layers.push_back(make_linear(cat("fc", i), i, 1, 64, 64));
  return model;
}

inline Model tiny_gpt(int layers = 2) {
  GptConfig config;
  config.layers = layers;
  config.hidden = 64;
  config.heads = 4;
  config.seq = 8;
  config.vocab = 128;
  return make_gpt("tiny-gpt", config);
}

inline StrategyConfig config_of(int dp, int tp, int pp, std::int64_t microbatches = 0) {
  StrategyConfig config;
  config.dp = dp;
  config.tp = tp;
  config.pp = pp;
  config.microbatches = microbatches;
  return config;
}

inline std::string input_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

inline std::size_t count_ids(const Plan& plan, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<std::size_t>(std::count_if(plan.tasks().begin(), plan.tasks().end(),
                                                [&](const Task& t) { return std::regex_match(t.id, re); }));
}

inline TaskIndex index_of(const Plan& plan, const std::string& id) {
  const long i = plan.find(id);
  EXPECT_GE(i, 0) << "no task " << id;
  return static_cast<TaskIndex>(i);
}

inline bool has(const std::vector<TaskIndex>& deps, TaskIndex task) {
  return std::find(deps.begin(), deps.end(), task) != deps.end();
}

struct RunResult {
  bool finished = false;
  double makespan = 0;
  std::vector<double> net_memory;   // sum of mem_alloc - mem_free per worker
  std::vector<double> peak_memory;  // per worker
  int max_in_flight = 0;            // microbatches of worker 0 between first fwd and first bwd
  std::vector<TaskIndex> started;   // every task in start order
};

// The fake executor: every task takes one time unit; memory is allocated at start and freed
// at the end.
inline RunResult run_unit_durations(const Plan& plan) {
  RunResult out;
  const auto workers = static_cast<std::size_t>(plan.num_workers());
  out.net_memory.assign(workers, 0);
  out.peak_memory.assign(workers, 0);
  std::vector<double> live(workers, 0);
  // Microbatches in flight on worker 0 (dp0/pp0/tp0) in iteration 0.
  const std::regex first_fwd(R"(it0/dp0/pp0/tp0/mb\d+/fwd/(\w+))");
  std::string first_layer;
  std::set<TaskIndex> opens, closes;
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    std::smatch m;
    if (first_layer.empty() && std::regex_match(plan.task(i).id, m, first_fwd)) first_layer = m[1];
  }
  for (TaskIndex i = 0; i < plan.size(); ++i) {
    const std::string& id = plan.task(i).id;
    if (id.rfind("it0/dp0/pp0/tp0/mb", 0) != 0) continue;
    if (id.ends_with("/fwd/" + first_layer)) opens.insert(i);
    if (id.ends_with("/bwd/" + first_layer)) closes.insert(i);
  }
  int in_flight = 0;
  Dispatcher dispatcher(plan, CommStreams::per_group);  // the replay's streams
  using Event = std::pair<double, TaskIndex>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> running;
  double now = 0;
  while (true) {
    for (TaskIndex i : dispatcher.take_startable()) {
      const Task& t = plan.task(i);
      for (WorkerId member : t.participants()) {  // a collective's memory on each member, as the replay
        auto w = static_cast<std::size_t>(member);
        live[w] += t.mem_alloc;
        out.peak_memory[w] = std::max(out.peak_memory[w], live[w]);
        out.net_memory[w] += t.mem_alloc - t.mem_free;
      }
      out.started.push_back(i);
      if (opens.count(i)) out.max_in_flight = std::max(out.max_in_flight, ++in_flight);
      running.push({now + 1, i});
    }
    if (running.empty()) break;
    now = running.top().first;
    while (!running.empty() && running.top().first == now) {
      const TaskIndex i = running.top().second;
      running.pop();
      const Task& t = plan.task(i);
      for (WorkerId member : t.participants()) {
        live[static_cast<std::size_t>(member)] -= t.mem_free;
        EXPECT_GE(live[static_cast<std::size_t>(member)], -1e-6) << t.id;
      }
      if (closes.count(i)) --in_flight;
      dispatcher.complete(i);
    }
  }
  out.finished = dispatcher.finished();
  out.makespan = now;
  return out;
}

}  // namespace lowering_test
}  // namespace strata
