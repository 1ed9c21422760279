// Reading a command's parsed options.
#include "tools/troupe/args.hpp"

#include <algorithm>
#include <charconv>

namespace troupe::cli {

std::optional<std::string> Args::get(const std::string& name) const {
  if (auto it = options_.find(name); it != options_.end() && !it->second.empty()) return it->second.back();
  return std::nullopt;
}

std::vector<std::string> Args::all(const std::string& name) const {
  if (auto it = options_.find(name); it != options_.end()) return it->second;
  return {};
}

Result<double> Args::number(const std::string& name, double fallback) const {
  auto value = get(name);
  if (!value) return fallback;
  double parsed = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), parsed);
  if (ec != std::errc() || end != value->data() + value->size() || parsed < 0) {
    return fail(Errc::INVALID_ARGUMENT, "--" + name + " takes a non-negative number, not '" + *value + "'");
  }
  return parsed;
}

Result<std::vector<int>> Args::int_list(const std::string& name, std::vector<int> fallback) const {
  auto value = get(name);
  if (!value) return fallback;
  std::vector<int> out;
  const char* p = value->data();
  const char* end = value->data() + value->size();
  while (p < end) {
    int n = 0;
    auto [next, ec] = std::from_chars(p, end, n);
    if (ec != std::errc() || n <= 0 || (next != end && *next != ',')) {
      return fail(Errc::INVALID_ARGUMENT,
                  "--" + name + " takes positive integers separated by commas, not '" + *value + "'");
    }
    out.push_back(n);
    p = next == end ? end : next + 1;
  }
  if (out.empty()) return fail(Errc::INVALID_ARGUMENT, "--" + name + " is empty");
  return out;
}

Result<bool> Args::boolean(const std::string& name, bool fallback) const {
  auto value = get(name);
  if (!value) return fallback;
  if (*value == "true" || *value == "1") return true;
  if (*value == "false" || *value == "0") return false;
  return fail(Errc::INVALID_ARGUMENT, "--" + name + " takes true or false, not '" + *value + "'");
}

Result<void> Args::only(const std::vector<std::string>& known) const {
  for (const auto& [name, values] : options_) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return fail(Errc::INVALID_ARGUMENT, "unknown option --" + name);
    }
  }
  return ok();
}

}  // namespace troupe::cli
