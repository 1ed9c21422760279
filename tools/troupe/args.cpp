// Command-line parsing for the troupe CLI.
#include "tools/troupe/args.hpp"

#include <algorithm>
#include <charconv>

namespace troupe::cli {

Result<Args> Args::parse(const std::vector<std::string>& argv,
                         const std::vector<std::string>& flags) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (!word.starts_with("--") || word == "--") {
      args.positionals_.push_back(word);
      continue;
    }
    std::string name = word.substr(2);
    if (auto eq = name.find('='); eq != std::string::npos) {
      args.options_[name.substr(0, eq)] = name.substr(eq + 1);
    } else if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
      args.options_[name] = "true";
    } else if (i + 1 < argv.size()) {
      args.options_[name] = argv[++i];
    } else {
      return fail(Errc::INVALID_ARGUMENT, "option --" + name + " needs a value");
    }
  }
  return args;
}

std::optional<std::string> Args::get(const std::string& name) const {
  if (auto it = options_.find(name); it != options_.end()) return it->second;
  return std::nullopt;
}

Result<double> Args::number(const std::string& name, double fallback) const {
  auto value = get(name);
  if (!value) return fallback;
  double parsed = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), parsed);
  if (ec != std::errc() || end != value->data() + value->size() || parsed < 0) {
    return fail(Errc::INVALID_ARGUMENT,
                "--" + name + " takes a non-negative number, not '" + *value + "'");
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
  for (const auto& [name, value] : options_) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return fail(Errc::INVALID_ARGUMENT, "unknown option --" + name);
    }
  }
  return ok();
}

}  // namespace troupe::cli
