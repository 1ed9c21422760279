// Near misses by edit distance.
#include "schema/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace troupe {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> near_miss(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string w = lower(word);
  if (w.empty()) return std::nullopt;
  const size_t allowed = w.size() <= 3 ? 1 : w.size() <= 8 ? 2 : 3;
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(w, lower(c));
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (best) return best;
  // An abbreviation ("--time" for "--timeout"), when it abbreviates one candidate only.
  std::optional<std::string> only;
  for (const auto& c : candidates) {
    if (lower(c).starts_with(w)) {
      if (only) return std::nullopt;
      only = c;
    }
  }
  return only;
}

}  // namespace troupe
