// Piper's input format (models/schedule/piper_input.hpp) on a hand-made four-node graph
// (tests/data/piper/four_nodes.json): nodes listed out of order, a skip edge 0 -> 2 of 1 GB at
// 1 GB/s, two TMPCs on one node, a degree only one node offers.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "strata/models/schedule/piper_input.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

const std::string kFile = std::string(STRATA_SOURCE_DIR) + "/tests/data/piper/four_nodes.json";

std::string error_of(const std::string& text, int stages = 2) {
  const std::string path = (std::filesystem::temp_directory_path() / "strata_piper_bad.json").string();
  std::ofstream(path) << text;
  try {
    read_piper_input(path, stages);
  } catch (const InputError& e) {
    std::filesystem::remove(path);
    return std::string(e.what()).substr(path.size());
  }
  std::filesystem::remove(path);
  return "(no InputError)";
}

TEST(PiperInput, NodesInTopologicalOrderWithTheirCutsAndMemory) {
  const PiperInput in = read_piper_input(kFile, 2);
  EXPECT_EQ(in.node_ids, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(in.names.back(), "head");
  EXPECT_EQ(in.degrees, (std::vector<int>{1, 2}));  // 4: node 0 only
  EXPECT_EQ(in.max_devices, 3);
  const PartitionProblem& t1 = in.problems[0];
  // Node 0's fastest TMPC (vanilla, 1.0 s), not activation recomputation (1.2 s).
  EXPECT_DOUBLE_EQ(t1.layers[0].time_s, 1.0);
  EXPECT_DOUBLE_EQ(t1.layers[0].activation_bytes, 1e6);
  EXPECT_DOUBLE_EQ(t1.layers[0].static_bytes, 1e9);
  // The skip edge crosses the cuts after nodes 0 and 1: 1e9 B at 1e9 B/s.
  EXPECT_DOUBLE_EQ(t1.layers[0].transfer_s, 1.0);
  EXPECT_DOUBLE_EQ(t1.layers[1].transfer_s, 1.0);
  EXPECT_DOUBLE_EQ(t1.layers[2].transfer_s, 0.0);
  ASSERT_EQ(t1.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(t1.stages[0].in_flight, 2);  // Piper's a * ceil(s / d) + b with d = 1
  EXPECT_DOUBLE_EQ(t1.stages[1].in_flight, 1);
  EXPECT_DOUBLE_EQ(t1.stages[0].memory_bytes, 1e12);
}

// Hand-derived: with 3 devices the degrees are (1,1), (1,2) or (2,1). Cut after node 0: stage 0
// at t=1 is 1 + 1 (the skip edge) = 2 s, stage 1 (nodes 1-3) at t=2 is 0.6 + 0.6 + 1.6 = 2.8 s.
// Cut after node 1: (1,2) gives max(2 + 1, 2.2) = 3 s. Cut after node 2: 3 s at best. Every
// stage at t=1: 3 s (cut after node 2).
TEST(PiperInput, TheJointCutBeatsEveryUniformDegree) {
  const PiperInput in = read_piper_input(kFile, 2);
  const TpPartition best = partition_layers_and_tp(in.degrees, in.problems, in.max_devices, kFile);
  EXPECT_EQ(best.partition.first, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(best.degree, (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(best.partition.stage_time_s[0], 2.0);
  EXPECT_NEAR(best.partition.stage_time_s[1], 2.8, 1e-12);
  EXPECT_DOUBLE_EQ(best.partition.stage_bytes[0], 1e9 + 2 * 1e6);
  EXPECT_DOUBLE_EQ(best.partition.stage_bytes[1], 1.5e9);
  EXPECT_DOUBLE_EQ(partition_layers(in.problems[0], kFile).bottleneck_s, 3.0);
}

TEST(PiperInput, BadFilesAreRefusedInOneLine) {
  const std::string node =
      R"({"id": 0, "TMPCs": {"1": [{"timePerSample": 1, "memoryUsageA": 0, "memoryUsageB": 0}]}})";
  const std::string node1 =
      R"({"id": 1, "TMPCs": {"1": [{"timePerSample": 1, "memoryUsageA": 0, "memoryUsageB": 0}]}})";
  auto file = [](const std::string& nodes, const std::string& edges) {
    return R"({"maxDevices": 2, "maxMemoryPerDevice": 1e9, "bandwidth": 1e9, "nodes": [)" + nodes +
           R"(], "edges": [)" + edges + "]}";
  };
  EXPECT_EQ(error_of(file(node + "," + node1,
                          R"({"sourceId": 0, "destId": 1, "communicationCost": 0},
                             {"sourceId": 1, "destId": 0, "communicationCost": 0})")),
            ": /edges: the edges make a cycle (through node 0)");
  EXPECT_EQ(error_of(file(node + "," + node, "")), ": /nodes/1/id: node id 0 given twice");
  EXPECT_EQ(error_of(file(node + "," + node1, R"({"sourceId": 0, "destId": 7, "communicationCost": 0})")),
            ": /edges/0/destId: no node with id 7");
  EXPECT_EQ(error_of(file(node, ""), 2), ": /nodes: 1 nodes cannot make 2 stages");
  EXPECT_EQ(error_of(file(node + "," + node1, R"({"sourceId": 0, "destId": 1, "communicationCost": -1})")),
            ": /edges/0/communicationCost: negative value -1");
  EXPECT_EQ(error_of(file(R"({"id": 0, "TMPCs": {"x": []}})", ""), 1),
            ": /nodes/0/TMPCs/x: a tensor-parallel degree must be a positive integer");
}

}  // namespace
}  // namespace strata
