// Host offload: the optimizer work a GPU hands to its host (ZeRO-Offload, Ren et al., USENIX
// ATC'21, sections 4-5), and what it costs. Shared by the closed-form estimate
// (analytical.cpp's optimizer_s) and the cost model that prices a lowered Plan's tasks, so the
// two agree by construction:
//   - a `host_copy` task moves its payload (bytes_read: device to host, bytes_written: host to
//     device) over the host's `pcie_bw` (HostSpec::pcie_bw, one GPU's link to host memory) after
//     one kernel launch of the GPU type (0 on a host without a GPU type);
//   - an `optimizer_step` with attr `on_host` = 1 streams its bytes (bytes_read + bytes_written,
//     in host memory) at kHostMemBwPerGpu: CPU Adam is memory-bound.
// Both are lower bounds (peak link and memory figures); docs/cost-model.md lists the sources.
#pragma once

#include <string>

#include "strata/models/cost/hardware.hpp"
#include "strata/traces/task.hpp"

namespace strata {
inline namespace models {

// ZeRO-Offload's step on the host (Ren et al., USENIX ATC'21, section 4): CPU Adam reads the
// fp32 master weights, momentum and variance and the 16-bit gradient and writes the first three
// and the 16-bit weights: (12 + 2) + (12 + 2) = 28 B per parameter, memory-bound.
inline constexpr double kHostAdamBytesPerParam = 28;
// Host memory bandwidth per GPU: a DGX A100 has two AMD EPYC 7742 (NVIDIA DGX A100 datasheet),
// each with 8 channels of DDR4-3200, 204.8 GB/s (AMD EPYC 7742 product page): 409.6 GB/s for 8
// GPUs, 51.2 GB/s each (a peak: the host step is a lower bound).
inline constexpr double kHostMemBwPerGpu = 409.6e9 / 8;

// "host <name> has no pcie_bw (...)": what a task or an estimate that crosses the host link
// says when the platform does not give the link's bandwidth.
std::string missing_pcie_bw(const std::string& host_name);

// Whether the task runs on the host's CPU (an optimizer step with attr on_host = 1).
bool runs_on_host(const Task& task);

// Seconds of a host_copy task on `host`. Throws InputError (missing_pcie_bw) when the host has
// no pcie_bw. REQUIRES: task.kind == host_copy.
double host_copy_time(const Task& task, const HostSpec& host);

// Seconds of an optimizer step on the host's CPU. REQUIRES: runs_on_host(task).
double host_optimizer_time(const Task& task);

}  // namespace models
}  // namespace strata
