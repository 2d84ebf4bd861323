// α–β of the real_exec transports, measured by running small send/recv and allreduce Plans
// through the Plan interpreter (real_exec/calibrate.hpp).
#include "commands.hpp"
#include "strata/real/calibrate.hpp"
#include "strata/traces/error.hpp"

namespace strata::cli {

TransportCalibration measure_transport_calibration(const std::string& transport) {
  if (transport == "threads") return real::fit_transport(real::measure_transport("threads", real::thread_plan_timer()));
  throw InputError("--transport: '" + transport + "' cannot be calibrated in this build (threads)");
}

}  // namespace strata::cli
