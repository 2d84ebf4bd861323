// Offloaded optimizer (--set offload=1, ZeRO-Offload: Ren et al., USENIX ATC'21, sections 4-5):
// each worker's optimizer step becomes three tasks on its compute stream, where the GPU step was:
//   .../opt/d2h  host_copy, to_host = 1: the reduced gradient shard (shard x 16-bit) to the host;
//   .../opt      optimizer_step, on_host = 1: CPU Adam over the shard in host memory
//                (kHostAdamBytesPerParam B per parameter, host_offload.hpp; no GPU FLOPs);
//   .../opt/h2d  host_copy, to_host = 0: the updated 16-bit parameter shard back to the weights.
// The chain is wired where the step was: d2h after the worker's buckets (what the GPU step
// awaited), and what awaited the step (ZeRO-1/2 parameter all-gathers, ZeRO-3 gathers, the next
// iteration's forwards) awaits h2d. The `opt/state` buffer lives in host memory (Buffer::on_host):
// the device keeps only its weights and gradients, as the memory model counts.
#include <string>

#include "lowering_builder.hpp"
#include "strata/models/cost/host_offload.hpp"

namespace strata {
inline namespace models {
namespace lowering {

void PlanBuilder::create_offloaded_optimizer(int it, int d, int s, int t, const std::string& id) {
  const StrategyConfig& config = *layout_.config;
  const WorkerId rank = layout_.rank(d, s, t);
  const WorkerBuffers& b = buffers_[static_cast<std::size_t>(rank)];
  WorkerTasks& w = tasks_[static_cast<std::size_t>(rank)];
  const double shard = stage(s).params / shards(1);
  // A synthetic model's step costs nothing, as optimizer_step_task prices it.
  const double cost_params = layout_.model->family == "synthetic" ? 0.0 : shard;
  const double shard_bytes = cost_params * bytes_per_element(config.dtype);
  auto task = [&](TaskKind kind, const std::string& name) {
    Task x;
    x.id = id + name;
    x.kind = kind;
    x.stream = Stream::compute;
    x.worker = layout_.worker(rank);
    x.dtype = config.dtype;
    x.iteration = it;
    x.priority = layout_.optimizer_priority(it);
    return x;
  };
  Task d2h = task(TaskKind::host_copy, "/d2h");
  d2h.attrs["to_host"] = std::int64_t{1};
  d2h.bytes_read = shard_bytes;
  Task step = task(TaskKind::optimizer_step, "");
  step.attrs["on_host"] = std::int64_t{1};
  step.attrs["params"] = shard;
  step.attrs["optimizer"] = std::string(to_string(config.optimizer));
  step.bytes_read = step.bytes_written = cost_params * kHostAdamBytesPerParam / 2;
  Task h2d = task(TaskKind::host_copy, "/h2d");
  h2d.attrs["to_host"] = std::int64_t{0};
  h2d.bytes_written = shard_bytes;
  for (std::size_t k = 0; k < b.wgrad.size(); ++k)
    if (b.wgrad[k] != kNoBuffer) {
      d2h.reads.push_back(b.wgrad[k]);
      h2d.writes.push_back(b.weight[k]);
    }
  d2h.writes = step.reads = step.writes = h2d.reads = {b.opt};
  w.opt_first = plan_.add_task(std::move(d2h));
  const TaskIndex host_step = plan_.add_task(std::move(step));
  w.opt = plan_.add_task(std::move(h2d));
  plan_.add_data_dep(w.opt_first, host_step);
  plan_.add_data_dep(host_step, w.opt);
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
