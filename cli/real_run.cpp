#include "real_run.hpp"

#if STRATA_HAVE_MPI
#include <mpi.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "commands.hpp"
#include "strata/models/lowering/strategy.hpp"
#include "strata/real/exec/task_runner.hpp"
#if STRATA_HAVE_CUDA
#include "strata/real/exec/cuda_module.hpp"
#endif
#include "strata/traces/error.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata::cli {

namespace {

// The Trainer runs a backprop Plan's one iteration once per batch; ADMM Plans (their sweeps) and
// GCN Plans (their rounds) run theirs whole.
void check_iterations(const Plan& plan, const std::string& source) {
  if (is_admm(plan.info.solver) || plan.info.trains_graph() || plan.num_iterations() == 1) return;
  throw InputError(input_error_message(
      source, "",
      "a backprop Plan of " + std::to_string(plan.num_iterations()) +
          " iterations: run and validate train a one-iteration Plan once per batch (--epochs sets how many); "
          "lower it with --iterations 1"));
}

}  // namespace

Plan plan_to_run(const CommonFlags& flags, const std::string& plan_path) {
  if (!plan_path.empty()) {
    Plan plan = read_plan(plan_path, true);  // unplaced tasks: --schedule-policy places them
    real::check_kernels(plan, plan_path);
    check_iterations(plan, plan_path);
    return plan;
  }
  return plan_to_run(experiment_of(flags, kRunBatchPerWorker));
}

Plan plan_to_run(const Experiment& experiment) {
  Plan plan = lower(experiment);
  real::check_kernels(plan, "plan of " + experiment.model);
  check_iterations(plan, "--iterations");
  return plan;
}

real::OptimizerSettings plan_optimizer(const CommonFlags& flags, const Plan& plan) {
  Experiment e;
  e.model = plan.info.model;
  e.optimizer = *parse_optimizer(flags.optimizer);
  for (const std::string& pair : flags.sets) {
    const SetKey* key = nullptr;
    for (const SetKey& k : set_keys())
      if (k.name == pair.substr(0, pair.find('='))) key = &k;
    if (key != nullptr && key->section == SetSection::optimizer) apply_set(e, pair);
  }
  real::OptimizerSettings s;
  s.kind = e.optimizer;
  s.learning_rate = e.learning_rate.value_or(default_learning_rate(e.optimizer, plan.info.trains_graph()));
  s.momentum = e.momentum;
  s.adam = e.adam;
  return s;
}

void check_transport(const std::string& transport) {
  if (transport != "threads" && transport != "mpi")
    throw InputError("--transport: '" + transport + "' is not a transport (threads, mpi)");
}

void check_device(const std::string& device, const std::string& transport) {
  if (device == "cpu") return;
  if (device != "cuda") throw InputError("--device: '" + device + "' is not a device (cpu, cuda)");
#if STRATA_HAVE_CUDA
  if (real::load_cuda_module().device_count() < 1)
    throw InputError("--device cuda: no CUDA GPU is visible to this process");
  if (transport != "threads")
    throw InputError(
        "--device cuda: every worker runs as streams of GPU 0 in this process; use --transport threads");
#else
  (void)transport;
  throw InputError(
      "--device cuda: this build of strata has no CUDA backend (install the CUDA toolkit and rebuild)");
#endif
}

template <typename T>
real::ExecutorFactory<T> executor_for(const std::string& device, real::Backend& cpu) {
#if STRATA_HAVE_CUDA
  if (device == "cuda") return real::load_cuda_module().executor<T>(0);
#endif
  STRATA_ASSERT(device == "cpu", "device " + device + " was not checked");
  return real::host_executor<T>(cpu);
}
template real::ExecutorFactory<float> executor_for<float>(const std::string&, real::Backend&);
template real::ExecutorFactory<double> executor_for<double>(const std::string&, real::Backend&);

void throw_no_mpi() {
  throw InputError("--transport mpi: this build of strata has no MPI (install libopenmpi-dev and rebuild)");
}

#if STRATA_HAVE_MPI
int on_mpi_ranks(int processes, const std::string& what, const std::string& command,
                 const std::function<int(const real::MpiSession&)>& work) {
  real::MpiSession session;
  if (processes > 0 && session.size() != processes) {
    if (session.rank() == 0)
      std::fprintf(stderr,
                   "strata: error: --transport mpi: world size %d does not match the %s's %d workers "
                   "(run mpirun -np %d strata %s ...)\n",
                   session.size(), what.c_str(), processes, processes, command.c_str());
    return 1;
  }
  try {
    return work(session);
  } catch (const InputError& e) {
    std::fprintf(stderr, "strata: error: rank %d: %s\n", session.rank(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: internal error: rank %d: %s\n", session.rank(), e.what());
  }
  std::fflush(stderr);
  session.abort(1);
}
#endif

#if STRATA_HAVE_MPI
// explore's sharding over the ranks of an MPI job: texts travel as bytes on MPI_COMM_WORLD.
namespace {

ExploreShards mpi_shards(const real::MpiSession& session) {
  ExploreShards shards;
  shards.rank = session.rank();
  shards.size = session.size();
  shards.broadcast = [](const std::string& text) {
    unsigned long long size = text.size();
    MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    std::string out = text;
    out.resize(size);
    if (size > static_cast<unsigned long long>(INT_MAX)) throw InputError("explore: a broadcast above 2 GB");
    MPI_Bcast(out.data(), static_cast<int>(size), MPI_CHAR, 0, MPI_COMM_WORLD);
    return out;
  };
  shards.all_gather = [ranks = session.size()](const std::string& mine) {
    const int size = static_cast<int>(mine.size());
    if (mine.size() > static_cast<std::size_t>(INT_MAX))
      throw InputError("explore: a rank's results above 2 GB");
    std::vector<int> sizes(static_cast<std::size_t>(ranks)), offsets(static_cast<std::size_t>(ranks));
    MPI_Allgather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    long long total = 0;
    for (int r = 0; r < ranks; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += sizes[static_cast<std::size_t>(r)];
      if (total > INT_MAX) throw InputError("explore: the ranks' results above 2 GB");
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), size, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR,
                   MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int r = 0; r < ranks; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)])));
    return out;
  };
  return shards;
}

}  // namespace

int explore_over_mpi(const std::function<int(const ExploreShards&)>& sweep) {
  return on_mpi_ranks(0, "sweep", "explore",
                      [&](const real::MpiSession& session) { return sweep(mpi_shards(session)); });
}
#endif

}  // namespace strata::cli
