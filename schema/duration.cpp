// Duration text <-> Duration.
#include "schema/duration.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace troupe {
namespace {

struct Unit {
  std::string_view suffix;
  int64_t micros;
};
// Longest suffixes first, so "ms" is not read as "m" followed by garbage.
constexpr Unit units[] = {{"us", 1},          {"ms", 1'000},          {"s", 1'000'000},
                          {"m", 60'000'000},  {"h", 3'600'000'000},   {"d", 86'400'000'000}};

Error bad(std::string_view text, const std::string& why) {
  return fail(Errc::INVALID_ARGUMENT, "'" + std::string(text) + "' is not a duration: " + why +
                                          " (write e.g. \"250ms\", \"10s\", \"5m\", \"1h30m\")");
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return bad(text, "it is empty");
  size_t i = 0;
  double total = 0;
  while (i < text.size()) {
    const size_t number_start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == number_start) return bad(text, "expected a number at position " + std::to_string(i));
    const std::string_view number = text.substr(number_start, i - number_start);
    double value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size()) {
      return bad(text, "'" + std::string(number) + "' is not a number");
    }
    const Unit* unit = nullptr;
    for (const auto& u : units) {
      if (text.substr(i).starts_with(u.suffix)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) {
      return bad(text, i == text.size() ? "the number has no unit (us, ms, s, m, h or d)"
                                        : "unknown unit at position " + std::to_string(i));
    }
    i += unit->suffix.size();
    total += value * static_cast<double>(unit->micros);
  }
  if (total > static_cast<double>(max_duration.count())) {
    return bad(text, "it is too long (at most about 146 years)");
  }
  return Duration(static_cast<int64_t>(std::llround(total)));
}

std::string format_duration(Duration d) {
  int64_t left = d.count();
  if (left == 0) return "0s";
  std::string out;
  if (left < 0) {
    out = "-";
    left = -left;
  }
  // Whole hours, minutes and seconds as h/m/s terms; a sub-second rest as ms or us.
  for (const auto& u : {units[5], units[4], units[3], units[2]}) {
    if (left >= u.micros) {
      out += std::to_string(left / u.micros) + std::string(u.suffix);
      left %= u.micros;
    }
  }
  if (left > 0) {
    if (left % 1000 == 0) {
      out += std::to_string(left / 1000) + "ms";
    } else {
      out += std::to_string(left) + "us";
    }
  }
  return out;
}

}  // namespace troupe
