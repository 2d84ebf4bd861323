// Published training runs and strata's predictions of them (`strata validate-published`).
//
// A published-runs file (validation/*.json, "format": "strata-published-runs", schema_version 1)
// holds runs as their papers report them: model shape, tensor- and pipeline-parallel size, GPUs,
// global and micro-batch size, recomputation, interleaving, and the measured iteration time
// ("iteration_s") or the achieved TFLOP/s per GPU ("tflops_per_gpu", turned into a time with
// the paper's FLOP count, Narayanan et al. 2021 eq. 3, recompute forward included:
// F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h))). `framework` (the file's, or a row's) and
// `ddp` (a row's) are the --set keys of the same names: the Megatron-LM code the run used. Every
// figure names its source in the file.
//
// Each row is simulated exactly as `strata simulate` would with the command published_command()
// prints (bf16, Adam, 1F1B, aggregated collectives, the row's platform); a row the lowering cannot
// build says why instead ("not simulated: ...").
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/models/experiment.hpp"
#include "strata/sim/replay.hpp"

namespace strata {
inline namespace sim {

struct PublishedRow {
  std::int64_t row = 0;
  std::string params;  // as published ("1.7B")
  std::int64_t layers = 0, hidden = 0, heads = 0;
  std::int64_t tp = 1, pp = 1, gpus = 1;
  std::int64_t global_batch = 0, microbatch_size = 0;
  std::int64_t interleave = 1;  // model chunks per GPU (interleaved 1F1B)
  std::string recompute;
  std::string ddp;            // "" = the framework's
  std::string framework;      // "" = the file's
  double tflops_per_gpu = 0;  // published achieved TFLOP/s per GPU; 0 = not published
  double iteration_s = 0;     // published iteration time (s); 0 = from tflops_per_gpu
  std::string platform;       // "" = selene-<gpus>.xml

  std::int64_t dp() const { return gpus / (tp * pp); }
  std::int64_t microbatches() const { return global_batch / (dp() * microbatch_size); }
};

struct PublishedRuns {
  std::string path, source, model;
  std::int64_t seq = 0, vocab = 0;
  std::string framework;  // "" = strata's default (the newest preset)
  std::vector<PublishedRow> rows;
};

// Reads and checks a published-runs file; InputError naming the file and the JSON pointer.
PublishedRuns read_published_runs(const std::string& path);

// The paper's FLOPs per iteration (eq. 3 above).
double paper_flops(const PublishedRuns& runs, const PublishedRow& row);
// The published iteration time: iteration_s, or the FLOPs over the published TFLOP/s.
double published_iteration_s(const PublishedRuns& runs, const PublishedRow& row);

// The row's `--set` pairs, the framework preset first.
std::vector<std::pair<std::string, std::string>> published_sets(const PublishedRuns& runs,
                                                                const PublishedRow& row);
Experiment published_experiment(const PublishedRuns& runs, const PublishedRow& row);
// The `strata simulate` command that predicts the row on `platform`.
std::string published_command(const PublishedRuns& runs, const PublishedRow& row,
                              const std::string& platform);
// "dp=32,tp=8,pp=2 mbs=4 B=1536 recompute=full v=1 megatron-2021 ddp=after_flush".
std::string published_configuration(const PublishedRuns& runs, const PublishedRow& row);

struct PublishedResult {
  const PublishedRow* row = nullptr;
  double flops = 0, published_s = 0;
  std::string platform;
  std::optional<Report> report;
  std::string not_simulated;  // the lowering's reason when it could not build the row

  double predicted_tflops() const;
  double error_pct() const;  // 100 (predicted - published) / published
};

// Simulates every row on platform_of(row), each replay in a child process (`parallel` at a time).
std::vector<PublishedResult> simulate_published(
    const PublishedRuns& runs, const std::function<std::string(const PublishedRow&)>& platform_of,
    const ReplayOptions& options, int parallel);

// Mean absolute error (%) over the simulated rows, and their count.
std::pair<double, std::size_t> published_mean_abs_error(const std::vector<PublishedResult>& results);
// The table `strata validate-published` prints (a header, one line per row, the reasons of the
// rows not simulated, the mean error).
std::string published_table(const PublishedRuns& runs, const std::vector<PublishedResult>& results);
nlohmann::json published_json(const PublishedRuns& runs, const std::vector<PublishedResult>& results);
std::string published_csv(const nlohmann::json& doc);

}  // namespace sim
}  // namespace strata
