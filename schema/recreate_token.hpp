// Recreate tokens (Cadence's RecreateSession): an opened session's token names where it ran, so
// that a session of a later workflow can ask for the same place. The token is "rt-" and the hex
// of "resource:ID" (the worker declared a resource id) or "worker:SHARD" (it declared none):
// opaque to users, checked when a definition is parsed, and needing no registry that could
// outlive what it names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace troupe {

struct RecreatePlace {
  std::string resource_id;  ///< a worker declaring this resource id
  std::string shard;        ///< else this worker
};

inline std::string make_recreate_token(const std::string& resource_id, const std::string& shard) {
  const std::string place = resource_id.empty() ? "worker:" + shard : "resource:" + resource_id;
  static constexpr char digits[] = "0123456789abcdef";
  std::string token = "rt-";
  for (unsigned char c : place) {
    token += digits[c >> 4];
    token += digits[c & 15];
  }
  return token;
}

/// The place a token names; nullopt for one troupe did not make.
inline std::optional<RecreatePlace> parse_recreate_token(std::string_view token) {
  if (token.substr(0, 3) != "rt-" || token.size() % 2 != 1) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string place;
  for (size_t i = 3; i + 1 < token.size(); i += 2) {
    const int high = nibble(token[i]), low = nibble(token[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    place += static_cast<char>(high * 16 + low);
  }
  for (const auto* prefix : {"resource:", "worker:"}) {
    const std::string_view p(prefix);
    if (place.size() > p.size() && std::string_view(place).substr(0, p.size()) == p) {
      std::string rest = place.substr(p.size());
      return p == "resource:" ? RecreatePlace{rest, {}} : RecreatePlace{{}, rest};
    }
  }
  return std::nullopt;
}

}  // namespace troupe
