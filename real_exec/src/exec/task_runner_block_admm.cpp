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
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "strata/real/exec/task_runner.hpp"

namespace strata::real {

std::string block_admm_problem(const Plan& plan, const Task& t) {
  const std::string op = t.attr_string("block_admm").value_or("");
  const bool init = t.attr_int("init").value_or(0) != 0;
  if (op != "penalty" && op != "update") return "block_admm '" + op + "' is neither penalty nor update";
  if (!(t.attr_real("rho").value_or(0) > 0) || !(t.attr_real("z_lr").value_or(0) > 0) ||
      t.attr_int("mean_over").value_or(0) < 1)
    return "block_admm task needs rho > 0, z_lr > 0 and mean_over >= 1";
  const bool from_store = t.attr_int("from_store").value_or(0) != 0;
  const bool to_store = t.attr_int("to_store").value_or(0) != 0;
  if ((from_store && (op != "penalty" || init)) || (to_store && op != "update"))
    return "block_admm " + op + " with from_store/to_store/init mixed";
  const std::size_t reads = op == "update" ? (to_store ? 7 : 4) : from_store ? 4 : init ? 1 : 3;
  const std::size_t writes = op == "update" ? (to_store ? 5 : 2) : init || from_store ? 3 : 1;
  if (t.reads.size() != reads || t.writes.size() != writes)
    return "block_admm " + op + " reads " + std::to_string(reads) + " and writes " + std::to_string(writes) +
           " buffers";
  const double bytes = plan.buffer(t.reads[0]).bytes;
  for (const std::vector<BufferIndex>* list : {&t.reads, &t.writes})
    for (std::size_t i = 0; i < list->size(); ++i) {
      const bool store = (from_store && list == &t.reads && i > 0) || (to_store && i >= list->size() - 3);
      if (!store && plan.buffer((*list)[i]).bytes != bytes) return "block_admm buffers differ in size";
    }
  if (from_store || to_store) {
    const std::vector<BufferIndex>& s = from_store ? t.reads : t.writes;
    const std::size_t at = from_store ? 1 : s.size() - 3;
    const double z = plan.buffer(s[at]).bytes, seen = plan.buffer(s[at + 2]).bytes;
    if (plan.buffer(s[at + 1]).bytes != z || seen <= 0 || std::fmod(z, seen) != 0 ||
        std::fmod(bytes * seen, z) != 0)
      return "block_admm stores are not one row per sample";
  }
  return "";
}

template <typename T>
void TaskRunner<T>::run_block_admm(const Task& t) {
  const auto rho = static_cast<T>(*t.attr_real("rho"));
  const auto eta = static_cast<T>(*t.attr_real("z_lr"));
  const auto m = static_cast<T>(*t.attr_int("mean_over"));
  const std::int64_t n = elems(t.reads[0]);
  const T* a = buf(t.reads[0]);
  const bool from_store = t.attr_int("from_store").value_or(0) != 0;
  const bool to_store = t.attr_int("to_store").value_or(0) != 0;
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
    const T* lambda_store = buf(t.reads[2]);
    const T* seen = buf(t.reads[3]);
    T* grad = buf(t.writes[0]);
    T* z = buf(t.writes[1]);
    T* lambda = buf(t.writes[2]);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      STRATA_ASSERT(ids[i] >= 0 && ids[i] < elems(t.reads[3]),
                    "task " + t.id + ": sample " + std::to_string(ids[i]) + " beyond the stores");
      const std::int64_t row = static_cast<std::int64_t>(i) * width, at = ids[i] * width;
      const bool known = seen[ids[i]] != T{0};
      for (std::int64_t j = 0; j < width; ++j) {
        z[row + j] = known ? z_store[at + j] : a[row + j];
        lambda[row + j] = known ? lambda_store[at + j] : T{0};
      }
    }
    for (std::int64_t i = 0; i < n; ++i) grad[i] = (rho * (a[i] - z[i]) - lambda[i]) / m;
    return;
  }
  if (*t.attr_string("block_admm") == "penalty") {
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
    lambda[i] += rho * (next - a[i]);
    z[i] = next;
  }
  if (!to_store) return;
  const std::vector<std::int64_t>& ids = rows();
  const std::int64_t width = n / static_cast<std::int64_t>(ids.size());
  T* z_store = buf(t.writes[2]);
  T* lambda_store = buf(t.writes[3]);
  T* seen = buf(t.writes[4]);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    STRATA_ASSERT(ids[i] >= 0 && ids[i] < elems(t.writes[4]),
                  "task " + t.id + ": sample " + std::to_string(ids[i]) + " beyond the stores");
    const std::int64_t row = static_cast<std::int64_t>(i) * width, at = ids[i] * width;
    std::copy(z + row, z + row + width, z_store + at);
    std::copy(lambda + row, lambda + row + width, lambda_store + at);
    seen[ids[i]] = T{1};
  }
}

template void TaskRunner<float>::run_block_admm(const Task&);
template void TaskRunner<double>::run_block_admm(const Task&);

}  // namespace strata::real
