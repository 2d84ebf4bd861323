// Fuzzes the `--set key=value` parser (experiment.hpp: apply_set). The first two bytes pick the
// zoo model and the solver, the rest is a list of `key=value` arguments separated by NUL bytes
// (argv's own separator). Each argument must be applied or refused with an InputError naming
// --set; after them, the Experiment must write and read back as itself (to_json), and setting a
// key to the text set_value_text prints for it must change nothing.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "strata/models/experiment.hpp"

namespace {

const std::string kSource = "fuzz-set";

std::vector<std::string> arguments(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t nul = std::min(text.find('\0', from), text.size());
    out.emplace_back(text.substr(from, nul - from));
    from = nul + 1;
  }
  return out;
}

}  // namespace

// libFuzzer calls this with each input (the name is libFuzzer's).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  if (size < 2) return 0;
  Experiment e;
  e.model = zoo_names()[data[0] % zoo_names().size()];
  e.solver.solver = *parse_solver(solver_names()[data[1] % solver_names().size()]);

  std::vector<std::string> applied;
  for (const std::string& argument : arguments(fuzz::as_text(data + 2, size - 2))) {
    const bool ok = fuzz::read_or_input_error("--set", [&] {
                      apply_set(e, argument);
                      return true;
                    }).has_value();
    if (ok) applied.push_back(argument.substr(0, argument.find('=')));
  }

  const std::optional<Experiment> again =
      fuzz::read_or_input_error(kSource, [&] { return experiment_from_json(to_json(e), kSource); });
  if (!again)
    fuzz::finding("an Experiment built by --set does not read back after to_json: " + to_json(e).dump());
  if (!(*again == e)) fuzz::finding("an Experiment built by --set reads back different after to_json");

  for (const std::string& key : applied) {
    const std::string text = set_value_text(e, key);
    Experiment copy = e;
    const bool ok = fuzz::read_or_input_error("--set", [&] {
                      apply_set(copy, key, text);
                      return true;
                    }).has_value();
    if (!ok || !(copy == e))
      fuzz::finding("--set " + key + "=" + text + " (set_value_text) is not what " + key + " holds");
  }
  return 0;
}
