#include "strata/traces/json_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <new>
#include <system_error>

#include "strata/traces/error.hpp"
#include "strata/traces/json_stream.hpp"
#include "strata/traces/outputs.hpp"

namespace strata {
inline namespace traces {
namespace {

// Short text for a value inside a message.
std::string describe(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return quote_for_message(value.get_ref<const std::string&>());
    default:
      return value.dump();
  }
}

// Finds a non-finite number in `value`; on success `pointer` is its JSON pointer. The pointer is
// built on the way back up, so a clean document (the usual case) costs no string work.
template <class Json>
const Json* find_non_finite(const Json& value, std::string& pointer) {
  if (value.is_number_float()) {
    return std::isfinite(value.template get<double>()) ? nullptr : &value;
  }
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (const Json* bad = find_non_finite(*it, pointer)) {
        pointer.insert(0, "/" + json_pointer_token(it.key()));
        return bad;
      }
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (const Json* bad = find_non_finite(value[i], pointer)) {
        pointer.insert(0, "/" + std::to_string(i));
        return bad;
      }
    }
  }
  return nullptr;
}

template <class Json>
std::string dump_lines(const Json& doc, const std::string& where) {
  STRATA_ASSERT(doc.is_object(), "only objects are dumped one element per line");
  std::string pointer;
  if (const Json* bad = find_non_finite(doc, pointer))
    throw InputError(input_error_message(
        where, pointer,
        "cannot write " + format_number(bad->template get<double>()) + ": JSON has no non-finite numbers"));
  try {
    std::string out = "{";
    bool first = true;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      if (!first) out += ',';
      first = false;
      out += Json(it.key()).dump() + ':';
      if (!it->is_array() || it->empty()) {
        out += it->dump();
        continue;
      }
      out += "[\n";
      for (std::size_t i = 0; i < it->size(); ++i) {
        out += (*it)[i].dump();
        out += i + 1 < it->size() ? ",\n" : "\n";
      }
      out += ']';
    }
    return out + "}\n";
  } catch (const nlohmann::json::type_error& e) {
    // The only type error dump() raises is invalid UTF-8 in a string (316).
    throw InputError(input_error_message(where, "", std::string("cannot write: ") + e.what()));
  }
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return stream_json_text(text, source, {}, {});
  } catch (const std::bad_alloc&) {
    throw InputError(input_error_message(source, "",
                                         "out of memory reading " + std::to_string(text.size()) +
                                             " bytes of JSON (" + address_space_in_use() + ")"));
  }
}

std::string read_text_file(const std::string& path, std::uint64_t max_bytes) {
  note_input(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw InputError(input_error_message(path, "", "cannot open: " + std::generic_category().message(errno)));
  struct stat st {};
  const bool folder = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  std::string text;
  std::string problem = folder ? "is a folder, not a file" : "";
  char chunk[65536];
  while (problem.empty()) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) problem = "cannot read: " + std::generic_category().message(errno);
    if (n <= 0) break;
    if (text.size() + static_cast<std::uint64_t>(n) > max_bytes)
      problem = "larger than the " + std::to_string(max_bytes) + " B strata reads from it";
    else
      text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (!problem.empty()) throw InputError(input_error_message(path, "", problem));
  return text;
}

nlohmann::json read_json_file(const std::string& path) {
  try {
    return stream_json_file(path, {}, {});
  } catch (const std::bad_alloc&) {
    throw InputError(
        input_error_message(path, "", "out of memory reading JSON (" + address_space_in_use() + ")"));
  }
}

void write_file_atomically(const std::string& path, const std::string& content) {
  write_file_with(path, [&content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

void write_file_atomically(const std::string& path, const std::function<void(const ChunkWriter&)>& produce) {
  write_file_with(path, [&produce](std::ostream& out) {
    produce([&out](std::string_view piece) {
      out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    });
  });
}

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  }
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string quote_for_message(std::string_view text) {
  constexpr std::size_t kMaxBytes = 120;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Stop before a UTF-8 lead byte, never inside a character.
    if (i >= kMaxBytes && (c & 0xC0) != 0x80) return out + "...'";
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

// Control characters are escaped as quote_for_message writes them (\n, \x01), so that a message
// naming the pointer stays one line.
std::string json_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      const std::string quoted = quote_for_message(std::string_view(&c, 1));  // "'\n'", "'\x01'"
      out += quoted.substr(1, quoted.size() - 2);
    } else
      out += c;
  }
  return out;
}

std::string dump_json_value(const nlohmann::ordered_json& value, const std::string& where,
                            const std::string& pointer) {
  std::string inside;
  if (const nlohmann::ordered_json* bad = find_non_finite(value, inside))
    throw InputError(input_error_message(
        where, pointer + inside,
        "cannot write " + format_number(bad->get<double>()) + ": JSON has no non-finite numbers"));
  try {
    return value.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw InputError(input_error_message(where, pointer, std::string("cannot write: ") + e.what()));
  }
}

std::string dump_one_element_per_line(const nlohmann::json& doc, const std::string& where) {
  return dump_lines(doc, where);
}

std::string dump_one_element_per_line(const nlohmann::ordered_json& doc, const std::string& where) {
  return dump_lines(doc, where);
}

void check_file_header(const JsonNode& root, std::string_view format, int version) {
  JsonNode schema_version = root.at("schema_version");
  if (std::int64_t v = schema_version.as_int(); v != version)
    schema_version.fail("unsupported version " + std::to_string(v) + " (this strata reads " +
                        std::to_string(version) + ")");
  JsonNode format_node = root.at("format");
  if (format_node.as_string() != format)
    format_node.fail("expected " + quote_for_message(format) + ", got " + describe(format_node.value()));
}

// ---- JsonNode ----------------------------------------------------------------------------------

void JsonNode::fail(const std::string& problem) const {
  throw InputError(input_error_message(*source_, pointer_, problem));
}

void JsonNode::fail_type(const char* expected) const {
  fail(std::string("expected ") + expected + ", got " + describe(*value_));
}

void JsonNode::expect_object() const {
  if (!value_->is_object()) fail_type("an object");
}

void JsonNode::expect_array() const {
  if (!value_->is_array()) fail_type("an array");
}

JsonNode JsonNode::at(std::string_view key) const {
  std::optional<JsonNode> child = find(key);
  if (!child) {
    throw InputError(input_error_message(*source_, pointer_ + "/" + json_pointer_token(key), "missing"));
  }
  return *child;
}

std::optional<JsonNode> JsonNode::find(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonNode(*it, *source_, pointer_ + "/" + json_pointer_token(key));
}

std::vector<std::string> JsonNode::keys() const {
  expect_object();
  std::vector<std::string> out;
  out.reserve(value_->size());
  for (auto it = value_->begin(); it != value_->end(); ++it) out.push_back(it.key());
  return out;
}

void JsonNode::reject_unknown_fields(std::initializer_list<std::string_view> known) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    bool is_known = false;
    for (std::string_view k : known) is_known = is_known || k == it.key();
    if (!is_known)
      JsonNode(*it, *source_, pointer_ + "/" + json_pointer_token(it.key())).fail("unknown field");
  }
}

std::size_t JsonNode::size() const {
  expect_array();
  return value_->size();
}

JsonNode JsonNode::at(std::size_t index) const {
  expect_array();
  STRATA_ASSERT(index < value_->size(), "array index out of range");
  return JsonNode((*value_)[index], *source_, pointer_ + "/" + std::to_string(index));
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail_type("a string");
  return value_->get<std::string>();
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail_type("true or false");
  return value_->get<bool>();
}

std::int64_t JsonNode::as_int(std::int64_t min, std::int64_t max) const {
  if (!value_->is_number_integer()) fail_type("an integer");
  if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > INT64_MAX)
    fail("value " + value_->dump() + " outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  auto v = value_->get<std::int64_t>();
  if (min == 0 && v < 0) fail("negative value " + std::to_string(v));
  if (v < min || v > max)
    fail("value " + std::to_string(v) + " outside [" + std::to_string(min) + ", " + std::to_string(max) +
         "]");
  return v;
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail_type("a number");
  double v = value_->get<double>();
  if (!std::isfinite(v)) fail("not a finite number");
  return v;
}

double JsonNode::as_size() const {
  double v = as_number();
  if (v < 0) fail("negative value " + value_->dump());
  return v;
}

}  // namespace traces
}  // namespace strata
