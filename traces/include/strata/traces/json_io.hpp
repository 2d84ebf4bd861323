// json_io: what every strata JSON reader and writer shares.
//
// Reading (through json_stream.hpp's SAX reader, which bounds what it reads by the file's size,
// or a fixed cap for pipes and devices): a whole file becomes a DOM, or one InputError line — `plan.json:
// cannot open: No such file or directory`, `plan.json:3:14: parse error: ...`. A JsonNode then walks the DOM
// remembering where it is (file and JSON pointer, RFC 6901), so that every typed access that fails reports
// `plan.json: /tasks/3/flops: negative value -1` and nothing else.
//
// Writing: documents are dumped deterministically (same value, same bytes) with one element of
// each top-level array per line, which keeps large files diffable; non-finite numbers are refused
// rather than silently written as null; files are replaced atomically, so a reader never sees a
// half-written file and a failed write leaves nothing behind.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {
inline namespace traces {

// The parsed contents of `path`. Throws InputError on a missing or unreadable file and on
// malformed JSON (with line:column computed from the parser's byte offset).
nlohmann::json read_json_file(const std::string& path);

// The bytes of the input file `path` (noted as an input: outputs.hpp), at most `max_bytes` of
// them. Throws InputError naming `path`: missing, unreadable, a folder, larger than `max_bytes`.
std::string read_text_file(const std::string& path, std::uint64_t max_bytes = std::uint64_t{1} << 30);

// Parses `text`; errors name `source` as read_json_file's do.
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

// Writes `content` to the output `path` as outputs.hpp says: a regular file (or a symlink's
// target) is replaced atomically (a temporary written, flushed, renamed over it), a device,
// FIFO or `-` written directly. Inside a StagingScope whose OutputSet defers `path`, the content
// is staged there and written at its commit(). On any failure removes the temporary file and
// throws InputError naming `path`.
void write_file_atomically(const std::string& path, const std::string& content);

// The same with the content produced in pieces: `produce` calls its argument with each piece
// (gathered into 1 MiB writes), so that a large file is never one string in memory. Whatever
// `produce` throws removes the temporary file and goes on.
using ChunkWriter = std::function<void(std::string_view)>;
void write_file_atomically(const std::string& path, const std::function<void(const ChunkWriter&)>& produce);

// Shortest decimal text that reads back as the same double ("0.1", "3", "1e+20", "nan");
// independent of the locale.
std::string format_number(double value);

// One CSV cell (RFC 4180) of a JSON value: null empty, booleans "yes"/"no", strings quoted when
// they hold a comma, quote or newline (quotes doubled), numbers as dump() writes them.
std::string csv_cell(const nlohmann::json& value);

// `text` in single quotes for a one-line message: control characters escaped (\n, \x01), cut
// after 120 bytes (at a UTF-8 boundary) with "...".
std::string quote_for_message(std::string_view text);

// `key` escaped as one JSON pointer reference token: '~' -> "~0", '/' -> "~1".
std::string json_pointer_token(std::string_view key);

// Serialises the object `doc` compactly, except that each element of a non-empty top-level array
// goes on its own line; ends with a newline. Throws InputError naming `where` if a string is not
// valid UTF-8 or a number is not finite.
std::string dump_one_element_per_line(const nlohmann::json& doc, const std::string& where);
std::string dump_one_element_per_line(const nlohmann::ordered_json& doc, const std::string& where);

// One value serialised compactly (as nlohmann's dump()), for writers that stream a document
// piece by piece; a non-finite number or invalid UTF-8 throws InputError naming `where` and
// `pointer` (the value's place in the document) followed by the place inside the value.
std::string dump_json_value(const nlohmann::ordered_json& value, const std::string& where,
                            const std::string& pointer);

class JsonNode;

// Checks the header every strata file starts with: "schema_version" (an integer equal to
// `version`: "unsupported version 2 (this strata reads 1)") and "format" (equal to `format`).
void check_file_header(const JsonNode& root, std::string_view format, int version);

// A JSON value with its place: the source (file name) and the JSON pointer inside it. Accessors
// check the type and range and throw a one-line InputError naming that place. Holds references:
// the DOM and the source string must outlive it.
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, const std::string& source, std::string pointer = "")
      : value_(&value), source_(&source), pointer_(std::move(pointer)) {}
  // A node only points at its DOM and source: temporaries would dangle.
  JsonNode(nlohmann::json&&, const std::string&, std::string = "") = delete;
  JsonNode(const nlohmann::json&, std::string&&, std::string = "") = delete;

  const nlohmann::json& value() const { return *value_; }
  const std::string& source() const { return *source_; }
  const std::string& pointer() const { return pointer_; }

  // Throws InputError "<source>: <pointer>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const;

  // Objects. The node must be an object ("expected an object, got ...").
  JsonNode at(std::string_view key) const;                   // missing key: "<pointer>/key: missing"
  std::optional<JsonNode> find(std::string_view key) const;  // absent: nullopt
  std::vector<std::string> keys() const;                     // in the object's order
  // Fails on the first key (in the object's order) that is not in `known`: "unknown field".
  void reject_unknown_fields(std::initializer_list<std::string_view> known) const;

  // Arrays. The node must be an array.
  std::size_t size() const;
  JsonNode at(std::size_t index) const;

  // Scalars.
  std::string as_string() const;
  bool as_bool() const;
  // An integer in [min, max]; 1.5 or 2.0 is "expected an integer".
  std::int64_t as_int(std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX) const;
  double as_number() const;  // any finite number
  double as_size() const;    // a finite number >= 0: "negative value -1"

 private:
  void expect_object() const;
  void expect_array() const;
  [[noreturn]] void fail_type(const char* expected) const;

  const nlohmann::json* value_;
  const std::string* source_;
  std::string pointer_;
};

// The enumerator named by the string `node`, through one of task.hpp's parse functions;
// "unknown <what> 'name'" otherwise.
template <class Enum>
Enum read_enum(const JsonNode& node, std::optional<Enum> (*parse)(std::string_view), const char* what) {
  std::string name = node.as_string();
  std::optional<Enum> value = parse(name);
  if (!value) node.fail(std::string("unknown ") + what + " " + quote_for_message(name));
  return *value;
}

}  // namespace traces
}  // namespace strata
