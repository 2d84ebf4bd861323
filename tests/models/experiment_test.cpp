// Experiment: the --set table and its one parser, JSON round trip, canonical form and hash, and
// lower() against the path the CLI took before it (make_model + StrategyConfig + lower_solver).
#include "strata/models/experiment.hpp"
#include "../input_error.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "strata/traces/error.hpp"
#include "strata/traces/plan_json.hpp"

namespace strata {
namespace {

using test::error_of;

Experiment gpt_experiment() {
  Experiment e;
  e.model = "gpt3-13b";
  e.dp = 8, e.tp = 2, e.pp = 4;
  e.schedule = PipelineSchedule::one_f_one_b;
  return e;
}

TEST(Experiment, JsonRoundTripKeepsEveryField) {
  Experiment e = gpt_experiment();
  apply_set(e, "layers=8");
  apply_set(e, "bucket_mb=12.5");
  apply_set(e, "dp_algo=hierarchical");
  apply_set(e, "lr=0.02");
  apply_set(e, "beta2=0.95");
  e.microbatches = 8, e.global_batch = 64, e.seed = 7, e.iterations = 2, e.epochs = 3;
  e.dtype = DType::fp16;
  e.optimizer = Optimizer::sgd;
  EXPECT_EQ(experiment_from_json(to_json(e), "x"), e);
  Experiment g;
  g.model = "gcn";
  g.solver.solver = Solver::gist;
  apply_set(g, "m=4");
  apply_set(g, "zeta=3");
  apply_set(g, "sizes=784,32,10");
  EXPECT_EQ(experiment_from_json(to_json(g), "x"), g);
  EXPECT_EQ(experiment_from_json(nlohmann::json::parse(to_json(g).dump()), "x"), g);
}

TEST(Experiment, CanonicalFormFillsDefaultsAndTheHashIsStable) {
  const Experiment e = gpt_experiment();
  const nlohmann::json c = canonical_json(e);
  EXPECT_EQ(c.at("dtype"), "bf16");  // auto for a GPT
  EXPECT_DOUBLE_EQ(c.at("optimizer").at("lr").get<double>(), 1e-3);
  // Resolving is idempotent: the spec read back from the canonical form hashes the same.
  EXPECT_EQ(experiment_hash(experiment_from_json(c, "c")), experiment_hash(e));
  EXPECT_EQ(experiment_hash(e), "72cdb16d1e81e0f2");
  Experiment other = e;
  other.microbatches = 8;
  EXPECT_NE(experiment_hash(other), experiment_hash(e));
  // FNV-1a 64 reference values (Fowler, Noll, Vo): "" and "a".
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
}

TEST(Experiment, EveryTableKeyParsesAndIsRangeChecked) {
  for (const SetKey& key : set_keys()) {
    Experiment e;
    const std::set<std::string> graph_keys = {"nodes",       "avg_degree",   "edges", "exponent",
                                              "partitioner", "sample_nodes", "parts", "fanout"};
    e.model = key.name == "image" ? "vgg16" : graph_keys.count(key.name) ? "gcn" : "gpt2-small";
    if (key.name == "sizes") e.model = "mlp";
    if (!key.solvers.empty()) e.solver.solver = key.solvers.front();
    std::string good = "1";
    if (key.type == SetKeyType::count_list) good = "784,10";
    if (key.type == SetKeyType::choice) good = key.choices.back();
    if (key.type == SetKeyType::real) good = key.min_exclusive ? "0.5" : key.max_exclusive ? "0.5" : "1";
    if (key.name == "exponent") good = "2.5";
    if (key.name == "sample_nodes") good = "2";
    EXPECT_EQ(error_of([&] { apply_set(e, key.name, good); }), "") << key.name;
    EXPECT_EQ(set_value_text(e, key.name),
              key.type == SetKeyType::real ? nlohmann::json(std::stod(good)).dump() : good)
        << key.name;
    for (const char* bad : {"", "x", "1x", "nan", "inf", "-5"}) {
      if (key.type == SetKeyType::choice && std::string(bad).empty()) continue;
      const std::string error = error_of([&] { apply_set(e, key.name, bad); });
      EXPECT_EQ(error.rfind("--set " + key.name, 0), 0u) << key.name << "=" << bad << ": " << error;
    }
  }
}

TEST(Experiment, ErrorLinesNameTheKeyAndTheAcceptedOnes) {
  Experiment e;
  e.model = "mlp";
  EXPECT_EQ(
      error_of([&] { apply_set(e, "foo=1"); }),
      "--set foo: unknown key for model 'mlp' with solver 'backprop' (known: beta1, beta2, bucket_mb, "
      "compression, ddp, dp_algo, eps, flash_attention, framework, interleave, lr, momentum, offload, p2p, "
      "p2p_scatter_gather, powersgd_rank, recompute, recompute_blocks, recompute_method, replicas, "
      "sequence_parallel, sizes, stage_blocks, stage_tp, topk_ratio, tp_algo, tp_comm, zero)");
  EXPECT_EQ(error_of([&] { apply_set(e, "rho=1"); }).rfind("--set rho: unknown key for model 'mlp'", 0), 0u);
  EXPECT_EQ(error_of([&] { apply_set(e, "lr=nan"); }), "--set lr: 'nan' is not a finite number");
  EXPECT_EQ(error_of([&] { apply_set(e, "lr=-1"); }), "--set lr: must be >= 0, got -1");
  EXPECT_EQ(error_of([&] { apply_set(e, "momentum=1"); }), "--set momentum: must be < 1, got 1");
  EXPECT_EQ(error_of([&] { apply_set(e, "lr"); }), "--set 'lr': expected key=value");
  EXPECT_EQ(
      error_of([&] { apply_set(e, "dp_algo=star"); }),
      "--set dp_algo: unknown algorithm 'star' (known: ring, tree, halving_doubling, hierarchical, "
      "storage_allreduce, storage_scatter_reduce, cache_allreduce, cache_scatter_reduce, parameter_server)");
  EXPECT_EQ(error_of([&] { apply_set(e, "sizes=784,0"); }),
            "--set sizes=784,0: '0' is not a positive integer");
  EXPECT_EQ(error_of([&] { apply_set(e, "replicas=1.5"); }), "--set replicas: '1.5' is not an integer");
}

TEST(Experiment, FromJsonNamesThePointerOfEveryProblem) {
  const nlohmann::json good = to_json(gpt_experiment());
  const auto problem = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json doc = good;
    edit(doc);
    return error_of([&] { experiment_from_json(doc, "s.json"); });
  };
  EXPECT_EQ(problem([](auto& d) { d["strategy"]["dp"] = "8"; }), "s.json: /strategy/dp: expected an integer");
  EXPECT_EQ(problem([](auto& d) { d["strategy"]["zz"] = 1; }).rfind("s.json: /strategy/zz: unknown field", 0),
            0u);
  EXPECT_EQ(problem([](auto& d) { d["colour"] = 1; }).rfind("s.json: /colour: unknown field", 0), 0u);
  EXPECT_EQ(problem([](auto& d) { d["schema_version"] = 2; }),
            "s.json: /schema_version: version 2 is newer than this strata reads (1); update strata");
  EXPECT_EQ(problem([](auto& d) { d["optimizer"]["lr"] = -1; }),
            "s.json: /optimizer/lr: must be >= 0, got -1.0");
  EXPECT_EQ(problem([](auto& d) {
              d["model"]["sizes"] = {784, 10};
            }).rfind("s.json: /model/sizes: unknown field", 0),
            0u);
  EXPECT_EQ(problem([](auto& d) { d["solver"]["rho"] = 1; }).rfind("s.json: /solver/rho: unknown field", 0),
            0u);
  EXPECT_EQ(problem([](auto& d) {
              d["model"]["name"] = "gpt5";
            }).rfind("s.json: /model/name: unknown value 'gpt5'", 0),
            0u);
}

TEST(Experiment, LowerEqualsTheOldPath) {
  Experiment e;
  e.model = "gpt2-small";
  apply_set(e, "layers=4");
  apply_set(e, "bucket_mb=0");
  e.dp = 2, e.tp = 2, e.pp = 2, e.microbatches = 4;
  StrategyConfig c;
  c.dp = 2, c.tp = 2, c.pp = 2, c.microbatches = 4, c.bucket_bytes = 0, c.dtype = DType::bf16;
  Plan old = lower_solver(make_model("gpt2-small", {{"layers", "4"}}), c, SolverConfig{});
  Plan now = lower(e);
  EXPECT_EQ(now.info.experiment_hash, experiment_hash(e));
  old.info.experiment_hash = now.info.experiment_hash;
  EXPECT_EQ(plan_to_json(now), plan_to_json(old));
  Experiment gist;
  gist.model = "gcn";
  gist.solver.solver = Solver::gist;
  gist.dp = 2;
  SolverConfig s;
  s.solver = Solver::gist;
  StrategyConfig g;
  g.dp = 2;
  Plan old_gist = lower_solver(make_model("gcn"), g, s);
  Plan now_gist = lower(gist);
  old_gist.info.experiment_hash = now_gist.info.experiment_hash;
  EXPECT_EQ(plan_to_json(now_gist), plan_to_json(old_gist));
}

TEST(Experiment, OptimizerDefaultsFollowTheKindAndTheModel) {
  Experiment e;
  e.model = "mlp";
  EXPECT_DOUBLE_EQ(optimizer_of(e).learning_rate, 1e-3);
  e.optimizer = Optimizer::sgd;
  EXPECT_DOUBLE_EQ(optimizer_of(e).learning_rate, 0.01);
  e.model = "gcn";
  e.optimizer = Optimizer::adam;
  EXPECT_DOUBLE_EQ(optimizer_of(e).learning_rate, 0.01);
  apply_set(e, "lr=0.5");
  apply_set(e, "eps=1e-6");
  EXPECT_DOUBLE_EQ(optimizer_of(e).learning_rate, 0.5);
  EXPECT_DOUBLE_EQ(optimizer_of(e).adam.eps, 1e-6);
}

TEST(Experiment, HelpListsEveryKey) {
  const std::string help = set_keys_help();
  for (const SetKey& key : set_keys())
    EXPECT_NE(help.find("  " + key.name + " "), std::string::npos) << key.name;
}

// The memory options reach the StrategyConfig, are written to JSON only where they are not the
// default (so an experiment without them keeps its hash), and read back.
TEST(Experiment, MemoryOptionsRoundTripAndLeaveDefaultsOut) {
  Experiment e;
  e.model = "gpt2-small";
  const std::string plain_hash = experiment_hash(e);
  EXPECT_FALSE(to_json(e)["strategy"].contains("zero"));
  for (const char* pair :
       {"recompute=full", "recompute_method=block", "recompute_blocks=2", "sequence_parallel=1", "zero=3",
        "offload=1", "interleave=2", "ddp=after_flush", "flash_attention=1"})
    apply_set(e, pair);
  const StrategyConfig c = strategy_of(e, model_of(e));
  EXPECT_EQ(c.recompute, Recompute::full);
  EXPECT_EQ(c.recompute_method, RecomputeMethod::block);
  EXPECT_EQ(c.recompute_blocks, 2);
  EXPECT_TRUE(c.sequence_parallel);
  EXPECT_EQ(c.zero, 3);
  EXPECT_TRUE(c.offload);
  EXPECT_EQ(c.interleave, 2);
  EXPECT_EQ(c.ddp, DdpMode::after_flush);
  EXPECT_TRUE(c.flash_attention);
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j["strategy"]["zero"], 3);
  EXPECT_EQ(j["strategy"]["recompute"], "full");
  EXPECT_EQ(experiment_from_json(j, "s.json"), e);
  EXPECT_NE(experiment_hash(e), plain_hash);
  EXPECT_EQ(set_value_text(e, "ddp"), "after_flush");
  EXPECT_EQ(error_of([&] { apply_set(e, "zero=4"); }), "--set zero: ZeRO stages are 0, 1, 2 and 3, got 4");
  EXPECT_EQ(error_of([&] { apply_set(e, "recompute=some"); }),
            "--set recompute: unknown recomputation 'some' (known: none, selective, full)");
  nlohmann::json bad = j;
  bad["strategy"]["zero"] = -1;
  EXPECT_EQ(error_of([&] { experiment_from_json(bad, "s.json"); }),
            "s.json: /strategy/zero: must be >= 0, got -1");
}

// A framework preset sets its four items; a key given beside it overrides its item wherever it
// stands in the list; the JSON records the preset and each item only where it differs from it,
// and reads back the same Experiment. Without a preset strata behaves as megatron-core, and an
// experiment that names none keeps the hash it had before presets existed.
TEST(Experiment, FrameworkPresetsSetTheirItemsAndGivenKeysOverrideThem) {
  Experiment plain;
  plain.model = "gpt2-small";
  const std::string plain_hash = experiment_hash(plain);
  EXPECT_EQ(to_json(plain)["strategy"].count("tp_comm"), 0u);
  EXPECT_EQ(plain.tp_comm, TpComm::async);
  EXPECT_EQ(plain.p2p, P2pMode::async);
  EXPECT_FALSE(plain.p2p_scatter_gather);
  EXPECT_EQ(plain.ddp, DdpMode::overlap);

  Experiment e = plain;
  apply_sets(e, {"ddp=overlap", "framework=megatron-2021"});  // the preset first, then ddp
  EXPECT_EQ(e.tp_comm, TpComm::sync);
  EXPECT_EQ(e.p2p, P2pMode::blocking);
  EXPECT_TRUE(e.p2p_scatter_gather);
  EXPECT_EQ(e.ddp, DdpMode::overlap);
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j["strategy"]["framework"], "megatron-2021");
  EXPECT_EQ(j["strategy"]["ddp"], "overlap");  // differs from the preset's after_flush
  EXPECT_EQ(j["strategy"].count("tp_comm"), 0u);
  EXPECT_EQ(experiment_from_json(j, "s.json"), e);
  EXPECT_NE(experiment_hash(e), plain_hash);
  const StrategyConfig c = strategy_of(e, model_of(e));
  EXPECT_EQ(c.tp_comm, TpComm::sync);
  EXPECT_EQ(c.p2p, P2pMode::blocking);
  EXPECT_TRUE(c.p2p_scatter_gather);

  Experiment k = plain;
  apply_sets(k, {"framework=megatron-2022"});
  EXPECT_EQ(k.tp_comm, TpComm::async);
  EXPECT_EQ(k.p2p, P2pMode::blocking);
  EXPECT_EQ(k.ddp, DdpMode::after_flush);
  apply_sets(k, {"tp_comm=sync", "p2p=async", "p2p_scatter_gather=0"});
  EXPECT_EQ(experiment_from_json(to_json(k), "s.json"), k);

  EXPECT_EQ(error_of([&] { apply_set(e, "framework=deepspeed"); }),
            "--set framework: unknown framework 'deepspeed' (known: megatron-2021, megatron-2022, "
            "megatron-core)");
  EXPECT_EQ(error_of([&] { apply_set(e, "tp_comm=overlap"); }),
            "--set tp_comm: unknown mode 'overlap' (known: sync, async)");
}

}  // namespace
}  // namespace strata
