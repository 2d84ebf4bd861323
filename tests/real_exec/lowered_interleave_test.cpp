// An interleaved 1F1B Plan on the real executor: two model chunks per pipeline rank, activations
// and gradients crossing from the last rank back to rank 0 between chunks. The schedule changes
// the order of the work, not its arithmetic: it trains to the same weights as plain 1F1B, bit
// for bit (each layer's gradient accumulates the microbatches in the same order).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "strata/real/exec/task_runner.hpp"
#include "training_runs.hpp"

namespace strata::real {
namespace {

// The weight buffers of a Plan by layer ("dp0/pp1/tp0/w/fc3" -> "fc3"): the two Plans place
// layers on different ranks.
std::map<std::string, BufferIndex> weights(const Plan& plan) {
  std::map<std::string, BufferIndex> out;
  for (BufferIndex i = 0; i < plan.buffers().size(); ++i) {
    const std::string& id = plan.buffer(i).id;
    if (const std::size_t at = id.find("/w/"); at != std::string::npos) out[id.substr(at + 3)] = i;
  }
  return out;
}

// Three steps of each Plan in float64; each of the `layers` layers' weights equal bit for bit.
void expect_same_layer_weights(const Plan& reference, const Plan& plan, std::size_t layers) {
  CpuBackend backend;
  Trainer<double> a(reference, backend, training_runs::train_config());
  Trainer<double> b(plan, backend, training_runs::train_config());
  training_runs::train_side_by_side(a, b, 3);
  const auto wa = weights(reference);
  const auto wb = weights(plan);
  ASSERT_EQ(wa.size(), layers);
  ASSERT_EQ(wb.size(), layers);
  for (const auto& [layer, i] : wa) {
    const BufferIndex j = wb.at(layer);
    ASSERT_EQ(a.workspace().size(i), b.workspace().size(j)) << layer;
    EXPECT_EQ(std::memcmp(a.workspace().data(i), b.workspace().data(j),
                          static_cast<std::size_t>(a.workspace().size(i)) * sizeof(double)),
              0)
        << layer;
  }
}

TEST(LoweredInterleave, TrainsToTheSameWeightsAsPlainOneFOneB) {
  // An MLP of 4 blocks (784-256-128-64-10): pp = 2 x v = 2 chunks of one block, m = 2.
  const Model model = make_model("mlp", {{"sizes", "784,256,128,64,10"}});
  StrategyConfig c = training_runs::mlp_config(1, 2, 2);
  const Plan plain = lower(model, c);
  c.interleave = 2;
  const Plan interleaved = lower(model, c);
  ASSERT_GE(interleaved.find("it0/dp0/pp1/tp0/mb0/send/fwd/c1"), 0);  // rank 1 to rank 0's chunk 2
  expect_same_layer_weights(plain, interleaved, 4);
}

// ZB-H1 (zero-bubble): the backward split into input-gradient and weight-gradient tasks, the
// latter moved into the cool-down bubble. The same arithmetic in another order: the same weights
// as 1F1B, bit for bit, on pp = 2 with 4 microbatches.
TEST(LoweredZeroBubble, TrainsToTheSameWeightsAsOneFOneB) {
  StrategyConfig c = training_runs::mlp_config(1, 2, 4);
  const Model model = make_model("mlp", {});
  const Plan plain = lower(model, c);
  c.schedule = PipelineSchedule::zb_h1;
  const Plan zero_bubble = lower(model, c);
  zero_bubble.validate();
  ASSERT_NO_THROW(check_kernels(zero_bubble, "zb-h1"));
  expect_same_layer_weights(plain, zero_bubble, 3);
}

}  // namespace
}  // namespace strata::real
