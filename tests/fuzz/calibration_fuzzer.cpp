// Fuzzes the calibration reader (cost_model.hpp: load_calibration, what `strata simulate
// --calibration` reads). A calibration read must write (calibration_to_json) and read back as
// itself.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_support.hpp"
#include "strata/models/cost/cost_model.hpp"

// libFuzzer calls this with each input (the name is libFuzzer's).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  static const fuzz::InputFile file(".json");
  const std::string& path = file.write(fuzz::as_text(data, size));

  const std::optional<Calibration> read =
      fuzz::read_or_input_error(path, [&] { return load_calibration(path); });
  if (!read) return 0;
  const std::string document = calibration_to_json(*read, "fuzz", "fuzz");
  file.write(document);
  const std::optional<Calibration> again =
      fuzz::read_or_input_error(path, [&] { return load_calibration(path); });
  if (!again)
    fuzz::finding("a calibration read does not read back after calibration_to_json: " +
                  document.substr(0, 400));
  if (calibration_to_json(*again, "fuzz", "fuzz") != document)
    fuzz::finding("a calibration read reads back different after calibration_to_json");
  return 0;
}
