// Inside the experiment: a --set key's value in typed form, and how each key reads and writes
// it in an Experiment. Shared by the text parser (set_table.cpp) and the JSON reader/writer
// (experiment_json.cpp) so that both check the same ranges.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "strata/models/experiment.hpp"

namespace strata {
inline namespace models {
namespace detail {

using SetValue = std::variant<std::int64_t, double, std::vector<std::int64_t>, std::string>;

const SetKey* find_set_key(const std::string& name);

// Whether `key` belongs to an experiment of `model` under `solver`.
bool key_applies(const SetKey& key, const std::string& model, Solver solver);

// The value of `key` in `e`; nullopt for a model key left at the preset's value.
std::optional<SetValue> get_set_value(const Experiment& e, const SetKey& key);

// Checks `value` against the key's range and stores it; returns the problem ("must be >= 1,
// got 0", the value shown as `shown` when given) instead when it is out of range.
std::optional<std::string> put_set_value(Experiment& e, const SetKey& key, const SetValue& value,
                                         const std::string* shown = nullptr);

std::string format_set_value(const SetValue& value);

// For an item of the framework presets (ddp, tp_comm, p2p, p2p_scatter_gather): its value as the
// preset of `e` (the newest framework's when none is named) sets it, as format_set_value prints
// it; nullopt for any other key. The JSON writes an item only where it differs.
std::optional<std::string> preset_text(const Experiment& e, const std::string& key);

}  // namespace detail
}  // namespace models
}  // namespace strata
