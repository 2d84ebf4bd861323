// The model zoo against hand-derived parameter and FLOP counts.
#include "strata/models/zoo/zoo.hpp"

#include <gtest/gtest.h>

#include <set>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

// Multiply-accumulates of the layers with weights (2 FLOP each), the figure papers quote.
double matmul_macs(const Model& model) {
  double flops = 0;
  for (const auto& layer : model.layers)
    if (layer.op == LayerOp::conv || layer.op == LayerOp::linear) flops += layer.fwd_flops;
  return flops / 2;
}

const Layer& find_layer(const Model& model, const std::string& name) {
  for (const auto& layer : model.layers)
    if (layer.name == name) return layer;
  throw std::out_of_range("no layer " + name);
}

std::int64_t shape_int(const Layer& layer, const std::string& key) {
  return std::get<std::int64_t>(layer.shape.at(key));
}

std::string input_error(const std::string& name, const std::map<std::string, std::string>& set) {
  try {
    make_model(name, set);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no InputError";
}

TEST(Zoo, NamesInOrder) {
  const std::vector<std::string> expected = {
      "mlp",       "lenet5",     "vgg16",      "resnet50",  "resnet152", "resnet20",  "resnet32",  "resnet56",
      "resnet110", "resnet1202", "gpt2-small", "gpt3-1.3b", "gpt3-13b",  "gpt3-175b", "anchor-96", "gcn"};
  EXPECT_EQ(zoo_names(), expected);
}

// Per node: the GEMMs of 784-256-256-10, the aggregations of layers 1 and 2 (21 nonzeros per row
// of Â at mean degree 20), ReLUs and the loss.
TEST(Zoo, GcnPerNodeFiguresExact) {
  const Model gcn = make_model("gcn");
  EXPECT_EQ(gcn.family, "gcn");
  EXPECT_EQ(gcn.params(), 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);  // 1,077,288 B in fp32
  EXPECT_EQ(gcn.graph_nodes, 10000);
  EXPECT_EQ(gcn.graph_avg_degree, 20);
  EXPECT_EQ(gcn.num_blocks_or_layers(), 3);
  const Layer& agg = find_layer(gcn, "gc1/agg");
  EXPECT_EQ(agg.op, LayerOp::aggregate);
  EXPECT_EQ(agg.fwd_flops, 2.0 * 21 * 256);
  EXPECT_EQ(agg.bwd_data_flops, agg.fwd_flops);
  EXPECT_EQ(agg.bwd_weight_flops, 0);
  EXPECT_EQ(find_layer(gcn, "gc2/agg").fwd_flops, 2.0 * 21 * 10);
  EXPECT_EQ(gcn.fwd_flops_per_sample(),
            2.0 * (784 * 256 + 256 * 256 + 256 * 10) + 2.0 * 21 * (256 + 10) + 2 * 256 + 3 * 10);
  const Model small = make_model("gcn", {{"sizes", "32,8,4"}, {"nodes", "100"}, {"avg_degree", "3"}});
  EXPECT_EQ(small.graph_nodes, 100);
  EXPECT_EQ(find_layer(small, "gc1/agg").fwd_flops, 2.0 * 4 * 4);
  EXPECT_EQ(input_error("gcn", {{"avg_degree", "100"}, {"nodes", "100"}}),
            "--set avg_degree=100: a node has at most nodes - 1 = 99 neighbours");
}

TEST(Zoo, MlpParamsExact) {
  Model mlp = make_model("mlp");
  // 784·256 + 256 + 256·128 + 128 + 128·10 + 10
  EXPECT_EQ(mlp.params(), 235146);
  // 2 FLOP per weight per sample forward; biases are not counted as FLOPs.
  EXPECT_EQ(mlp.fwd_flops_per_sample(),
            2.0 * (784 * 256 + 256 * 128 + 128 * 10) + 256 + 128 + 3 * 10);  // + relus (1/elem) + loss
  EXPECT_EQ(mlp.num_blocks_or_layers(), 3);
  EXPECT_EQ(mlp.input_elems, 784);
  EXPECT_EQ(find_layer(mlp, "fc2").block, 1);
  EXPECT_EQ(find_layer(mlp, "loss").block, 2);
  EXPECT_EQ(shape_int(find_layer(mlp, "fc1"), "k"), 784);
  EXPECT_EQ(shape_int(find_layer(mlp, "fc1"), "n"), 256);
  EXPECT_EQ(shape_int(find_layer(mlp, "fc1"), "m"), 1);
}

TEST(Zoo, MlpSizesOverride) {
  Model mlp = make_model("mlp", {{"sizes", "784,10"}});
  EXPECT_EQ(mlp.params(), 784 * 10 + 10);
  EXPECT_EQ(mlp.num_blocks_or_layers(), 1);
}

TEST(Zoo, Lenet5ParamsExact) {
  Model lenet = make_model("lenet5");
  // conv1 1->6 5x5 + bias: 6·25 + 6 = 156; conv2 6->16 5x5: 16·150 + 16 = 2,416;
  // fc1 400->120: 48,000 + 120 = 48,120; fc2 120->84: 10,080 + 84 = 10,164;
  // fc3 84->10: 840 + 10 = 850. Total 61,706.
  EXPECT_EQ(lenet.params(), 61706);
  // conv1 28·28·6 outputs · 25 MACs = 117,600; conv2 10·10·16 · 150 = 240,000;
  // fc 48,000 + 10,080 + 840. Total 416,520 MACs.
  EXPECT_EQ(matmul_macs(lenet), 416520);
  EXPECT_EQ(find_layer(lenet, "pool2").out_elems, 16 * 5 * 5);
  EXPECT_EQ(lenet.num_blocks_or_layers(), 5);
}

TEST(Zoo, Vgg16ParamsAndMacs) {
  Model vgg = make_model("vgg16");
  EXPECT_NEAR(vgg.params(), 138.36e6, 138.36e6 * 0.005);
  EXPECT_EQ(vgg.params(), 138357544);  // torchvision's vgg16
  EXPECT_NEAR(matmul_macs(vgg), 15.5e9, 15.5e9 * 0.01);
  EXPECT_EQ(vgg.num_blocks_or_layers(), 16);  // 13 convs + 3 fully connected
  EXPECT_EQ(shape_int(find_layer(vgg, "fc6"), "k"), 512 * 7 * 7);
}

TEST(Zoo, Resnet50ParamsAndMacs) {
  Model resnet = make_model("resnet50");
  EXPECT_GE(resnet.params(), 25.5e6);
  EXPECT_LE(resnet.params(), 25.7e6);
  EXPECT_EQ(resnet.params(), 25557032);  // torchvision's resnet50, BN scales and shifts included
  EXPECT_NEAR(matmul_macs(resnet), 4.1e9, 4.1e9 * 0.03);
  // Memory-bound layers add little: the whole forward stays within 3% of 8.2 GFLOP.
  EXPECT_NEAR(resnet.fwd_flops_per_sample(), 8.2e9, 8.2e9 * 0.03);
  EXPECT_EQ(resnet.num_blocks_or_layers(), 18);  // stem, 16 bottlenecks, head
  EXPECT_EQ(find_layer(resnet, "conv5_3/relu").out_elems, 2048 * 7 * 7);
  const Layer& down = find_layer(resnet, "conv3_1/down");
  EXPECT_EQ(shape_int(down, "c_in"), 256);
  EXPECT_EQ(shape_int(down, "stride"), 2);
  EXPECT_EQ(down.saved_elems, 0);  // its input is counted by conv3_1/a
}

TEST(Zoo, Gpt2SmallParams) {
  Model gpt = make_model("gpt2-small");
  EXPECT_NEAR(gpt.params(), 124e6, 124e6 * 0.02);
  // 12·(12h² + 13h) + (vocab + seq)·h + 2h with h = 768: GPT-2's published 124,439,808.
  EXPECT_EQ(gpt.params(), 124439808);
}

TEST(Zoo, Gpt3Params) {
  EXPECT_NEAR(make_model("gpt3-175b").params(), 175e9, 175e9 * 0.01);
  EXPECT_NEAR(make_model("gpt3-13b").params(), 13e9, 13e9 * 0.03);
  EXPECT_NEAR(make_model("gpt3-1.3b").params(), 1.3e9, 1.3e9 * 0.03);
}

TEST(Zoo, GptModelFlopsPerTokenIsPalmFormula) {
  Model gpt = make_model(
      "gpt2-small", {{"layers", "2"}, {"hidden", "64"}, {"heads", "4"}, {"seq", "32"}, {"vocab", "100"}});
  // N = 2·(12·64² + 13·64) + (100 + 32)·64 + 2·64 = 108,544.
  EXPECT_EQ(gpt.params(), 108544);
  // 6N + 12·L·h·s = 651,264 + 12·2·64·32 = 700,416.
  EXPECT_EQ(gpt.model_flops_per_token(), 700416);
}

TEST(Zoo, GptLayerFlopsAgreeWithModelFlops) {
  // The per-layer sum differs from 6N + 12Lhs only by memory-bound layers and bias/norm
  // parameters counted in N.
  for (const char* name : {"gpt2-small", "gpt3-175b"}) {
    Model gpt = make_model(name);
    EXPECT_NEAR(gpt.train_flops_per_sample() / static_cast<double>(gpt.seq), gpt.model_flops_per_token(),
                gpt.model_flops_per_token() * 0.01)
        << name;
  }
}

TEST(Zoo, GptBlockLayout) {
  Model gpt = make_model("gpt3-1.3b");
  EXPECT_EQ(gpt.num_blocks_or_layers(), 24);
  EXPECT_EQ(gpt.layers.size(), 24u * 10 + 4);
  EXPECT_EQ(gpt.layers.front().name, "embed");
  EXPECT_EQ(gpt.layers.front().block, 0);
  EXPECT_EQ(gpt.layers[1].name, "l0/ln1");
  EXPECT_EQ(find_layer(gpt, "head").block, 23);
  EXPECT_EQ(gpt.layers.back().name, "loss");
  EXPECT_EQ(gpt.layers.back().block, 23);
  const Layer& qkv = find_layer(gpt, "l5/qkv");
  EXPECT_EQ(shape_int(qkv, "m"), 2048);
  EXPECT_EQ(shape_int(qkv, "k"), 2048);
  EXPECT_EQ(shape_int(qkv, "n"), 3 * 2048);
  EXPECT_EQ(shape_int(find_layer(gpt, "l5/attn"), "head_dim"), 128);
  // QKᵀ and AV: 4·s²·h per sample.
  EXPECT_EQ(find_layer(gpt, "l5/attn").fwd_flops, 4.0 * 2048 * 2048 * 2048);
}

TEST(Zoo, GptTensorSplits) {
  Model gpt = make_model("gpt2-small");
  const std::map<std::string, TensorSplit> expected = {
      {"embed", TensorSplit::column},   {"l3/ln1", TensorSplit::replicated},
      {"l3/qkv", TensorSplit::column},  {"l3/attn", TensorSplit::heads},
      {"l3/proj", TensorSplit::row},    {"l3/res1", TensorSplit::replicated},
      {"l3/fc1", TensorSplit::column},  {"l3/gelu", TensorSplit::column},
      {"l3/fc2", TensorSplit::row},     {"l3/res2", TensorSplit::replicated},
      {"lnf", TensorSplit::replicated}, {"head", TensorSplit::column},
  };
  for (const auto& [name, split] : expected) EXPECT_EQ(find_layer(gpt, name).split, split) << name;
  EXPECT_EQ(find_layer(make_model("resnet50"), "conv2_1/b").split, TensorSplit::replicated);
}

TEST(Zoo, GptActivationsFollowKorthikanti) {
  Model gpt = make_model("gpt3-1.3b");
  double block_elems = 0;
  for (const auto& layer : gpt.layers)
    if (layer.name.rfind("l7/", 0) == 0) block_elems += layer.saved_elems;
  const double s = 2048, h = 2048, a = 16;
  // (34·s·h + 5·a·s²) bytes at 2 bytes per element.
  EXPECT_DOUBLE_EQ(block_elems, 17 * s * h + 2.5 * a * s * s);
}

TEST(Zoo, Anchor96IsTheAstraSimWorkload) {
  Model anchor = make_model("anchor-96");
  EXPECT_EQ(anchor.family, "synthetic");
  ASSERT_EQ(anchor.layers.size(), 96u);
  EXPECT_EQ(anchor.num_blocks_or_layers(), 96);
  for (std::size_t i = 0; i < anchor.layers.size(); ++i) {
    const Layer& layer = anchor.layers[i];
    EXPECT_EQ(layer.op, LayerOp::fixed);
    EXPECT_EQ(layer.block, static_cast<std::int32_t>(i));
    EXPECT_EQ(layer.fixed_fwd_s, 300e-6);
    EXPECT_EQ(layer.fixed_bwd_s, 600e-6);
    EXPECT_EQ(layer.params * 2, 48e6);  // bf16 gradient bytes
  }
}

TEST(Zoo, EveryPresetIsWellFormed) {
  for (const auto& name : zoo_names()) {
    Model model = make_model(name);
    std::set<std::string> names;
    std::int32_t block = 0;
    double train = 0;
    for (const auto& layer : model.layers) {
      EXPECT_TRUE(names.insert(layer.name).second) << name << ": duplicate " << layer.name;
      // Blocks start at 0 and never skip or go back.
      EXPECT_TRUE(layer.block == block || layer.block == block + 1) << name << " " << layer.name;
      block = layer.block;
      train += layer.fwd_flops + layer.bwd_data_flops + layer.bwd_weight_flops;
      if (layer.op == LayerOp::linear || layer.op == LayerOp::conv) {
        EXPECT_EQ(layer.bwd_data_flops, layer.fwd_flops) << layer.name;
        EXPECT_EQ(layer.bwd_weight_flops, layer.fwd_flops) << layer.name;
      }
      if (layer.params == 0 && layer.op != LayerOp::linear) {  // the tied head is linear
        EXPECT_EQ(layer.bwd_weight_flops, 0) << name << " " << layer.name;
      }
    }
    EXPECT_EQ(model.layers.front().block, 0) << name;
    EXPECT_EQ(model.num_blocks_or_layers(), block + 1) << name;
    EXPECT_DOUBLE_EQ(model.train_flops_per_sample(), train) << name;
    if (model.family == "gpt") {
      EXPECT_EQ(model.num_blocks_or_layers(), model.num_blocks) << name;
    } else {
      EXPECT_EQ(model.model_flops_per_token(), model.train_flops_per_sample()) << name;
    }
  }
}

// He et al. 2016, Table 6 (CIFAR-10, 3 input channels): 0.27 M, 0.46 M, 0.85 M, 1.7 M and 19.4 M
// parameters. By hand, n blocks a stage: conv1 3*9*16 = 432; stage 1 2n convs of 9*16*16; stage 2
// 9*16*32 + (2n-1) 9*32*32; stage 3 9*32*64 + (2n-1) 9*64*64; batch norm 2 (16 + 2n (16+32+64));
// fc 64*10 + 10. ResNet-20 (n = 3): 432 + 13,824 + 50,688 + 202,752 + 1,376 + 650 = 269,722.
TEST(Zoo, CifarResnetsHaveHeEtAlsParameters) {
  const std::pair<int, double> table6[] = {
      {20, 269722}, {32, 464154}, {56, 853018}, {110, 1727962}, {1202, 19421274}};
  for (const auto& [depth, params] : table6) {
    const Model m = make_cifar_resnet(depth, 32, 3);
    EXPECT_EQ(m.params(), params) << depth;
    EXPECT_EQ(m.num_blocks_or_layers(), (depth - 2) / 2 + 2) << depth;  // stem, 3n blocks, head
  }
  // strata's input is one channel (Fashion-MNIST padded to 32x32): conv1 has 9*16*2 = 288 fewer.
  const Model r20 = make_model("resnet20");
  EXPECT_EQ(r20.params(), 269722 - 288);
  EXPECT_EQ(r20.input_elems, 32 * 32);
  // MACs by hand for 3 channels: conv1 32*32*16*27; stage 1 six convs of 32*32*16*144; stages 2
  // and 3 each 12,976,128; fc 640: 40,551,040.
  EXPECT_EQ(matmul_macs(make_cifar_resnet(20, 32, 3)), 40551040);
  EXPECT_EQ(find_layer(r20, "conv4_3/relu").out_elems, 64 * 8 * 8);
  EXPECT_EQ(make_model("resnet152").params(), 60192808);  // torchvision's resnet152
  EXPECT_EQ(make_model("resnet1202").layers.back().name, "loss");
}

TEST(Zoo, UnknownModelIsInputError) {
  EXPECT_EQ(
      input_error("x", {}),
      "unknown model 'x' (known: mlp, lenet5, vgg16, resnet50, resnet152, resnet20, resnet32, resnet56, "
      "resnet110, resnet1202, gpt2-small, gpt3-1.3b, gpt3-13b, gpt3-175b, anchor-96, gcn)");
}

TEST(Zoo, BadOverrideIsInputError) {
  EXPECT_EQ(input_error("gpt2-small", {{"foo", "1"}}),
            "--set foo: unknown hyperparameter for model 'gpt2-small' (known: layers, hidden, "
            "heads, seq, vocab)");
  EXPECT_EQ(input_error("gpt2-small", {{"layers", "0"}}), "--set layers=0: '0' is not a positive integer");
  EXPECT_EQ(input_error("gpt2-small", {{"seq", "12x"}}), "--set seq=12x: '12x' is not a positive integer");
  EXPECT_EQ(input_error("gpt2-small", {{"hidden", "100"}}), "--set hidden=100: not divisible by heads (12)");
  EXPECT_EQ(input_error("mlp", {{"sizes", "784,-1"}}), "--set sizes=784,-1: '-1' is not a positive integer");
  EXPECT_EQ(input_error("mlp", {{"sizes", "784"}}), "--set sizes=784: needs at least 2 values");
  EXPECT_EQ(input_error("mlp", {{"layers", "3"}}),
            "--set layers: unknown hyperparameter for model 'mlp' (known: sizes)");
  EXPECT_EQ(input_error("vgg16", {{"image", "100"}}),
            "--set image=100: vgg16 needs a multiple of 32 of at least 32");
}

TEST(Zoo, GptOverridesApply) {
  Model gpt = make_model("gpt3-175b", {{"layers", "4"}, {"seq", "512"}});
  EXPECT_EQ(gpt.num_blocks_or_layers(), 4);
  EXPECT_EQ(gpt.seq, 512);
  EXPECT_EQ(gpt.hidden, 12288);
  EXPECT_EQ(make_model("resnet50", {{"image", "64"}}).layers.back().name, "loss");
}

}  // namespace
}  // namespace strata
