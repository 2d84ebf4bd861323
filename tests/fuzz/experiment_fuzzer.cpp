// Fuzzes the Experiment spec reader (experiment.hpp: experiment_from_json on parsed text, what
// `--spec FILE.json` reads). An Experiment read must write (to_json) and read back as itself, and
// its canonical form and hash are computed or refused with an InputError.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_support.hpp"
#include "strata/models/experiment.hpp"
#include "strata/traces/json_io.hpp"

namespace {
const std::string kSource = "fuzz-spec.json";
}  // namespace

// libFuzzer calls this with each input (the name is libFuzzer's).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  const std::string text = fuzz::as_text(data, size);
  const std::optional<Experiment> read = fuzz::read_or_input_error(
      kSource, [&] { return experiment_from_json(parse_json_text(text, kSource), kSource); });
  if (!read) return 0;
  const nlohmann::json document = to_json(*read);
  const std::optional<Experiment> again =
      fuzz::read_or_input_error(kSource, [&] { return experiment_from_json(document, kSource); });
  if (!again)
    fuzz::finding("an Experiment read does not read back after to_json: " + document.dump().substr(0, 400));
  if (!(*again == *read)) fuzz::finding("an Experiment read reads back different after to_json");
  // resolved() refuses an unknown model with "--model: ..." rather than the file.
  fuzz::read_or_input_error("", [&] { return experiment_hash(*read); });
  return 0;
}
