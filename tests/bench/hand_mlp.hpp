// HandMlp: the baseline of strata_bench_real's training benchmark — an MLP trained by a loop
// written directly over strata::real's kernels (linear, ReLU, softmax cross-entropy, Adam), with
// no Plan, Workspace or Interpreter.
//
// It starts from the weights of a given Trainer's Plan (so both compute the same numbers from
// the same batches, which the benchmark checks through the losses) and holds them as the Plan
// does: a layer's weights [in, out] followed by its bias [out]. With `input_gradient` it also
// computes the first layer's input gradient, which the lowered Plan computes although nothing
// reads it, so the two sides do the same GEMMs; without it, it does what a hand-written trainer
// needs and no more.
// Ownership: HandMlp owns its arrays. Thread safety: none; one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "strata/real/data/fashion_mnist.hpp"
#include "strata/real/kernels/kernels.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::bench {

class HandMlp {
 public:
  // The layers are the Plan's linear_fwd tasks in Plan order; weights are copied from `trainer`.
  HandMlp(const Plan& plan, real::Trainer<float>& trainer, real::Backend& backend, bool input_gradient)
      : backend_(backend), input_gradient_(input_gradient) {
    for (TaskIndex i = 0; i < plan.size(); ++i) {
      const Task& t = plan.task(i);
      if (t.kind != TaskKind::linear_fwd) continue;
      Layer l;
      l.shape = {*t.attr_int("m"), *t.attr_int("k"), *t.attr_int("n")};
      const float* w = trainer.workspace().data(t.reads[1]);
      l.weight.assign(w, w + trainer.workspace().size(t.reads[1]));
      l.grad.assign(l.weight.size(), 0.0F);
      l.first_moment.assign(l.weight.size(), 0.0F);
      l.second_moment.assign(l.weight.size(), 0.0F);
      l.output.assign(static_cast<std::size_t>(l.shape.batch * l.shape.out_features), 0.0F);
      l.activation.assign(l.output.size(), 0.0F);
      l.output_grad.assign(l.output.size(), 0.0F);
      l.input_grad.assign(static_cast<std::size_t>(l.shape.batch * l.shape.in_features), 0.0F);
      layers_.push_back(std::move(l));
    }
    probs_.assign(layers_.back().output.size(), 0.0F);
  }

  // One Adam step on the batch `indices` of `data`; returns the batch's mean loss.
  double train_batch(const real::LabelledImages& data, std::span<const std::int64_t> indices) {
    real::gather_batch(data, indices, input_, labels_);
    const float* x = input_.data();
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      Layer& l = layers_[i];
      const std::int64_t weights = l.shape.in_features * l.shape.out_features;
      real::linear_forward(backend_, l.shape, x, l.weight.data(), l.weight.data() + weights, l.output.data());
      if (i + 1 == layers_.size()) break;
      real::relu_forward(static_cast<std::int64_t>(l.output.size()), l.output.data(), l.activation.data());
      x = l.activation.data();
    }
    Layer& last = layers_.back();
    const std::int64_t batch = last.shape.batch;
    const std::int64_t classes = last.shape.out_features;
    const float loss = real::softmax_cross_entropy_forward(batch, classes, last.output.data(), labels_.data(),
                                                           probs_.data());
    real::softmax_cross_entropy_backward(batch, classes, probs_.data(), labels_.data(),
                                         last.output_grad.data());
    for (std::size_t i = layers_.size(); i-- > 0;) {
      Layer& l = layers_[i];
      const float* layer_input = i == 0 ? input_.data() : layers_[i - 1].activation.data();
      const std::int64_t weights = l.shape.in_features * l.shape.out_features;
      real::linear_backward_weight(backend_, l.shape, layer_input, l.output_grad.data(), l.grad.data(),
                                   l.grad.data() + weights, false);
      if (i == 0 && !input_gradient_) break;
      real::linear_backward_data(backend_, l.shape, l.output_grad.data(), l.weight.data(),
                                 l.input_grad.data(), false);
      if (i == 0) break;
      Layer& below = layers_[i - 1];
      real::relu_backward(static_cast<std::int64_t>(below.output.size()), below.output.data(),
                          l.input_grad.data(), below.output_grad.data());
    }
    ++step_;
    for (Layer& l : layers_)
      real::adam_step(real::AdamConfig{}, step_, static_cast<std::int64_t>(l.weight.size()), l.grad.data(),
                      l.first_moment.data(), l.second_moment.data(), l.weight.data());
    return static_cast<double>(loss);
  }

 private:
  struct Layer {
    real::LinearShape shape;
    std::vector<float> weight, grad, first_moment, second_moment;  // [in*out + out]
    std::vector<float> output, activation, output_grad;            // [batch, out]
    std::vector<float> input_grad;                                 // [batch, in]
  };

  real::Backend& backend_;
  bool input_gradient_;
  std::vector<Layer> layers_;
  real::Tensor<float> input_;
  std::vector<std::int32_t> labels_;
  std::vector<float> probs_;
  std::int64_t step_ = 0;
};

}  // namespace strata::bench
