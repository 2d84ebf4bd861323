// Host offload pricing (see host_offload.hpp for the model and its sources).
#include "strata/models/cost/host_offload.hpp"

#include "strata/models/cost/gpu_kernels.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

std::string missing_pcie_bw(const std::string& host_name) {
  return "host " + host_name +
         " has no pcie_bw (the platform host property giving each GPU's link to host memory, B/s)";
}

bool runs_on_host(const Task& task) {
  return task.kind == TaskKind::optimizer_step && task.attr_int("on_host").value_or(0) == 1;
}

double host_copy_time(const Task& task, const HostSpec& host) {
  STRATA_ASSERT(task.kind == TaskKind::host_copy, "host_copy_time of task " + task.id);
  if (!(host.pcie_bw > 0))
    throw InputError(input_error_message("task '" + task.id + "'", "", missing_pcie_bw(host.name)));
  const double bytes = task.bytes_read + task.bytes_written;
  if (bytes <= 0) return 0;  // nothing to copy (a synthetic model's shard): nothing launched
  const double launch = host.gpu != GpuType::none ? gpu_profile(host.gpu).launch_s : 0.0;
  return launch + bytes / host.pcie_bw;
}

double host_optimizer_time(const Task& task) {
  STRATA_ASSERT(runs_on_host(task), "host_optimizer_time of task " + task.id);
  return (task.bytes_read + task.bytes_written) / kHostMemBwPerGpu;
}

}  // namespace models
}  // namespace strata
