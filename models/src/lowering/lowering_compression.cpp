// Gradient compression (StrategyConfig::compression, docs/compression.md): the codec tasks
// around each data-parallel bucket's exchange, their buffers and their dependencies.
//
// Per bucket b of a (stage, tp rank) group of n = dp ranks, with S gradient elements:
// - every codec keeps an error-feedback residual `codec/ef/b<k>` (S elements) per rank, and
//   starts with `<rank>/enc/b<k>` (compress, step encode) after the bucket's last gradient;
// - int8, fp8: encode adds the residual and rounds each of the n ring chunks onto its own grid
//   (the residual keeps what rounding lost); the bucket's allreduce then carries every ring
//   message as one-byte codes plus a 4-byte scale: comm_bytes = S + 4n;
// - topk: encode writes the k = ceil(topk_ratio·S) largest |values| with their indices into the
//   rank's slot of `codec/wire/b<k>` (n slots of 2k elements), an allgather of the slots
//   replaces the allreduce (comm_bytes = n·k·(element + 4 B index)), and `<rank>/dec/b<k>` sums
//   the n slots into the gradients;
// - powersgd: encode computes P = M Q per weight matrix into `codec/p/b<k>` (bias and
//   matrix-less gradients copied after the factors, sent whole), the allreduce sums P
//   (comm_bytes = (sum rows·r + rest)·element), `<rank>/proj/b<k>` orthonormalises P and writes
//   Q = M^T P into `codec/q/b<k>`, the allreduce `.../ar/b<k>/q` sums Q (sum cols·r·element),
//   and decode writes P Q^T into the gradients. Q persists: the next step starts from it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "lowering_builder.hpp"
#include "strata/models/lowering/layer_tasks.hpp"

namespace strata {
inline namespace models {
namespace lowering {

PlanBuilder::BucketCodec PlanBuilder::bucket_codec(int s, std::size_t k) const {
  const Stage& st = stage(s);
  const StrategyConfig& c = *layout_.config;
  const double elem = bytes_per_element(c.dtype);
  BucketCodec b;
  b.elements = st.bucket_bytes[k] / elem;
  b.topk = std::ceil(c.topk_ratio * b.elements);
  for (int i : st.buckets[k]) {
    const GradMatrix g = grad_matrix(layout_.model->layers[static_cast<std::size_t>(i)], st.tp);
    const double r = c.powersgd_rank;
    b.p_elements += static_cast<double>(g.rows) * r + g.rest;
    b.q_elements += static_cast<double>(g.cols) * r;
    b.matmul_flops += 2.0 * static_cast<double>(g.rows) * static_cast<double>(g.cols) * r;
    b.orth_flops += 2.0 * static_cast<double>(g.rows) * r * r;
    if (!b.matrices.empty()) b.matrices += ";";
    b.matrices +=
        std::to_string(g.rows) + "x" + std::to_string(g.cols) + "+" + std::to_string(std::llround(g.rest));
  }
  return b;
}

void PlanBuilder::add_codec_buffers(WorkerId rank, int s, const std::string& prefix) {
  const StrategyConfig& c = *layout_.config;
  std::vector<CodecBuffers>& out = codec_buffers_[static_cast<std::size_t>(rank)];
  out.clear();
  if (c.compression == Compression::none || layout_.dp < 2) return;
  const WorkerId worker = layout_.worker(rank);
  const double elem = bytes_per_element(c.dtype);
  const Stage& st = stage(s);
  for (std::size_t k = 0; k < st.buckets.size(); ++k) {
    const std::string b = coord("b", st.bucket_offset + static_cast<int>(k));
    const BucketCodec codec = bucket_codec(s, k);
    CodecBuffers bufs;
    bufs.ef = plan_.add_buffer({prefix + "codec/ef/" + b, worker, codec.elements * elem, c.dtype, true});
    if (c.compression == Compression::topk)
      bufs.wire = plan_.add_buffer(
          {prefix + "codec/wire/" + b, worker, layout_.dp * 2 * codec.topk * 4.0, DType::fp32, true});
    if (c.compression == Compression::powersgd) {
      bufs.wire = plan_.add_buffer({prefix + "codec/p/" + b, worker, codec.p_elements * elem, c.dtype, true});
      bufs.q = plan_.add_buffer({prefix + "codec/q/" + b, worker, codec.q_elements * elem, c.dtype, true});
    }
    out.push_back(bufs);
  }
}

TaskIndex PlanBuilder::add_codec_task(const std::string& step, const BucketCodec& codec, std::string id,
                                      WorkerId rank, int it, std::int64_t priority, double flops,
                                      double bytes) {
  const StrategyConfig& c = *layout_.config;
  Task task;
  task.kind = TaskKind::compress;
  task.stream = Stream::compute;
  task.dtype = c.dtype;
  task.flops = flops;
  task.bytes_read = bytes / 2;
  task.bytes_written = bytes / 2;
  task.attrs["codec"] = std::string(to_string(c.compression));
  task.attrs["step"] = step;
  if (c.compression == Compression::topk) task.attrs["k"] = static_cast<std::int64_t>(codec.topk);
  if (c.compression == Compression::powersgd) {
    task.attrs["rank"] = static_cast<std::int64_t>(c.powersgd_rank);
    task.attrs["matrices"] = codec.matrices;
  }
  return add_compute(task, std::move(id), rank, it, priority);
}

// The codec tasks of the group's buckets (create_bucket_allreduces made the collectives).
void PlanBuilder::create_codec_tasks(int it, int s, int t) {
  const StrategyConfig& c = *layout_.config;
  std::vector<CodecTasks>& out = codecs_[layout_.group(s, t)];
  out.clear();
  if (c.compression == Compression::none) return;
  const Stage& st = stage(s);
  const double elem = bytes_per_element(c.dtype);
  const int n = layout_.dp;
  const std::vector<TaskIndex>& collectives = buckets_[layout_.group(s, t)];
  for (std::size_t k = 0; k < st.buckets.size(); ++k) {
    const int bucket = st.bucket_offset + static_cast<int>(k);
    const std::string b = coord("b", bucket);
    const std::int64_t priority = layout_.bucket_priority(it, bucket);
    const BucketCodec codec = bucket_codec(s, k);
    const double grad_bytes = codec.elements * elem;
    Task& collective = plan_.mutable_task(collectives[k]);
    collective.attrs["compression"] = std::string(to_string(c.compression));
    CodecTasks tasks;
    const auto codec_bufs = [&](int d) -> const CodecBuffers& {
      return codec_buffers_[static_cast<std::size_t>(layout_.rank(d, s, t))][k];
    };
    switch (c.compression) {
      case Compression::int8:
      case Compression::fp8:
        collective.comm_bytes = codec.elements + 4.0 * n;  // one-byte codes, a 4-byte scale per chunk
        break;
      case Compression::topk:  // each rank's slot of k values and k int32 indices, all-gathered
        collective.kind = TaskKind::allgather;  // its id says so (create_bucket_allreduces)
        collective.comm_bytes = n * codec.topk * (elem + 4);
        collective.reads.clear(), collective.writes.clear();
        for (int d = 0; d < n; ++d) collective.reads.push_back(codec_bufs(d).wire);
        collective.writes = collective.reads;
        break;
      case Compression::powersgd: {
        collective.comm_bytes = codec.p_elements * elem;
        collective.reads.clear(), collective.writes.clear();
        for (int d = 0; d < n; ++d) collective.reads.push_back(codec_bufs(d).wire);
        collective.writes = collective.reads;
        std::vector<WorkerId> group;
        for (int d = 0; d < n; ++d) group.push_back(layout_.rank(d, s, t));
        tasks.second = add_collective(collective.id + "/q", group, c.dp_algo, c.dtype, it, priority,
                                      codec.q_elements * elem);
        Task& q = plan_.mutable_task(tasks.second);
        q.attrs["compression"] = std::string(to_string(c.compression));
        for (int d = 0; d < n; ++d) q.reads.push_back(codec_bufs(d).q);
        q.writes = q.reads;
        break;
      }
      case Compression::none:
        break;
    }
    for (int d = 0; d < layout_.replicas; ++d) {
      const WorkerId rank = layout_.rank(d, s, t);
      const std::string prefix = worker_prefix(it, d, layout_.device(s), t);
      const WorkerBuffers& wb = buffers_[static_cast<std::size_t>(rank)];
      // The codec runs as soon as it can, ahead of the rest of the backward, as a DDP
      // communication hook does: at the priority of the bucket's last gradient task (created
      // after it, so after it among equals).
      std::int64_t codec_priority = std::numeric_limits<std::int64_t>::min();
      for (int i : st.buckets[k])
        codec_priority = std::max(
            codec_priority,
            plan_.task(wgrad_producer(rank, st.last_backward_microbatch(), i - st.first_layer)).priority);
      std::vector<BufferIndex> grads;
      for (int i : st.buckets[k]) grads.push_back(wb.wgrad[static_cast<std::size_t>(i - st.first_layer)]);
      const CodecBuffers& bufs = codec_bufs(d);
      const bool sparse = c.compression == Compression::topk;
      const bool lowrank = c.compression == Compression::powersgd;
      const double wire_bytes = sparse ? n * 2 * codec.topk * 4.0 : codec.p_elements * elem;
      // Encode: M = G + E; the codec's first pass over M (4 passes of S: read G and E, write both).
      const TaskIndex enc = add_codec_task("encode", codec, prefix + "enc/" + b, rank, it, codec_priority,
                                           lowrank ? codec.matmul_flops : 4 * codec.elements,
                                           4 * grad_bytes + (sparse || lowrank ? wire_bytes : 0));
      Task& e = plan_.mutable_task(enc);
      e.attrs["member"] = static_cast<std::int64_t>(d);
      e.attrs["members"] = static_cast<std::int64_t>(n);
      e.reads = grads, e.reads.push_back(bufs.ef);
      if (lowrank) e.reads.push_back(bufs.q);
      e.writes = grads, e.writes.push_back(bufs.ef);
      if (sparse || lowrank) e.writes.push_back(bufs.wire);
      tasks.encode.push_back(enc);
      if (lowrank) {  // orthonormalise P, then Q = M^T P: reads M (in ef) and P, writes Q
        const TaskIndex proj = add_codec_task("project", codec, prefix + "proj/" + b, rank, it,
                                              codec_priority, codec.matmul_flops + codec.orth_flops,
                                              grad_bytes + 2 * wire_bytes + codec.q_elements * elem);
        Task& p = plan_.mutable_task(proj);
        p.reads = {bufs.ef, bufs.wire};
        p.writes = {bufs.wire, bufs.q};
        tasks.project.push_back(proj);
      }
      if (sparse || lowrank) {
        const TaskIndex dec = add_codec_task("decode", codec, prefix + "dec/" + b, rank, it, codec_priority,
                                             lowrank ? codec.matmul_flops : n * codec.topk,
                                             (lowrank ? 4 : 1) * grad_bytes + wire_bytes);
        Task& dt = plan_.mutable_task(dec);
        dt.attrs["members"] = static_cast<std::int64_t>(n);
        dt.reads = {bufs.wire};
        if (lowrank) dt.reads.push_back(bufs.q), dt.reads.push_back(bufs.ef);
        dt.writes = grads;
        if (lowrank) dt.writes.push_back(bufs.ef);
        tasks.decode.push_back(dec);
      }
    }
    out.push_back(std::move(tasks));
  }
}

// Gradients -> encode -> collective (-> project -> Q collective) -> decode -> optimizer step.
// The collective keeps its data dependencies on the gradients' producers (wire_bucket_allreduces).
void PlanBuilder::wire_codec_tasks(int s, int t) {
  const std::vector<CodecTasks>& codecs = codecs_[layout_.group(s, t)];
  if (codecs.empty()) return;
  const Stage& st = stage(s);
  const int last = st.last_backward_microbatch();
  const std::vector<TaskIndex>& collectives = buckets_[layout_.group(s, t)];
  for (std::size_t k = 0; k < codecs.size(); ++k) {
    const CodecTasks& c = codecs[k];
    for (int d = 0; d < layout_.replicas; ++d) {
      const auto di = static_cast<std::size_t>(d);
      const WorkerId rank = layout_.rank(d, s, t);
      for (int i : st.buckets[k])
        plan_.add_data_dep(wgrad_producer(rank, last, i - st.first_layer), c.encode[di]);
      plan_.add_data_dep(c.encode[di], collectives[k]);
      TaskIndex before_decode = collectives[k];
      if (!c.project.empty()) {
        plan_.add_data_dep(collectives[k], c.project[di]);
        plan_.add_data_dep(c.project[di], c.second);
        before_decode = c.second;
      }
      if (c.decode.empty()) continue;  // int8 / fp8: the collective leaves decoded values
      plan_.add_data_dep(before_decode, c.decode[di]);
      plan_.add_data_dep(c.decode[di], tasks_[static_cast<std::size_t>(rank)].opt_first);
    }
  }
}

}  // namespace lowering
}  // namespace models
}  // namespace strata
