// Starting OpenMPI jobs from strata itself: `strata calibrate --transport mpi` measures the MPI
// transport by running a probe of itself under mpirun. Needs only a POSIX system and an
// `mpirun` on PATH at run time, so it builds without MPI.
#pragma once

#include <string>
#include <vector>

namespace strata::real {

// Runs `program args...` as `processes` OpenMPI processes: `mpirun -q --oversubscribe -np N`
// (--oversubscribe: N may exceed the cores; --allow-run-as-root added when running as root, as in
// containers), and waits for it. Returns mpirun's exit status (128 when it did not exit normally).
// Throws InputError when mpirun cannot be started ("cannot start mpirun (install openmpi-bin)").
int run_mpirun(int processes, const std::string& program, const std::vector<std::string>& args);

// The path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace strata::real
