// strata_bench_replay: the cost of strata's replay engine against a bare SimGrid program.
//
// Every workload ("case") is replayed twice, each run in a child process of its own
// (bench_common.hpp):
// - strata: strata::replay() on the Plan, default options (collectives aggregated);
// - bare_simgrid: a program written here directly on simgrid::s4u, with no strata code in its
//   timed part, that replays the same activities with the same dependencies. Its activity graph
//   is precomputed before its timer starts: each Plan task (a compute task becomes an Exec of
//   the same duration on the same host, a send a Comm of the same payload between the same
//   hosts, a recv or zero-cost task nothing); each collective expanded into the same flows
//   (strata::expand_collective) with the same extra-latency delays (engine timers); edges: the Plan's data
//   and control dependencies, the flows' own dependencies, and per stream (compute, or comm per
//   communicator as traces/dispatch.hpp numbers them) an edge from the task that held the stream before —
//   read off a recording replay by strata, so that the bare program needs no dispatcher. Like strata it
//   creates each activity from maestro only when its last predecessor completes (DESIGN.md, SimGrid 3.32
//   facts) and counts readiness itself. Both programs must predict the same makespan (checked and printed).
// - bare_timers (the overhead case only): the bare program with each compute task of a worker
//   with a core of its own as an engine timer instead of an Exec, which is what strata's replay does
//   (same result, no host share to solve). strata / bare_timers is what strata's own bookkeeping
//   (dispatcher, cost model, spans, memory, trace, report) costs over the cheapest SimGrid
//   program of the same replay; printed for information.
// Both timers cover engine creation, network configuration, platform load, the simulation and
// the engine's destruction; strata's also covers what replay() adds (placement, dispatcher,
// trace records, report, trace sort).
//
// Cases:
// - LONGER: a pipeline plan, GPT-2 small cut to 8 blocks, pp=8 on 8 hosts, 8 microbatches,
//   1F1B (compute and send/recv only), 2, 20 and 200 iterations (1x, 10x, 100x). The 100x case
//   (368,000 tasks) is the OVERHEAD measurement: replay_overhead_ratio = strata / bare, goal
//   <= 1.5.
// - WIDER: pure data parallelism of a 16-layer fixed-duration model (4 iterations, ring
//   allreduce per layer, aggregated collectives) on 8, 80 and 800 workers of a generated flat
//   cluster of one-GPU hosts.
// Growth: time per task at 10x and 100x over 1x, goal <= 1.5 at 100x, for strata and for the
// bare program (what SimGrid itself costs at that size).
// s4u.hpp first: version.h uses macros (SG_BEGIN_DECL, XBT_PUBLIC) it does not define itself.
#include <simgrid/s4u.hpp>

#include <simgrid/version.h>
#include <xbt/log.h>
#include <simgrid/kernel/Timer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "../sim/sim_fixtures.hpp"
#include "bench_common.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/models/zoo/zoo.hpp"
#include "strata/sim/collectives.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/dispatch.hpp"

namespace strata::bench {
namespace {

namespace sg = simgrid::s4u;

// ---------------------------------------------------------------------------------------------
// Workloads

constexpr int kPipelineStages = 8;
constexpr int kLongerBaseIterations = 2;
constexpr int kWideBaseWorkers = 8;
constexpr int kWideLayers = 16;
constexpr int kWideIterations = 4;
constexpr int kScales[] = {1, 10, 100};

Plan pipeline_plan(int iterations) {
  StrategyConfig c;
  c.pp = kPipelineStages;
  c.microbatches = 8;
  c.schedule = PipelineSchedule::one_f_one_b;
  c.iterations = iterations;
  return lower(make_model("gpt2-small", {{"layers", std::to_string(kPipelineStages)}}), c);
}

// A synthetic model of `layers` fixed layers: 100 µs forward, 200 µs backward, 1 M parameters
// (a 4 MB fp32 gradient allreduce per layer).
Model small_fixed_model(int layers) { return test::fixed_model(layers, 100e-6, 200e-6, 1e6); }

Plan wide_plan(int workers) {
  StrategyConfig c;
  c.dp = workers;
  c.bucket_bytes = 0;
  c.dp_algo = CollectiveAlgo::ring;
  c.iterations = kWideIterations;
  return lower(small_fixed_model(kWideLayers), c);
}

ReplayOptions replay_options(bool keep_trace = true) {
  ReplayOptions options;
  options.collectives = CollectiveMode::aggregated;
  options.keep_trace = keep_trace;
  return options;
}

double makespan_of(const Trace& trace) {
  double makespan = 0;
  for (const TraceRecord& r : trace.records) makespan = std::max(makespan, r.end);
  return makespan;
}

// Child: times strata::replay(): "<wall s> <cpu s> <makespan s or 0 without trace> <flows>".
std::string timed_strata_replay(const Plan& plan, const std::string& platform, bool keep_trace) {
  const ReplayOptions options = replay_options(keep_trace);
  const Stopwatch watch;
  ReplayResult result = replay(plan, platform, options);
  const std::string times = watch.text();
  std::ostringstream out;
  out.precision(17);
  out << times << ' ' << makespan_of(result.trace) << ' ' << result.report.flows;
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// The bare SimGrid program's input, computed before its timer starts

enum class BareKind : std::uint8_t {
  instant,  // completes at once (recv, zero-cost compute, a collective's start and end)
  exec,     // amount: seconds at the host's speed
  comm,     // amount: bytes
  timer,    // amount: route latencies between src and dst (an Exec at 1e-6 of the host's speed)
};

struct BareNode {
  BareKind kind = BareKind::instant;
  std::int32_t src = 0;  // worker (exec: where it runs)
  std::int32_t dst = 0;  // worker
  double amount = 0;
};

struct BarePlan {
  std::vector<BareNode> nodes;
  std::vector<std::uint32_t> succ_begin;  // CSR: successors of n are succ[succ_begin[n] .. succ_begin[n+1])
  std::vector<std::uint32_t> succ;
  std::vector<std::uint32_t> pending;  // predecessors per node
  std::vector<std::uint32_t> roots;    // nodes without predecessors
  std::vector<std::string> host_of_worker;
  double strata_makespan = 0;
};

// Child: replays `plan` with strata and returns what the bare program needs from it:
// "<makespan>\n<host of worker 0> ...\n" then per task "<seconds> <k> <k stream predecessors>\n".
//
// A task holds a stream for a positive time when it is a send, a collective with flows or a
// compute task of positive duration; the others (recvs, zero-cost compute) complete at once.
// Per (worker, stream) the holding tasks run one at a time, so their starts are distinct, and a
// task's stream predecessor is the holding task with the latest start strictly before its own
// (a task that completes at once and starts together with a holding task ran before it).
std::string record_order(const Plan& plan, const std::string& platform) {
  const ReplayOptions options = replay_options();
  ReplayResult result = replay(plan, platform, options);
  const std::size_t n = plan.size();
  std::vector<double> start(n, -1), end(n, -1);
  std::vector<std::string> hosts(static_cast<std::size_t>(plan.num_workers()));
  for (const TraceRecord& r : result.trace.records) {
    const long t = plan.find(r.id);
    if (t < 0) throw std::runtime_error("recording: unknown trace record " + r.id);
    start[static_cast<std::size_t>(t)] = r.start;
    end[static_cast<std::size_t>(t)] = r.end;
    hosts[static_cast<std::size_t>(r.worker)] = r.host;
  }
  for (std::size_t t = 0; t < n; ++t)
    if (start[t] < 0)
      throw std::runtime_error("recording: no record of " + plan.task(static_cast<TaskIndex>(t)).id);
  auto holds_stream = [&](std::size_t t) {
    const TaskKind kind = plan.task(static_cast<TaskIndex>(t)).kind;
    if (kind == TaskKind::send) return true;
    if (kind == TaskKind::recv) return false;
    return end[t] > start[t];
  };
  // The streams as the replay's Dispatcher numbers them (one comm stream per communicator).
  const Dispatcher streams(plan, options.comm_streams);
  auto slots_of = [&](std::size_t t) {
    std::vector<std::size_t> slots;
    const auto task = static_cast<TaskIndex>(t);
    for (std::size_t k = 0; k < plan.task(task).participants().size(); ++k)
      slots.push_back(streams.stream_of(task, k));
    return slots;
  };
  std::vector<std::vector<std::uint32_t>> holding(streams.stream_count());
  for (std::size_t t = 0; t < n; ++t)
    if (holds_stream(t))
      for (std::size_t slot : slots_of(t)) holding[slot].push_back(static_cast<std::uint32_t>(t));
  for (auto& list : holding) {
    std::sort(list.begin(), list.end(), [&](auto a, auto b) { return start[a] < start[b]; });
    for (std::size_t i = 0; i < list.size(); ++i)
      if (!(end[list[i]] > start[list[i]]) || (i > 0 && !(start[list[i]] >= end[list[i - 1]])))
        throw std::runtime_error("recording: tasks of one stream overlap or take no time");
  }
  std::ostringstream out;
  out.precision(17);
  out << makespan_of(result.trace) << '\n';
  for (const auto& h : hosts) out << h << ' ';
  out << '\n';
  std::vector<std::uint32_t> preds;
  for (std::size_t t = 0; t < n; ++t) {
    preds.clear();
    for (std::size_t slot : slots_of(t)) {
      const auto& list = holding[slot];
      auto it = std::lower_bound(list.begin(), list.end(), start[t],
                                 [&](std::uint32_t a, double s) { return start[a] < s; });
      if (it != list.begin()) preds.push_back(*(it - 1));
    }
    out << (end[t] - start[t]) << ' ' << preds.size();
    for (auto p : preds) out << ' ' << p;
    out << '\n';
  }
  return out.str();
}

BarePlan make_bare_plan(const Plan& plan, const std::string& recording) {
  std::istringstream in(recording);
  BarePlan bare;
  in >> bare.strata_makespan;
  const auto workers = static_cast<std::size_t>(plan.num_workers());
  bare.host_of_worker.resize(workers);
  for (auto& h : bare.host_of_worker) in >> h;
  std::vector<int> host_index(workers);  // distinct hosts numbered, for expand_collective
  {
    std::unordered_map<std::string, int> index;
    for (std::size_t w = 0; w < workers; ++w)
      host_index[w] = index.emplace(bare.host_of_worker[w], static_cast<int>(index.size())).first->second;
  }
  const std::size_t n = plan.size();
  bare.nodes.resize(n);                // node t = task t (a collective's start)
  std::vector<std::uint32_t> done(n);  // node that completes task t
  std::vector<std::vector<std::uint32_t>> preds(n);
  auto add_node = [&](BareNode node) {
    bare.nodes.push_back(node);
    preds.emplace_back();
    return static_cast<std::uint32_t>(bare.nodes.size() - 1);
  };
  std::vector<std::vector<std::uint32_t>> stream_preds(n);
  for (std::size_t t = 0; t < n; ++t) {
    const Task& task = plan.task(static_cast<TaskIndex>(t));
    double seconds = 0;
    std::size_t k = 0;
    in >> seconds >> k;
    stream_preds[t].resize(k);
    for (auto& p : stream_preds[t]) in >> p;
    done[t] = static_cast<std::uint32_t>(t);
    BareNode& node = bare.nodes[t];
    node.src = task.worker;
    if (is_collective(task.kind)) {
      const std::vector<Flow> flows = expand_collective(task, CollectiveFidelity::aggregated, host_index);
      if (flows.empty()) continue;
      std::vector<std::uint32_t> flow_done(flows.size());
      for (std::size_t f = 0; f < flows.size(); ++f) {
        const Flow& flow = flows[f];
        const std::uint32_t comm =
            add_node({BareKind::comm, flow.src, flow.dst, std::max(1.0, std::floor(flow.bytes + 0.5))});
        if (flow.deps.empty()) preds[comm].push_back(static_cast<std::uint32_t>(t));
        for (std::uint32_t d : flow.deps) preds[comm].push_back(flow_done[d]);
        flow_done[f] = comm;
        if (flow.extra_latencies > 0) {
          const std::uint32_t timer =
              add_node({BareKind::timer, flow.src, flow.dst, static_cast<double>(flow.extra_latencies)});
          preds[timer].push_back(comm);
          flow_done[f] = timer;
        }
      }
      const std::uint32_t last = add_node({BareKind::instant, 0, 0, 0});
      for (std::uint32_t f : flow_done) preds[last].push_back(f);
      done[t] = last;
    } else if (task.kind == TaskKind::send) {
      node.kind = BareKind::comm;
      node.dst = task.peer;
      node.amount = std::max(1.0, std::floor(task.comm_bytes + 0.5));  // as strata: at least one byte
    } else if (task.kind != TaskKind::recv && seconds > 0) {
      node.kind = BareKind::exec;
      node.amount = seconds;
    }
  }
  if (!in) throw std::runtime_error("recording: truncated");
  for (std::size_t t = 0; t < n; ++t) {
    const Task& task = plan.task(static_cast<TaskIndex>(t));
    for (TaskIndex d : task.data_deps) preds[t].push_back(done[d]);
    for (TaskIndex d : task.control_deps) preds[t].push_back(done[d]);
    for (std::uint32_t p : stream_preds[t]) preds[t].push_back(done[p]);
  }
  const std::size_t nodes = bare.nodes.size();
  bare.pending.resize(nodes);
  std::vector<std::uint32_t> count(nodes + 1, 0);
  for (std::size_t v = 0; v < nodes; ++v) {
    bare.pending[v] = static_cast<std::uint32_t>(preds[v].size());
    for (auto p : preds[v]) ++count[p + 1];
    if (preds[v].empty()) bare.roots.push_back(static_cast<std::uint32_t>(v));
  }
  bare.succ_begin.resize(nodes + 1, 0);
  for (std::size_t v = 0; v < nodes; ++v) bare.succ_begin[v + 1] = bare.succ_begin[v] + count[v + 1];
  bare.succ.resize(bare.succ_begin[nodes]);
  std::vector<std::uint32_t> fill(bare.succ_begin.begin(), bare.succ_begin.end() - 1);
  for (std::size_t v = 0; v < nodes; ++v)
    for (auto p : preds[v]) bare.succ[fill[p]++] = static_cast<std::uint32_t>(v);
  return bare;
}

// ---------------------------------------------------------------------------------------------
// The bare SimGrid program: only simgrid::s4u and the precomputed graph.

class BareReplay {
 public:
  // timer_compute: a compute task of a worker alone on its host is an engine timer, not an Exec.
  BareReplay(const BarePlan& plan, bool timer_compute)
      : plan_(plan), pending_(plan.pending), live_(plan.nodes.size()), timer_compute_(timer_compute) {}

  // Returns the simulated makespan.
  double run(const std::string& platform_path) {
    xbt_log_control_set("root.thresh:critical");
    int argc = 1;
    char name[] = "bare";
    char* argv[] = {name, nullptr};
    double makespan = 0;
    {
      sg::Engine engine(&argc, argv);
      // strata's default network model: LV08, factors 1, no cross traffic, no TCP window.
      sg::Engine::set_config("network/model:LV08");
      sg::Engine::set_config("network/crosstraffic:0");
      sg::Engine::set_config("network/latency-factor:1");
      sg::Engine::set_config("network/bandwidth-factor:1");
      sg::Engine::set_config("network/TCP-gamma:0");
      engine.load_platform(platform_path);
      for (const auto& h : plan_.host_of_worker) hosts_.push_back(sg::Host::by_name(h));
      for (const sg::Host* h : hosts_)
        exclusive_.push_back(timer_compute_ &&
                             std::count(hosts_.begin(), hosts_.end(), h) <= h->get_core_count());
#if SIMGRID_VERSION_MAJOR == 3 && SIMGRID_VERSION_MINOR < 34
      sg::Activity::on_completion_cb([this](const sg::Activity& a) { on_completion(a); });
#else
      sg::Exec::on_completion_cb([this](const sg::Exec& a) { on_completion(a); });
      sg::Comm::on_completion_cb([this](const sg::Comm& a) { on_completion(a); });
#endif
      for (std::uint32_t v : plan_.roots) start(v);
      drain();
      engine.run();
      makespan = sg::Engine::get_clock();
    }
    if (completed_ != plan_.nodes.size()) throw std::runtime_error("bare replay: nodes never started");
    return makespan;
  }

 private:
  // An Exec on the worker's host; with timer_compute, an engine timer when the host has a core
  // for each of its workers (the task then takes exactly its duration), as strata's replay does.
  void start_exec(std::uint32_t v, std::int32_t worker, double seconds) {
    if (exclusive_[static_cast<std::size_t>(worker)]) {
      start_timer(v, seconds);
      return;
    }
    sg::Host* host = hosts_[static_cast<std::size_t>(worker)];
    sg::ExecPtr exec = sg::Exec::init();
    exec->set_host(host);
    exec->set_flops_amount(seconds * host->get_speed());
    exec->set_data(reinterpret_cast<void*>(static_cast<std::uintptr_t>(v)));
    live_[v] = exec;
    exec->start();
  }

  void start_timer(std::uint32_t v, double seconds) {
    simgrid::kernel::timer::Timer::set(sg::Engine::get_clock() + seconds, [this, v] {
      complete(v);
      drain();
    });
  }

  double latency(std::int32_t src, std::int32_t dst) {
    const std::uint64_t key =
        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) | static_cast<std::uint32_t>(dst);
    auto it = latency_.find(key);
    if (it != latency_.end()) return it->second;
    std::vector<sg::Link*> links;
    double lat = 0;
    hosts_[static_cast<std::size_t>(src)]->route_to(hosts_[static_cast<std::size_t>(dst)], links, &lat);
    latency_.emplace(key, lat);
    return lat;
  }

  void start(std::uint32_t v) {
    const BareNode& node = plan_.nodes[v];
    switch (node.kind) {
      case BareKind::instant:
        instant_.push_back(v);
        return;
      case BareKind::exec:
        start_exec(v, node.src, node.amount);
        return;
      case BareKind::timer: {
        const double delay = node.amount * latency(node.src, node.dst);
        if (delay > 0)
          start_timer(v, delay);
        else
          instant_.push_back(v);
        return;
      }
      case BareKind::comm: {
        sg::CommPtr comm = sg::Comm::sendto_init(hosts_[static_cast<std::size_t>(node.src)],
                                                 hosts_[static_cast<std::size_t>(node.dst)]);
        comm->set_payload_size(static_cast<std::uint64_t>(node.amount));
        comm->set_data(reinterpret_cast<void*>(static_cast<std::uintptr_t>(v)));
        live_[v] = comm;
        comm->start();
        return;
      }
    }
  }

  void complete(std::uint32_t v) {
    ++completed_;
    for (std::uint32_t i = plan_.succ_begin[v]; i < plan_.succ_begin[v + 1]; ++i) {
      const std::uint32_t s = plan_.succ[i];
      if (--pending_[s] == 0) start(s);
    }
  }

  void drain() {  // completes instant nodes, which may release more
    while (!instant_.empty()) {
      const std::uint32_t v = instant_.back();
      instant_.pop_back();
      complete(v);
    }
  }

  void on_completion(const sg::Activity& activity) {
    const auto v = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(activity.get_data<void>()));
    sg::ActivityPtr keep = std::move(live_[v]);  // alive until this callback returns
    complete(v);
    drain();
  }

  const BarePlan& plan_;
  std::vector<std::uint32_t> pending_;
  std::vector<sg::ActivityPtr> live_;
  std::vector<sg::Host*> hosts_;
  std::vector<bool> exclusive_;  // per worker: timer_compute, and a core of its own
  bool timer_compute_ = false;
  std::vector<std::uint32_t> instant_;
  std::unordered_map<std::uint64_t, double> latency_;
  std::size_t completed_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Benchmarks

struct Case {
  std::string name;  // e.g. "longer/x100"
  std::string description;
  std::function<Plan()> make_plan;
  std::function<std::string()> make_platform;
  int runs = 1;
  // Filled as the benchmarks run.
  std::unique_ptr<Plan> plan;  // lowered once, dropped after the bare runs
  std::unique_ptr<BarePlan> bare;
  std::string platform;
  std::size_t tasks = 0;
  std::size_t flows = 0;
  double strata_makespan = 0;
  double bare_makespan = 0;
  double bare_timers_makespan = 0;

  const Plan& get_plan() {
    if (!plan) {
      plan = std::make_unique<Plan>(make_plan());
      platform = make_platform();
      tasks = plan->size();
      description = plan->info.model + " " + plan->info.strategy + ", " + description;
    }
    return *plan;
  }
};

std::vector<std::unique_ptr<Case>>& cases() {
  static std::vector<std::unique_ptr<Case>> all;
  return all;
}

Case* find_case(const std::string& name) {
  for (auto& c : cases())
    if (c->name == name) return c.get();
  return nullptr;
}

void bm_strata(benchmark::State& state, Case& c) {
  const Plan& plan = c.get_plan();
  std::istringstream rest(
      run_timed(state, c.name + "/strata", [&] { return timed_strata_replay(plan, c.platform, true); }));
  rest >> c.strata_makespan >> c.flows;
  state.counters["tasks"] = static_cast<double>(c.tasks);
  state.counters["flows"] = static_cast<double>(c.flows);
  state.counters["us_per_task"] = best(c.name + "/strata") / static_cast<double>(c.tasks) * 1e6;
  state.counters["sim_makespan_s"] = c.strata_makespan;
}

// keep_trace = false (the Trace feeds the report, then is dropped, as explore runs replays).
void bm_strata_no_trace(benchmark::State& state, Case& c) {
  const Plan& plan = c.get_plan();
  run_timed(state, c.name + "/strata_keep_trace_false",
            [&] { return timed_strata_replay(plan, c.platform, false); });
  state.counters["tasks"] = static_cast<double>(c.tasks);
  state.counters["us_per_task"] =
      best(c.name + "/strata_keep_trace_false") / static_cast<double>(c.tasks) * 1e6;
}

std::string timed_bare_replay(const BarePlan& bare, const std::string& platform, bool timer_compute) {
  const Stopwatch watch;
  BareReplay engine(bare, timer_compute);  // copies the predecessor counts: readiness state is timed
  const double makespan = engine.run(platform);
  const std::string times = watch.text();
  std::ostringstream out;
  out.precision(17);
  out << times << ' ' << makespan;
  return out.str();
}

const BarePlan& bare_plan_of(Case& c) {
  if (!c.bare) {
    const Plan& plan = c.get_plan();
    c.bare = std::make_unique<BarePlan>(
        make_bare_plan(plan, run_in_child([&] { return record_order(plan, c.platform); })));
  }
  return *c.bare;
}

// Runs before bm_bare, which drops the case's plans.
void bm_bare_timers(benchmark::State& state, Case& c) {
  const BarePlan& bare = bare_plan_of(c);
  std::istringstream rest(
      run_timed(state, c.name + "/bare_timers", [&] { return timed_bare_replay(bare, c.platform, true); }));
  rest >> c.bare_timers_makespan;
  state.counters["tasks"] = static_cast<double>(c.tasks);
  state.counters["us_per_task"] = best(c.name + "/bare_timers") / static_cast<double>(c.tasks) * 1e6;
}

void bm_bare(benchmark::State& state, Case& c) {
  const BarePlan& bare = bare_plan_of(c);
  std::istringstream rest(
      run_timed(state, c.name + "/bare", [&] { return timed_bare_replay(bare, c.platform, false); }));
  rest >> c.bare_makespan;
  if (c.strata_makespan == 0) c.strata_makespan = bare.strata_makespan;
  state.counters["tasks"] = static_cast<double>(c.tasks);
  state.counters["activities"] = static_cast<double>(bare.nodes.size());
  state.counters["us_per_task"] = best(c.name + "/bare") / static_cast<double>(c.tasks) * 1e6;
  state.counters["sim_makespan_s"] = c.bare_makespan;
  c.plan.reset();  // the next cases' plans need the memory
  c.bare.reset();
}

void register_benchmarks() {
  for (int scale : kScales) {
    auto c = std::make_unique<Case>();
    c->name = "longer/x" + std::to_string(scale);
    const int iterations = kLongerBaseIterations * scale;
    c->description = "8 microbatches, 1F1B, " + std::to_string(iterations) + " iterations, 8 one-GPU hosts";
    c->make_plan = [iterations] { return pipeline_plan(iterations); };
    c->make_platform = [] { return flat_platform(kPipelineStages); };
    c->runs = scale == 10 ? 3 : 5;
    cases().push_back(std::move(c));
  }
  for (int scale : kScales) {
    auto c = std::make_unique<Case>();
    c->name = "wider/x" + std::to_string(scale);
    const int workers = kWideBaseWorkers * scale;
    c->description = std::to_string(kWideIterations) + " iterations, ring allreduce per layer, " +
                     std::to_string(workers) + " one-GPU hosts";
    c->make_plan = [workers] { return wide_plan(workers); };
    c->make_platform = [workers] { return flat_platform(workers); };
    c->runs = scale == 1 ? 5 : scale == 10 ? 3 : 2;
    cases().push_back(std::move(c));
  }
  for (auto& owned : cases()) {
    Case* c = owned.get();
    auto reg = [c](const std::string& variant, void (*fn)(benchmark::State&, Case&)) {
      benchmark::RegisterBenchmark(("replay/" + c->name + "/" + variant).c_str(),
                                   [c, fn](benchmark::State& s) { fn(s, *c); })
          ->UseManualTime()
          ->Iterations(c->runs)
          ->Unit(benchmark::kMillisecond);
    };
    reg("strata", bm_strata);
    if (c->name == "longer/x100") {
      reg("strata_keep_trace_false", bm_strata_no_trace);
      reg("bare_simgrid_timers", bm_bare_timers);
    }
    reg("bare_simgrid", bm_bare);
  }
}

std::string verdict(double value, double goal) { return value <= goal ? "met" : "MISSED"; }

// "name = <wall ratio> (goal <= g: met) [CPU-time ratio r]": `scale` divides each time first
// (tasks, for per-task ratios).
void print_ratio(const std::string& label, const std::string& num, double num_scale, const std::string& den,
                 double den_scale, double goal) {
  const double wall = (best(num) / num_scale) / (best(den) / den_scale);
  const double cpu = (best_cpu(num) / num_scale) / (best_cpu(den) / den_scale);
  std::cout << "  " << label << " = " << fixed(wall, 2);
  if (goal > 0) std::cout << " (goal <= " << fixed(goal, 1) << ": " << verdict(wall, goal) << ")";
  std::cout << " [on CPU time: " << fixed(cpu, 2) << "]\n";
}

std::string times(const std::string& key, std::size_t tasks) {
  return fixed(best(key), 3) + " s wall (" + fixed(best_cpu(key), 3) + " s CPU), " +
         fixed(best(key) / static_cast<double>(tasks) * 1e6, 3) + " us/task";
}

std::string makespans_agree(const Case& c) {
  if (c.strata_makespan <= 0 || c.bare_makespan <= 0) return "";
  const bool equal = std::abs(c.strata_makespan - c.bare_makespan) <= 1e-9 * c.strata_makespan;
  return std::string("simulated makespan ") + (equal ? "equal" : "DIFFERS") + ": strata " +
         fixed(c.strata_makespan, 6) + " s, bare " + fixed(c.bare_makespan, 6) + " s";
}

void print_growth(const std::string& family) {
  const Case* base = find_case(family + "/x1");
  if (base == nullptr) return;
  std::cout << family << ":\n";
  for (int scale : kScales) {
    const Case& c = *find_case(family + "/x" + std::to_string(scale));
    if (c.tasks == 0) continue;
    std::cout << "  x" << scale << ": " << c.description << ": " << c.tasks << " tasks, " << c.flows
              << " collective flows\n";
    const std::string s = c.name + "/strata";
    const std::string b = c.name + "/bare";
    if (has_samples(s)) std::cout << "    strata::replay " << times(s, c.tasks) << '\n';
    if (has_samples(b)) std::cout << "    bare SimGrid   " << times(b, c.tasks) << '\n';
    if (!makespans_agree(c).empty()) std::cout << "    " << makespans_agree(c) << '\n';
    if (has_samples(s) && has_samples(b))
      print_ratio("  " + family + "_x" + std::to_string(scale) + "_strata_vs_bare_ratio", s, 1, b, 1, 0);
  }
  for (const char* who : {"strata", "bare"}) {
    const std::string base_key = base->name + "/" + who;
    if (!has_samples(base_key)) continue;
    for (int scale : {10, 100}) {
      const Case& c = *find_case(family + "/x" + std::to_string(scale));
      const std::string key = c.name + "/" + who;
      if (!has_samples(key)) continue;
      print_ratio(family + "_per_task_ratio_" + std::to_string(scale) + "x_vs_1x" +
                      (std::string(who) == "strata" ? "" : "_bare_simgrid"),
                  key, static_cast<double>(c.tasks), base_key, static_cast<double>(base->tasks),
                  scale == 100 ? 1.5 : 0);
    }
  }
}

void print_summary() {
  std::cout << "\n=== strata_bench_replay summary: best of each benchmark's runs; one replay per process, "
               "timed from engine creation to its destruction; ratios on wall time (steady_clock), "
               "CPU time in brackets ===\n";
  if (const Case* c = find_case("longer/x100");
      c && has_samples(c->name + "/strata") && has_samples(c->name + "/bare")) {
    const std::string s = c->name + "/strata";
    const std::string b = c->name + "/bare";
    std::cout << "replay overhead (the longer/x100 case): " << c->description << ", " << c->tasks
              << " tasks\n"
              << "    strata::replay " << times(s, c->tasks) << "\n    bare SimGrid   " << times(b, c->tasks)
              << '\n';
    if (!makespans_agree(*c).empty()) std::cout << "    " << makespans_agree(*c) << '\n';
    print_ratio("replay_overhead_ratio", s, 1, b, 1, 1.5);
    const std::string n = c->name + "/strata_keep_trace_false";
    if (has_samples(n)) {
      std::cout << "    strata::replay with ReplayOptions::keep_trace = false: " << times(n, c->tasks)
                << '\n';
      print_ratio("replay_overhead_ratio_keep_trace_false", n, 1, b, 1, 0);
    }
    const std::string t = c->name + "/bare_timers";
    if (has_samples(t)) {
      std::cout << "    bare SimGrid with compute as engine timers, as strata's replay does: "
                << times(t, c->tasks) << "\n    (simulated makespan " << fixed(c->bare_timers_makespan, 6)
                << " s); strata's own bookkeeping over it:\n";
      print_ratio("replay_bookkeeping_ratio", s, 1, t, 1, 0);
    }
  }
  print_growth("longer");
  print_growth("wider");
  std::cout.flush();
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int status = 0;
  try {
    strata::bench::register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    strata::bench::print_summary();
  } catch (const std::exception& e) {
    std::cerr << "strata_bench_replay: " << e.what() << '\n';
    status = 1;
  }
  benchmark::Shutdown();
  strata::bench::remove_temp();
  return status;
}
