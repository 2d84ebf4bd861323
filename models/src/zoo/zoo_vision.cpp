// Vision presets: MLP, LeNet-5, VGG-16 and ResNet-50 as layer sequences.
//
// Activation accounting (saved_elems): a layer counts the input tensor its backward reads
// (conv, linear, batch norm), plus what it makes for backward (max-pool argmax indices, the
// loss's softmax probabilities); ReLU counts its output, which its backward reads (as PyTorch's
// ReLU keeps its result; Y > 0 exactly where X > 0). Each tensor is counted once, by its first
// reader: a ResNet downsample conv reads the bottleneck's input, already counted by the
// bottleneck's first conv, and a conv, linear or batch norm after a ReLU reads the ReLU's kept
// output. Residual adds and average pools keep nothing. Masks and indices count one element
// each, an upper bound where frameworks keep a byte; batch-norm statistics (2 per channel) are
// ignored. Dropout (VGG's classifier) is left out: no parameters, negligible FLOPs.
#include "strata/models/zoo/zoo.hpp"

#include <array>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace {

// Forward FLOP per element of the memory-bound layers: rough counts, since their time is set
// by bytes moved, not FLOPs.
constexpr double kNormFlopsPerElem = 5;  // mean, variance, normalize, scale, shift
constexpr double kReluFlopsPerElem = 1;  // a compare
constexpr double kAddFlopsPerElem = 1;
constexpr double kSoftmaxFlopsPerLogit = 3;  // exp, sum, divide

// An activation tensor of one sample: channels x height x width (features x 1 x 1 when flat).
struct Tensor {
  std::int64_t c = 0;
  std::int64_t h = 1;
  std::int64_t w = 1;
  std::int64_t elems() const { return c * h * w; }
};

// Appends layers to a model while tracking the current activation shape and block.
class VisionBuilder {
 public:
  VisionBuilder(Model& model, Tensor input) : model_(model), x_(input) {
    model_.input_elems = static_cast<double>(input.elems());
  }

  const Tensor& current() const { return x_; }
  void set_current(Tensor tensor) { x_ = tensor; }
  void next_block() { ++block_; }

  void conv(std::string name, std::int64_t c_out, std::int64_t k, std::int64_t stride, std::int64_t pad,
            bool bias, bool saves_input = true) {
    const std::int64_t h_out = (x_.h + 2 * pad - k) / stride + 1;
    const std::int64_t w_out = (x_.w + 2 * pad - k) / stride + 1;
    STRATA_ASSERT(h_out > 0 && w_out > 0, "conv " + name + ": input smaller than its kernel");
    Layer layer;
    layer.name = std::move(name);
    layer.op = LayerOp::conv;
    layer.block = block_;
    layer.params = static_cast<double>(c_out * x_.c * k * k + (bias ? c_out : 0));
    const Tensor out{c_out, h_out, w_out};
    layer.fwd_flops = 2.0 * static_cast<double>(x_.c * k * k) * static_cast<double>(out.elems());
    layer.bwd_data_flops = layer.fwd_flops;
    layer.bwd_weight_flops = layer.fwd_flops;
    layer.out_elems = static_cast<double>(out.elems());
    layer.saved_elems = saves_input ? input_saved() : 0;
    layer.input_kept_before = saves_input && output_kept_;
    layer.shape = {{"c_in", x_.c},   {"c_out", c_out}, {"h_in", x_.h}, {"w_in", x_.w},     {"h_out", h_out},
                   {"w_out", w_out}, {"kh", k},        {"kw", k},      {"stride", stride}, {"pad", pad}};
    push(std::move(layer));
    x_ = out;
  }

  void batch_norm(std::string name) {
    Layer layer = make_pointwise(std::move(name), LayerOp::norm, block_, elems(), kNormFlopsPerElem,
                                 2.0 * static_cast<double>(x_.c));
    layer.saved_elems = input_saved();
    layer.input_kept_before = output_kept_;
    layer.shape["fn"] = std::string("batch");
    layer.shape["channels"] = x_.c;
    push(std::move(layer));
  }

  void relu(std::string name) {
    Layer layer = make_pointwise(std::move(name), LayerOp::activation, block_, elems(), kReluFlopsPerElem);
    layer.saved_elems = elems();  // its output
    layer.shape["fn"] = std::string("relu");
    push(std::move(layer));
    output_kept_ = true;
  }

  void max_pool(std::string name, std::int64_t k, std::int64_t stride, std::int64_t pad) {
    const Tensor out{x_.c, (x_.h + 2 * pad - k) / stride + 1, (x_.w + 2 * pad - k) / stride + 1};
    STRATA_ASSERT(out.h > 0 && out.w > 0, "pool " + name + ": input smaller than its window");
    Layer layer = make_pointwise(std::move(name), LayerOp::pool, block_, static_cast<double>(out.elems()),
                                 static_cast<double>(k * k));
    layer.saved_elems = layer.out_elems;  // argmax indices
    layer.shape = {{"fn", std::string("max")}, {"channels", x_.c}, {"h_out", out.h},
                   {"w_out", out.w},           {"kh", k},          {"kw", k},
                   {"stride", stride},         {"pad", pad}};
    push(std::move(layer));
    x_ = out;
  }

  void global_avg_pool(std::string name) {
    Layer layer = make_pointwise(std::move(name), LayerOp::pool, block_, static_cast<double>(x_.c),
                                 static_cast<double>(x_.h * x_.w));
    layer.shape = {{"fn", std::string("avg")},
                   {"channels", x_.c},
                   {"h_out", std::int64_t{1}},
                   {"w_out", std::int64_t{1}},
                   {"kh", x_.h},
                   {"kw", x_.w},
                   {"stride", std::int64_t{1}},
                   {"pad", std::int64_t{0}}};
    push(std::move(layer));
    x_ = {x_.c, 1, 1};
  }

  void add(std::string name) {
    push(make_pointwise(std::move(name), LayerOp::elementwise, block_, elems(), kAddFlopsPerElem));
  }

  // A residual add whose other operand is the input of the layer `span` layers back (the block's
  // first), through the option-A shortcut from `skip`'s shape: its layer tasks say so (shape
  // attributes span, skip_c/h/w, c/h/w), so that the executors can run it (layer_tasks.hpp).
  void residual_add(std::string name, std::int64_t span, const Tensor& skip) {
    Layer layer = make_pointwise(std::move(name), LayerOp::elementwise, block_, elems(), kAddFlopsPerElem);
    layer.shape = {{"span", span}, {"skip_c", skip.c}, {"skip_h", skip.h}, {"skip_w", skip.w},
                   {"c", x_.c},    {"h", x_.h},        {"w", x_.w}};
    push(std::move(layer));
  }
  std::size_t size() const { return model_.layers.size(); }

  // Flattens the current activation into k features.
  void linear(std::string name, std::int64_t n) {
    Layer layer = make_linear(std::move(name), block_, 1, x_.elems(), n);
    layer.saved_elems = input_saved();
    layer.input_kept_before = output_kept_;
    push(std::move(layer));
    x_ = {n, 1, 1};
  }

  void loss(std::string name) {
    Layer layer = make_pointwise(std::move(name), LayerOp::loss, block_, elems(), kSoftmaxFlopsPerLogit);
    layer.saved_elems = elems();  // softmax probabilities
    layer.out_elems = 1;          // one loss value per sample
    layer.shape["classes"] = x_.elems();
    push(std::move(layer));
  }

 private:
  double elems() const { return static_cast<double>(x_.elems()); }
  // The current tensor, if no layer keeps it already (a ReLU's output is kept by the ReLU).
  double input_saved() const { return output_kept_ ? 0 : elems(); }
  void push(Layer layer) {
    model_.layers.push_back(std::move(layer));
    output_kept_ = false;
  }

  Model& model_;
  Tensor x_;
  std::int32_t block_ = 0;
  bool output_kept_ = false;  // the current tensor is a ReLU's output, which the ReLU keeps
};

Model vision_model(std::string name, std::string family) {
  Model model;
  model.name = std::move(name);
  model.family = std::move(family);
  model.seq = 1;
  return model;
}

// One basic block of the CIFAR ResNets (He et al. 2016, section 4.2): two 3x3 convs with batch
// norm, the first strided where the stage halves the map; the shortcut is option A, the identity
// (subsampled and zero-padded in channels where the shape changes): no parameters.
void basic_block(VisionBuilder& net, const std::string& prefix, std::int64_t width, std::int64_t stride) {
  net.next_block();
  const Tensor input = net.current();
  const std::size_t first = net.size();
  net.conv(prefix + "/a", width, 3, stride, 1, false);
  net.batch_norm(prefix + "/a_bn");
  net.relu(prefix + "/a_relu");
  net.conv(prefix + "/b", width, 3, 1, 1, false);
  net.batch_norm(prefix + "/b_bn");
  net.residual_add(prefix + "/add", static_cast<std::int64_t>(net.size() - first), input);
  net.relu(prefix + "/relu");
}

// One ResNet v1.5 bottleneck (torchvision's resnet50: the stride sits on the 3x3 conv).
void bottleneck(VisionBuilder& net, const std::string& prefix, std::int64_t width, std::int64_t stride,
                bool downsample) {
  net.next_block();
  const Tensor input = net.current();
  net.conv(prefix + "/a", width, 1, 1, 0, false);
  net.batch_norm(prefix + "/a_bn");
  net.relu(prefix + "/a_relu");
  net.conv(prefix + "/b", width, 3, stride, 1, false);
  net.batch_norm(prefix + "/b_bn");
  net.relu(prefix + "/b_relu");
  net.conv(prefix + "/c", 4 * width, 1, 1, 0, false);
  net.batch_norm(prefix + "/c_bn");
  if (downsample) {
    const Tensor output = net.current();
    net.set_current(input);
    net.conv(prefix + "/down", 4 * width, 1, stride, 0, false, /*saves_input=*/false);
    net.batch_norm(prefix + "/down_bn");
    STRATA_ASSERT(net.current().elems() == output.elems(), "downsample shape mismatch");
  }
  net.add(prefix + "/add");
  net.relu(prefix + "/relu");
}

}  // namespace

Model make_mlp(const std::string& name, const std::vector<std::int64_t>& sizes) {
  STRATA_ASSERT(sizes.size() >= 2, "an MLP needs an input and an output size");
  Model model = vision_model(name, "mlp");
  VisionBuilder net(model, {sizes.front(), 1, 1});
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    const std::string index = std::to_string(i);
    net.linear("fc" + index, sizes[i]);
    if (i + 1 == sizes.size()) break;
    net.relu("relu" + index);
    net.next_block();
  }
  net.loss("loss");
  return model;
}

// LeCun et al. 1998 with today's usual substitutions: ReLU for the scaled tanh, max for the
// trainable subsampling, a full C3 (6 -> 16) and a plain softmax output. The 28x28
// Fashion-MNIST input is padded by 2 in conv1, as MNIST was padded to 32x32.
Model make_lenet5(std::int32_t image) {
  STRATA_ASSERT(image >= 12 && image % 4 == 0, "lenet5 needs a side that is a multiple of 4");
  Model model = vision_model("lenet5", "lenet");
  VisionBuilder net(model, {1, image, image});
  net.conv("conv1", 6, 5, 1, 2, true);
  net.relu("relu1");
  net.max_pool("pool1", 2, 2, 0);
  net.next_block();
  net.conv("conv2", 16, 5, 1, 0, true);
  net.relu("relu2");
  net.max_pool("pool2", 2, 2, 0);
  const std::int64_t widths[] = {120, 84};
  for (int i = 0; i < 2; ++i) {
    net.next_block();
    net.linear("fc" + std::to_string(i + 1), widths[i]);
    net.relu("relu" + std::to_string(i + 3));
  }
  net.next_block();
  net.linear("fc3", 10);
  net.loss("loss");
  return model;
}

// Simonyan & Zisserman 2015, configuration D: 13 3x3 convs in five stages, then three fully
// connected layers; 138,357,544 parameters and 15.5 GMAC at 224x224.
Model make_vgg16(std::int32_t image) {
  STRATA_ASSERT(image >= 32 && image % 32 == 0, "vgg16 needs a side that is a multiple of 32");
  Model model = vision_model("vgg16", "vgg");
  VisionBuilder net(model, {3, image, image});
  const int convs_per_stage[] = {2, 2, 3, 3, 3};
  const std::int64_t channels[] = {64, 128, 256, 512, 512};
  for (int stage = 0; stage < 5; ++stage) {
    for (int j = 0; j < convs_per_stage[stage]; ++j) {
      if (stage + j > 0) net.next_block();
      const std::string suffix = std::to_string(stage + 1) + "_" + std::to_string(j + 1);
      net.conv("conv" + suffix, channels[stage], 3, 1, 1, true);
      net.relu("relu" + suffix);
    }
    net.max_pool("pool" + std::to_string(stage + 1), 2, 2, 0);
  }
  for (int fc = 6; fc <= 7; ++fc) {
    net.next_block();
    net.linear("fc" + std::to_string(fc), 4096);
    net.relu("relu" + std::to_string(fc));
  }
  net.next_block();
  net.linear("fc8", 1000);
  net.loss("loss");
  return model;
}

// He et al. 2016's ImageNet ResNets with bottlenecks, as torchvision builds them (v1.5).
Model make_bottleneck_resnet(const std::string& name, const std::array<int, 4>& blocks_per_stage,
                             std::int32_t image) {
  STRATA_ASSERT(image >= 32 && image % 32 == 0, name + " needs a side that is a multiple of 32");
  Model model = vision_model(name, "resnet");
  VisionBuilder net(model, {3, image, image});
  net.conv("conv1", 64, 7, 2, 3, false);
  net.batch_norm("bn1");
  net.relu("relu1");
  net.max_pool("pool1", 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = std::int64_t{64} << stage;
    for (int j = 0; j < blocks_per_stage[stage]; ++j) {
      const std::string prefix = "conv" + std::to_string(stage + 2) + "_" + std::to_string(j + 1);
      const std::int64_t stride = (j == 0 && stage > 0) ? 2 : 1;
      bottleneck(net, prefix, width, stride, j == 0);
    }
  }
  net.next_block();
  net.global_avg_pool("pool5");
  net.linear("fc", 1000);
  net.loss("loss");
  return model;
}

// ResNet-50: 25,557,032 parameters with the batch-norm scales and shifts, 4.1 GMAC at 224x224.
// Blocks: stem, 16 bottlenecks, head.
Model make_resnet50(std::int32_t image) { return make_bottleneck_resnet("resnet50", {3, 4, 6, 3}, image); }

// ResNet-152: 60,192,808 parameters (torchvision), 11.5 GMAC at 224x224; 50 bottlenecks.
Model make_resnet152(std::int32_t image) { return make_bottleneck_resnet("resnet152", {3, 8, 36, 3}, image); }

// He et al. 2016, section 4.2 (CIFAR-10): depth 6n + 2, a 3x3 conv of 16 channels, three stages
// of n basic blocks at 16, 32 and 64 channels on maps of side s, s/2, s/4, global average pool,
// a 10-way fully connected layer. Table 6's parameters for 3 input channels: ResNet-20 0.27 M,
// 32 0.46 M, 56 0.85 M, 110 1.7 M, 1202 19.4 M (exactly 269,722 and 19,421,274 with the
// batch-norm scales and shifts). strata's input is one channel (Fashion-MNIST padded to 32x32),
// 288 parameters fewer. Blocks: stem, 3n basic blocks, head.
Model make_cifar_resnet(std::int32_t depth, std::int32_t image, std::int32_t channels) {
  STRATA_ASSERT(depth >= 8 && (depth - 2) % 6 == 0, "a CIFAR ResNet has depth 6n + 2");
  STRATA_ASSERT(image >= 8 && image % 4 == 0, "a CIFAR ResNet needs a side that is a multiple of 4");
  const int n = (depth - 2) / 6;
  Model model = vision_model("resnet" + std::to_string(depth), "resnet");
  VisionBuilder net(model, {channels, image, image});
  net.conv("conv1", 16, 3, 1, 1, false);
  net.batch_norm("bn1");
  net.relu("relu1");
  for (int stage = 0; stage < 3; ++stage)
    for (int j = 0; j < n; ++j)
      basic_block(net, "conv" + std::to_string(stage + 2) + "_" + std::to_string(j + 1),
                  std::int64_t{16} << stage, j == 0 && stage > 0 ? 2 : 1);
  net.next_block();
  net.global_avg_pool("pool");
  net.linear("fc", 10);
  net.loss("loss");
  return model;
}

}  // namespace models
}  // namespace strata
