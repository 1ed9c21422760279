// The troupe command line: parses the words against the command table (with CLI11), answers
// -h/--help and `troupe help`, reports a usage error in a line or two with "did you mean" and
// where to read more, and runs the command.
#pragma once

#include <string>
#include <vector>

#include "tools/troupe/command.hpp"

namespace troupe::cli {

/// Runs `troupe WORDS...` (the words after the program name) with the commands of `table`,
/// to which it adds `help`; returns the exit code.
int run_command_line(const std::vector<std::string>& words, std::vector<CommandSpec> table);

}  // namespace troupe::cli
