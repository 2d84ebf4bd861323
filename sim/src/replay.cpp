#include "strata/sim/replay.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <deque>
#include <unordered_map>

#include "loaded_platform.hpp"
#include "strata/models/cost/host_offload.hpp"
#include "strata/traces/dispatch.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/units.hpp"
#include "symmetry.hpp"

namespace sg = simgrid::s4u;

namespace strata {
inline namespace sim {
namespace {

constexpr double kMaxTransferBytes = 9007199254740992.0;    // 2^53
constexpr double kMaxPayloadBytes = 4611686018427387904.0;  // 2^62

class ReplayEngine {
 public:
  // `server`: the parameter server's host (server_host), -1 without one.
  ReplayEngine(const Plan& plan, LoadedPlatform& platform, const ReplayOptions& options,
               std::vector<int> host_of, CollectiveFidelity fidelity, int server)
      : plan_(plan),
        platform_(platform),
        cost_(options.calibration),
        host_of_(std::move(host_of)),
        store_id_(plan.num_workers()),
        hub_hosts_{platform.store(), platform.cache(), server},
        fidelity_(fidelity),
        dispatcher_(plan, options.comm_streams),
        first_span_(plan.size(), 0),
        live_memory_(static_cast<std::size_t>(plan.num_workers()), 0),
        peak_memory_(static_cast<std::size_t>(plan.num_workers()), 0),
        progress_(options.progress) {
    check_calibration_for_hosts(options.calibration, platform.summary().hosts);
    if (options.cold_starts && platform.pool())
      for (WorkerId w = 0; w < plan.num_workers(); ++w)
        ready_at_.push_back(cold_start_s(*platform.pool(), static_cast<std::uint64_t>(plan.info.seed),
                                         static_cast<std::uint64_t>(w)));
    specs_ = platform.summary().hosts;
    if (plan.info.symmetric_tp > 0)
      inter_host_copies_ =
          static_cast<double>(plan.info.tp_ranks) / static_cast<double>(plan.info.symmetric_tp);
    // On a host whose speed never changes and that has a core for each worker placed on it,
    // a worker's kernels (one at a time) each get one core at full speed: a kernel takes
    // exactly the cost model's time, so it is an engine timer instead of an Exec (same result,
    // no resource share to solve). Hosts with fewer cores than workers, or platforms with
    // speed or state profiles, keep Execs, which share the host as SimGrid's CPU model says.
    std::vector<int> workers_on(specs_.size(), 0);
    for (int h : host_of_) ++workers_on[static_cast<std::size_t>(h)];
    compute_as_timer_.resize(specs_.size(), false);
    self_route_.assign(specs_.size(), -1);
    if (!platform.has_host_profiles())
      for (std::size_t h = 0; h < specs_.size(); ++h)
        compute_as_timer_[h] = workers_on[h] <= platform.host(static_cast<int>(h))->get_core_count();
  }

  void run() {
    sg_compat::on_any_completion([this](const sg::Activity& a) { on_completion(a); });
    pump();
    platform_.engine().run();
    STRATA_ASSERT(dispatcher_.finished(), "replay ended with " +
                                              std::to_string(plan_.size() - dispatcher_.completed()) +
                                              " tasks never started (dependency on a missing task?)");
  }

  const std::vector<Span>& spans() const { return spans_; }
  ReplayFacts facts() const {
    ReplayFacts f;
    f.host_of_worker = host_of_;
    f.peak_dynamic_memory = peak_memory_;
    f.bytes_intra_host = bytes_intra_;
    f.bytes_inter_host = bytes_inter_;
    f.flows = flows_;
    f.collectives = fidelity_ == CollectiveFidelity::step ? "step" : "aggregated";
    return f;
  }

 private:
  struct Handle {
    sg::ActivityPtr keep;  // alive until the completion callback returns (DESIGN.md)
    TaskIndex task;
    std::int32_t flow;  // -1: the task's own activity
  };
  struct CollectiveState {
    std::vector<Flow> flows;
    std::vector<std::vector<std::uint32_t>> successors;
    std::vector<std::uint32_t> pending;
    std::size_t remaining = 0;
  };

  // The host of a worker, or, for the ids from store_id_ on, of the object store, the cache and
  // the parameter server (a hub collective's flows, collectives.hpp).
  int host_index(WorkerId w) const {
    return w >= store_id_ ? hub_hosts_[static_cast<std::size_t>(w - store_id_)]
                          : host_of_[static_cast<std::size_t>(w)];
  }
  // The id a hub collective's flows give its store, cache or server; -1 for other algorithms.
  WorkerId hub_id(CollectiveAlgo algo) const {
    if (is_storage_algo(algo)) return store_id_;
    if (is_cache_algo(algo)) return store_id_ + 1;
    if (algo == CollectiveAlgo::parameter_server) return store_id_ + 2;
    return -1;
  }
  sg::Host* host_of_worker(WorkerId w) const { return platform_.host(host_index(w)); }

  // The bus-bandwidth curves of the links between two workers (hardware.hpp's fabrics): the
  // source host's inside one host, its links to other hosts otherwise.
  const Fabric* fabric_between(WorkerId src, WorkerId dst) const {
    const HostSpec& spec = specs_[static_cast<std::size_t>(host_of_[static_cast<std::size_t>(src)])];
    return host_of_[static_cast<std::size_t>(src)] == host_of_[static_cast<std::size_t>(dst)]
               ? spec.fabric_intra.get()
               : spec.fabric_inter.get();
  }
  // A collective's: inside a host when the whole group is on one, else between hosts.
  const Fabric* group_fabric(const Task& task) const {
    const WorkerId first = task.group.front();
    for (WorkerId w : task.group)
      if (host_of_[static_cast<std::size_t>(w)] != host_of_[static_cast<std::size_t>(first)])
        return fabric_between(first, w);
    return fabric_between(first, first);
  }

  // Whether the platform routes host `h` to itself (a cluster's loopback, a declared route): asked
  // of SimGrid once per host, only for hosts with a transfer to themselves.
  bool has_self_route(int h) {
    auto& known = self_route_[static_cast<std::size_t>(h)];
    if (known < 0) {
      std::vector<simgrid::s4u::Link*> links;
      double latency = 0;
      platform_.host(h)->route_to(platform_.host(h), links, &latency);
      known = !links.empty() || latency > 0 ? 1 : 0;
    }
    return known == 1;
  }

  void pump() {
    for (;;) {
      // Only take_startable() rewrites this vector; starting (even completing) tasks does not.
      const std::vector<TaskIndex>& ready = dispatcher_.take_startable();
      if (ready.empty()) return;
      for (TaskIndex t : ready) start_task(t);
    }
  }

  void start_task(TaskIndex t) {
    const Task& task = plan_.task(t);
    const double now = sg::Engine::get_clock();
    if (!ready_at_.empty()) {  // a cold function: its tasks wait until it has started
      double gate = 0;
      for (WorkerId w : task.participants()) gate = std::max(gate, ready_at_[static_cast<std::size_t>(w)]);
      if (now < gate) {
        sg_compat::at(gate, [this, t] {
          start_task(t);
          pump();
        });
        return;
      }
    }
    // Spans are appended as tasks start, so they come in start-time order (the Trace's order).
    first_span_[t] = spans_.size();
    for (WorkerId w : task.participants()) {
      spans_.push_back(Span{t, w, now, now});
      auto& live = live_memory_[static_cast<std::size_t>(w)];
      live += task.mem_alloc + task.mem_temp;
      peak_memory_[static_cast<std::size_t>(w)] = std::max(peak_memory_[static_cast<std::size_t>(w)], live);
    }
    if (is_collective(task.kind)) {
      start_collective(t);
    } else if (task.kind == TaskKind::send) {
      account_bytes(task.worker, task.peer, task.comm_bytes);
      start_comm(t, -1, task.worker, task.peer,
                 task.comm_bytes /
                     bus_efficiency(fabric_between(task.worker, task.peer), task.kind, task.comm_bytes));
    } else if (task.kind == TaskKind::recv) {
      finish_task(t);  // the matching send carried the transfer
    } else {
      const HostSpec& spec =
          specs_[static_cast<std::size_t>(host_of_[static_cast<std::size_t>(task.worker)])];
      const double seconds = cost_.compute_time(task, spec);
      if (seconds <= 0) {
        finish_task(t);
        return;
      }
      const int host_index = host_of_[static_cast<std::size_t>(task.worker)];
      if (compute_as_timer_[static_cast<std::size_t>(host_index)]) {
        sg_compat::at(now + seconds, [this, t] { timer_done(t, -1); });
        return;
      }
      sg::Host* host = platform_.host(host_index);
      sg::ExecPtr exec = sg::Exec::init();
      exec->set_host(host);
      exec->set_flops_amount(seconds * host->get_speed());
      track(exec, t, -1);
      exec->start();
    }
  }

  void account_bytes(WorkerId src, WorkerId dst, double bytes) {
    if (host_index(src) == host_index(dst))
      bytes_intra_ += bytes;
    else
      bytes_inter_ += bytes;
  }

  // Each started activity carries a pointer to its Handle (SimGrid's per-activity data slot):
  // no lookup table on the hot path. Handles live in a deque (stable addresses) and are reused.
  void track(const sg::ActivityPtr& activity, TaskIndex t, std::int32_t flow) {
    Handle* h = nullptr;
    if (free_handles_.empty()) {
      h = &handles_.emplace_back();
    } else {
      h = free_handles_.back();
      free_handles_.pop_back();
    }
    *h = Handle{activity, t, flow};
    activity->set_data(h);
  }

  void start_comm(TaskIndex t, std::int32_t flow, WorkerId src, WorkerId dst, double bytes) {
    if (const int h = host_index(src); h == host_index(dst) && !has_self_route(h)) {
      // The platform gives this host no route to itself (a Full zone without one): a transfer
      // between two of its workers is a memory copy, each byte read and written once at the
      // host's memory bandwidth (the cost model's elementwise kernel), not a SimGrid comm, which
      // aborts on an empty route.
      Task copy;
      copy.kind = TaskKind::elementwise;
      copy.bytes_read = bytes;
      copy.bytes_written = bytes;
      const double seconds = cost_.compute_time(copy, platform_.spec(h));
      sg_compat::at(sg::Engine::get_clock() + seconds, [this, t, flow] { timer_done(t, flow); });
      return;
    }
    // A tensor-parallel symmetry reduction: a flow between hosts stands for inter_host_copies_
    // alike flows of the ranks left out, which share its links as one flow of their bytes does
    // (max-min sharing scales with them); inside a host (links no flow shares) it is one.
    if (inter_host_copies_ > 1 && host_index(src) != host_index(dst)) bytes *= inter_host_copies_;
    sg::CommPtr comm = sg::Comm::sendto_init(host_of_worker(src), host_of_worker(dst));
    // check_transfer_sizes bounds a task's bytes by 2^53; a flow carries at most twice its task's
    // (an aggregated ring allreduce), over the fabric's efficiency (bus_bandwidth.hpp), which
    // can be tiny for tiny messages: capped at 2^62 B so that the conversion below is defined.
    STRATA_ASSERT(bytes >= 0, "flow of " + std::to_string(bytes) + " B");
    const double payload = std::min(bytes, kMaxPayloadBytes);
    // At least one byte: concurrent zero-byte transfers serialise in SimGrid 3.32.
    comm->set_payload_size(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(payload + 0.5)));
    track(comm, t, flow);
    comm->start();
  }

  // An engine timer completes a compute task (flow -1) or a flow's extra latency terms.
  void timer_done(TaskIndex t, std::int32_t flow) {
    if (flow < 0)
      finish_task(t);
    else
      flow_done(t, static_cast<std::uint32_t>(flow));
    pump();
  }

  void start_collective(TaskIndex t) {
    const Task& task = plan_.task(t);
    CollectiveState state;
    state.flows = expand_collective(task, fidelity_, host_of_, hub_id(task.algo));
    if (state.flows.empty()) {
      finish_task(t);
      return;
    }
    flows_ += state.flows.size();
    state.successors.resize(state.flows.size());
    state.pending.resize(state.flows.size());
    state.remaining = state.flows.size();
    for (std::uint32_t f = 0; f < state.flows.size(); ++f) {
      state.pending[f] = static_cast<std::uint32_t>(state.flows[f].deps.size());
      for (std::uint32_t d : state.flows[f].deps) state.successors[d].push_back(f);
      account_bytes(state.flows[f].src, state.flows[f].dst, state.flows[f].bytes);
    }
    // The wire carries the bytes at the fabric's achieved bus bandwidth for this buffer size: each
    // flow's payload over the efficiency (the accounting above keeps the true bytes).
    if (!is_hub_algo(task.algo)) {
      const double efficiency = bus_efficiency(group_fabric(task), task.kind, task.comm_bytes);
      if (efficiency < 1)
        for (Flow& flow : state.flows) flow.bytes /= efficiency;
    }
    auto& stored = collectives_[t] = std::move(state);
    for (std::uint32_t f = 0; f < stored.flows.size(); ++f)
      if (stored.pending[f] == 0) start_flow(t, f);
  }

  void start_flow(TaskIndex t, std::uint32_t f) {
    const Flow& flow = collectives_[t].flows[f];
    if (flow.merge_bytes > 0) {  // the additions first, an element-wise kernel on the src's host
      Task merge;
      merge.kind = TaskKind::elementwise;
      merge.dtype = plan_.task(t).dtype;
      merge.bytes_read = flow.merge_bytes * 2 / 3;
      merge.bytes_written = flow.merge_bytes / 3;
      const double seconds = cost_.compute_time(merge, platform_.spec(host_index(flow.src)));
      if (seconds > 0) {
        sg_compat::at(sg::Engine::get_clock() + seconds, [this, t, f] {
          const Flow& after = collectives_[t].flows[f];
          start_comm(t, static_cast<std::int32_t>(f), after.src, after.dst, after.bytes);
        });
        return;
      }
    }
    start_comm(t, static_cast<std::int32_t>(f), flow.src, flow.dst, flow.bytes);
  }

  void flow_done(TaskIndex t, std::uint32_t f) {
    CollectiveState& state = collectives_[t];
    for (std::uint32_t s : state.successors[f])
      if (--state.pending[s] == 0) start_flow(t, s);
    if (--state.remaining == 0) {
      collectives_.erase(t);
      finish_task(t);
    }
  }

  void on_completion(const sg::Activity& activity) {
    auto* slot = activity.get_data<Handle>();
    if (slot == nullptr) return;
    Handle handle = std::move(*slot);  // keeps the activity alive through this callback
    slot->keep = nullptr;
    free_handles_.push_back(slot);
    const TaskIndex t = handle.task;
    if (handle.flow < 0) {
      finish_task(t);
    } else {
      const auto f = static_cast<std::uint32_t>(handle.flow);
      const Flow& flow = collectives_[t].flows[f];
      if (flow.extra_latencies > 0) {
        const double delay =
            flow.extra_latencies * platform_.latency(host_index(flow.src), host_index(flow.dst));
        if (delay > 0) {
          sg_compat::at(sg::Engine::get_clock() + delay, [this, t, f = handle.flow] { timer_done(t, f); });
          return;
        }
      }
      flow_done(t, f);
    }
    pump();
  }

  void finish_task(TaskIndex t) {
    const Task& task = plan_.task(t);
    const double now = sg::Engine::get_clock();
    std::size_t span = first_span_[t];
    for (WorkerId w : task.participants()) {
      live_memory_[static_cast<std::size_t>(w)] -= task.mem_free + task.mem_temp;
      spans_[span++].end = now;
    }
    dispatcher_.complete(t);
    if (progress_ && dispatcher_.completed() >= next_progress_) {
      progress_(dispatcher_.completed(), plan_.size(), now);
      next_progress_ = dispatcher_.completed() + std::max<std::size_t>(1, plan_.size() / 100);
    }
  }

  const Plan& plan_;
  LoadedPlatform& platform_;
  CostModel cost_;
  std::vector<int> host_of_;
  std::vector<double> ready_at_;  // per worker: when its function has started (cold starts); empty: at 0
  WorkerId store_id_;             // the object store's id in storage collectives' flows: num_workers
  std::array<int, 3> hub_hosts_;  // the hosts of ids store_id_, + 1 (cache), + 2 (server); -1: none
  CollectiveFidelity fidelity_;
  Dispatcher dispatcher_;
  std::vector<HostSpec> specs_;
  std::vector<bool> compute_as_timer_;   // per host: a core per worker, constant speed
  std::vector<std::int8_t> self_route_;  // per host: 1 routed to itself, 0 not, -1 not asked yet
  std::vector<std::size_t> first_span_;  // per task: its first span in spans_
  std::vector<double> live_memory_;
  std::vector<double> peak_memory_;
  std::deque<Handle> handles_;
  std::vector<Handle*> free_handles_;
  std::unordered_map<TaskIndex, CollectiveState> collectives_;
  std::vector<Span> spans_;
  double bytes_intra_ = 0;
  double bytes_inter_ = 0;
  double inter_host_copies_ = 1;  // flows a flow between hosts stands for (PlanInfo::symmetric_tp)
  std::size_t flows_ = 0;
  std::function<void(std::size_t, std::size_t, double)> progress_;
  std::size_t next_progress_ = 0;
};

// Every transfer's size is a whole number of bytes SimGrid takes as a 64-bit integer; strata
// refuses sizes above 2^53 B (9.007e15 B, 9 PB in one message: no real transfer), the largest
// a double holds exactly, so that the conversion never overflows (undefined behaviour).
void check_transfer_sizes(const Plan& plan) {
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::send && !is_collective(t.kind)) continue;
    if (t.comm_bytes >= 0 && t.comm_bytes <= kMaxTransferBytes) continue;
    char figure[32];
    std::snprintf(figure, sizeof figure, "%g B", t.comm_bytes);
    throw InputError(input_error_message("plan", "task '" + t.id + "'",
                                         std::string(figure) + " to transfer" +
                                             (t.comm_bytes < 0 || t.comm_bytes != t.comm_bytes
                                                  ? " is not a size"
                                                  : " is above 2^53 B (9.007e15 B), the largest transfer "
                                                    "the simulator takes")));
  }
}

// A host_copy crosses its worker's host link: every host that runs one must give pcie_bw, checked
// before the replay starts (one line naming the task, the host and the property).
void check_host_links(const Plan& plan, const PlatformSummary& platform, const std::vector<int>& host_of) {
  for (const Task& t : plan.tasks()) {
    if (t.kind != TaskKind::host_copy) continue;
    const HostSpec& host =
        platform.hosts[static_cast<std::size_t>(host_of[static_cast<std::size_t>(t.worker)])];
    if (!(host.pcie_bw > 0))
      throw InputError(input_error_message("plan", "task '" + t.id + "'", missing_pcie_bw(host.name)));
  }
}

// A parameter server's host: the platform's first VM when the workers run in functions, else
// the first host of worker slots that holds no worker; -1 when every one does.
int server_host(const LoadedPlatform& platform, const std::vector<int>& host_of) {
  if (platform.server() >= 0) return platform.server();
  std::vector<char> used(platform.summary().hosts.size(), 0);
  for (int h : host_of) used[static_cast<std::size_t>(h)] = 1;
  const auto free = std::find(used.begin(), used.end(), 0);
  return free == used.end() ? -1 : static_cast<int>(free - used.begin());
}

// A collective through an object store, a cache or a parameter server (dp_algo=storage_*,
// cache_*, parameter_server) needs that host in the platform.
void check_hubs(const Plan& plan, const LoadedPlatform& platform, int server) {
  for (const Task& t : plan.tasks()) {
    if (!is_collective(t.kind) || !is_hub_algo(t.algo)) continue;
    const char* missing = is_storage_algo(t.algo) && platform.store() < 0
                              ? "an object store (a host with storage_connection_bw, platforms/README.md)"
                          : is_cache_algo(t.algo) && platform.cache() < 0
                              ? "a cache VM (a store host with storage_kind=cache, platforms/README.md)"
                          : t.algo == CollectiveAlgo::parameter_server && server < 0
                              ? "a host for the parameter server (a VM that runs no worker)"
                              : nullptr;
    if (missing != nullptr)
      throw InputError(input_error_message(
          platform.summary().path, "",
          "task '" + t.id + "' goes through " + std::string(to_string(t.algo)) + " and the platform has no " +
              std::string(missing).substr(std::string(missing).find(' ') + 1)));
  }
}

CollectiveFidelity choose_fidelity(const Plan& plan, const ReplayOptions& options,
                                   const std::vector<int>& host_of) {
  if (options.collectives == CollectiveMode::step) return CollectiveFidelity::step;
  if (options.collectives == CollectiveMode::aggregated) return CollectiveFidelity::aggregated;
  // A symmetry reduction chooses as the whole Plan would: its flows stand for dp / symmetric
  // replicas' each.
  const std::size_t scale =
      plan.info.symmetric_replicas > 0
          ? static_cast<std::size_t>(plan.info.dp_replicas / plan.info.symmetric_replicas)
      : plan.info.symmetric_tp > 0 ? static_cast<std::size_t>(plan.info.tp_ranks / plan.info.symmetric_tp)
                                   : 1;
  std::size_t flows = 0;
  for (const Task& t : plan.tasks())
    if (is_collective(t.kind)) {
      flows += step_flow_count(t, host_of) * scale;
      if (flows > options.auto_step_flow_limit) return CollectiveFidelity::aggregated;
    }
  return CollectiveFidelity::step;
}

}  // namespace

CollectiveMode parse_collective_mode(const std::string& text) {
  if (text == "auto") return CollectiveMode::automatic;
  if (text == "step") return CollectiveMode::step;
  if (text == "aggregated") return CollectiveMode::aggregated;
  throw InputError("--collectives: unknown fidelity '" + text + "' (known: auto, step, aggregated)");
}

std::string NetworkOptions::describe() const {
  return model + (simgrid_factors ? " (SimGrid factors, cross traffic)" : " (factors 1, no cross traffic)");
}

PlatformSummary load_platform_summary(const std::string& platform_path, const NetworkOptions& network,
                                      double function_memory_mb) {
  LoadedPlatform platform(platform_path, network_config(network), LoadedPlatform::Verify::yes,
                          function_memory_mb);
  return platform.summary();
}

void check_platform(const std::string& platform_path, const NetworkOptions& network) {
  verify_platform(platform_path, network_config(network));
}

namespace {

// A Plan that trains a GCN full-graph (backprop or GIST on --model gcn) holds the whole graph on
// every worker: the nodes' input features and the adjacency (an index and a value per neighbour
// entry: spmm's nnz). A graph larger than all of the platform's device memory together cannot be
// trained that way on it at all, whatever the placement: refused in one line. (One that fits the
// platform but not a worker is replayed, and its report says it does not fit.)
void check_graph_fits(const Plan& plan, const PlatformSummary& platform) {
  if (!plan.info.trains_graph()) return;
  double total = 0;
  for (const HostSpec& h : platform.hosts) {
    if (h.gpu_memory <= 0) return;  // unknown capacity: not judged
    total += h.gpu_memory * h.slots;
  }
  const double nodes = static_cast<double>(plan.info.graph_nodes);
  const SolverParameters& p = plan.info.parameters;
  const bool split = p.graph_parts > 1;
  // Split over parts (graph_step.hpp): the parts together hold the graph once per sub-GCN.
  double nnz = split ? 2 * static_cast<double>(p.graph_edges) + nodes : 0;
  for (const Task& t : plan.tasks())
    if (!split && t.kind == TaskKind::spmm) nnz = std::max(nnz, t.attr_real("nnz").value_or(0));
  const double elem = bytes_per_element(plan.info.dtype);
  const double copies = split ? static_cast<double>(std::max<std::int64_t>(1, p.subnets)) : 1;
  const double bytes = nodes * static_cast<double>(plan.info.input_elements) * elem + nnz * (4 + elem);
  if (bytes * copies <= total) return;
  char text[320];
  const std::string solver(to_string(plan.info.solver));
  if (split)
    std::snprintf(
        text, sizeof text,
        "a graph of %.4g nodes and %.4g neighbour entries needs %s for each of its %.0f copies, split in "
        "parts (--solver %s), more than the %s of device memory all %d worker slots hold together",
        nodes, nnz, format_bytes(bytes).c_str(), copies, solver.c_str(), format_bytes(total).c_str(),
        platform.total_slots());
  else
    std::snprintf(
        text, sizeof text,
        "a graph of %.4g nodes and %.4g neighbour entries needs %s on every worker to train full-graph "
        "(--solver %s), more than the %s of device memory all %d worker slots hold together",
        nodes, nnz, format_bytes(bytes).c_str(), solver.c_str(), format_bytes(total).c_str(),
        platform.total_slots());
  throw InputError(platform.path + ": " + text);
}

}  // namespace

namespace {

// The replay of `plan` on the loaded platform with its workers on `host_of`.
ReplayResult replay_placed(const Plan& plan, LoadedPlatform& platform, const std::string& platform_path,
                           const ReplayOptions& options, std::vector<int> host_of) {
  const int server = server_host(platform, host_of);
  check_hubs(plan, platform, server);
  check_host_links(plan, platform.summary(), host_of);
  check_graph_fits(plan, platform.summary());
  const CollectiveFidelity fidelity = choose_fidelity(plan, options, host_of);
  ReplayEngine engine(plan, platform, options, host_of, fidelity, server);
  engine.run();
  ReplayResult result;
  ReplayFacts facts = engine.facts();
  facts.network = options.network.describe();
  result.report = make_report(plan, engine.spans(), platform.summary(), facts);
  if (options.keep_trace) result.trace = make_trace(plan, engine.spans(), platform.summary(), host_of);
  result.trace.executor = "sim";
  result.trace.source = plan.info.model + " " + plan.info.strategy + " on " + platform_path;
  return result;
}

}  // namespace

ReplayResult replay(const Plan& plan, const std::string& platform_path, const ReplayOptions& options) {
  check_transfer_sizes(plan);
  LoadedPlatform platform(platform_path, network_config(options.network), LoadedPlatform::Verify::yes,
                          plan.function_memory_mb);
  std::vector<int> host_of = place_workers(platform.summary(), plan.num_workers(),
                                           options.placement.empty() ? plan.placement : options.placement);
  return replay_placed(plan, platform, platform_path, options, std::move(host_of));
}

SymmetryMode parse_symmetry_mode(const std::string& text) {
  if (text == "auto") return SymmetryMode::automatic;
  if (text == "off") return SymmetryMode::off;
  throw InputError("--symmetry: unknown mode '" + text + "' (known: auto, off)");
}

namespace {

// The replay of a configuration's Plan, `lower_with(symmetric replicas, symmetric tp ranks)` (0,
// 0: the whole Plan), with a symmetry reduction where options, what the configuration alone rules
// out (`refused`: of its replicas, `tp_refused`: of its tensor-parallel ranks) and the platform
// allow one: of the replicas first, else of the ranks.
ReplayResult replay_reducible(const std::function<Plan(int, int)>& lower_with, const std::string& refused,
                              const std::string& tp_refused, int dp, int tp, int workers,
                              const std::string& platform_path, const ReplayOptions& options) {
  const std::string off = options.symmetry == SymmetryMode::off ? "--symmetry off"
                          : !options.placement.empty()          ? "an explicit placement"
                                                                : "";
  const std::string why = off.empty() ? refused : off;
  const std::string why_tp = off.empty() ? tp_refused : off;
  auto unreduced = [&](const std::string& reason) {
    return dp > 1 ? "none (" + reason + "): every replica replayed" : std::string();
  };
  if (!why.empty() && !why_tp.empty()) {
    const Plan plan = lower_with(0, 0);
    ReplayResult result = replay(plan, platform_path, options);
    result.report.symmetry = unreduced(why);
    return result;
  }
  // The platform is loaded once per process: the choice and the replay share it.
  LoadedPlatform platform(platform_path, network_config(options.network), LoadedPlatform::Verify::yes, 0);
  std::vector<int> host_of = place_workers(platform.summary(), workers);
  SymmetryChoice choice;
  choice.reason = why;
  if (why.empty()) choice = choose_symmetry(dp, platform, host_of);
  SymmetryChoice tp_choice;
  if (choice.replicas == 0 && why_tp.empty()) tp_choice = choose_tp_symmetry(tp, platform, host_of);
  const Plan plan = lower_with(choice.replicas, tp_choice.replicas);
  check_transfer_sizes(plan);
  ReplayResult result = replay_placed(plan, platform, platform_path, options, std::move(host_of));
  if (choice.replicas > 0)
    result.report.symmetry = std::to_string(choice.replicas) + " of " + std::to_string(dp) +
                             " data-parallel replicas replayed, each standing for " +
                             std::to_string(dp / choice.replicas);
  else if (tp_choice.replicas > 0)
    result.report.symmetry = std::to_string(tp_choice.replicas) + " of " + std::to_string(tp) +
                             " tensor-parallel ranks of each stage replayed, each standing for " +
                             std::to_string(tp / tp_choice.replicas);
  else
    result.report.symmetry = unreduced(choice.reason);
  return result;
}

}  // namespace

ReplayResult replay_experiment(const Experiment& experiment, const std::string& platform_path,
                               const ReplayOptions& options) {
  const Model model = model_of(experiment);
  const StrategyConfig config = strategy_of(experiment, model);
  return replay_reducible([&](int replicas, int ranks) { return lower(experiment, replicas, ranks); },
                          symmetry_refused(model, config, experiment.solver.solver),
                          tp_symmetry_refused(config, experiment.solver.solver), config.dp, config.tp,
                          config.workers(), platform_path, options);
}

ReplayResult replay_strategy(const Model& model, const StrategyConfig& config,
                             const std::string& platform_path, const ReplayOptions& options) {
  return replay_reducible(
      [&](int replicas, int ranks) {
        try {
          return lower(model, with_symmetric_tp(with_symmetric_replicas(config, replicas), ranks));
        } catch (const InputError& e) {
          throw LoweringRefused(e.what());
        }
      },
      symmetry_refused(model, config, Solver::backprop), tp_symmetry_refused(config, Solver::backprop),
      config.dp, config.tp, config.workers(), platform_path, options);
}

}  // namespace sim
}  // namespace strata
