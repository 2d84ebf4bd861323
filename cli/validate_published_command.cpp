// strata validate-published: simulates published large-model training runs and prints the
// predicted iteration time and TFLOP/s per GPU beside the published ones (sim/published.hpp has
// the file format, the FLOP count and the command each row is simulated with).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "file_flags.hpp"
#include "flags.hpp"
#include "strata/sim/published.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {
namespace {

struct ValidatePublishedOptions {
  std::string data = std::string(STRATA_VALIDATION_DIR) + "/megatron-sc21-table1.json";
  std::string json, csv;
  double max_error = -1;  // < 0: no bound
  int jobs = 2;           // rows replayed at once
};

int validate_published(const ValidatePublishedOptions& o) {
  const PublishedRuns runs = read_published_runs(o.data);
  ReplayFlags flags;
  flags.collectives = "aggregated";
  const std::vector<PublishedResult> results = simulate_published(
      runs,
      [](const PublishedRow& r) {
        return resolve_platform(r.platform.empty() ? "selene-" + std::to_string(r.gpus) + ".xml"
                                                   : r.platform);
      },
      replay_options(flags), o.jobs);
  std::cout << published_table(runs, results);
  const nlohmann::json doc = published_json(runs, results);
  if (!o.json.empty()) write_file_atomically(o.json, doc.dump(1) + "\n");
  if (!o.csv.empty()) write_file_atomically(o.csv, published_csv(doc));
  if (o.max_error < 0) return 0;
  int status = 0;
  for (const PublishedResult& x : results) {
    if (!x.report) {
      std::fprintf(stderr, "validate-published: row %lld not simulated (--max-error %g %% needs every row)\n",
                   static_cast<long long>(x.row->row), o.max_error);
      status = 1;
    } else if (std::abs(x.error_pct()) > o.max_error) {
      std::fprintf(stderr, "validate-published: row %lld error %+.1f %% exceeds --max-error %g %%\n",
                   static_cast<long long>(x.row->row), x.error_pct(), o.max_error);
      status = 1;
    }
  }
  return status;
}

}  // namespace

void add_validate_published_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("validate-published",
                         "simulate published training runs (Megatron-LM: Narayanan et al. 2021 Table 1, "
                         "Korthikanti et al. 2023 Table 5) and compare iteration time and TFLOP/s per GPU");
  auto o = std::make_shared<ValidatePublishedOptions>();
  add_input_option(*cmd, "--data", o->data,
                   "the published runs (JSON; default: validation/megatron-sc21-table1.json; also "
                   "validation/korthikanti-mlsys23-table5.json)");
  add_output_option(*cmd, "--json", o->json, "write the rows as JSON");
  add_output_option(*cmd, "--csv", o->csv, "write the rows as CSV");
  cmd->add_option("--max-error", o->max_error,
                  "exit 1 when a row's iteration-time error exceeds PCT % (or a row is not simulated)")
      ->transform(real_number(0, 1e6));
  cmd->add_option("--jobs", o->jobs, "rows replayed at once (each in a process of its own; default 2)")
      ->transform(whole_number(1, 64));
  cmd->callback([&action, o] { action = [o] { return validate_published(*o); }; });
}

}  // namespace strata::cli
