// Command-line arguments: positionals and `--name value` / `--name=value` / `--flag` options.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/result.hpp"

namespace troupe::cli {

class Args {
 public:
  /// Splits `argv` (without the program name). Options named in `flags` take no value.
  static Result<Args> parse(const std::vector<std::string>& argv,
                            const std::vector<std::string>& flags = {});

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& name) const { return options_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;

  /// The option as a number; INVALID_ARGUMENT naming the option if it is not one.
  Result<double> number(const std::string& name, double fallback) const;
  /// A comma-separated list of positive integers, e.g. "1,8,64".
  Result<std::vector<int>> int_list(const std::string& name, std::vector<int> fallback) const;
  /// A boolean option: `--name`, `--name=true|false`.
  Result<bool> boolean(const std::string& name, bool fallback) const;

  /// INVALID_ARGUMENT naming the first option not in `known`.
  Result<void> only(const std::vector<std::string>& known) const;

 private:
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> options_;
};

}  // namespace troupe::cli
