// A JSON syntax check for what the CLI sends as JSON (a definition, --input, a task's result),
// so a typo is reported with its line and column before anything reaches the scheduler, which
// checks meaning (and syntax again) itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::cli {

/// Where JSON text goes wrong. `line` and `column` count from 1; columns count characters
/// (UTF-8 sequences), not bytes.
struct JsonSyntaxError {
  size_t line = 1;
  size_t column = 1;
  std::string message;  ///< what was found and what was expected there
};

/// nullopt when `text` is exactly one JSON value (RFC 8259), with only whitespace around it;
/// else the first place where it is not. Nesting deeper than 512 levels is refused.
std::optional<JsonSyntaxError> check_json_syntax(std::string_view text);

}  // namespace troupe::cli
