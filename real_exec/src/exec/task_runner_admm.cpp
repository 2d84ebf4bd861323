// TaskRunner<T>::run_admm: the admm_backward and admm_forward kinds (task_runner.hpp), one ADMM
// layer's phase on the Workspace's arrays through admm.hpp's updates.
//
// The updates work on Tensors. Each array the task names is moved into a Tensor of its shape
// (samples as columns) and moved back when the task ends, even when an update throws: O(1), so
// a task's time is its update's, as the simulator assumes. The arrays keep their sizes (the
// Tensor constructor checks them against the shapes the attributes give).
#include <string>
#include <utility>
#include <vector>

#include "strata/real/exec/task_runner.hpp"
#include "strata/real/kernels/admm.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

// Borrows Workspace arrays as Tensors for the life of a task.
template <typename T>
class Lent {
 public:
  explicit Lent(Workspace<T>& ws) : ws_(ws) {}
  ~Lent() {
    for (auto& [buffer, tensor] : lent_) ws_.array(buffer) = tensor->release();
  }
  Lent(const Lent&) = delete;
  Lent& operator=(const Lent&) = delete;

  void take(BufferIndex buffer, Tensor<T>& into, Shape shape) {
    into = Tensor<T>::borrowed(std::move(shape), std::move(ws_.array(buffer)));
    lent_.emplace_back(buffer, &into);
  }

 private:
  Workspace<T>& ws_;
  std::vector<std::pair<BufferIndex, Tensor<T>*>> lent_;
};

std::int64_t attr(const Task& t, const char* key) {
  const auto v = t.attr_int(key);
  STRATA_ASSERT(v.has_value(), "task " + t.id + " lacks integer attribute '" + key + "'");
  return *v;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

template <typename T>
void TaskRunner<T>::run_admm(const Task& t) {
  const std::int64_t layer_index = attr(t, "layer"), n_in = attr(t, "n_in"), n_out = attr(t, "n_out");
  const std::int64_t samples = attr(t, "samples");
  AdmmSettings s;
  s.rho = t.attr_real("rho").value_or(0);
  s.nu = t.attr_real("nu").value_or(0);
  s.quantize_p = t.attr_int("quantize").value_or(0) != 0;
  // Declared before `lent`, which hands their arrays back when it is destroyed, before them.
  AdmmLayer<T> layer;
  Tensor<T> p_next, labels, q_prev, u_prev;
  Lent<T> lent(ws_);
  if (t.kind == TaskKind::admm_forward) {
    STRATA_ASSERT(t.reads.size() == 4 && t.writes.size() == 2,
                  "admm_forward " + t.id + ": reads [z, q, u, p_next]");
    lent.take(t.reads[0], layer.z, {n_out, samples});
    lent.take(t.reads[1], layer.q, {n_out, samples});
    lent.take(t.reads[2], layer.u, {n_out, samples});
    lent.take(t.reads[3], p_next, {n_out, samples});
    update_layer_forward(layer, p_next, s);
    return;
  }
  const bool last = t.reads.size() > 5 && ends_with(plan_.buffer(t.reads[5]).id, "/admm/labels");
  const std::size_t neighbours = last ? 6 : 7;  // where q_prev, u_prev start (layers after the first)
  STRATA_ASSERT(t.reads.size() == neighbours + (layer_index > 0 ? 2 : 0),
                "admm_backward " + t.id + ": operands");
  lent.take(t.reads[0], layer.p, {n_in, samples});
  lent.take(t.reads[1], layer.W, {n_out, n_in});
  lent.take(t.reads[2], layer.b, {n_out});
  lent.take(t.reads[3], layer.z, {n_out, samples});
  lent.take(t.reads[4], layer.wp, {n_out, samples});
  BackwardInputs<T> in;
  if (last) {
    lent.take(t.reads[5], labels, {n_out, samples});
    in.labels = &labels;
  } else {
    lent.take(t.reads[5], layer.q, {n_out, samples});
    lent.take(t.reads[6], layer.u, {n_out, samples});
  }
  if (layer_index > 0) {
    lent.take(t.reads[neighbours], q_prev, {n_in, samples});
    lent.take(t.reads[neighbours + 1], u_prev, {n_in, samples});
    in.q_prev = &q_prev;
    in.u_prev = &u_prev;
  }
  update_layer_backward(layer, in, s, backend_);
}

template void TaskRunner<float>::run_admm(const Task&);
template void TaskRunner<double>::run_admm(const Task&);

}  // namespace strata::real
