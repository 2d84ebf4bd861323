// TaskRunner<T>'s ResNet kernels: batch norm, the residual add with its option-A shortcut, and the
// shortcut's share of the block input's gradient (models/lowering/layer_tasks.hpp, residual_span).
//
// Batch norm (norm_fwd / norm_bwd, attribute fn = batch; Ioffe and Szegedy 2015, algorithm 1):
// per channel c of the N x C x HW input, over the M = N * HW values of the microbatch,
//   mean, var (biased), xhat = (x - mean) / sqrt(var + eps), y = gamma xhat + beta,
// with eps = 1e-5 (PyTorch's default) and the weights [gamma (C), beta (C)]. Its backward
// recomputes the statistics from the input it reads (nothing is kept apart) and gives
//   dbeta = sum dy, dgamma = sum dy xhat, dx = gamma / sqrt(var + eps) / M (M dy - dbeta - xhat dgamma).
// Statistics are always the batch's: evaluation too normalises by its own minibatch (strata keeps
// no running averages; an evaluation batch is a training-sized minibatch of the test set).
//
// Residual add (elementwise with shape attribute span; attribute skip = 1 on the forward):
// y = x + S(skip), S the option-A shortcut of He et al. 2016: every stride-th row and column of
// the N x skip_c x skip_h x skip_w block input (stride = skip_h / h), placed at channels
// pad .. pad + skip_c - 1 of the N x c x h x w output, pad = (c - skip_c) / 2, zeros elsewhere.
// Its backward passes dy on. The block's first layer's input-gradient task (attribute
// residual_grad = 1) then adds S^T(g), g its last read (the add's output gradient), to what it wrote.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "strata/real/exec/task_runner.hpp"

namespace strata::real {
namespace {

constexpr double kBatchNormEps = 1e-5;

struct Shortcut {
  std::int64_t skip_c = 0, skip_h = 0, skip_w = 0, c = 0, h = 0, w = 0;
  std::int64_t stride() const { return skip_h / h; }
  std::int64_t pad() const { return (c - skip_c) / 2; }
};

Shortcut shortcut(const Task& t, const std::string& prefix) {
  const auto get = [&](const char* key) { return t.attr_int(prefix + key).value_or(0); };
  return {get("skip_c"), get("skip_h"), get("skip_w"), get("c"), get("h"), get("w")};
}

// "" when the shortcut's shape is one the kernel runs, for `samples` samples whose block input is
// `in` elements and whose output is `out`.
std::string shortcut_problem(const Shortcut& s, double in, double out) {
  if (s.skip_c < 1 || s.c < s.skip_c || (s.c - s.skip_c) % 2 != 0 || s.h < 1 || s.w < 1 ||
      s.skip_h % s.h != 0 || s.skip_w % s.w != 0 || s.skip_h / s.h != s.skip_w / s.w)
    return "residual shortcut from " + std::to_string(s.skip_c) + "x" + std::to_string(s.skip_h) + "x" +
           std::to_string(s.skip_w) + " to " + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" +
           std::to_string(s.w) + " is not an option-A shortcut (channels padded evenly, one stride)";
  const double per_in = static_cast<double>(s.skip_c * s.skip_h * s.skip_w),
               per_out = static_cast<double>(s.c * s.h * s.w);
  if (std::fmod(out, per_out) != 0 || in * per_out != out * per_in)
    return "residual buffers do not hold the same samples of the shortcut's shapes";
  return "";
}

}  // namespace

std::string resnet_kernel_problem(const Plan& plan, const Task& t) {
  const auto elements = [&plan](BufferIndex b) {
    return plan.buffer(b).bytes / bytes_per_element(plan.buffer(b).dtype);
  };
  if (t.attr_int("residual_grad").value_or(0) != 0) {
    if (t.reads.empty() || t.writes.empty()) return "residual_grad task without its gradient buffers";
    if (std::string problem =
            shortcut_problem(shortcut(t, "residual_"), elements(t.writes[0]), elements(t.reads.back()));
        !problem.empty())
      return problem;
  }
  if (t.kind == TaskKind::norm_fwd || t.kind == TaskKind::norm_bwd) {
    if (t.attr_string("fn").value_or("") != "batch") return "only batch norm has a kernel (not layer norm)";
    const std::int64_t n = t.attr_int("n").value_or(0), c = t.attr_int("channels").value_or(0);
    const bool fwd = t.kind == TaskKind::norm_fwd;
    if (n < 1 || c < 1) return "batch norm needs n >= 1 samples and channels >= 1";
    if (t.reads.size() < (fwd ? 2u : 3u) || t.writes.size() != (fwd ? 1u : 2u))
      return fwd ? "batch norm forward reads x and [gamma, beta], writes y"
                 : "batch norm backward reads dy, x and [gamma, beta], writes dx and their gradient (not "
                   "split in "
                   "two, as AMPNet splits it)";
    const double x = elements(t.reads[fwd ? 0 : 1]), w = elements(t.reads[fwd ? 1 : 2]);
    if (std::fmod(x, static_cast<double>(n * c)) != 0 || w != static_cast<double>(2 * c))
      return "batch norm buffers are not n x channels x HW values and 2 x channels weights";
    return "";
  }
  if (t.kind == TaskKind::elementwise && t.attr_int("span").value_or(0) > 0) {
    const bool fwd = t.attr_int("skip").value_or(0) != 0;
    if (t.writes.size() != 1 || t.reads.size() != 2)
      return "residual add reads its input and the block's input (or dy), writes one buffer";
    const Shortcut s = shortcut(t, "");
    if (!fwd)
      return elements(t.reads[0]) == elements(t.writes[0]) ? "" : "residual add's dx is not dy's size";
    return shortcut_problem(s, elements(t.reads[1]), elements(t.writes[0]));
  }
  return "";
}

template <typename T>
void TaskRunner<T>::run_norm(const Task& t) {
  const std::int64_t n = *t.attr_int("n"), c = *t.attr_int("channels");
  const bool fwd = t.kind == TaskKind::norm_fwd;
  const BufferIndex x_buf = t.reads[fwd ? 0 : 1];
  const std::int64_t hw = elems(x_buf) / (n * c);
  const auto m = static_cast<double>(n * hw);
  const T* x = buf(x_buf);
  const T* gamma = buf(t.reads[fwd ? 1 : 2]);
  const T* beta = gamma + c;
  const T* dy = fwd ? nullptr : buf(t.reads[0]);
  T* out = buf(t.writes[0]);
  T* dgamma = fwd ? nullptr : buf(t.writes[1]);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, squares = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      const T* row = x + (s * c + ch) * hw;
      for (std::int64_t i = 0; i < hw; ++i) sum += static_cast<double>(row[i]);
    }
    const double mean = sum / m;
    for (std::int64_t s = 0; s < n; ++s) {
      const T* row = x + (s * c + ch) * hw;
      for (std::int64_t i = 0; i < hw; ++i) squares += (row[i] - mean) * (row[i] - mean);
    }
    const double inv = 1 / std::sqrt(squares / m + kBatchNormEps);
    const double g = static_cast<double>(gamma[ch]);
    if (fwd) {
      const double b = static_cast<double>(beta[ch]);
      for (std::int64_t s = 0; s < n; ++s) {
        const T* row = x + (s * c + ch) * hw;
        T* y = out + (s * c + ch) * hw;
        for (std::int64_t i = 0; i < hw; ++i) y[i] = static_cast<T>(g * (row[i] - mean) * inv + b);
      }
      continue;
    }
    double dbeta = 0, dg = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      const T* row = x + (s * c + ch) * hw;
      const T* d = dy + (s * c + ch) * hw;
      for (std::int64_t i = 0; i < hw; ++i) {
        dbeta += static_cast<double>(d[i]);
        dg += static_cast<double>(d[i]) * (row[i] - mean) * inv;
      }
    }
    for (std::int64_t s = 0; s < n; ++s) {
      const T* row = x + (s * c + ch) * hw;
      const T* d = dy + (s * c + ch) * hw;
      T* dx = out + (s * c + ch) * hw;
      for (std::int64_t i = 0; i < hw; ++i)
        dx[i] = static_cast<T>(g * inv / m * (m * d[i] - dbeta - (row[i] - mean) * inv * dg));
    }
    dgamma[ch] = static_cast<T>(dg);
    dgamma[c + ch] = static_cast<T>(dbeta);
  }
}

template <typename T>
void TaskRunner<T>::run_residual(const Task& t) {
  if (t.attr_int("skip").value_or(0) == 0) {  // backward: dx = dy
    const T* dy = buf(t.reads[0]);
    std::copy(dy, dy + elems(t.reads[0]), buf(t.writes[0]));
    return;
  }
  const Shortcut s = shortcut(t, "");
  const T* x = buf(t.reads[0]);
  const T* skip = buf(t.reads[1]);
  T* y = buf(t.writes[0]);
  const std::int64_t per_out = s.c * s.h * s.w, samples = elems(t.writes[0]) / per_out;
  const std::int64_t stride = s.stride(), pad = s.pad();
  std::copy(x, x + elems(t.reads[0]), y);
  for (std::int64_t n = 0; n < samples; ++n)
    for (std::int64_t ch = 0; ch < s.skip_c; ++ch) {
      const T* from = skip + (n * s.skip_c + ch) * s.skip_h * s.skip_w;
      T* to = y + (n * s.c + ch + pad) * s.h * s.w;
      for (std::int64_t i = 0; i < s.h; ++i)
        for (std::int64_t j = 0; j < s.w; ++j) to[i * s.w + j] += from[i * stride * s.skip_w + j * stride];
    }
}

template <typename T>
void TaskRunner<T>::add_shortcut_grad(const Task& t) {
  const Shortcut s = shortcut(t, "residual_");
  const T* g = buf(t.reads.back());
  T* dx = buf(t.writes[0]);
  const std::int64_t samples = elems(t.reads.back()) / (s.c * s.h * s.w);
  const std::int64_t stride = s.stride(), pad = s.pad();
  for (std::int64_t n = 0; n < samples; ++n)
    for (std::int64_t ch = 0; ch < s.skip_c; ++ch) {
      const T* from = g + (n * s.c + ch + pad) * s.h * s.w;
      T* to = dx + (n * s.skip_c + ch) * s.skip_h * s.skip_w;
      for (std::int64_t i = 0; i < s.h; ++i)
        for (std::int64_t j = 0; j < s.w; ++j) to[i * stride * s.skip_w + j * stride] += from[i * s.w + j];
    }
}

// Global average pooling (pool, fn = avg, to 1 x 1): y[n, c] = the mean of x[n, c, :, :]; its
// backward spreads dy / (kh kw) over the window.
template <typename T>
void TaskRunner<T>::run_global_avg_pool(const Task& t) {
  const std::int64_t window = *t.attr_int("kh") * *t.attr_int("kw");
  const bool fwd = t.kind == TaskKind::pool_fwd;
  const std::int64_t maps = fwd ? elems(t.writes[0]) : elems(t.reads[0]);
  const T* in = buf(t.reads[0]);
  T* out = buf(t.writes[0]);
  for (std::int64_t m = 0; m < maps; ++m) {
    if (fwd) {
      double sum = 0;
      for (std::int64_t i = 0; i < window; ++i) sum += static_cast<double>(in[m * window + i]);
      out[m] = static_cast<T>(sum / static_cast<double>(window));
    } else {
      const T share = static_cast<T>(static_cast<double>(in[m]) / static_cast<double>(window));
      std::fill(out + m * window, out + (m + 1) * window, share);
    }
  }
}

template void TaskRunner<float>::run_global_avg_pool(const Task&);
template void TaskRunner<double>::run_global_avg_pool(const Task&);
template void TaskRunner<float>::run_norm(const Task&);
template void TaskRunner<double>::run_norm(const Task&);
template void TaskRunner<float>::run_residual(const Task&);
template void TaskRunner<double>::run_residual(const Task&);
template void TaskRunner<float>::add_shortcut_grad(const Task&);
template void TaskRunner<double>::add_shortcut_grad(const Task&);

}  // namespace strata::real
