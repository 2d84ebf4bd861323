// Published-runs files (sim/published.hpp): the shipped tables read with their framework presets,
// what each row is simulated with, and one-line refusals of a file that says nothing measured.
#include "strata/sim/published.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "strata/traces/error.hpp"

namespace strata {
namespace {

const std::string kValidation = std::string(STRATA_SOURCE_DIR) + "/validation/";

TEST(Published, KorthikantiTableFiveRowsRunAsMegatron2022WithTheirInterleaving) {
  const PublishedRuns runs = read_published_runs(kValidation + "korthikanti-mlsys23-table5.json");
  ASSERT_EQ(runs.rows.size(), 4u);
  EXPECT_EQ(runs.framework, "megatron-2022");
  const PublishedRow& r175 = runs.rows[1];
  EXPECT_EQ(r175.params, "175B");
  EXPECT_DOUBLE_EQ(published_iteration_s(runs, r175), 18.13);  // as published, not from TFLOP/s
  EXPECT_EQ(r175.microbatches(), 64);
  const Experiment e = published_experiment(runs, r175);
  EXPECT_EQ(e.framework, Framework::megatron_2022);
  EXPECT_EQ(e.tp_comm, TpComm::async);
  EXPECT_EQ(e.p2p, P2pMode::blocking);
  EXPECT_TRUE(e.p2p_scatter_gather);
  EXPECT_EQ(e.ddp, DdpMode::after_flush);
  EXPECT_EQ(e.interleave, 3);
  EXPECT_EQ(e.tp * e.pp * e.dp, 64);
  EXPECT_EQ(published_command(runs, r175, "selene-64.xml")
                .rfind("strata simulate --model gpt3-175b --set framework=megatron-2022 --set layers=96", 0),
            0u);
}

TEST(Published, NarayananTableOneRunsAsMegatron2021WithEachRowsDdp) {
  const PublishedRuns runs = read_published_runs(kValidation + "megatron-sc21-table1.json");
  EXPECT_EQ(runs.framework, "megatron-2021");
  const Experiment row1 = published_experiment(runs, runs.rows[0]);
  EXPECT_EQ(row1.tp_comm, TpComm::sync);
  EXPECT_EQ(row1.ddp, DdpMode::overlap);  // PyTorch DDP on this row, over the preset's local DDP
  EXPECT_EQ(published_experiment(runs, runs.rows[4]).ddp, DdpMode::after_flush);
  // 1.7 B at 137 TFLOP/s on 32 GPUs: the paper's FLOPs over the rate.
  EXPECT_NEAR(published_iteration_s(runs, runs.rows[0]), 3.528, 0.001);
}

TEST(Published, ARowWithNothingMeasuredOrAnUnknownFrameworkIsOneLine) {
  const std::string path = ::testing::TempDir() + "published-bad.json";
  const auto error_of = [&](const std::string& row, const std::string& top = "") {
    std::ofstream(path) << R"({"format": "strata-published-runs", "schema_version": 1, "source": "s",)"
                        << R"("model": "gpt3-175b", "seq": 2048, "vocab": 51200, )" << top << R"("rows": [)"
                        << row << "]}";
    try {
      read_published_runs(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::string row =
      R"({"row": 1, "params": "1B", "layers": 2, "hidden": 64, "heads": 4, "tp": 1, )"
      R"("pp": 1, "gpus": 1, "global_batch": 1, "microbatch_size": 1, "recompute": "none")";
  EXPECT_EQ(error_of(row + "}"),
            path + ": /rows/0: neither iteration_s nor tflops_per_gpu: what was measured?");
  EXPECT_EQ(error_of(row + R"(, "iteration_s": 0})"), path + ": /rows/0/iteration_s: must be > 0");
  EXPECT_EQ(error_of(row + R"(, "iteration_s": 1, "framework": "megatron-2020"})"),
            path + ": /rows/0/framework: unknown framework 'megatron-2020'");
  EXPECT_EQ(error_of(row + R"(, "iteration_s": 1})", R"("framework": "deepspeed", )"),
            path + ": /framework: unknown framework 'deepspeed'");
  EXPECT_EQ(error_of(row + R"(, "iteration_s": 1})"), "(accepted)");
}

}  // namespace
}  // namespace strata
