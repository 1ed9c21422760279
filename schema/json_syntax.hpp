// JSON syntax (RFC 8259), checked on its own so that text refused as JSON is refused saying
// where: the line and column of the first error. One checker for everything troupe takes as
// JSON from outside: workflow inputs, task results and workflow definitions (whose decoder,
// capnp's JsonCodec, reports no position). Std-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/result.hpp"

namespace troupe {

/// The first syntax error of a text.
struct JsonSyntaxError {
  uint32_t line = 1;    ///< from 1
  uint32_t column = 1;  ///< from 1, in characters (UTF-8 code points) of that line
  size_t offset = 0;    ///< in bytes from the start of the text
  std::string message;  ///< what is wrong there, e.g. "expected ',' or '}' after a member, found 'x'"

  /// "line 3, column 14: MESSAGE".
  std::string to_string() const;
};

/// Containers nested deeper than this are refused by json_syntax_error's default: deep enough
/// for any real document, shallow enough that checking never exhausts a thread's stack.
inline constexpr size_t json_max_depth = 512;

/// The first syntax error of `text` as one JSON value (surrounding whitespace allowed), or
/// nullopt if it is JSON. Arrays and objects nested deeper than `max_depth` are an error too.
std::optional<JsonSyntaxError> json_syntax_error(std::string_view text, size_t max_depth = json_max_depth);

/// check: INVALID_ARGUMENT "WHAT is not valid JSON: line L, column C: MESSAGE" unless `text` is
/// JSON. `what` names the text for the user, e.g. "the workflow input".
Result<void> check_json(std::string_view text, std::string_view what);

/// `text` as a JSON string, quotes included: '"' and '\\' escaped, control characters as \n,
/// \t, \r or \u00XX; everything else (UTF-8 included) as it is.
std::string json_quote(std::string_view text);

/// What the JSON text `json` holds at its top level, for messages: "an object", "an array",
/// "a string", "a number", "a boolean", "null" (or "nothing" for a blank text).
const char* json_kind_of(std::string_view json);

}  // namespace troupe
