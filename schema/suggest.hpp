// "Did you mean": the candidate a mistyped word was most likely meant to be, for the CLI's
// options and commands and the cluster config's keys alike. Std-only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// Edit distance with adjacent transpositions ("jsno" is one step from "json").
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate `word` is a near miss of (case aside): the closest within a distance that
/// grows with the word's length, else the only candidate `word` is a prefix of; nullopt when
/// nothing is close.
std::optional<std::string> near_miss(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace troupe
