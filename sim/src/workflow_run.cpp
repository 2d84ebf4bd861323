// Workflow runs on SimGrid (workflow_run.hpp).
#include "strata/sim/workflow_run.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "loaded_platform.hpp"
#include "platform_check.hpp"
#include "strata/sim/process.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace sim {
namespace {

namespace s4u = simgrid::s4u;

// The DAG as SimGrid activities, in the order SimGrid's DAX loader lists them: root, the jobs,
// the transfers, end (the order breaks Min-Min's ties).
struct ActivityDag {
  const DagProblem& p;
  std::vector<s4u::ExecPtr> exec;      // per task
  std::vector<s4u::CommPtr> comm;      // per transfer
  std::vector<std::size_t> comm_from;  // the task each transfer leaves
  std::map<const s4u::Activity*, std::size_t> task_of;
  std::vector<double> finish;  // per task, once it has finished
  std::vector<double> start;   // per task, once it has finished

  ActivityDag(const WorkflowProblem& wp)
      : p(wp.problem), finish(wp.problem.tasks.size(), -1), start(wp.problem.tasks.size(), -1) {
    for (std::size_t t = 0; t < p.tasks.size(); ++t) {
      exec.push_back(s4u::Exec::init());
      exec.back()->set_name(p.tasks[t].id)->set_flops_amount(p.tasks[t].work);
      task_of[exec.back().get()] = t;
    }
    std::set<std::pair<std::size_t, std::size_t>> ordered;
    for (const DagEdge& e : p.edges) {
      if (e.control) {
        if (ordered.insert({e.from, e.to}).second) exec[e.from]->add_successor(exec[e.to]);
        continue;
      }
      comm.push_back(s4u::Comm::sendto_init());
      comm.back()->set_name(p.tasks[e.from].id + "->" + p.tasks[e.to].id)->set_payload_size(e.data);
      exec[e.from]->add_successor(comm.back());
      comm.back()->add_successor(exec[e.to]);
      comm_from.push_back(e.from);
    }
    s4u::Activity::on_completion_cb([this](const s4u::Activity& a) {
      auto it = task_of.find(&a);
      if (it == task_of.end()) return;
      finish[it->second] = a.get_finish_time();
      start[it->second] = a.get_start_time();
    });
  }
  // Activities in the loader's order: root, jobs, transfers, end.
  std::vector<s4u::Activity*> in_order(const WorkflowProblem& wp) const {
    std::vector<s4u::Activity*> out{exec[wp.root].get()};
    for (std::size_t t = 0; t < p.tasks.size(); ++t)
      if (t != wp.root && t != wp.end) out.push_back(exec[t].get());
    for (const s4u::CommPtr& c : comm) out.push_back(c.get());
    out.push_back(exec[wp.end].get());
    return out;
  }
  // Exec b must wait for a, unless a dependency already joins them.
  static void chain(const s4u::ExecPtr& a, const s4u::ExecPtr& b) {
    const auto& succ = a->get_successors();
    if (std::find(succ.begin(), succ.end(), b) != succ.end()) return;
    if (a->get_dependencies().count(b) != 0) return;
    a->add_successor(b);
  }
};

std::string to_text(const WorkflowRun& run) {
  nlohmann::json j = {{"makespan", run.makespan_s}, {"steps", nlohmann::json::array()}};
  for (const WorkflowStep& s : run.steps)
    j["steps"].push_back({s.task, s.host, s.decided_s, s.estimate_s, s.start_s, s.finish_s});
  return j.dump();
}

WorkflowRun from_text(const std::string& text, const std::string& source) {
  const nlohmann::json j = parse_json_text(text, source);
  WorkflowRun run;
  run.makespan_s = j.at("makespan").get<double>();
  for (const nlohmann::json& s : j.at("steps"))
    run.steps.push_back({s[0].get<std::string>(), s[1].get<std::string>(), s[2].get<double>(),
                         s[3].get<double>(), s[4].get<double>(), s[5].get<double>()});
  return run;
}

void fill_times(WorkflowRun& run, const ActivityDag& dag, const std::vector<std::size_t>& task_of_step) {
  for (std::size_t k = 0; k < run.steps.size(); ++k) {
    run.steps[k].start_s = dag.start[task_of_step[k]];
    run.steps[k].finish_s = dag.finish[task_of_step[k]];
  }
}

// Route latency and slowest link (SimGrid 3.32's sg_host_get_route_latency and _bandwidth).
struct RouteFigures {
  double latency = 0;
  double bandwidth = -1;  // -1 on a route with no link, as SimGrid's function returns
};

// Loads the platform in a child process, builds the DAG's activities, lets `drive` place and
// run them, and returns the run: its clock at the end and each placed task's times.
template <typename Drive>
WorkflowRun simulate_workflow(const WorkflowProblem& wp, const std::string& platform_path,
                              const NetworkOptions& network, Drive drive) {
  check_platform_file(platform_path);
  const std::string text = run_in_quiet_child(
      [&] {
        const std::unique_ptr<s4u::Engine> engine =
            load_platform_engine(platform_path, network_config(network));
        ActivityDag dag(wp);
        WorkflowRun run;
        std::vector<std::size_t> task_of_step;
        drive(*engine, dag, run, task_of_step);
        run.makespan_s = engine->get_clock();
        fill_times(run, dag, task_of_step);
        return to_text(run);
      },
      platform_path + ": SimGrid cannot run this workflow");
  return from_text(text, platform_path);
}

}  // namespace

WorkflowRun run_workflow_schedule(const WorkflowProblem& wp, const DagSchedule& schedule,
                                  const std::string& platform_path, const NetworkOptions& network,
                                  const std::vector<char>& parallel_host) {
  return simulate_workflow(
      wp, platform_path, network,
      [&](s4u::Engine& engine, ActivityDag& dag, WorkflowRun& run, std::vector<std::size_t>& task_of_step) {
        const std::vector<s4u::Host*> hosts = natural_hosts(engine);
        std::vector<s4u::ExecPtr> last(hosts.size());
        // The schedule's order on each host: by start, then the order it placed them.
        std::vector<std::size_t> order = schedule.order;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
          return schedule.slots[x].start < schedule.slots[y].start;
        });
        for (std::size_t t : order) {
          const std::size_t q = schedule.slots[t].processor;
          dag.exec[t]->set_host(hosts[q]);
          const bool parallel = q < parallel_host.size() && parallel_host[q] != 0;
          if (last[q] && !parallel) ActivityDag::chain(last[q], dag.exec[t]);
          last[q] = dag.exec[t];
        }
        for (std::size_t c = 0; c < dag.comm.size(); ++c) {
          const s4u::ActivityPtr& to = dag.comm[c]->get_successors().front();
          dag.comm[c]->set_source(hosts[schedule.slots[dag.comm_from[c]].processor]);
          dag.comm[c]->set_destination(hosts[schedule.slots[dag.task_of.at(to.get())].processor]);
        }
        for (std::size_t t : schedule.order) {
          run.steps.push_back({wp.problem.tasks[t].id, hosts[schedule.slots[t].processor]->get_name(), 0,
                               schedule.slots[t].finish, 0, 0});
          task_of_step.push_back(t);
        }
        for (s4u::Activity* a : dag.in_order(wp))
          if (dynamic_cast<s4u::Exec*>(a) != nullptr) a->vetoable_start();
        engine.run();
      });
}

WorkflowRun run_workflow_online_minmin(const WorkflowProblem& wp, const std::string& platform_path,
                                       const NetworkOptions& network) {
  return simulate_workflow(
      wp, platform_path, network,
      [&](s4u::Engine& engine, ActivityDag& dag, WorkflowRun& run, std::vector<std::size_t>& task_of_step) {
        const std::vector<s4u::Host*> hosts = engine.get_all_hosts();  // SimGrid's order breaks ties
        std::set<s4u::Activity*> vetoed;
        engine.track_vetoed_activities(&vetoed);
        const std::vector<s4u::Activity*> activities = dag.in_order(wp);
        std::map<const s4u::Activity*, std::size_t> comm_index;
        for (std::size_t c = 0; c < dag.comm.size(); ++c) comm_index[dag.comm[c].get()] = c;
        std::map<std::pair<const s4u::Host*, const s4u::Host*>, RouteFigures> routes;
        auto route = [&](const s4u::Host* from, const s4u::Host* to) {
          auto [it, fresh] = routes.try_emplace({from, to});
          if (fresh) {
            std::vector<s4u::Link*> links;
            from->route_to(to, links, &it->second.latency);
            for (const s4u::Link* l : links)
              if (it->second.bandwidth < 0 || l->get_bandwidth() < it->second.bandwidth)
                it->second.bandwidth = l->get_bandwidth();
          }
          return it->second;
        };
        std::vector<double> free_at(hosts.size(), 0);
        std::vector<s4u::ExecPtr> last(hosts.size());

        // The earliest finish of exec t on host h, as the example estimates it.
        auto finish_on = [&](std::size_t t, std::size_t h) {
          double last_data = -1;
          for (const s4u::ActivityPtr& parent : dag.exec[t]->get_dependencies()) {
            double available = 0;
            if (const auto* c = dynamic_cast<const s4u::Comm*>(parent.get())) {
              double redistribution = 0;
              if (c->get_remaining() > 1e-6) {
                const RouteFigures r = route(c->get_source(), hosts[h]);
                redistribution = r.latency + c->get_remaining() / r.bandwidth;
              }
              available = dag.finish[dag.comm_from[comm_index.at(c)]] + redistribution;
            } else {
              available = dag.finish[dag.task_of.at(parent.get())];
            }
            last_data = std::max(last_data, available);
          }
          return std::max(free_at[h], last_data) + dag.exec[t]->get_remaining() / hosts[h]->get_speed();
        };
        auto best_host = [&](std::size_t t, double& best) {
          std::size_t where = 0;
          best = finish_on(t, 0);
          for (std::size_t h = 0; h < hosts.size(); ++h) {
            const double f = finish_on(t, h);
            if (f < best) best = f, where = h;
          }
          return where;
        };
        auto place = [&](std::size_t t, std::size_t h, double estimate) {
          const s4u::ExecPtr& e = dag.exec[t];
          e->set_host(hosts[h]);
          for (const s4u::ActivityPtr& pred : e->get_dependencies())
            if (auto* c = dynamic_cast<s4u::Comm*>(pred.get())) c->set_destination(hosts[h]);
          for (const s4u::ActivityPtr& succ : e->get_successors())
            if (auto* c = dynamic_cast<s4u::Comm*>(succ.get())) c->set_source(hosts[h]);
          // The host runs one task at a time: the new one waits for the last one placed there.
          if (const s4u::ExecPtr& before = last[h]; before &&
                                                    before->get_state() != s4u::Activity::State::FINISHED &&
                                                    before->get_state() != s4u::Activity::State::FAILED)
            ActivityDag::chain(before, e);
          last[h] = e;
          free_at[h] = estimate;
          run.steps.push_back(
              {wp.problem.tasks[t].id, hosts[h]->get_name(), engine.get_clock(), estimate, 0, 0});
          task_of_step.push_back(t);
        };
        for (s4u::Activity* a : activities)
          if (dynamic_cast<s4u::Exec*>(a) != nullptr) a->vetoable_start();
        double root_estimate = 0;
        place(wp.root, best_host(wp.root, root_estimate), 0);
        engine.run();
        while (!vetoed.empty()) {
          // Ready: unplaced tasks with no dependency left, and those whose every dependency is a
          // sent-from transfer still waiting for its destination.
          std::vector<std::size_t> ready;
          std::map<std::size_t, std::size_t> waiting_inputs;
          for (s4u::Activity* a : activities) {
            if (!a->dependencies_solved() || a->is_assigned()) continue;
            if (auto it = dag.task_of.find(a); it != dag.task_of.end()) {
              ready.push_back(it->second);
            } else {
              const std::size_t next = dag.task_of.at(a->get_successors().front().get());
              if (++waiting_inputs[next] == dag.exec[next]->get_dependencies().size()) ready.push_back(next);
            }
          }
          vetoed.clear();
          if (ready.empty()) {
            engine.run();
            continue;
          }
          double soonest = std::numeric_limits<double>::max();
          std::size_t pick = ready.front(), where = 0;
          for (std::size_t t : ready) {
            double f = 0;
            const std::size_t h = best_host(t, f);
            if (f < soonest) soonest = f, pick = t, where = h;
          }
          place(pick, where, soonest);
          engine.run();
        }
        engine.track_vetoed_activities(nullptr);
      });
}

}  // namespace sim
}  // namespace strata
