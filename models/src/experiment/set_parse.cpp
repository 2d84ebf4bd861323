// The one text parser of `--set key=value`, and the table as help text.
#include <algorithm>
#include <charconv>
#include <cstdio>

#include "set_table.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

using detail::SetValue;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

template <typename T>
bool parse_whole(std::string_view text, T& out) {
  if (text.empty()) return false;
  const char* begin = text.data();
  if constexpr (std::is_floating_point_v<T>)
    if (*begin == '+') return false;  // from_chars takes no '+' either way; say so plainly
  auto [end, error] = std::from_chars(begin, text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// The value of `text` for `key`, or an InputError naming the key and the text.
SetValue parse_text(const SetKey& key, const std::string& text) {
  const std::string flag = "--set " + key.name;
  switch (key.type) {
    case SetKeyType::integer: {
      std::int64_t v = 0;
      if (!parse_whole(text, v)) throw InputError(flag + ": '" + text + "' is not an integer");
      return v;
    }
    case SetKeyType::count: {
      std::int64_t v = 0;
      if (!parse_whole(text, v) || v <= 0)
        throw InputError(flag + "=" + text + ": '" + text + "' is not a positive integer");
      return v;
    }
    case SetKeyType::count_list: {
      std::vector<std::int64_t> list;
      std::string_view rest = text;
      while (true) {
        const auto comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        std::int64_t v = 0;
        if (!parse_whole(item, v) || v <= 0)
          throw InputError(flag + "=" + text + ": '" + std::string(item) + "' is not a positive integer");
        list.push_back(v);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
      return list;
    }
    case SetKeyType::real: {
      double v = 0;
      if (!parse_whole(text, v)) throw InputError(flag + ": '" + text + "' is not a number");
      return v;
    }
    case SetKeyType::choice:
      return text;
  }
  return text;
}

std::string range_text(const SetKey& key) {
  const auto num = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  const auto whole = [](double v) { return std::to_string(static_cast<long long>(v)); };
  switch (key.type) {
    case SetKeyType::integer:
      return whole(key.min) + " .. " + whole(key.max);
    case SetKeyType::count:
      return ">= 1";
    case SetKeyType::count_list:
      return "each >= 1, at least " + std::to_string(key.min_count) + " values";
    case SetKeyType::real:
      return std::string(key.min_exclusive ? "> " : ">= ") + num(key.min) + " and " +
             (key.max_exclusive ? "< " : "<= ") + num(key.max);
    case SetKeyType::choice:
      return join(key.choices);
  }
  return "";
}

}  // namespace

void apply_set(Experiment& e, const std::string& key, const std::string& value) {
  // Refused before any message quotes the text raw, so that every message stays one line.
  for (const std::string* text : {&key, &value})
    for (const unsigned char c : *text)
      if (c < 0x20 || c == 0x7f)
        throw InputError("--set " + quote_for_message(key + "=" + value) +
                         ": control character in the argument");
  const SetKey* entry = detail::find_set_key(key);
  if (entry == nullptr || !detail::key_applies(*entry, e.model, e.solver.solver))
    throw InputError("--set " + key + ": unknown key for model '" + e.model + "' with solver '" +
                     std::string(to_string(e.solver.solver)) +
                     "' (known: " + join(accepted_keys(e.model, e.solver.solver)) + ")");
  const SetValue parsed = parse_text(*entry, value);
  if (auto problem = detail::put_set_value(e, *entry, parsed, &value)) {
    const bool whole_value = entry->type == SetKeyType::count || entry->type == SetKeyType::count_list;
    throw InputError("--set " + key + (whole_value ? "=" + value : "") + ": " + *problem);
  }
}

void apply_set(Experiment& e, const std::string& pair) {
  const auto eq = pair.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set " + quote_for_message(pair) + ": expected key=value");
  apply_set(e, pair.substr(0, eq), pair.substr(eq + 1));
}

void apply_sets(Experiment& e, const std::vector<std::string>& pairs) {
  const auto is_preset = [](const std::string& pair) { return pair.rfind("framework=", 0) == 0; };
  for (const std::string& pair : pairs)
    if (is_preset(pair)) apply_set(e, pair);
  for (const std::string& pair : pairs)
    if (!is_preset(pair)) apply_set(e, pair);
}

std::string set_value_text(const Experiment& e, const std::string& key) {
  const SetKey* entry = detail::find_set_key(key);
  if (entry == nullptr) return "";
  const auto value = detail::get_set_value(e, *entry);
  return value ? detail::format_set_value(*value) : "";
}

std::string key_scope(const SetKey& key) {
  std::vector<std::string> takers;
  if (key.section == SetSection::model) {
    for (const std::string& model : zoo_names())
      if (detail::key_applies(key, model, Solver::backprop)) takers.push_back(model);
    return "models " + join(takers);
  }
  if (key.section == SetSection::solver) {
    for (Solver s : key.solvers) takers.emplace_back(to_string(s));
    return "solvers " + join(takers);
  }
  return "every model and solver";
}

std::string set_keys_help() {
  std::string out;
  for (const SetKey& key : set_keys()) {
    std::string name = "  " + key.name;
    name.resize(std::max<std::size_t>(name.size() + 1, 24), ' ');
    out += name + std::string(to_string(key.type)) + ", " + range_text(key) + (key.unit.empty() ? "" : ", ") +
           key.unit + "; " + key_scope(key) + "\n";
    out += std::string(24, ' ') + key.help + "\n";
  }
  return out;
}

}  // namespace models
}  // namespace strata
