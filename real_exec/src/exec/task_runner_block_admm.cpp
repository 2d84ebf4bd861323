// TaskRunner<T>::run_block_admm: Stochastic Block-ADMM's elementwise tasks (attribute block_admm,
// models/src/solvers/solver_block_admm.cpp), per value of a block's output, m samples:
//   penalty  the gradient of the block's augmented-Lagrangian term with respect to its output a:
//            (rho (a - z) - lambda) / m; with init, z = a and lambda = 0 first (so it is 0)
//   update   the linearised proximal step of z and the dual ascent of lambda, g being the
//            minibatch mean's gradient of the next block's term with respect to z:
//            z' = (rho a - lambda - m g + z / eta) / (rho + 1 / eta), lambda += rho (z' - a)
// In the batch setting (from_store, to_store) z and lambda of each training sample live in stores
// of one row per sample and a seen flag: the first step's penalty takes the minibatch's rows (z = a
// and lambda = 0 for a sample not seen yet), the last step's update puts them back. The rows are
// the samples the Trainer bound to the task's (dp, microbatch) (Workspace::sample_ids).
// The minibatch arrays have the block output's size (check_kernels' block_admm_problem says so).
// The serial-parallel hybrid (solver_serial_parallel.cpp) adds, with dual = 0 on penalty and
// update for its penalty method (lambda stays 0 and has no store: those tasks read and write the
// z store and seen only):
//   fetch    the minibatch's rows of the z store into an array (0 for a sample not seen yet)
//   refresh  the minibatch's rows of the z store set to a (its serial pass), marked seen
//   pool     average over factor x factor windows of each channel's height x width map
//   unpool   each pooled value repeated over its window (the pool's adjoint times factor^2)
//   mask     the rows (of mean_over samples) of a gradient set to 0 where the block's input row is
//            all zeros (a state not stored yet)
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "strata/real/exec/task_runner.hpp"

namespace strata::real {

namespace {

// Why a hybrid's fetch, refresh, pool or unpool task cannot run, or "".
std::string hybrid_problem(const Plan& plan, const Task& t, const std::string& op) {
  if (op == "pool" || op == "unpool") {
    const std::int64_t d = t.attr_int("factor").value_or(0), c = t.attr_int("channels").value_or(0),
                       h = t.attr_int("height").value_or(0), w = t.attr_int("width").value_or(0);
    if (d < 1 || c < 1 || h < 1 || w < 1 || h % d != 0 || w % d != 0)
      return op + " needs factor >= 1 dividing height and width, and channels >= 1";
    if (t.reads.size() != 1 || t.writes.size() != 1) return op + " reads and writes one buffer";
    const double full = plan.buffer(op == "pool" ? t.reads[0] : t.writes[0]).bytes;
    const double small = plan.buffer(op == "pool" ? t.writes[0] : t.reads[0]).bytes;
    const double map = static_cast<double>(c * h * w) * bytes_per_element(plan.buffer(t.reads[0]).dtype);
    if (std::fmod(full, map) != 0 || small * static_cast<double>(d * d) != full)
      return op + " buffers are not whole maps and their 1/factor^2 pooling";
    return "";
  }
  if (op == "mask") {
    const std::int64_t m = t.attr_int("mean_over").value_or(0);
    if (m < 1 || t.reads.size() != 2 || t.writes.size() != 1 || t.writes[0] != t.reads[1])
      return "mask reads the input and the gradient, writes the gradient, of mean_over >= 1 samples";
    const double per_row = static_cast<double>(m) * bytes_per_element(plan.buffer(t.reads[0]).dtype);
    if (std::fmod(plan.buffer(t.reads[0]).bytes, per_row) != 0 ||
        std::fmod(plan.buffer(t.reads[1]).bytes, per_row) != 0)
      return "mask buffers are not mean_over rows";
    return "";
  }
  const bool fetch = op == "fetch";
  if (t.reads.size() != (fetch ? 2u : 3u) || t.writes.size() != (fetch ? 1u : 2u))
    return op +
           (fetch ? " reads the z store and seen, writes z" : " reads a, the z store and seen, writes both");
  const double z = plan.buffer(t.reads[fetch ? 0 : 1]).bytes,
               seen = plan.buffer(t.reads[fetch ? 1 : 2]).bytes;
  const double bytes = plan.buffer(fetch ? t.writes[0] : t.reads[0]).bytes;
  if (seen <= 0 || std::fmod(z, seen) != 0 || std::fmod(bytes * seen, z) != 0)
    return "block_admm " + op + ": stores are not one row per sample";
  return "";
}

}  // namespace

std::string block_admm_problem(const Plan& plan, const Task& t) {
  const std::string op = t.attr_string("block_admm").value_or("");
  if (op == "fetch" || op == "refresh" || op == "pool" || op == "unpool" || op == "mask")
    return hybrid_problem(plan, t, op);
  const bool init = t.attr_int("init").value_or(0) != 0;
  if (op != "penalty" && op != "update")
    return "block_admm '" + op + "' is none of penalty, update, fetch, refresh, pool, unpool, mask";
  if (!(t.attr_real("rho").value_or(0) > 0) || !(t.attr_real("z_lr").value_or(0) > 0) ||
      t.attr_int("mean_over").value_or(0) < 1)
    return "block_admm task needs rho > 0, z_lr > 0 and mean_over >= 1";
  const bool from_store = t.attr_int("from_store").value_or(0) != 0;
  const bool to_store = t.attr_int("to_store").value_or(0) != 0;
  if ((from_store && (op != "penalty" || init)) || (to_store && op != "update"))
    return "block_admm " + op + " with from_store/to_store/init mixed";
  // Without duals (the hybrid's penalty method, dual = 0) there is no lambda store.
  const std::size_t stores = t.attr_int("dual").value_or(1) != 0 ? 3 : 2;
  const std::size_t reads = op == "update" ? (to_store ? 4 + stores : 4)
                            : from_store   ? 1 + stores
                            : init         ? 1
                                           : 3;
  const std::size_t writes = op == "update" ? (to_store ? 2 + stores : 2) : init || from_store ? 3 : 1;
  if (t.reads.size() != reads || t.writes.size() != writes)
    return "block_admm " + op + " reads " + std::to_string(reads) + " and writes " + std::to_string(writes) +
           " buffers";
  const double bytes = plan.buffer(t.reads[0]).bytes;
  for (const std::vector<BufferIndex>* list : {&t.reads, &t.writes})
    for (std::size_t i = 0; i < list->size(); ++i) {
      const bool store =
          (from_store && list == &t.reads && i > 0) || (to_store && i >= list->size() - stores);
      if (!store && plan.buffer((*list)[i]).bytes != bytes) return "block_admm buffers differ in size";
    }
  if (from_store || to_store) {
    const std::vector<BufferIndex>& s = from_store ? t.reads : t.writes;
    const std::size_t at = from_store ? 1 : s.size() - stores;
    const double z = plan.buffer(s[at]).bytes, seen = plan.buffer(s[at + stores - 1]).bytes;
    if (plan.buffer(s[at + 1]).bytes != (stores == 3 ? z : seen) || seen <= 0 || std::fmod(z, seen) != 0 ||
        std::fmod(bytes * seen, z) != 0)
      return "block_admm stores are not one row per sample";
  }
  return "";
}

template <typename T>
void TaskRunner<T>::run_block_admm(const Task& t) {
  const std::string op = *t.attr_string("block_admm");
  if (op == "pool" || op == "unpool") {
    const std::int64_t d = *t.attr_int("factor"), c = *t.attr_int("channels"), h = *t.attr_int("height"),
                       w = *t.attr_int("width");
    const std::int64_t ph = h / d, pw = w / d;
    const std::int64_t maps = (op == "pool" ? elems(t.reads[0]) : elems(t.writes[0])) / (h * w);
    STRATA_ASSERT(maps % c == 0, "task " + t.id + ": the buffer is not whole feature maps");
    const T scale = T{1} / static_cast<T>(d * d);
    if (op == "pool") {
      const T* x = buf(t.reads[0]);
      T* y = buf(t.writes[0]);
      std::fill(y, y + maps * ph * pw, T{0});
      for (std::int64_t m = 0; m < maps; ++m)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < w; ++j)
            y[(m * ph + i / d) * pw + j / d] += x[(m * h + i) * w + j] * scale;
    } else {
      const T* y = buf(t.reads[0]);
      T* x = buf(t.writes[0]);
      for (std::int64_t m = 0; m < maps; ++m)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < w; ++j) x[(m * h + i) * w + j] = y[(m * ph + i / d) * pw + j / d];
    }
    return;
  }
  const auto rho = static_cast<T>(*t.attr_real("rho"));
  const auto eta = static_cast<T>(*t.attr_real("z_lr"));
  const auto m = static_cast<T>(*t.attr_int("mean_over"));
  const std::int64_t n = elems(t.reads[0]);
  if (op == "mask") {
    const std::int64_t m = *t.attr_int("mean_over");
    const std::int64_t in_width = elems(t.reads[0]) / m, width = elems(t.writes[0]) / m;
    const T* x = buf(t.reads[0]);
    T* g = buf(t.writes[0]);
    for (std::int64_t r = 0; r < m; ++r)
      if (std::all_of(x + r * in_width, x + (r + 1) * in_width, [](T v) { return v == T{0}; }))
        std::fill(g + r * width, g + (r + 1) * width, T{0});
    return;
  }
  if (op == "fetch" || op == "refresh") {
    const bool fetch = op == "fetch";
    const std::vector<std::int64_t>& ids =
        ws_.sample_ids(std::max<std::int64_t>(0, t.coords.dp), std::max<std::int64_t>(0, t.coords.mb));
    const std::int64_t rows_here = fetch ? elems(t.writes[0]) : elems(t.reads[0]);
    STRATA_ASSERT(!ids.empty() && rows_here % static_cast<std::int64_t>(ids.size()) == 0,
                  "task " + t.id + ": the bound samples do not divide the block output");
    const std::int64_t width = rows_here / static_cast<std::int64_t>(ids.size());
    const std::int64_t stored = elems(fetch ? t.reads[1] : t.reads[2]);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      STRATA_ASSERT(ids[i] >= 0 && ids[i] < stored,
                    "task " + t.id + ": sample " + std::to_string(ids[i]) + " beyond the stores");
      const std::int64_t row = static_cast<std::int64_t>(i) * width, at = ids[i] * width;
      if (fetch) {
        const T* z_store = buf(t.reads[0]);
        T* z = buf(t.writes[0]);
        if (buf(t.reads[1])[ids[i]] != T{0})
          std::copy(z_store + at, z_store + at + width, z + row);
        else
          std::fill(z + row, z + row + width, T{0});
      } else {
        const T* a = buf(t.reads[0]);
        std::copy(a + row, a + row + width, buf(t.writes[0]) + at);
        buf(t.writes[1])[ids[i]] = T{1};
      }
    }
    return;
  }
  const T* a = buf(t.reads[0]);
  const bool from_store = t.attr_int("from_store").value_or(0) != 0;
  const bool to_store = t.attr_int("to_store").value_or(0) != 0;
  const bool dual = t.attr_int("dual").value_or(1) != 0;  // else no lambda store: lambda stays 0
  // The minibatch's samples: row i of the minibatch arrays is row ids[i] of the stores.
  const auto rows = [&]() -> const std::vector<std::int64_t>& {
    const std::vector<std::int64_t>& ids =
        ws_.sample_ids(std::max<std::int64_t>(0, t.coords.dp), std::max<std::int64_t>(0, t.coords.mb));
    STRATA_ASSERT(static_cast<std::int64_t>(ids.size()) > 0 && n % static_cast<std::int64_t>(ids.size()) == 0,
                  "task " + t.id + ": the bound samples do not divide the block output");
    return ids;
  };
  if (from_store) {
    const std::vector<std::int64_t>& ids = rows();
    const std::int64_t width = n / static_cast<std::int64_t>(ids.size());
    const T* z_store = buf(t.reads[1]);
    const T* lambda_store = dual ? buf(t.reads[2]) : nullptr;
    const BufferIndex seen_buffer = t.reads[dual ? 3 : 2];
    const T* seen = buf(seen_buffer);
    T* grad = buf(t.writes[0]);
    T* z = buf(t.writes[1]);
    T* lambda = buf(t.writes[2]);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      STRATA_ASSERT(ids[i] >= 0 && ids[i] < elems(seen_buffer),
                    "task " + t.id + ": sample " + std::to_string(ids[i]) + " beyond the stores");
      const std::int64_t row = static_cast<std::int64_t>(i) * width, at = ids[i] * width;
      const bool known = seen[ids[i]] != T{0};
      for (std::int64_t j = 0; j < width; ++j) {
        z[row + j] = known ? z_store[at + j] : a[row + j];
        lambda[row + j] = known && dual ? lambda_store[at + j] : T{0};
      }
    }
    for (std::int64_t i = 0; i < n; ++i) grad[i] = (rho * (a[i] - z[i]) - lambda[i]) / m;
    return;
  }
  if (op == "penalty") {
    T* grad = buf(t.writes[0]);
    if (t.attr_int("init").value_or(0) != 0) {
      std::copy(a, a + n, buf(t.writes[1]));
      std::fill(buf(t.writes[2]), buf(t.writes[2]) + n, T{0});
      std::fill(grad, grad + n, T{0});
      return;
    }
    const T* z = buf(t.reads[1]);
    const T* lambda = buf(t.reads[2]);
    for (std::int64_t i = 0; i < n; ++i) grad[i] = (rho * (a[i] - z[i]) - lambda[i]) / m;
    return;
  }
  T* z = buf(t.writes[0]);
  T* lambda = buf(t.writes[1]);
  const T* g = buf(t.reads[3]);
  const T inv_eta = T{1} / eta;
  for (std::int64_t i = 0; i < n; ++i) {
    const T next = (rho * a[i] - lambda[i] - m * g[i] + z[i] * inv_eta) / (rho + inv_eta);
    if (dual) lambda[i] += rho * (next - a[i]);
    z[i] = next;
  }
  if (!to_store) return;
  const std::vector<std::int64_t>& ids = rows();
  const std::int64_t width = n / static_cast<std::int64_t>(ids.size());
  T* z_store = buf(t.writes[2]);
  T* lambda_store = dual ? buf(t.writes[3]) : nullptr;
  const BufferIndex seen_buffer = t.writes[dual ? 4 : 3];
  T* seen = buf(seen_buffer);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    STRATA_ASSERT(ids[i] >= 0 && ids[i] < elems(seen_buffer),
                  "task " + t.id + ": sample " + std::to_string(ids[i]) + " beyond the stores");
    const std::int64_t row = static_cast<std::int64_t>(i) * width, at = ids[i] * width;
    std::copy(z + row, z + row + width, z_store + at);
    if (dual) std::copy(lambda + row, lambda + row + width, lambda_store + at);
    seen[ids[i]] = T{1};
  }
}

template void TaskRunner<float>::run_block_admm(const Task&);
template void TaskRunner<double>::run_block_admm(const Task&);

}  // namespace strata::real
