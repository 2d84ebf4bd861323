// TaskRunner<T>::run_codec: the compress kind (task_runner.hpp), the codec steps around a
// compressed data-parallel exchange as models/src/lowering/lowering_compression.cpp lowers them.
//
// Operands (the bucket's gradients G concatenated in the task's order, S values; E the rank's
// error-feedback residual, S values):
// - encode reads [G…, E (, Q)] writes [G…, E (, wire)]: M = G + E, then
//   int8 / fp8: each ring chunk of M rounded through its message codec (grad_codec.hpp) into G,
//               E = M − G (the transport's allreduce then sends G's chunks as codes);
//   topk:       the k largest |M| with their indices into the rank's ring slot of the wire
//               (owned_chunk(member, members): k indices then k values), E = M with them zeroed;
//   powersgd:   E = M, then per matrix P = M Q into the wire, followed by its bias sent whole.
//               The first step fills Q with N(0, 1) values of a fixed seed, the same on every rank.
// - project (powersgd) reads [E, wire] writes [wire, Q]: P orthonormalised, Q = M^T P.
// - decode reads [wire (, Q, E)] writes [G… (, E)]: topk, G = the sum of every slot's values at
//   their indices (slots in order); powersgd, G = P Q^T and the summed bias, E = M − G / members
//   on the matrices and 0 on the bias (it was sent whole).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strata/real/core/grad_codec.hpp"
#include "strata/real/exec/task_runner.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// A PowerSGD task's matrices, "rows x cols + rest" per gradient (checked by check_kernels).
std::vector<CodecMatrix> matrices(const Task& t) {
  return parse_codec_matrices(t.attr_string("matrices").value_or(""));
}

// N(0, 1) values from splitmix64 and Box-Muller: the same on every rank and every platform.
template <typename T>
void fill_normal(T* out, std::int64_t n, std::uint64_t seed) {
  auto next = [&seed] {
    std::uint64_t z = (seed += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = 1 - next(), v = next();
    out[i] = static_cast<T>(std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v));
  }
}

// A codec task's gradients G, concatenated in the task's order: gathered out of and scattered
// back into their buffers.
template <typename T>
struct Gradients {
  Workspace<T>& ws;
  std::vector<BufferIndex> buffers;
  std::int64_t size = 0;

  Gradients(Workspace<T>& w, std::vector<BufferIndex> b) : ws(w), buffers(std::move(b)) {
    for (BufferIndex i : buffers) size += ws.size(i);
  }
  std::vector<T> gather() const {
    std::vector<T> m;
    m.reserve(static_cast<std::size_t>(size));
    for (BufferIndex b : buffers) m.insert(m.end(), ws.data(b), ws.data(b) + ws.size(b));
    return m;
  }
  void scatter(const std::vector<T>& m) const {
    std::int64_t at = 0;
    for (BufferIndex b : buffers) {
      std::copy(m.begin() + at, m.begin() + at + ws.size(b), ws.data(b));
      at += ws.size(b);
    }
  }
};

// int8 / fp8 encode: each ring chunk of M through its message codec into G, E = M − G.
template <typename T>
void encode_bytes(const Gradients<T>& g, std::vector<T>& m, T* err, ByteCodec codec, std::size_t members) {
  std::vector<T> rounded = m;
  const Held rounded_held = Held::here(allocated_bytes(rounded));
  for (std::size_t c = 0; c < members; ++c) {
    const RingChunk r = ring_chunk(c, static_cast<std::size_t>(g.size), members);
    round_trip(rounded.data() + r.begin, r.end - r.begin, codec);
  }
  for (std::size_t i = 0; i < m.size(); ++i) err[i] = m[i] - rounded[i];
  g.scatter(rounded);
}

// top-k encode: the k largest |M| with their indices into the rank's ring slot, E = M without them.
template <typename T>
void encode_top_k(std::vector<T>& m, T* err, T* wire, std::int64_t k, std::size_t slot) {
  const std::vector<std::int64_t> idx = top_k_indices(m.data(), static_cast<std::int64_t>(m.size()), k);
  const Held idx_held = Held::here(allocated_bytes(idx));  // top_k_indices held n of them
  T* out = wire + slot * static_cast<std::size_t>(2 * k);
  for (std::int64_t j = 0; j < k; ++j) {
    const auto i = static_cast<std::size_t>(idx[static_cast<std::size_t>(j)]);
    out[j] = static_cast<T>(i);
    out[k + j] = m[i];
    m[i] = 0;
  }
  std::copy(m.begin(), m.end(), err);
}

// top-k decode: G = the sum of every slot's values at their indices, slots in order.
template <typename T>
void decode_top_k(const Gradients<T>& g, const T* wire, std::int64_t k, std::size_t members) {
  std::vector<T> sum(static_cast<std::size_t>(g.size), T{0});
  const Held sum_held = Held::here(allocated_bytes(sum));
  for (std::size_t s = 0; s < members; ++s) {
    const T* slot = wire + s * static_cast<std::size_t>(2 * k);
    for (std::int64_t j = 0; j < k; ++j) sum[static_cast<std::size_t>(slot[j])] += slot[k + j];
  }
  g.scatter(sum);
}

// PowerSGD encode: per matrix P = M Q into the wire, its bias after it. M stays in E.
template <typename T>
void encode_power(Backend& backend, const std::vector<T>& m, const T* q, T* p, std::int64_t r,
                  const std::vector<CodecMatrix>& matrices) {
  std::int64_t at = 0;
  for (const CodecMatrix& mat : matrices) {
    matmul_mq(backend, m.data() + at, q, mat.rows, mat.cols, r, p);
    p += mat.rows * r, q += mat.cols * r, at += mat.rows * mat.cols;
    std::copy(m.begin() + at, m.begin() + at + mat.rest, p);
    p += mat.rest, at += mat.rest;
  }
}

// PowerSGD project: P (summed) orthonormalised, Q = M^T P.
template <typename T>
void project_power(Backend& backend, const T* m, T* p, T* q, std::int64_t r,
                   const std::vector<CodecMatrix>& matrices) {
  for (const CodecMatrix& mat : matrices) {
    orthonormalize_columns(p, mat.rows, r);
    matmul_mtp(backend, m, p, mat.rows, mat.cols, r, q);
    m += mat.rows * mat.cols + mat.rest, p += mat.rows * r + mat.rest, q += mat.cols * r;
  }
}

// PowerSGD decode: G = P Q^T and the summed bias; E = M − G / members on the matrices, 0 on the
// bias (it was sent whole).
template <typename T>
void decode_power(Backend& backend, const Gradients<T>& g, const T* wire, const T* q, T* err, std::int64_t r,
                  std::size_t members, const std::vector<CodecMatrix>& matrices) {
  std::vector<T> out(static_cast<std::size_t>(g.size), T{0});
  const Held out_held = Held::here(allocated_bytes(out));
  const T inv = T{1} / static_cast<T>(members);
  std::int64_t at = 0;
  for (const CodecMatrix& mat : matrices) {
    matmul_pqt(backend, wire, q, mat.rows, mat.cols, r, out.data() + at);
    for (std::int64_t i = at; i < at + mat.rows * mat.cols; ++i)
      err[i] -= out[static_cast<std::size_t>(i)] * inv;
    wire += mat.rows * r, q += mat.cols * r, at += mat.rows * mat.cols;
    std::copy(wire, wire + mat.rest, out.begin() + at);
    std::fill(err + at, err + at + mat.rest, T{0});
    wire += mat.rest, at += mat.rest;
  }
  g.scatter(out);
}

}  // namespace

template <typename T>
void TaskRunner<T>::run_codec(const Task& t) {
  const std::string codec = t.attr_string("codec").value_or("");
  const std::string step = t.attr_string("step").value_or("");
  const std::ptrdiff_t lowrank = codec == "powersgd" ? 1 : 0;
  const auto members = static_cast<std::size_t>(t.attr_int("members").value_or(1));
  const std::int64_t r = t.attr_int("rank").value_or(0);
  if (step == "project") {  // reads [E (M), wire (P summed)] writes [wire, Q]
    project_power(backend_, buf(t.reads[0]), buf(t.reads[1]), buf(t.writes[1]), r, matrices(t));
    return;
  }
  if (step == "decode") {  // reads [wire (, Q, E)] writes [G… (, E)]
    const Gradients<T> g(ws_, std::vector<BufferIndex>(t.writes.begin(), t.writes.end() - lowrank));
    if (codec == "topk") return decode_top_k(g, buf(t.reads[0]), *t.attr_int("k"), members);
    return decode_power(backend_, g, buf(t.reads[0]), buf(t.reads[1]), buf(t.writes.back()), r, members,
                        matrices(t));
  }
  // encode: reads [G…, E (, Q)] writes [G…, E (, wire)]; M = G + E
  const Gradients<T> g(ws_, std::vector<BufferIndex>(t.reads.begin(), t.reads.end() - 1 - lowrank));
  const BufferIndex e = t.reads[g.buffers.size()];
  STRATA_ASSERT(elems(e) == g.size, "codec task " + t.id + ": residual and gradients differ in size");
  std::vector<T> m = g.gather();
  const Held m_held = Held::here(allocated_bytes(m));
  T* err = buf(e);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] += err[i];
  if (ByteCodec byte{}; parse_byte_codec(codec, byte)) return encode_bytes(g, m, err, byte, members);
  if (codec == "topk")
    return encode_top_k(m, err, buf(t.writes.back()), *t.attr_int("k"),
                        owned_chunk(static_cast<std::size_t>(*t.attr_int("member")), members));
  std::copy(m.begin(), m.end(), err);
  const BufferIndex q = t.reads.back();
  if (ws_.optimizer_steps(q)++ == 0) fill_normal(buf(q), elems(q), 0x5EED);
  encode_power(backend_, m, static_cast<const T*>(buf(q)), buf(t.writes.back()), r, matrices(t));
}

template void TaskRunner<float>::run_codec(const Task&);
template void TaskRunner<double>::run_codec(const Task&);

}  // namespace strata::real
