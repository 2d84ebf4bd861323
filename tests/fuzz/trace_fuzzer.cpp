// Fuzzes the Trace reader (trace_json.hpp): trace_from_json on the parsed text and read_trace on
// a file must accept the same inputs and read the same Trace (checked on every input the first
// accepts and one in kFileShare of the others), and a Trace read must write and read back as
// itself.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fuzz_support.hpp"
#include "strata/traces/json_io.hpp"
#include "strata/traces/trace_json.hpp"

namespace {

constexpr std::size_t kFileShare = 8;

const std::string kSource = "fuzz-trace.json";

std::string written(const strata::Trace& trace) { return trace_to_json(trace).dump(); }

}  // namespace

// libFuzzer calls this with each input (the name is libFuzzer's).
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  static const fuzz::InputFile file(".json");
  const std::string text = fuzz::as_text(data, size);

  const std::optional<Trace> from_text = fuzz::read_or_input_error(
      kSource, [&] { return trace_from_json(parse_json_text(text, kSource), kSource); });
  // Both readers run on every input trace_from_json accepts and on one in kFileShare of the others: a
  // second read of every refused input would halve the executions per second.
  if (!from_text && std::hash<std::string>{}(text) % kFileShare != 0) return 0;
  const std::string& path = file.write(text);
  const std::optional<Trace> from_file = fuzz::read_or_input_error(path, [&] { return read_trace(path); });
  if (from_file.has_value() != from_text.has_value())
    fuzz::finding(from_file ? "read_trace accepts what trace_from_json refuses"
                            : "trace_from_json accepts what read_trace refuses");
  if (!from_text) return 0;
  const std::string document = written(*from_text);
  if (written(*from_file) != document) fuzz::finding("read_trace and trace_from_json read different Traces");

  const std::optional<Trace> again = fuzz::read_or_input_error(
      kSource, [&] { return trace_from_json(nlohmann::json::parse(document), kSource); });
  if (!again)
    fuzz::finding("a Trace read does not read back after trace_to_json: " + document.substr(0, 400));
  if (written(*again) != document) fuzz::finding("a Trace read reads back different after trace_to_json");
  return 0;
}
