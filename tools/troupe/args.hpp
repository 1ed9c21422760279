// What the command line gave one command once parsed: its positional arguments and its
// options by name, each with every value it was given. The parser (command_line.hpp) has
// already refused unknown options and wrong argument counts; these accessors read values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/result.hpp"

namespace troupe::cli {

class Args {
 public:
  Args() = default;
  /// `command` is the command's words ("bench chain"); `options` maps a long name without
  /// dashes to its values in order ("true"/"false" for a flag).
  Args(std::string command, std::vector<std::string> positionals, std::map<std::string, std::vector<std::string>> options)
      : command_(std::move(command)), positionals_(std::move(positionals)), options_(std::move(options)) {}

  const std::string& command() const { return command_; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& name) const { return options_.count(name) > 0; }
  /// The option's value; the last one when it was given more than once.
  std::optional<std::string> get(const std::string& name) const;
  /// Every value of a repeatable option (`--node a --node b`), in order.
  std::vector<std::string> all(const std::string& name) const;

  /// The option as a number; INVALID_ARGUMENT naming the option if it is not one.
  Result<double> number(const std::string& name, double fallback) const;
  /// A comma-separated list of positive integers, e.g. "1,8,64".
  Result<std::vector<int>> int_list(const std::string& name, std::vector<int> fallback) const;
  /// A boolean option: `--name`, `--name=true|false`.
  Result<bool> boolean(const std::string& name, bool fallback) const;

  /// INVALID_ARGUMENT naming the first option not in `known`.
  Result<void> only(const std::vector<std::string>& known) const;

 private:
  std::string command_;
  std::vector<std::string> positionals_;
  std::map<std::string, std::vector<std::string>> options_;
};

}  // namespace troupe::cli
