// The troupe CLI as a test runs it: the binary named by $TROUPE_CLI, as a child process whose
// stdout and stderr are read together, with its exit code.
#pragma once

#include <string>
#include <vector>

namespace troupe::test {

struct CliRun {
  int code = -1;
  std::string output;  ///< stdout and stderr together
};

/// The troupe binary named by $TROUPE_CLI; throws std::runtime_error when it is unset or empty.
std::string cli_binary();

/// Runs `troupe ARGS...` to its end (60 s at most; then it is killed and `code` is -1).
/// Arguments may not hold single quotes (std::invalid_argument).
CliRun troupe_cli(const std::vector<std::string>& args);

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// True when `text` is one JSON value (and whitespace), as Cap'n Proto's JSON codec reads it:
/// a parser the CLI does not use, so `--json` output is checked independently.
bool is_json(const std::string& text);

/// The number of lines of `text` (a last line without '\n' counts).
size_t line_count(const std::string& text);

}  // namespace troupe::test
