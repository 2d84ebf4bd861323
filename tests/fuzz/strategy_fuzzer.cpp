// Fuzzes the `--strategy` parser (lowering/strategy.hpp: parse_strategy) on one argument (the
// input up to its first NUL byte, as argv holds it). A strategy parsed has dimensions >= 1 whose
// worker count fits an int, and its to_string() parses back to the same dimensions.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_support.hpp"
#include "strata/models/lowering/strategy.hpp"

// libFuzzer calls this with each input (the name is libFuzzer's).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  std::string text = fuzz::as_text(data, size);
  text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));

  const std::optional<StrategyConfig> parsed = fuzz::read_or_input_error("--strategy", [&] {
    StrategyConfig config;
    parse_strategy(text, config);
    return config;
  });
  if (!parsed) return 0;
  if (parsed->dp < 1 || parsed->tp < 1 || parsed->pp < 1)
    fuzz::finding("--strategy accepted a dimension below 1: " + parsed->to_string());
  const double workers = double{1} * parsed->dp * parsed->tp * parsed->pp;
  if (workers > INT32_MAX)
    fuzz::finding("--strategy accepted " + parsed->to_string() + ": more workers than an int holds");

  StrategyConfig again;
  const bool ok = fuzz::read_or_input_error("--strategy", [&] {
                    parse_strategy(parsed->to_string(), again);
                    return true;
                  }).has_value();
  if (!ok || again.dp != parsed->dp || again.tp != parsed->tp || again.pp != parsed->pp)
    fuzz::finding("--strategy " + parsed->to_string() + " does not parse back as itself");
  return 0;
}
