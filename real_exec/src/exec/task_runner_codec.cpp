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
#include <cmath>
#include <cstdint>
#include <string>
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

}  // namespace

template <typename T>
void TaskRunner<T>::run_codec(const Task& t) {
  const std::string codec = t.attr_string("codec").value_or("");
  const std::string step = t.attr_string("step").value_or("");
  std::vector<BufferIndex> grads;
  const std::ptrdiff_t lowrank = codec == "powersgd" ? 1 : 0;
  if (step == "encode")  // reads [G…, E (, Q)]
    grads.assign(t.reads.begin(), t.reads.end() - 1 - lowrank);
  else if (step == "decode")  // writes [G… (, E)]
    grads.assign(t.writes.begin(), t.writes.end() - lowrank);
  std::int64_t size = 0;
  for (BufferIndex b : grads) size += elems(b);
  // Gathers G into m, and scatters back.
  auto gather = [&](std::vector<T>& m) {
    m.clear();
    for (BufferIndex b : grads) m.insert(m.end(), buf(b), buf(b) + elems(b));
  };
  auto scatter = [&](const std::vector<T>& m) {
    std::int64_t at = 0;
    for (BufferIndex b : grads) std::copy(m.begin() + at, m.begin() + at + elems(b), buf(b)), at += elems(b);
  };
  const auto n_members = static_cast<std::size_t>(t.attr_int("members").value_or(1));
  if (step == "encode") {
    const BufferIndex e = t.reads[grads.size()];
    STRATA_ASSERT(elems(e) == size, "codec task " + t.id + ": residual and gradients differ in size");
    std::vector<T> m;
    gather(m);
    T* err = buf(e);
    for (std::int64_t i = 0; i < size; ++i) m[static_cast<std::size_t>(i)] += err[i];
    ByteCodec byte{};
    if (parse_byte_codec(codec, byte)) {
      std::vector<T> rounded = m;
      for (std::size_t c = 0; c < n_members; ++c) {
        const RingChunk r = ring_chunk(c, static_cast<std::size_t>(size), n_members);
        round_trip(rounded.data() + r.begin, r.end - r.begin, byte);
      }
      for (std::int64_t i = 0; i < size; ++i)
        err[i] = m[static_cast<std::size_t>(i)] - rounded[static_cast<std::size_t>(i)];
      scatter(rounded);
      return;
    }
    if (codec == "topk") {
      const std::int64_t k = *t.attr_int("k");
      const std::vector<std::int64_t> idx = top_k_indices(m.data(), size, k);
      const BufferIndex wire = t.writes.back();
      const std::size_t slot = owned_chunk(static_cast<std::size_t>(*t.attr_int("member")), n_members);
      T* out = buf(wire) + slot * static_cast<std::size_t>(2 * k);
      for (std::int64_t j = 0; j < k; ++j) {
        const auto i = static_cast<std::size_t>(idx[static_cast<std::size_t>(j)]);
        out[j] = static_cast<T>(i);
        out[k + j] = m[i];
        m[i] = 0;
      }
      std::copy(m.begin(), m.end(), err);
      return;
    }
    // powersgd
    std::copy(m.begin(), m.end(), err);
    const BufferIndex q = t.reads.back();
    const std::int64_t r = *t.attr_int("rank");
    if (ws_.optimizer_steps(q)++ == 0) fill_normal(buf(q), elems(q), 0x5EED);
    T* p = buf(t.writes.back());
    const T* qv = buf(q);
    std::int64_t at = 0;
    for (const CodecMatrix& mat : matrices(t)) {
      matmul_mq(backend_, m.data() + at, qv, mat.rows, mat.cols, r, p);
      p += mat.rows * r, qv += mat.cols * r, at += mat.rows * mat.cols;
      std::copy(m.begin() + at, m.begin() + at + mat.rest, p);
      p += mat.rest, at += mat.rest;
    }
    return;
  }
  if (step == "project") {  // powersgd: reads [E (M), wire (P summed)] writes [wire, Q]
    const T* m = buf(t.reads[0]);
    T* p = buf(t.reads[1]);
    T* q = buf(t.writes[1]);
    const std::int64_t r = *t.attr_int("rank");
    for (const CodecMatrix& mat : matrices(t)) {
      orthonormalize_columns(p, mat.rows, r);
      matmul_mtp(backend_, m, p, mat.rows, mat.cols, r, q);
      m += mat.rows * mat.cols + mat.rest, p += mat.rows * r + mat.rest, q += mat.cols * r;
    }
    return;
  }
  // decode
  std::vector<T> g(static_cast<std::size_t>(size), T{0});
  const T* wire = buf(t.reads[0]);
  if (codec == "topk") {
    const std::int64_t k = *t.attr_int("k");
    for (std::size_t s = 0; s < n_members; ++s) {
      const T* slot = wire + s * static_cast<std::size_t>(2 * k);
      for (std::int64_t j = 0; j < k; ++j) g[static_cast<std::size_t>(slot[j])] += slot[k + j];
    }
    scatter(g);
    return;
  }
  const T* q = buf(t.reads[1]);
  T* err = buf(t.writes.back());
  const std::int64_t r = *t.attr_int("rank");
  const T inv = T{1} / static_cast<T>(n_members);
  std::int64_t at = 0;
  for (const CodecMatrix& mat : matrices(t)) {
    matmul_pqt(backend_, wire, q, mat.rows, mat.cols, r, g.data() + at);
    for (std::int64_t i = at; i < at + mat.rows * mat.cols; ++i)
      err[i] -= g[static_cast<std::size_t>(i)] * inv;
    wire += mat.rows * r, q += mat.cols * r, at += mat.rows * mat.cols;
    std::copy(wire, wire + mat.rest, g.begin() + at);
    std::fill(err + at, err + at + mat.rest, T{0});
    wire += mat.rest, at += mat.rest;
  }
  scatter(g);
}

template void TaskRunner<float>::run_codec(const Task&);
template void TaskRunner<double>::run_codec(const Task&);

}  // namespace strata::real
