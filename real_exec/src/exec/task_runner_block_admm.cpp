// TaskRunner<T>::run_block_admm: Stochastic Block-ADMM's elementwise tasks (attribute block_admm,
// models/src/solvers/solver_block_admm.cpp), per value of a block's output, m samples:
//   penalty  the gradient of the block's augmented-Lagrangian term with respect to its output a:
//            (rho (a - z) - lambda) / m; with init, z = a and lambda = 0 first (so it is 0)
//   update   the linearised proximal step of z and the dual ascent of lambda, g being the
//            minibatch mean's gradient of the next block's term with respect to z:
//            z' = (rho a - lambda - m g + z / eta) / (rho + 1 / eta), lambda += rho (z' - a)
// All arrays have the block output's size (check_kernels' block_admm_problem says so).
#include <algorithm>
#include <string>

#include "strata/real/exec/task_runner.hpp"

namespace strata::real {

std::string block_admm_problem(const Plan& plan, const Task& t) {
  const std::string op = t.attr_string("block_admm").value_or("");
  const bool init = t.attr_int("init").value_or(0) != 0;
  if (op != "penalty" && op != "update") return "block_admm '" + op + "' is neither penalty nor update";
  if (!(t.attr_real("rho").value_or(0) > 0) || !(t.attr_real("z_lr").value_or(0) > 0) ||
      t.attr_int("mean_over").value_or(0) < 1)
    return "block_admm task needs rho > 0, z_lr > 0 and mean_over >= 1";
  const std::size_t reads = op == "update" ? 4 : init ? 1 : 3;
  const std::size_t writes = op == "update" ? 2 : init ? 3 : 1;
  if (t.reads.size() != reads || t.writes.size() != writes)
    return "block_admm " + op + " reads " + std::to_string(reads) + " and writes " + std::to_string(writes) +
           " buffers";
  const double bytes = plan.buffer(t.reads[0]).bytes;
  for (const std::vector<BufferIndex>* list : {&t.reads, &t.writes})
    for (BufferIndex b : *list)
      if (plan.buffer(b).bytes != bytes) return "block_admm buffers differ in size";
  return "";
}

template <typename T>
void TaskRunner<T>::run_block_admm(const Task& t) {
  const auto rho = static_cast<T>(*t.attr_real("rho"));
  const auto eta = static_cast<T>(*t.attr_real("z_lr"));
  const auto m = static_cast<T>(*t.attr_int("mean_over"));
  const std::int64_t n = elems(t.reads[0]);
  const T* a = buf(t.reads[0]);
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
}

template void TaskRunner<float>::run_block_admm(const Task&);
template void TaskRunner<double>::run_block_admm(const Task&);

}  // namespace strata::real
