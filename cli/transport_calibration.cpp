// α–β of the real_exec transports, measured by running small send/recv and allreduce Plans
// through the Plan interpreter (real_exec/calibrate.hpp). The MPI transport needs two OpenMPI
// processes: `strata calibrate` starts them with mpirun (real/transport/mpirun.hpp), running `strata
// calibrate --mpi-probe F`, whose rank 0 writes the fitted figures to F.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "real_run.hpp"
#include "strata/real/calibrate/calibrate.hpp"
#include "strata/real/exec/plan_execution.hpp"
#include "strata/real/transport/mpirun.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {

#if STRATA_HAVE_MPI
namespace {

// Runs a Plan over MPI (one worker per process) and returns every task's (start, end), merged
// from the processes; the clocks start together at the run's barrier.
real::PlanTimer mpi_plan_timer(const real::MpiSession& session) {
  return [&session](const Plan& plan) {
    real::CpuBackend backend;
    real::MpiTransport<float> transport(session, plan);
    std::vector<real::TaskTiming> timings;
    {
      const real::PlanExecution<float> execution = real::assemble_execution(
          plan, real::host_executor<float>(backend), transport, real::OptimizerSettings{}, true);
      execution.interpreter->run();  // warm-up
      timings = execution.interpreter->run();
    }
    std::vector<double> flat(2 * timings.size());
    for (std::size_t i = 0; i < timings.size(); ++i)
      flat[2 * i] = timings[i].start, flat[2 * i + 1] = timings[i].end;
    transport.max_over_processes(flat);  // a task's times are 0 where it did not run
    std::vector<std::pair<double, double>> out(timings.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = {flat[2 * i], flat[2 * i + 1]};
    return out;
  };
}

}  // namespace

int run_mpi_probe(const std::string& output) {
  return on_mpi_ranks(2, "probe", "calibrate --mpi-probe", [&](const real::MpiSession& session) {
    const TransportCalibration t =
        real::fit_transport(real::measure_transport("mpi", mpi_plan_timer(session)));
    if (session.rank() == 0) {
      Calibration c = Calibration::defaults();
      c.transports["mpi"] = t;
      write_file_atomically(output, calibration_to_json(c, "mpi probe", ""));
    }
    return 0;
  });
}
#else
int run_mpi_probe(const std::string&) { throw_no_mpi(); }
#endif

TransportCalibration measure_transport_calibration(const std::string& transport) {
  if (transport == "threads")
    return real::fit_transport(real::measure_transport("threads", real::thread_plan_timer()));
  if (transport != "mpi") throw InputError("--transport: unknown '" + transport + "' (threads, mpi)");
#if !STRATA_HAVE_MPI
  throw_no_mpi();
#else
  const std::string out =
      (std::filesystem::temp_directory_path() / ("strata-mpi-probe-" + std::to_string(::getpid()) + ".json"))
          .string();
  const int status = real::run_mpirun(2, real::self_executable(), {"calibrate", "-o", out, "--mpi-probe"});
  if (status != 0) {
    std::filesystem::remove(out);
    throw InputError("--transport mpi: the 2-process MPI measurement failed (mpirun exit status " +
                     std::to_string(status) + ")");
  }
  const Calibration probe = load_calibration(out);
  std::filesystem::remove(out);
  return probe.transports.at("mpi");
#endif
}

}  // namespace strata::cli
